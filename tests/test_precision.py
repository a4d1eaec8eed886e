"""Encoding precision options (bfloat16 autocast, int8 dynamic quantisation) on a tiny engine."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from core import CheckpointError, Engine
from core.evaluation import paired_cosine

TEXTS = ["a dog", "the king of the city in the mountain", "water", "a small red car", "people eat bread"]


@pytest.fixture(scope="module")
def saved_checkpoint(tiny_base_dir, tmp_path_factory):
    engine = Engine.from_base(str(tiny_base_dir))
    return engine.save(tmp_path_factory.mktemp("ckpt") / "tiny")


@pytest.mark.parametrize("precision, min_cosine", [("bfloat16", 0.99), ("int8", 0.95)])
def test_reduced_precision_stays_close_to_float32(saved_checkpoint, precision, min_cosine):
    reference = Engine.load(saved_checkpoint)
    fast = Engine.load(saved_checkpoint, precision=precision)
    expected, got = reference.encode(TEXTS), fast.encode(TEXTS)
    assert got.dtype == np.float32 and got.shape == expected.shape
    assert paired_cosine(got, expected).min() > min_cosine
    assert fast.encoder.precision == precision and fast.fingerprint == reference.fingerprint


def test_int8_replaces_the_linear_layers_and_cannot_be_undone_or_saved(saved_checkpoint, tmp_path):
    engine = Engine.load(saved_checkpoint, precision="int8")
    linear = [m for m in engine.encoder.backbone.modules() if type(m) is torch.nn.Linear]
    assert not linear  # all quantised
    with pytest.raises(ValueError, match="cannot be undone"):
        engine.set_precision("float32")
    assert engine.encoder.precision == "int8"
    with pytest.raises(CheckpointError, match="inference only"):
        engine.save(tmp_path / "copy")
    assert not (tmp_path / "copy").exists()


def test_bfloat16_keeps_float32_weights_and_can_be_switched_back(saved_checkpoint):
    engine = Engine.load(saved_checkpoint)
    before = engine.encode(TEXTS)
    engine.set_precision("bfloat16")
    assert all(p.dtype == torch.float32 for p in engine.encoder.parameters())
    engine.set_precision("float32")
    np.testing.assert_array_equal(engine.encode(TEXTS), before)


def test_unknown_precision_is_refused_and_changes_nothing(saved_checkpoint):
    engine = Engine.load(saved_checkpoint)
    with pytest.raises(ValueError, match="unknown precision 'int4'"):
        engine.set_precision("int4")
    assert engine.encoder.precision == "float32"


@pytest.mark.parametrize("native, expected", [(True, "bfloat16"), (False, "float32")])
def test_auto_precision_follows_the_cpu(saved_checkpoint, monkeypatch, native, expected):
    import core.runtime.hardware

    monkeypatch.setattr(core.runtime.hardware, "native_bfloat16", lambda: native)
    engine = Engine.load(saved_checkpoint, precision="auto")
    assert engine.encoder.precision == expected


def test_rowwise_int8_product_is_close_to_float32_and_each_row_ignores_its_batch():
    from core.runtime.hardware import RowwiseInt8Product
    g = torch.Generator().manual_seed(0)
    matrix_t, x = torch.randn(16, 300, generator=g), torch.randn(5, 16, generator=g)  # (H, N), (B, H)
    x[0] *= 100  # a row with a far larger scale must not coarsen the others' quantisation
    product = RowwiseInt8Product(matrix_t)
    exact, approx = x @ matrix_t, product(x)  # (B, N)
    assert approx.shape == (5, 300)
    assert ((approx - exact).norm(dim=1) / exact.norm(dim=1)).max() < 0.02
    torch.testing.assert_close(product(x[1:2]), approx[1:2], atol=0, rtol=0)
    assert product(x[:0]).shape == (0, 300)


def test_int8_scoring_ranks_like_float32_and_never_serves_training(saved_checkpoint):
    engine = Engine.load(saved_checkpoint, decoder=None)
    engine.add_word_vectors(scale=5.0)
    u = torch.from_numpy(engine.encode(["a small animal that people keep", "water that runs to the sea"]))
    engine.words.set_precision("float32")
    exact = engine.words.logits(u)
    engine.words.set_precision("int8")
    approx = engine.words.logits(u)
    assert torch.equal(approx.topk(1).indices, exact.topk(1).indices)
    assert (approx - exact).abs().max() < 0.05 * exact.abs().max()
    u.requires_grad_(True)  # with a gradient wanted, the head and vectors compute in float32
    logits = engine.words.head(u, int8=True) + engine.words.vectors.scores(u, exact.shape[1], int8=True)
    assert logits.requires_grad
    torch.testing.assert_close(logits.detach(), engine.words.head(u).detach() + engine.words.vectors.scores(u, exact.shape[1]).detach())
    with pytest.raises(ValueError, match="scoring precision"):
        engine.words.set_precision("int4")
    assert engine.words.int8
