"""The Reverse dictionary tab's handler (app/tabs/reverse.py): a description's ranked words, as HTML."""
from __future__ import annotations

from core.answers import EXCLUDE_QUERY_WORDS
from core.words import APPROXIMATE_ANSWERS

from ..shared import services as sv
from ..views import render
from .backend import TabHandlers
from .session import Session

OPEN_VOCABULARY_PENDING = ("Answers come from the 21.7k words the word head knows until the full vocabulary "
                           "(147k WordNet words and phrases) is ready: seconds after the model loads when its "
                           "checkpoint ships compact vectors, else a few minutes once per model (then cached).")


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
        if active.engine.words.open_vocab is None or active.engine.words.approximate:
            building = active.open_vocab_progress
            pending = (OPEN_VOCABULARY_PENDING if active.engine.words.open_vocab is None
                       else f"{APPROXIMATE_ANSWERS[0].upper()}{APPROXIMATE_ANSWERS[1:]} in the background.")
            main = (render.notice_html(pending)
                    + (render.progress_html(building[0] / building[1], render.embedding_progress(*building))
                       if building else "") + main)
        if not compare:
            return main, ""
        if active.is_base:
            return main, render.notice_html("The active model is the untrained base: nothing to compare with.")
        before = sv.reverse_dictionary(active.untrained(), query)
        return main, render.words_html(before, "before DefSent training (same head)")
