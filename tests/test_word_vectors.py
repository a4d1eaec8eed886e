"""Word vectors (each word's own embedding) as the reverse dictionary's second score, on tiny models."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from core import CheckpointError, Engine
from core.checkpoint import MANIFEST
from core.lexicon.dictionary import Entry
from core.train import TrainConfig, TrainingCancelled, train
from core.words.word_eval import evaluate_words
from core.cli import main
from core.words.word_vectors import WORD_VECTORS, WordVectors

ENTRIES = [Entry("dog", "a small animal that people keep"), Entry("king", "the man in charge of the city"),
           Entry("river", "water that runs to the sea"), Entry("bread", "food made of flour")]


@pytest.fixture
def engine(tiny_mlm_dir) -> Engine:
    return Engine.from_base(str(tiny_mlm_dir))


def test_scores_are_scaled_cosines_on_their_ids_and_zero_elsewhere():
    rng = np.random.default_rng(0)
    w, u = rng.normal(size=(3, 4)).astype(np.float32), rng.normal(size=(2, 4)).astype(np.float32)
    vectors = WordVectors(torch.tensor([5, 1, 7]), torch.from_numpy(w), scale=2.0)
    scores = vectors.scores(torch.from_numpy(u), vocab_size=9).numpy()  # (2, 9)
    cos = (u / np.linalg.norm(u, axis=1, keepdims=True)) @ (w / np.linalg.norm(w, axis=1, keepdims=True)).T
    np.testing.assert_allclose(scores[:, [5, 1, 7]], 2.0 * cos, atol=1e-6)
    assert not scores[:, [0, 2, 3, 4, 6, 8]].any()


def test_int8_file_keeps_ids_and_cosines(tmp_path):
    w = torch.randn(50, 16)
    vectors = WordVectors(torch.arange(100, 150), w, scale=3.0)
    vectors.save(tmp_path / "wv.safetensors")
    loaded = WordVectors.load(tmp_path / "wv.safetensors", scale=3.0)
    assert torch.equal(loaded.ids, vectors.ids)
    assert (loaded.vectors * vectors.vectors).sum(1).min() > 0.999  # same directions
    with pytest.raises(ValueError, match="ids"):
        WordVectors(torch.arange(3), torch.randn(4, 16))


def test_word_scores_add_the_cosine_term_and_a_word_finds_itself(engine):
    engine.words.set_precision("float32")  # exact sums (int8 products: test_precision.py)
    head_only = engine.words.logits(engine.encode(["king"]))
    engine.add_word_vectors(scale=1000.0)
    u = engine.encode(["king"])
    expected = head_only + engine.words.vectors.scores(torch.from_numpy(u), head_only.shape[1])
    torch.testing.assert_close(engine.words.logits(u), expected)
    assert engine.predict_words("king", k=1, exclude_query_words=False)[0][0] == "king"  # cos(u("king"), w_king) = 1
    assert len(engine.words.vectors.ids) == int(engine.words.vocab.candidate_mask.sum())
    engine.add_word_vectors(scale=0)
    assert engine.words.vectors is None


def test_checkpoint_round_trip_and_untrained_load_uses_the_base(engine, tmp_path):
    engine.add_word_vectors(scale=7.0)
    base_vectors = engine.words.vectors.vectors.clone()
    weight = engine.encoder.backbone.encoder.layer[-1].output.dense.weight
    with torch.no_grad():  # "train": the saved encoder differs from its base
        weight.add_(0.2 * torch.randn(weight.shape, generator=torch.Generator().manual_seed(0)))
    engine.add_word_vectors(scale=7.0)
    path = engine.save(tmp_path / "ckpt")
    manifest = json.loads((path / MANIFEST).read_text())
    assert manifest["word_vectors"]["scale"] == 7.0 and (path / WORD_VECTORS).is_file()
    assert all(f.stat().st_mode & 0o777 == 0o644 for f in path.iterdir())  # readable like any folder
    loaded = Engine.load(path)
    assert loaded.words.vectors.scale == 7.0
    text = ["water that runs to the sea"]
    for e in (engine, loaded):  # int8 on disk vs float32 in memory: compare without int8 products too
        e.words.set_precision("float32")
    assert [w for w, _ in loaded.predict_words(text[0])] == [w for w, _ in engine.predict_words(text[0])]
    untrained = Engine.load(path, untrained=True)  # word vectors of the base encoder itself
    assert untrained.words.vectors.scale == 7.0
    np.testing.assert_allclose(untrained.words.vectors.vectors.numpy(), base_vectors.numpy(), atol=1e-6)
    assert not torch.allclose(base_vectors, engine.words.vectors.vectors, atol=1e-3)


def test_save_word_scoring_keeps_encoder_files_and_fingerprint(engine, tmp_path):
    path = engine.save(tmp_path / "ckpt", metrics={"test": {"mrr": 0.1}})
    before = {f.name: f.read_bytes() for f in path.iterdir() if f.name != MANIFEST}
    loaded = Engine.load(path)
    fingerprint = loaded.fingerprint
    loaded.add_word_vectors(scale=4.0)
    loaded.save_word_scoring(path, metrics={"test, word vectors": {"mrr": 0.2}})
    assert json.loads((path / MANIFEST).read_text())["metrics"] == {"test": {"mrr": 0.1},
                                                                     "test, word vectors": {"mrr": 0.2}}
    assert all((path / name).read_bytes() == data for name, data in before.items())
    reloaded = Engine.load(path)
    assert reloaded.fingerprint == fingerprint and reloaded.words.vectors.scale == 4.0
    reloaded.add_word_vectors(scale=0)
    reloaded.save_word_scoring(path)  # scale 0: removed again
    assert not (path / WORD_VECTORS).exists() and "word_vectors" not in json.loads((path / MANIFEST).read_text())


def test_save_word_scoring_refuses_a_checkpoint_of_another_base(engine, tmp_path):
    path = engine.save(tmp_path / "other")
    manifest = json.loads((path / MANIFEST).read_text())
    manifest["base"]["fingerprint"] = "0" * 16
    (path / MANIFEST).write_text(json.dumps(manifest))
    engine.add_word_vectors(scale=1.0)
    with pytest.raises(CheckpointError, match="another base"):
        engine.save_word_scoring(path)
    assert not (path / WORD_VECTORS).exists()


def test_training_recomputes_word_vectors_with_the_trained_encoder(engine):
    engine.add_word_vectors(scale=5.0)
    stale = engine.words.vectors.vectors.clone()
    train(engine, ENTRIES, ENTRIES, TrainConfig(lr=3e-3, max_steps=4, batch_size=4, eval_every=2,
                                                word_vector_scale=6.0))
    fresh = engine.encode([engine.words.vocab.words[i] for i in engine.words.vectors.ids.tolist()])
    fresh /= np.linalg.norm(fresh, axis=1, keepdims=True)
    np.testing.assert_allclose(engine.words.vectors.vectors.numpy(), fresh, atol=1e-5)
    assert engine.words.vectors.scale == 6.0 and not torch.allclose(engine.words.vectors.vectors, stale)
    train(engine, ENTRIES, ENTRIES, TrainConfig(max_steps=1, batch_size=4, word_vector_scale=0))
    assert engine.words.vectors is None


def test_cancelled_training_keeps_the_starting_word_vectors(engine):
    engine.add_word_vectors(scale=5.0)
    start = engine.words.vectors
    with pytest.raises(TrainingCancelled):
        train(engine, ENTRIES, ENTRIES, TrainConfig(max_steps=5, batch_size=4), should_stop=lambda: True)
    assert engine.words.vectors is start


def test_cli_writes_word_vectors_into_a_checkpoint(engine, tmp_path, capsys):
    path = engine.save(tmp_path / "ckpt")
    assert main(["word-vectors", "--model", str(path), "--write", "--scale", "12", "--record-split"]) == 0
    assert "scale 12" in capsys.readouterr().out
    assert Engine.load(path).words.vectors.scale == 12.0


def test_word_vector_objective_trains_through_the_cosine_term(engine):
    config = TrainConfig(lr=3e-3, max_steps=20, batch_size=4, eval_every=10, seed=1, word_vector_scale=20.0,
                         word_vector_objective=True, hub_weight=0.0)  # scored as during selection
    result = train(engine, ENTRIES, ENTRIES, config)
    assert result.best_dev["mrr"] > result.history[0]["mrr"]
    u = torch.from_numpy(engine.encode(["king"])).requires_grad_(True)
    engine.words.vectors.scores(u, len(engine.words.vocab)).sum().backward()
    assert u.grad.abs().sum() > 0  # the loss reaches the encoder through cos(u, w)
    assert evaluate_words(engine, ENTRIES)["mrr"] == pytest.approx(result.best_dev["mrr"], abs=1e-4)

