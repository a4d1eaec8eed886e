"""What several tabs show alike: the choice of reference collection and the Refine option."""
from __future__ import annotations

import gradio as gr

from core.vec2sent import MOST_EXACT

from ..shared import services as sv

EXACT_ROUNDS = MOST_EXACT["correct"].rounds
REFINE_LABEL = (f"Refine: correct {EXACT_ROUNDS} times instead of once, each time decoding again from the vector "
                "moved along what the last sentence missed (reconstructs more sentences exactly; about 2 seconds "
                "per sentence)")
# Short: it shows under the dropdown on two tabs, and on a phone a long one made a tall narrow column (issue 54)
REFERENCE_INFO = (f"{sv.LARGEST_READY!r}: the biggest collection ready here (the corpus's million sentences, else "
                  f"every WordNet definition, else {sv.SAMPLE}). {sv.UPLOADED_FILE!r}: your last text file.")


def reference_choice() -> gr.Dropdown:
    """Where an analogy's or interpolation's nearest sentences come from."""
    return gr.Dropdown([*sv.REFERENCE_CHOICES, sv.UPLOADED_FILE], value=sv.LARGEST_READY,
                       label="Nearest sentences from", info=REFERENCE_INFO)
