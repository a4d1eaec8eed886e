"""A failed preparation of a model's vocabulary or of its map of every word is said where the user looks (issue 73):
before, the Reverse dictionary tab promised a vocabulary "being prepared in the background" for good, and the map's
failure at the model's start went to the log only."""
from __future__ import annotations

import html
import re

import pytest

import core.words.open_vocabulary
import core.words.scorer
from app.handlers import EVERY_WORD_MAP, Session, prepare_model
from core import Engine
from core.lexicon.dictionary import Entry
from core.text import REASON_CHARS
from tests.conftest import make_studio

DICTIONARY = [Entry("dog", "a domestic animal that barks", "n"), Entry("ice cream", "a frozen sweet food", "n")]


@pytest.fixture
def engine(tiny_mlm_dir, tmp_path, monkeypatch) -> Engine:
    monkeypatch.setenv("DEFSENT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(core.words.scorer, "load_wordnet_lemmas", lambda: DICTIONARY)  # WordNet's stand-in
    return Engine.from_base(str(tiny_mlm_dir))


def test_a_failed_vocabulary_is_said_in_the_answers_and_its_polling_stops(engine, tiny_mlm_dir, tmp_path, monkeypatch):
    studio = make_studio(engine, tiny_mlm_dir, tmp_path)
    active = studio.models.active()
    words, _ = studio.reverse.reverse_dictionary("an animal", 3)
    assert "being prepared in the background" in words and studio.reverse.vocabulary_progress()[1]  # polls on
    with monkeypatch.context() as patched, pytest.raises(MemoryError):
        patched.setattr(core.words.open_vocabulary, "open_scorer",
                        lambda *args: (_ for _ in ()).throw(MemoryError("cannot allocate 400 MB\n" + "x" * 5000)))
        prepare_model(active)
    words, _ = studio.reverse.reverse_dictionary("an animal", 3)
    reason = engine.vocabulary.failure  # one bounded line (core.text.short_reason), not the whole message
    assert reason == ("MemoryError: cannot allocate 400 MB " + "x" * 5000)[:REASON_CHARS - 3] + "..."
    assert f"full vocabulary failed ({reason})" in html.unescape(words)
    assert "being prepared" not in words and studio.reverse.vocabulary_progress() == ("", False)  # no more polls


def test_a_failed_map_preparation_is_said_by_the_map_tab(engine, tiny_mlm_dir, tmp_path):
    engine.vocabulary.enable(dictionary=DICTIONARY)
    engine.vocabulary_layout_path().write_bytes(b"not a layout")  # a broken file: its map cannot be drawn
    studio = make_studio(engine, tiny_mlm_dir, tmp_path)
    active = studio.models.active()
    prepare_model(active)  # the model answers without its map
    reason = active.vocabulary_map.failure
    assert reason.startswith("This file contains pickled")  # numpy's word for a file it cannot read
    session = Session()
    session.waiting = EVERY_WORD_MAP  # the page's timer follows the map a Draw map waited for
    status, waits, figure = studio.map.map_waiting(session)
    assert status == f"Preparing the map of every word failed ({reason}); press Draw map to try again."
    assert not waits and figure is None
    with pytest.raises(ValueError, match=re.escape(f"could not be drawn ({reason}); press Draw map")):
        studio.map.draw_map(EVERY_WORD_MAP, 0, "", None, "UMAP", "2-D", "part of speech", Session())
    active.vocabulary_map.failed(RuntimeError("a traceback\n  of many lines" + "x" * 5000))
    assert active.vocabulary_map.failure == ("RuntimeError: a traceback of many lines" + "x" * 5000)[:297] + "..."

