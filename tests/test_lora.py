"""Low-rank training (core/lora.py): exact factors in the checkpoint, base weights untouched."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from safetensors.torch import load_file
from torch import nn

from core import Engine
from core.checkpoint import MANIFEST
from core.engine import ENCODER_DELTA
from core.lora import (add_low_rank, dense_delta, factored_delta, is_low_rank, low_rank_targets,
                       merge_low_rank)
from core.train import TrainConfig, TrainingCancelled, train
from tests.test_train import ENTRIES, GLOSSARY

CONFIG = dict(lr=1e-2, max_steps=30, batch_size=8, eval_every=10, seed=1, word_vector_scale=0, hub_weight=0.0)


def _non_target_state(engine) -> dict[str, torch.Tensor]:
    targets = {f"backbone.{name}.weight" for name in low_rank_targets(engine.encoder.backbone)}
    return {k: v.clone() for k, v in engine.encoder.state_dict().items() if k not in targets}


def test_a_new_delta_starts_at_zero_and_only_the_factors_train(tiny_mlm_dir):
    engine = Engine.from_base(str(tiny_mlm_dir))
    before = engine.encode(["a dog that runs"])
    factors = add_low_rank(engine.encoder.backbone, rank=2)
    # 2 layers x (query, key, value, attention output, intermediate, output) = 12 matrices
    assert len(factors) == 2 * 12
    assert [p for p in engine.encoder.parameters() if p.requires_grad] == factors
    np.testing.assert_array_equal(engine.encode(["a dog that runs"]), before)  # B = 0
    with pytest.raises(ValueError, match="positive"):
        add_low_rank(nn.Module(), 0)


def test_merge_gives_plain_layers_with_the_same_outputs(tiny_mlm_dir):
    engine = Engine.from_base(str(tiny_mlm_dir))
    add_low_rank(engine.encoder.backbone, rank=3)
    with torch.no_grad():
        for p in engine.encoder.parameters():
            if p.requires_grad:
                p.normal_(0, 0.05)
    parametrised = engine.encode(["a dog that runs", "the king"])
    factors = merge_low_rank(engine.encoder.backbone)
    assert not is_low_rank(engine.encoder.backbone) and len(factors) == 12
    np.testing.assert_allclose(engine.encode(["a dog that runs", "the king"]), parametrised, atol=1e-5)
    B, A = factors["encoder.layer.0.attention.self.query.weight"]
    assert B.shape == (32, 3) and A.shape == (3, 32)


def test_dense_and_factored_delta_round_trip_and_refuse_half_pairs():
    B, A = torch.randn(6, 2), torch.randn(2, 5)
    delta = {"w": B @ A, "bias": torch.ones(6)}
    stored = factored_delta(delta, {"w": (B, A)})
    assert set(stored) == {"w.lora_B", "w.lora_A", "bias"}
    torch.testing.assert_close(dense_delta(stored)["w"], B @ A)
    assert set(factored_delta({"w": B @ A + 1}, {"w": (B, A)})) == {"w"}  # changed since: stays dense
    with pytest.raises(ValueError, match="only one of its two factors"):
        dense_delta({"w.lora_B": B})


def test_low_rank_training_learns_leaves_other_weights_and_saves_small_exact_factors(tiny_mlm_dir, tmp_path):
    engine = Engine.from_base(str(tiny_mlm_dir))
    untouched = _non_target_state(engine)
    result = train(engine, ENTRIES, ENTRIES, TrainConfig(lora_rank=2, **CONFIG))
    assert result.best_dev["mrr"] > result.history[0]["mrr"]
    assert not is_low_rank(engine.encoder.backbone) and len(engine.low_rank) == 12
    assert all(torch.equal(v, untouched[k]) for k, v in _non_target_state(engine).items())
    trained = engine.encode(["a dog that runs"])

    engine.save(tmp_path / "lora")
    stored = load_file(str(tmp_path / "lora" / ENCODER_DELTA))
    assert all(k.endswith((".lora_A", ".lora_B")) for k in stored) and len(stored) == 24
    manifest = json.loads((tmp_path / "lora" / MANIFEST).read_text())
    assert manifest["encoder_delta"]["low_rank"] == {"matrices": 12, "rank": 2}
    # per layer: 4 attention matrices (32, 32) and 2 feed-forward ones (64, 32) or (32, 64), rank 2
    assert manifest["encoder_delta"]["parameters"] == 2 * (4 * 2 * (32 + 32) + 2 * 2 * (32 + 64))
    loaded = Engine.load(tmp_path / "lora")
    np.testing.assert_allclose(loaded.encode(["a dog that runs"]), trained, atol=1e-3)  # fp16 factors
    assert set(loaded.low_rank) == set(engine.low_rank)


def test_a_second_low_rank_run_adds_its_factors(tiny_mlm_dir, tmp_path):
    engine = Engine.from_base(str(tiny_mlm_dir))
    train(engine, ENTRIES, ENTRIES, TrainConfig(lora_rank=2, **CONFIG))
    train(engine, ENTRIES, ENTRIES, TrainConfig(lora_rank=1, **{**CONFIG, "seed": 2}))
    assert engine.low_rank["backbone.encoder.layer.1.output.dense.weight"][1].shape == (3, 64)
    trained = engine.encode(["the king"])
    engine.save(tmp_path / "twice")
    assert json.loads((tmp_path / "twice" / MANIFEST).read_text())["encoder_delta"]["low_rank"]["rank"] == 3
    np.testing.assert_allclose(Engine.load(tmp_path / "twice").encode(["the king"]), trained, atol=1e-3)


def test_cancelled_low_rank_run_restores_plain_base_weights(tiny_mlm_dir):
    engine = Engine.from_base(str(tiny_mlm_dir))
    before = {k: v.clone() for k, v in engine.encoder.state_dict().items()}
    steps = iter(range(100))
    with pytest.raises(TrainingCancelled):
        train(engine, ENTRIES, ENTRIES, TrainConfig(lora_rank=2, **CONFIG), should_stop=lambda: next(steps) >= 3)
    assert not is_low_rank(engine.encoder.backbone) and engine.low_rank == {}
    after = engine.encoder.state_dict()
    assert set(after) == set(before) and all(torch.equal(after[k], v) for k, v in before.items())


def test_a_low_rank_run_of_a_model_with_a_word_tower_evaluates_its_own_words(tiny_mlm_dir):
    """The shipped model has a word tower; its factors are keyed by plain weight names, which a low-rank
    run's parametrised layers rename: the first dev evaluation failed ("factors for weights the encoder
    does not have")."""
    from core.words.word_tower import word_tower

    engine = Engine.from_base(str(tiny_mlm_dir))
    names = list(low_rank_targets(engine.encoder.backbone))[:2]
    g = torch.Generator().manual_seed(0)
    engine.words.tower = {f"{n}.weight": (torch.randn(32, 2, generator=g) * 0.1, torch.randn(2, 32, generator=g) * 0.1)
                          for n in names if "intermediate" not in n and "output.dense" not in n}
    add_low_rank(engine.encoder.backbone, rank=2)
    with torch.no_grad():
        for p in engine.encoder.parameters():
            if p.requires_grad:
                p.normal_(0, 0.05)
    during = word_tower(engine.encoder, engine.words.tower).encode(["a dog that runs"])
    assert is_low_rank(engine.encoder.backbone)  # the encoder being trained keeps its delta
    merge_low_rank(engine.encoder.backbone)
    np.testing.assert_allclose(word_tower(engine.encoder, engine.words.tower).encode(["a dog that runs"]), during,
                               atol=1e-5)  # the tower of a low-rank run = the tower of its merged weights
    config = TrainConfig(lr=3e-3, max_steps=4, batch_size=6, eval_every=2, seed=1, word_vector_scale=0,
                         hub_weight=0.0, own_words=True, lora_rank=2)
    result = train(engine, GLOSSARY[:6], GLOSSARY[6:], config)
    assert [h["n"] for h in result.history] == [2] * 3 and len(engine.low_rank) == 12


