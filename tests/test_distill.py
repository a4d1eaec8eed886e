"""Distillation from a teacher encoder: sentence selection, cached teacher vectors, the linear map,
and training that brings the student closer to the teacher (tiny models built in-process)."""
from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
import torch

from core import Engine
from core.checkpoint import MANIFEST
from core.dictionary import Entry
from core.distill import Distillation, TeacherMap, distillation_sentences, teacher_vectors
from core.cli import main as cli
from core.train import TrainConfig, train

ENTRIES = [Entry("dog", "a small animal"), Entry("king", "the man in charge"), Entry("river", "water that runs"),
           Entry("bread", "food made of flour"), Entry("tree", "a large plant")]
SENTENCES = [f"the {a} {b} in the {c}" for a, b, c in itertools.islice(
    itertools.product(["good", "bad", "happy", "sad"], ["dog", "cat", "king", "queen"], ["city", "house", "road"]), 48)]


def test_distillation_sentences_leave_out_held_out_definitions_and_sample_in_file_order(tmp_path):
    (tmp_path / "train.txt").write_text("a small animal.\nthe dog runs\n\nA Large  Plant\nwater is wet\n",
                                        encoding="utf-8")
    held_out = ["a small animal", "a large plant"]  # punctuation, case and spacing do not matter
    assert distillation_sentences(tmp_path, held_out) == ["the dog runs", "water is wet"]
    sample = distillation_sentences(tmp_path, [], limit=3, seed=1)
    assert len(sample) == 3 and sample == sorted(sample, key=["a small animal.", "the dog runs", "A Large  Plant",
                                                               "water is wet"].index)


def test_teacher_map_starts_at_the_least_squares_fit():
    rng = np.random.default_rng(0)
    student = rng.normal(size=(200, 6)).astype(np.float32)
    teacher = (student @ rng.normal(size=(6, 4)) + rng.normal(size=4)).astype(np.float32)  # exactly linear
    loss = TeacherMap(student, teacher).loss(torch.from_numpy(student), torch.from_numpy(teacher))
    assert loss.item() == pytest.approx(0.0, abs=1e-4)  # up to the small ridge
    noise = rng.normal(size=teacher.shape).astype(np.float32)
    assert TeacherMap(student, noise).loss(torch.from_numpy(student), torch.from_numpy(noise)).item() > 0.5


def test_teacher_vectors_are_unit_length_and_cached(tiny_base_dir, tmp_path, monkeypatch):
    vectors = teacher_vectors(tiny_base_dir, SENTENCES[:5], cache=tmp_path, show_progress=False)
    assert vectors.shape == (5, 32) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert [p.name.endswith(".partial.npy") for p in tmp_path.iterdir()] == [False]
    from core.encoder import SentenceEncoder

    def no_model(*args, **kwargs):
        raise RuntimeError("the teacher was loaded again")

    monkeypatch.setattr(SentenceEncoder, "from_pretrained", no_model)
    np.testing.assert_array_equal(teacher_vectors(tiny_base_dir, SENTENCES[:5], cache=tmp_path), vectors)
    with pytest.raises(RuntimeError, match="loaded again"):  # other sentences: another cache entry
        teacher_vectors(tiny_base_dir, SENTENCES[:4], cache=tmp_path)


def test_training_with_a_teacher_lowers_its_loss_on_held_out_sentences(tiny_mlm_dir):
    rng = np.random.default_rng(0)
    adjective, noun = rng.normal(size=(2, 4, 8))
    # a product of the two words' vectors: not linear in the student's bag of words, and learnable for a
    # held-out sentence from its siblings in the training sentences (same words, another place)
    targets = np.array([adjective[i // 12] * noun[i % 12 // 3] for i in range(len(SENTENCES))], np.float32)
    distill = Distillation(SENTENCES, targets / np.linalg.norm(targets, axis=1, keepdims=True))
    engine = Engine.from_base(str(tiny_mlm_dir))
    config = TrainConfig(lr=1e-3, max_steps=100, batch_size=4, eval_every=50, word_vector_scale=0,
                         hub_weight=0.0, distill_weight=5.0, distill_batch=8)
    history = train(engine, ENTRIES, ENTRIES, config, distill=distill).history
    assert [h["step"] for h in history] == [0, 50, 100]
    assert history[-1]["teacher_loss"] < 0.8 * history[0]["teacher_loss"]


def test_cli_distils_from_a_teacher_and_records_it(tiny_base_dir, tiny_mlm_dir, tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "train.txt").write_text("\n".join(SENTENCES) + "\n", encoding="utf-8")
    dictionary = tmp_path / "dict.tsv"
    words = "dog cat king queen house water fire tree book car road city river mountain doctor teacher".split()
    dictionary.write_text("\n".join(["word\tdefinition"] + [f"{w}\ta good {w} {i}" for i in range(3) for w in words]),
                          encoding="utf-8")
    out = tmp_path / "ckpt"
    assert cli(["train", "--out", str(out), "--base", str(tiny_mlm_dir), "--dictionary", str(dictionary),
                 "--max-steps", "2", "--batch-size", "4", "--eval-every", "1", "--senteval", str(tmp_path / "absent"),
                 "--distill-from", str(tiny_base_dir), "--distill-corpus", str(corpus),
                 "--distill-sentences", "40", "--distill-batch", "4"]) == 0
    training = json.loads((out / MANIFEST).read_text())["training"]
    assert training["distill"] == {"teacher": str(tiny_base_dir), "sentences": 40, "dim": 32}
    assert all("teacher_loss" in h for h in training["result"]["history"])
    assert len(list((corpus / "teacher-vectors").glob("*.npy"))) == 1
