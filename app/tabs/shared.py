"""What several tabs show alike: the choice of reference collection, the Refine option, the vocabulary's live progress."""
from __future__ import annotations

import gradio as gr

from ..handlers import MY_COLLECTION, Studio

from core.vec2sent import MOST_EXACT

from ..shared import services as sv

EXACT_ROUNDS = MOST_EXACT.correct.rounds
REFINE_LABEL = (f"Refine: correct {EXACT_ROUNDS} times instead of once, each time decoding again from the vector "
                "moved along what the last sentence missed (reconstructs more sentences exactly; about 2 seconds "
                "per sentence)")
# Short: it shows under the dropdown on two tabs, and on a phone a long one made a tall narrow column (issue 54)
REFERENCE_INFO = (f"{sv.LARGEST_READY!r}: the biggest collection ready here (the corpus's million sentences, else "
                  f"every WordNet definition, else {sv.SAMPLE}). {sv.UPLOADED_FILE!r}: your last text file.")


COLLECTION_PLACEHOLDER = "a folder made by: python -m core corpus-index --corpus FILE --out PATH"


def reference_choice(studio: Studio) -> gr.Dropdown:
    """Where an analogy's or interpolation's nearest sentences come from: on a server of one's own also the
    collection the session opened last by its path (Similarity or Map)."""
    own = [MY_COLLECTION] if studio.public is None else []
    return gr.Dropdown([*sv.REFERENCE_CHOICES, sv.UPLOADED_FILE, *own], value=sv.LARGEST_READY,
                       label="Nearest sentences from", info=REFERENCE_INFO)


PROGRESS_SECONDS = 2.0  # how often a shown bar of background work is refreshed


def vocabulary_progress(studio: Studio, session: gr.State, after: list) -> None:
    """A bar of the model's vocabulary being embedded in the background, shown after each of the events `after` and
    refreshed while the vocabulary is not final (the work may start after the answer) until that work ends, when it
    goes: a bar inside an answer stayed at "264,003/264,003 ... about 0 s
    left" after the work had ended (issue 76)."""
    bar, timer = gr.HTML(), gr.Timer(PROGRESS_SECONDS, active=False)

    def show(state) -> tuple[str, gr.Timer]:
        html, pending = studio.reverse.vocabulary_progress(state)
        return html, gr.Timer(active=bool(html) or pending)
    quiet = {"queue": False, "show_progress": "hidden", "api_visibility": "private"}
    for event in after:
        event.then(show, session, [bar, timer], **quiet)
    timer.tick(show, session, [bar, timer], **quiet)