def test_low_rank_and_top_layers_are_exclusive(tiny_mlm_dir):
    engine = Engine.from_base(str(tiny_mlm_dir))
    with pytest.raises(ValueError, match="give one"):
        train(engine, ENTRIES, ENTRIES, TrainConfig(lora_rank=2, trainable_layers=1, **CONFIG))
    assert not is_low_rank(engine.encoder.backbone)



def test_the_delta_is_converted_and_added_as_torch_does_it():
    from core.lora import add_into, float32

    g = torch.Generator().manual_seed(0)
    half = (torch.randn(300, 200, generator=g) * 3).half()
    for t in (half, half.T, half[::2], torch.randn(5, generator=g).bfloat16(), torch.randn(4, 3, generator=g)):
        assert float32(t).dtype == torch.float32 and torch.equal(float32(t), t.float())
    weight = torch.nn.Parameter(torch.randn(300, 200, generator=g))
    expected = weight.detach().clone().add_(float32(half))
    version = weight._version
    add_into(weight, float32(half))
    assert torch.equal(weight.detach(), expected) and weight._version > version and weight.requires_grad
    other = torch.randn(300, 200, generator=g, dtype=torch.float64)  # another dtype: torch's own add_
    expected = weight.detach().clone().add_(other.to(weight))
    add_into(weight, other)
    assert torch.equal(weight.detach(), expected)
