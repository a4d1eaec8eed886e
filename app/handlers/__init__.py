"""The app's request handlers: plain methods over the shared models, the projector and the job manager,
taking component values and returning component values (HTML, rows, plotly figures); no gradio here.

`Studio` (studio.py) is what the UI calls: the backend every tab shares (backend.py: the models, the
model each session uses, the model bar's and the About tab's handlers) and one object of handlers per
tab beside it, each in the module named after its tab in app/tabs/ (`studio.reverse`, `studio.similarity`,
`studio.analogy`, `studio.map`, `studio.finetune`, `studio.evaluate`). Per-user data travels in a
`Session` (session.py; a gr.State in the UI). Invalid input raises ValueError with a readable message
(the UI shows it as an error toast).
"""
from .backend import BASE_WARNING_SHORT
from .collection import MAX_MAP_SAMPLE, MY_COLLECTION
from .evaluate import PUBLIC_EVALUATE
from .finetune import QUOTA_USED
from .map import (
    COLOUR_BY,
    EVERY_DEFINITION_MAP,
    EVERY_WORD_MAP,
    FILE_COLUMN,
    MAP_POINTS,
    MAP_SOURCES,
    MAX_EXPORT_POINTS,
    MAX_MAP_NEIGHBOURS,
    vocabulary_figure,
)
from .session import Session
from .studio import Studio, prepare_model, start_studio

__all__ = ["BASE_WARNING_SHORT", "COLOUR_BY", "EVERY_DEFINITION_MAP", "EVERY_WORD_MAP", "FILE_COLUMN", "MAP_POINTS",
           "MAP_SOURCES", "MAX_EXPORT_POINTS", "MAX_MAP_NEIGHBOURS", "MAX_MAP_SAMPLE", "MY_COLLECTION", "PUBLIC_EVALUATE",
           "QUOTA_USED", "Session", "Studio", "prepare_model", "start_studio", "vocabulary_figure"]
