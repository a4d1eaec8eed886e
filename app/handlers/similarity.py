"""The Similarity tab's handlers (app/tabs/similarity.py): a pair's cosine, a heatmap, semantic search."""
from __future__ import annotations

from core.explore import VocabularyTexts

from ..shared import services as sv
from ..views import render
from .backend import TabHandlers
from .collection import MY_COLLECTION, search_collection
from .session import Session


# The vocabulary's definitions and words are searched with the vectors its reverse dictionary has: approximate
# ones on a fresh clone until the exact ones are embedded, when the cosines and the order shift a little.
APPROXIMATE_SEARCH = ("These cosines come from a compressed copy of the vocabulary's vectors while this model's exact "
                      "ones are computed in the background (a few minutes, once per model); afterwards the order may "
                      "change a little.")


class SimilarityHandlers(TabHandlers):
    """Compare texts with the model that answers each session."""

    def pair_similarity(self, a: str, b: str, session: Session | None = None) -> str:
        return f"**cosine similarity: {sv.pair_cosine(self.backend.model_for(session).engine, a, b):.4f}**"

    def heatmap(self, text: str, session: Session | None = None):
        sentences, matrix = sv.similarity_matrix(self.backend.model_for(session).engine, text)
        return render.heatmap_figure(sentences, matrix)

    def search(self, query: str, source: str, file: str | None, k: int, session: Session,
               collection: str | None = None, progress: sv.Progress = sv.no_progress
               ) -> tuple[list[list] | dict, str, Session]:
        """(top-k texts of `source`, one of sv.REFERENCE_CHOICES or the uploaded file, for the query; a notice
        when their cosines are not final yet, else ""). `source` MY_COLLECTION: the collection at the path
        `collection` (local mode only), its hits a table with its metadata columns ({"headers", "data"})."""
        sv.check_text(query, "a query")  # before the corpus is embedded, which can take a while
        active = self.backend.model_for(session)
        if source == MY_COLLECTION:
            opened = session.open_collection(active, collection, public=self.backend.public is not None)
            return search_collection(active, opened, query, int(k)), "", session
        if source == sv.UPLOADED_FILE:
            corpus = session.uploaded_corpus(active, file, progress)
            self.backend.held_vectors.used(session)
        else:
            corpus = active.reference_texts(source, progress)
        rows = render.scored_rows(sv.semantic_search(active.engine, query, corpus, int(k)))
        approximate = isinstance(corpus, VocabularyTexts) and active.engine.vocabulary.approximate
        notice = render.notice_html(APPROXIMATE_SEARCH) if approximate else ""  # the progress is shown apart, live
        return rows, notice, session
