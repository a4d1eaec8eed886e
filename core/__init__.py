"""DefSent Studio engine: DefSent encoder, frozen word head, reverse dictionary (no UI code here)."""
from .checkpoint import CheckpointError
from .engine import Engine
from .words.vocabulary import WordFilter

__all__ = ["Engine", "CheckpointError", "WordFilter"]
