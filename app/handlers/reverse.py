"""The Reverse dictionary tab's handler (app/tabs/reverse.py): a description's ranked words, as HTML."""
from __future__ import annotations

from core.answers import EXCLUDE_QUERY_WORDS

from ..shared import services as sv
from ..shared.models import ActiveModel
from ..views import render
from .backend import TabHandlers
from .session import Session

# What an answer says while the model's vocabulary is not final, in plain words (issue 76)
OPEN_VOCABULARY_PENDING = ("For now the answers come from a shorter list of {words:,} single words: this model's full "
                           "vocabulary of 147k WordNet words and phrases is being prepared in the background (a few "
                           "minutes, once per model). Ask again then for the full answer.")
SINGLE_TOKEN_NOTE = ("This server answers from {words:,} single words only (it was started with --single-token-words): "
                     "phrases such as \"ice cream\" are not among its answers.")
VOCABULARY_FAILED = ("Preparing this model's full vocabulary failed ({reason}), so for now the answers come from "
                     "{source}; the server log has the details.")
APPROXIMATE_NOTE = ("These answers come from a compressed copy of this model's word vectors (the best candidates "
                    "are checked with exact ones) while its exact vectors are computed in the background (a few "
                    "minutes, once per model); afterwards the order may change a little.")


def vocabulary_notice_html(active: ActiveModel) -> str:
    """While `active`'s answers over the vocabulary are not final (the full vocabulary is being built, or it
    answers from approximate vectors): what that means for this answer; else "". The work's progress is shown
    apart, live (`vocabulary_progress_html`): a bar in an answer stayed there after the work had ended."""
    vocabulary = active.engine.vocabulary
    if vocabulary.enabled and not vocabulary.approximate:
        return ""
    words = vocabulary.single_token_words
    if vocabulary.failure and not active.single_token_words:  # the work stopped: say why, not that it goes on
        source = (f"a shorter list of {words:,} single words" if not vocabulary.enabled
                  else "a compressed copy of this model's word vectors")
        return render.notice_html(VOCABULARY_FAILED.format(reason=vocabulary.failure, source=source))
    if not vocabulary.enabled:
        note = SINGLE_TOKEN_NOTE if active.single_token_words else OPEN_VOCABULARY_PENDING
        return render.notice_html(note.format(words=words))
    return render.notice_html(APPROXIMATE_NOTE)


def vocabulary_progress_html(active: ActiveModel) -> str:
    """A bar of `active`'s vocabulary being embedded in the background, or "" when no such work runs."""
    return render.embedding_progress_html(active.engine.vocabulary.progress, "this model's vocabulary, in the background")


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

    def vocabulary_progress(self, session: Session | None = None) -> tuple[str, bool]:
        """(`vocabulary_progress_html` of the session's model, whether its vocabulary is not final yet): the tabs
        poll it while either holds (the background work may start after an answer), not once that work failed;
        ("", False) for a model no longer loaded."""
        try:
            active = self.backend.model_for(session)
        except ValueError:  # the session's model was unloaded (or deleted): its requests say so, not a poll
            return "", False
        vocabulary = active.engine.vocabulary
        pending = bool(vocabulary_notice_html(active)) and not active.single_token_words and not vocabulary.failure
        return vocabulary_progress_html(active), pending
