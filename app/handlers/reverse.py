"""The Reverse dictionary tab's handler (app/tabs/reverse.py): a description's ranked words, as HTML."""
from __future__ import annotations

from core.answers import EXCLUDE_QUERY_WORDS
from core.words import APPROXIMATE_ANSWERS

from ..shared import services as sv
from ..shared.models import ActiveModel
from ..views import render
from .backend import TabHandlers
from .session import Session

OPEN_VOCABULARY_PENDING = ("Answers come from the 21.7k words the word head knows until the full vocabulary "
                           "(147k WordNet words and phrases) is ready: seconds after the model loads when its "
                           "checkpoint ships compact vectors, else a few minutes once per model (then cached).")


def vocabulary_notice_html(active: ActiveModel) -> str:
    """While `active`'s answers and searches over the vocabulary are not final (the full vocabulary is being
    built, or it answers from approximate vectors): what is going on and how far it is; else ""."""
    words = active.engine.words
    if words.open_vocab is not None and not words.approximate:
        return ""
    pending = (OPEN_VOCABULARY_PENDING if words.open_vocab is None
               else f"{APPROXIMATE_ANSWERS[0].upper()}{APPROXIMATE_ANSWERS[1:]} in the background.")
    return render.notice_html(pending) + render.embedding_progress_html(active.open_vocab_progress)


class ReverseHandlers(TabHandlers):
    """Describe a word, get words: over the model that answers each session."""

    def reverse_dictionary(self, text: str, k: int = 10, pos: str = "any", min_length: int = 0,
                           max_length: int = 0, initial: str = "", pattern: str = "",
                           exclude_query_words: bool = EXCLUDE_QUERY_WORDS, compare: bool = False,
                           session: Session | None = None) -> tuple[str, str]:
        """(ranked words of the active model, the same for the untrained base if `compare`) as HTML."""
        active = self.backend.model_for(session)
        query = sv.WordQuery(text, int(k), pos, int(min_length or 0), int(max_length or 0), initial or "",
                             pattern or "", bool(exclude_query_words))
        main = render.words_html(sv.reverse_dictionary(active.engine, query), active.spec.name)
        main = vocabulary_notice_html(active) + main
        if not compare:
            return main, ""
        if active.is_base:
            return main, render.notice_html("The active model is the untrained base: nothing to compare with.")
        before = sv.reverse_dictionary(active.untrained(), query)
        return main, render.words_html(before, "before DefSent training (same head)")
