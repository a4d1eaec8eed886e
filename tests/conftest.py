"""Shared fixtures: tiny random BERT models built in-process (nothing is downloaded)."""
from __future__ import annotations

import gc
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import torch

if TYPE_CHECKING:
    from app.handlers import Studio
    from core import Engine

@pytest.fixture(autouse=True)
def _nothing_stays_frozen():
    """Preparing a model freezes what is alive (core.runtime.freeze_long_lived): thawed after each test, so
    that no test's leftovers escape the collections of the tests after it."""
    yield
    gc.unfreeze()


# Engine.load judges analogies' grammar with the packaged Gemma 3 270M when it is installed (core/vec2sent/fluency.py):
# 268M parameters, under a minute to de-quantise the first time, seconds after. Tests use tiny models; those that need a
# fluency model set one (tests/test_fluency.py, the real-model tests).
os.environ["DEFSENT_FLUENCY_MODEL"] = "none"

# Tiny models gain nothing from intra-op threads, and on a busy 2-core machine OpenMP threads that
# wait on each other make them many times slower.
torch.set_num_threads(1)

TINY_WORDS = (
    "a an the of to in is who which that person people thing place animal small large "
    "in charge leader boss chief king queen dog cat house water fire tree run walk eat "
    "drink good bad happy sad red blue music song book car road city river mountain "
    "doctor teacher child man woman boy girl food bread wine pizza italy visit name"
).split()
TINY_SPECIALS = ["[PAD]", "[unused0]", "[unused1]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
TINY_PIECES = [".", ",", ";", "(", ")", "'", "-", "!", "?", "##s", "##ing", "##ed", "##er"]


def write_tiny_vocab(directory: Path) -> list[str]:
    words = sorted(set(TINY_WORDS) | set("abcdefghijklmnopqrstuvwxyz"))
    vocab = TINY_SPECIALS + TINY_PIECES + words
    (directory / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    return vocab


def build_tiny_bert(directory: Path, with_mlm_head: bool = True, hidden: int = 32, seed: int = 0) -> Path:
    """Save a tiny random BERT (with or without an MLM head) and its tokenizer to `directory`."""
    import torch
    from transformers import BertConfig, BertForMaskedLM, BertModel, BertTokenizerFast

    directory.mkdir(parents=True, exist_ok=True)
    vocab = write_tiny_vocab(directory)
    config = BertConfig(
        vocab_size=len(vocab), hidden_size=hidden, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=2 * hidden, max_position_embeddings=64,
    )
    torch.manual_seed(seed)
    model = BertForMaskedLM(config) if with_mlm_head else BertModel(config, add_pooling_layer=False)
    model.save_pretrained(directory)
    BertTokenizerFast(vocab={token: i for i, token in enumerate(vocab)}, do_lower_case=True).save_pretrained(directory)
    return directory


@pytest.fixture(scope="session")
def tiny_mlm_dir(tmp_path_factory) -> Path:
    """A tiny random BertForMaskedLM (has a real MLM head)."""
    return build_tiny_bert(tmp_path_factory.mktemp("tiny_mlm"), with_mlm_head=True)


@pytest.fixture(scope="session")
def tiny_base_dir(tmp_path_factory) -> Path:
    """A tiny random BertModel without an MLM head, like all-MiniLM-L6-v2."""
    return build_tiny_bert(tmp_path_factory.mktemp("tiny_base"), with_mlm_head=False)


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """../shared beside the repository; tests that need it skip when it is absent."""
    path = Path(__file__).resolve().parents[1].parent / "shared"
    if not path.is_dir():
        pytest.skip("../shared is not present (it exists in dev sessions and CI only)")
    return path


# The app's handlers against a tiny engine (tests/test_app*.py, test_finetune_settings.py,
# test_upload_memory.py). Each of those modules puts the cache in tmp_path for every test with
# `pytestmark = pytest.mark.usefixtures("cache_in_tmp")`.
DEFINITIONS = {"dog": "an animal that barks", "cat": "a small animal that says meow", "king": "a man who rules",
               "queen": "a woman who rules", "river": "water that runs to the sea", "bread": "food made of flour",
               "car": "a thing to drive on a road", "teacher": "a person who helps a child learn",
               "song": "music with words", "tree": "a large plant with wood", "house": "a place to live",
               "fire": "it is hot and burns", "wine": "a drink made of grapes", "road": "a way for cars",
               "doctor": "a person who treats the sick", "city": "a large town", "book": "pages to read",
               "boy": "a young man", "girl": "a young woman", "water": "what you drink"}


@pytest.fixture
def cache_in_tmp(tmp_path, monkeypatch):
    monkeypatch.setenv("DEFSENT_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture(scope="module")
def engine(tiny_mlm_dir) -> Engine:
    from core import Engine

    return Engine.from_base(str(tiny_mlm_dir))


@pytest.fixture
def studio(engine, tiny_mlm_dir, tmp_path) -> Studio:
    return make_studio(engine, tiny_mlm_dir, tmp_path)


def make_studio(engine, tiny_mlm_dir: Path, folder: Path) -> Studio:
    """The app's handlers serving `engine`, saving models under `folder`."""
    from app.handlers import Studio
    from app.shared.jobs import JobManager
    from app.shared.models import Models, ModelSpec
    from app.views.projection import Projector

    models = Models.from_engine(engine, ModelSpec("tiny", base=str(tiny_mlm_dir)), folder / "checkpoints")
    return Studio(models, Projector(), JobManager())


@pytest.fixture
def dictionary_file(tmp_path) -> Path:
    path = tmp_path / "mine.tsv"
    path.write_text("word\tdefinition\n" + "".join(f"{w}\t{d}\n" for w, d in DEFINITIONS.items())
                    + "zzzz\tnot a word the head knows\n", encoding="utf-8")
    return path


# The app's finite background threads: model loads and their warm-ups (app/shared/models.py), a model's own
# vectors and its definitions placed on the map (app/shared/jobs.py in_background).
BACKGROUND_THREADS = ("load-model", "own-vectors", "definitions-on-the-map", "map-of-every-word")


def pytest_sessionfinish(session, exitstatus):
    """Wait for the model loads and warm-ups that tests started: a daemon thread still inside torch
    when the interpreter exits aborts the process (std::terminate, exit code 134) after all passed."""
    for thread in threading.enumerate():
        if thread.name in BACKGROUND_THREADS:
            thread.join(300)
