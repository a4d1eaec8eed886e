"""Shared fixtures: tiny random BERT models built in-process (nothing is downloaded)."""
from __future__ import annotations

import threading
from pathlib import Path

import pytest
import torch

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


# The app's finite background threads: model loads and their warm-ups (app/models.py).
BACKGROUND_THREADS = ("load-model",)


def pytest_sessionfinish(session, exitstatus):
    """Wait for the model loads and warm-ups that tests started: a daemon thread still inside torch
    when the interpreter exits aborts the process (std::terminate, exit code 134) after all passed."""
    for thread in threading.enumerate():
        if thread.name in BACKGROUND_THREADS:
            thread.join(300)
