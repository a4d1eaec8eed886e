"""Encoder, word head and Engine on tiny random models built in-process."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from core import CheckpointError, Engine
from core.checkpoint import MANIFEST, list_checkpoints, safe_checkpoint_name
from core.encoder import pool
from core.words.word_head import WordHead, WordHeadConfig


@pytest.fixture(scope="module")
def engine(tiny_mlm_dir) -> Engine:
    return Engine.from_base(str(tiny_mlm_dir))


def test_pooling_ignores_padding():
    hidden = torch.tensor([[[1.0, 2.0], [3.0, 4.0], [100.0, -100.0]]])  # (1, 3, 2), last is padding
    mask = torch.tensor([[1, 1, 0]])
    assert pool(hidden, mask, "cls").tolist() == [[1.0, 2.0]]
    assert pool(hidden, mask, "mean").tolist() == [[2.0, 3.0]]
    assert pool(hidden, mask, "max").tolist() == [[3.0, 4.0]]
    with pytest.raises(ValueError, match="unknown pooling"):
        pool(hidden, mask, "sum")


def test_encode_shape_order_and_batching(engine):
    texts = ["a dog", "the king of the city in the mountain", "water", "a small red car"]
    full = engine.encode(texts, batch_size=64)
    assert full.shape == (4, engine.encoder.hidden_size) and full.dtype == np.float32
    one_by_one = np.stack([engine.encode([t])[0] for t in texts])
    np.testing.assert_allclose(full, one_by_one, atol=1e-5)  # length sorting restores the order
    np.testing.assert_allclose(engine.encode(texts, batch_size=3), full, atol=1e-5)
    unit = engine.encode(texts, normalize=True)
    np.testing.assert_allclose(np.linalg.norm(unit, axis=1), 1.0, atol=1e-5)


@pytest.mark.parametrize("bad", ["", "   ", "\n\t"])
def test_empty_text_is_rejected(engine, bad):
    with pytest.raises(ValueError, match="empty"):
        engine.encode(["fine", bad])
    with pytest.raises(ValueError, match="empty"):
        engine.predict_words(bad)


def test_long_text_is_truncated_with_warning(engine):
    with pytest.warns(UserWarning, match="truncated"):
        vec = engine.encode(["dog " * 500])
    assert vec.shape == (1, engine.encoder.hidden_size)


def test_head_copied_from_mlm_matches_transformers(tiny_mlm_dir):
    from transformers import AutoModelForMaskedLM
    mlm = AutoModelForMaskedLM.from_pretrained(str(tiny_mlm_dir)).eval()
    head = WordHead.from_mlm_head(mlm.cls.predictions, mlm.bert.get_input_embeddings().weight)
    u = torch.randn(3, mlm.config.hidden_size)
    with torch.no_grad():
        torch.testing.assert_close(head(u), mlm.cls(u), atol=1e-5, rtol=1e-5)


def test_predict_words_returns_only_whole_words(engine):
    words = engine.predict_words("a person who is in charge", k=50)
    assert len(words) == 50
    for word, p in words:
        assert word.isalpha() and not word.startswith("##") and "[" not in word, word
        assert 0.0 <= p <= 1.0
    probs = [p for _, p in words]
    assert probs == sorted(probs, reverse=True)


def test_predict_words_filters_are_masks_before_topk(engine):
    initial_d = [w for w, _ in engine.predict_words("an animal", k=3, initial="d")]
    assert len(initial_d) == 3 and all(w.startswith("d") for w in initial_d)
    four_letters = [w for w, _ in engine.predict_words("an animal", k=5, min_length=4, max_length=4)]
    assert len(four_letters) == 5 and all(len(w) == 4 for w in four_letters)
    got = [w for w, _ in engine.predict_words("an animal", k=10, pattern="?o*")]
    assert got and all(len(w) >= 2 and w[1] == "o" for w in got)
    excluded = [w for w, _ in engine.predict_words("dog king", k=100, exclude_query_words=True)]
    assert "dog" not in excluded and "king" not in excluded


def test_predict_words_batch_matches_single(engine):
    texts = ["a dog", "a large city"]
    batch = engine.predict_words_batch(texts, k=5)
    for text, ranked in zip(texts, batch):
        single = engine.predict_words(text, k=5)
        assert [w for w, _ in single] == [w for w, _ in ranked]


def test_a_word_query_asks_the_open_vocabulary_once_whether_to_enable_it(engine, monkeypatch):
    asked = []
    monkeypatch.setattr(engine.vocabulary, "use_now", lambda: asked.append("use_now"))
    engine.predict_words_batch(["a domestic animal", "a large cat"], k=3)
    assert asked == ["use_now"]  # before encoding; ranking the vectors does not ask again
    engine.rank_words(engine.encode(["a large cat"]), k=3)
    assert asked == ["use_now"] * 2


def test_similarity_and_semantic_search(engine):
    texts = ["a dog", "a cat", "the river"]
    sim = engine.similarity(texts, texts)
    np.testing.assert_allclose(np.diag(sim), 1.0, atol=1e-5)
    emb = engine.encode(texts)
    hits = Engine.semantic_search(emb[:1], emb, top_k=2)
    assert hits[0][0] == {"corpus_id": 0, "score": pytest.approx(1.0, abs=1e-5)}
    assert len(hits[0]) == 2 and hits[0][0]["score"] >= hits[0][1]["score"]


def test_save_load_roundtrip_stores_only_changes(engine, tmp_path):
    trained = Engine.from_base(engine.base_source)
    with torch.no_grad():
        trained.encoder.backbone.encoder.layer[-1].output.dense.weight.add_(0.01)
    path = trained.save(tmp_path / "ckpt", training={"note": "test"})
    manifest = json.loads((path / MANIFEST).read_text())
    assert manifest["encoder_delta"]["tensors"] == 1
    assert manifest["base"]["fingerprint"] == engine.base_fingerprint
    loaded = Engine.load(path)
    text = ["a person who is in charge"]
    np.testing.assert_allclose(loaded.encode(text), trained.encode(text), atol=1e-3)
    untrained = Engine.load(path, untrained=True)
    np.testing.assert_allclose(untrained.encode(text), engine.encode(text), atol=1e-6)
    assert loaded.fingerprint != untrained.fingerprint
    assert list_checkpoints(tmp_path) == [path]


def test_load_refuses_other_base(tiny_mlm_dir, tmp_path):
    path = Engine.from_base(str(tiny_mlm_dir)).save(tmp_path / "ckpt")
    manifest = json.loads((path / MANIFEST).read_text())
    manifest["base"]["fingerprint"] = "0" * 16
    (path / MANIFEST).write_text(json.dumps(manifest))
    with pytest.raises(CheckpointError, match="different base model"):
        Engine.load(path)


def test_failed_save_keeps_previous_checkpoint(engine, tmp_path, monkeypatch):
    path = engine.save(tmp_path / "ckpt")
    before = {f.name: f.read_bytes() for f in path.iterdir()}
    import core.engine as engine_module

    def broken_write(*args, **kwargs):
        raise OSError("disk full")
    monkeypatch.setattr(engine_module, "write_json", broken_write)
    with pytest.raises(OSError, match="disk full"):
        engine.save(path)
    assert {f.name: f.read_bytes() for f in path.iterdir()} == before
    assert [p.name for p in tmp_path.iterdir()] == ["ckpt"]  # no temporary left behind


def test_missing_or_broken_checkpoint_is_refused(tmp_path):
    with pytest.raises(CheckpointError, match="no checkpoint"):
        Engine.load(tmp_path / "nope")
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / MANIFEST).write_text("{not json")
    with pytest.raises(CheckpointError, match="not valid JSON"):
        Engine.load(tmp_path / "broken")


@pytest.mark.parametrize("name", ["../evil", "/abs/path", "a;rm -rf", "", ".hidden", "a" * 65, "x/y", "..", "$(id)"])
def test_unsafe_checkpoint_names_are_rejected(name):
    with pytest.raises(ValueError, match="invalid checkpoint name"):
        safe_checkpoint_name(name)


def test_safe_checkpoint_name_accepts_plain_names():
    assert safe_checkpoint_name("my-model_v1.2") == "my-model_v1.2"


def test_part_of_speech_filter_uses_the_dictionary(engine):
    nouns = [w for w, _ in engine.predict_words("an animal", k=5, pos="n")]
    assert nouns and all("n" in engine.words.vocab._pos_of[w] for w in nouns)
    with pytest.raises(ValueError, match="unknown part of speech"):
        engine.predict_words("an animal", pos="x")


def test_bad_wildcard_is_a_clear_error(engine):
    with pytest.raises(ValueError, match="wildcard"):
        engine.predict_words("an animal", pattern="*" * 100)


def test_unit_rows_head_scores_against_equal_length_rows():
    E = torch.randn(12, 8) * torch.linspace(0.5, 3.0, 12)[:, None]  # rows of very different lengths
    head = WordHead(WordHeadConfig(8, 12, kind="identity", unit_rows=True), torch.nn.Parameter(E))
    rows = head.decoder_matrix()
    torch.testing.assert_close(rows.norm(dim=1), torch.full((12,), E.norm(dim=1).mean().item()))
    u = E[3:4] / E[3].norm()  # the direction of row 3: its best word whatever the lengths
    assert head(u).argmax().item() == 3
    plain = WordHead(WordHeadConfig(8, 12, kind="identity"), torch.nn.Parameter(E))
    torch.testing.assert_close(plain.decoder_matrix(), E)


def test_head_scores_follow_the_embeddings_through_its_cached_transpose():
    E = torch.randn(12, 8)
    head = WordHead(WordHeadConfig(8, 12, kind="identity"), E).eval()
    u = torch.randn(3, 8)
    torch.testing.assert_close(head(u), u @ E.T)
    E.mul_(2.0)  # an in-place change must not leave a stale copy behind
    torch.testing.assert_close(head(u), u @ E.T)
    head.config.unit_rows = True
    torch.testing.assert_close(head(u), u @ head.decoder_matrix().T)
