"""State owned by the object whose life it shares (issue 73): no cache of the process keeps a dropped handler, its
Studio or their models alive."""
from __future__ import annotations

import gc
import weakref

from app.wiring import declared_types


class Handlers:
    """Stands for a tab's handlers, which hold the Studio and through it the models."""

    def answer(self, text: str, k: int, session: object = None) -> str:
        return text * k


def test_reading_a_handlers_parameters_keeps_no_handler_alive():
    """Before: an lru_cache on declared_types held every handler it had read, and its Studio with it."""
    handlers = Handlers()
    fn = handlers.answer
    assert declared_types(fn) == [("text", (str,)), ("k", (int,)), ("session", None)]
    assert declared_types(fn) == declared_types(handlers.answer)  # read once, found again by an equal handler
    gone = weakref.ref(handlers)
    del handlers, fn
    gc.collect()
    assert gone() is None


def test_parameters_of_a_callable_without_weak_references_are_still_read():
    assert declared_types(None) == []
    assert declared_types(len) == [("obj", None)]  # a builtin: its signature, not cached
