"""The transformer Vec2Sent decoder: warm start, cached decoding, checkpoints, training and resume."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from core.bert import load_bert
from core.vec2sent.checkpoint import load_checkpoint, read_checkpoint
from core.vec2sent.decode import beam_search, greedy_decode
from core.vec2sent.train import (RUN_STATE, TrainSettings, base_vocabulary, load_run, train_for_encoder)
from core.vec2sent.transformer import TransformerConfig, TransformerDecoder, prefix_mask, warm_start
from core.vec2sent.vocab import BOS, EOS
from tests.test_vec2sent import FIVE, SENT_DIM, make_link, manifest, one_thread, tokenizer  # noqa: F401

TRANSFORMER = {"architecture": "transformer", "prefix_length": 3, "dropout": 0.0}


@pytest.fixture(scope="module")
def vocab(tokenizer):
    return base_vocabulary(tokenizer)


def tiny_decoder(tiny_base_dir, tokenizer, vocab, seed: int = 0) -> TransformerDecoder:
    torch.manual_seed(seed)
    bert = json.loads((tiny_base_dir / "config.json").read_text())
    config = TransformerConfig(vocab_size=len(vocab), sent_dim=SENT_DIM, hidden=bert["hidden_size"],
                               layers=bert["num_hidden_layers"], heads=bert["num_attention_heads"],
                               intermediate=bert["intermediate_size"], prefix_length=3, dropout=0.0,
                               max_positions=bert["max_position_embeddings"], max_length=12)
    specials = tokenizer.convert_tokens_to_ids(["[PAD]", "[CLS]", "[SEP]", "[UNK]"])
    return warm_start(config, tiny_base_dir, vocab.encoder_ids, specials)


def test_prefix_mask_lets_text_see_the_prefix_and_its_past_only():
    mask = prefix_mask(2, 3)
    assert mask.tolist() == [[True, True, False, False, False],
                             [True, True, False, False, False],
                             [True, True, True, False, False],
                             [True, True, True, True, False],
                             [True, True, True, True, True]]


def test_base_vocabulary_leaves_out_specials_and_unused_slots(tokenizer, vocab):
    pieces = set(vocab.pieces[4:])
    assert not pieces & set(tokenizer.all_special_tokens)
    assert not any(p.startswith("[unused") for p in pieces)
    assert vocab.to_text(vocab.to_compact(tokenizer("the dog walks.", add_special_tokens=False)["input_ids"])) \
        == "the dog walks."


def test_warm_start_copies_the_base_layers_and_embeddings(tiny_base_dir, tokenizer, vocab):
    model = tiny_decoder(tiny_base_dir, tokenizer, vocab)
    bert, _ = load_bert(tiny_base_dir)
    dog = tokenizer.convert_tokens_to_ids("dog")
    assert torch.equal(model.embed.weight[vocab.to_compact([dog])[0]], bert.embeddings.word_embeddings.weight[dog])
    assert torch.equal(model.embed.weight[BOS], bert.embeddings.word_embeddings.weight[tokenizer.cls_token_id])
    assert torch.equal(model.layers[1].output.dense.weight, bert.encoder.layer[1].output.dense.weight)
    assert not model.training


@torch.no_grad()
def assert_cached_steps_match_the_full_pass(model, conditioning: torch.Tensor, inputs: torch.Tensor) -> torch.Tensor:
    """Decoding `inputs` (B, T) one piece at a time from the keys and values of `start` computes
    the logits of the full, masked forward pass (returned, (B, T, V)): the cache and the mask agree."""
    full = model(conditioning, inputs)  # (B, T, V)
    x, state = model.start(conditioning)
    stepped = []
    for t in range(inputs.shape[1]):
        logits, state = model.step(inputs[:, t:t + 1], x, state)
        stepped.append(logits)
    torch.testing.assert_close(torch.cat(stepped, 1), full, atol=1e-4, rtol=1e-4)
    return full


def test_cached_steps_give_the_teacher_forced_logits(tiny_base_dir, tokenizer, vocab):
    model = tiny_decoder(tiny_base_dir, tokenizer, vocab, seed=1)
    vectors = torch.randn(2, SENT_DIM)
    inputs = torch.tensor([[BOS, 10, 11, 12], [BOS, 20, 21, 22]])
    full = assert_cached_steps_match_the_full_pass(model, vectors, inputs)
    with torch.no_grad():
        x, state = model.start(vectors)
        two_at_once, _ = model.step(inputs[:, 2:], x, model.step(inputs[:, :2], x, state)[1])
    torch.testing.assert_close(two_at_once, full[:, 2:], atol=1e-4, rtol=1e-4)


def test_beam_of_one_equals_greedy_and_stops_at_max_length(tiny_base_dir, tokenizer, vocab):
    model = tiny_decoder(tiny_base_dir, tokenizer, vocab, seed=2)
    vectors = torch.randn(3, SENT_DIM, generator=torch.Generator().manual_seed(2))
    assert beam_search(model, vectors, width=1, max_length=9) == greedy_decode(model, vectors, max_length=9)
    with torch.no_grad():
        model.output_bias[EOS] = -1e4
    assert [len(ids) for ids in beam_search(model, vectors, width=3, max_length=7)] == [7, 7, 7]


def test_training_saves_a_loadable_checkpoint_and_resumes(tiny_base_dir, tokenizer, tmp_path):
    link = make_link(tokenizer)
    settings = TrainSettings(minutes=60, max_steps=6, batch_size=2, lr=1e-3, log_every=2, eval_every=1000,
                             save_every_minutes=60)
    overrides = {**TRANSFORMER, "base": str(tiny_base_dir)}
    out, runs = tmp_path / "decoder", tmp_path / "run"
    first = train_for_encoder(FIVE * 4, link, out, overrides, settings, val_size=2,
                              cache_dir=tmp_path / "cache", progress=False, run_dir=runs)
    assert first.steps == 6 and (runs / RUN_STATE).is_file()
    model, vocab, saved = read_checkpoint(out)
    assert isinstance(model, TransformerDecoder) and model.config.prefix_length == 3
    assert saved["training"]["warm_start"] == str(tiny_base_dir)
    decoder = load_checkpoint(out, encoder_fingerprint="fp-A", precision="float32")
    assert len(decoder.decode(np.random.default_rng(0).normal(size=(2, SENT_DIM)), beam_width=2)) == 2

    # a longer budget, resumed: the steps already taken count, and the weights go on from the run's
    more = TrainSettings(**{**settings.__dict__, "max_steps": 10})
    resumed = train_for_encoder(FIVE * 4, link, out, overrides, more, val_size=2, cache_dir=tmp_path / "cache",
                                progress=False, run_dir=runs, resume=True)
    assert resumed.steps == 10 and resumed.curve[0]["step"] == 2  # the first run's curve goes on
    assert load_run(runs).stats.steps == 10


def test_a_transformer_trained_further_from_init_on_another_corpus_keeps_its_vocabulary(tiny_base_dir, tokenizer,
                                                                                     tmp_path):
    link = make_link(tokenizer)
    settings = TrainSettings(minutes=60, max_steps=2, batch_size=2, lr=1e-3, log_every=2, eval_every=1000,
                             save_every_minutes=60)
    first = tmp_path / "first"
    train_for_encoder(FIVE * 4, link, first, {**TRANSFORMER, "base": str(tiny_base_dir)}, settings, val_size=2,
                      cache_dir=tmp_path / "cache", progress=False)
    other_corpus = [s.upper() + " again" for s in FIVE] * 4
    further = tmp_path / "further"
    train_for_encoder(other_corpus, link, further, {}, settings, val_size=2, cache_dir=tmp_path / "cache",
                      progress=False, init=first)  # no --architecture: the init's
    (model, vocab, saved), (_, first_vocab, _) = read_checkpoint(further), read_checkpoint(first)
    assert isinstance(model, TransformerDecoder) and vocab == first_vocab and saved["training"]["init"] == str(first)


def test_resuming_a_finished_run_changes_nothing(tiny_base_dir, tokenizer, tmp_path):
    link = make_link(tokenizer)
    settings = TrainSettings(minutes=60, max_steps=3, batch_size=2, log_every=1, save_every_minutes=60)
    overrides = {**TRANSFORMER, "base": str(tiny_base_dir)}
    kwargs = dict(val_size=2, cache_dir=tmp_path / "cache", progress=False, run_dir=tmp_path / "run")
    train_for_encoder(FIVE * 2, link, tmp_path / "out", overrides, settings, **kwargs)
    before = (tmp_path / "out" / "model.safetensors").read_bytes()
    stats = train_for_encoder(FIVE * 2, link, tmp_path / "out", overrides, settings, resume=True, **kwargs)
    assert stats.steps == 3
    assert (tmp_path / "out" / "model.safetensors").read_bytes() == before


def test_a_session_limit_stops_a_run_that_resume_finishes(tiny_base_dir, tokenizer, tmp_path):
    link = make_link(tokenizer)
    settings = TrainSettings(minutes=60, max_steps=4, batch_size=2, log_every=1, save_every_minutes=60,
                             session_minutes=0.0)
    overrides = {**TRANSFORMER, "base": str(tiny_base_dir)}
    kwargs = dict(val_size=2, cache_dir=tmp_path / "cache", progress=False, run_dir=tmp_path / "run")
    assert train_for_encoder(FIVE * 2, link, tmp_path / "out", overrides, settings, **kwargs).steps == 1
    assert (tmp_path / "out" / "model.safetensors").is_file()  # saved when the session ended
    rest = TrainSettings(**{**settings.__dict__, "session_minutes": None})
    assert train_for_encoder(FIVE * 2, link, tmp_path / "out", overrides, rest, resume=True, **kwargs).steps == 4


def test_zero_non_finite_and_wrong_size_vectors_get_clear_errors(tiny_base_dir, tokenizer, vocab):
    from core.vec2sent.checkpoint import Vec2Sent

    decoder = Vec2Sent(tiny_decoder(tiny_base_dir, tokenizer, vocab), vocab, manifest())
    good = np.ones((1, SENT_DIM), dtype=np.float32)
    assert len(decoder.decode(good)) == 1
    with pytest.raises(ValueError, match="vector 1 is zero"):
        decoder.decode(np.concatenate([good, np.zeros_like(good)]))
    with pytest.raises(ValueError, match="vector 0 is not finite"):
        decoder.decode(np.full_like(good, np.nan))
    with pytest.raises(ValueError, match=r"expects \(n, 24\)"):
        decoder.decode(np.ones((1, SENT_DIM + 1), dtype=np.float32))


CHILD = """
import sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from transformers import AutoTokenizer
from core.vec2sent.train import TrainSettings, train_for_encoder
from tests.test_vec2sent import FIVE, make_link
base, out, run = (Path(a) for a in sys.argv[2:5])
link = make_link(AutoTokenizer.from_pretrained(str(base)))
settings = TrainSettings(minutes=60, max_steps=int(sys.argv[5]), batch_size=2, log_every=1,
                         save_every_minutes=0.0)  # a save after every step: kills land in and between saves
train_for_encoder(FIVE * 2, link, out, {"architecture": "transformer", "prefix_length": 3, "dropout": 0.0,
                  "base": str(base)}, settings, val_size=2, cache_dir=out.parent / "cache", progress=False,
                  run_dir=run, resume=True)
"""


@pytest.mark.parametrize("delay", [0.0, 0.3])
def test_a_run_killed_at_any_moment_leaves_a_loadable_decoder_and_resumes(tiny_base_dir, tmp_path, delay):
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path

    repo = str(Path(__file__).resolve().parents[1])
    out, run = tmp_path / "out", tmp_path / "run"
    args = [sys.executable, "-c", CHILD, repo, str(tiny_base_dir), str(out), str(run)]
    child = subprocess.Popen([*args, "1000"])
    deadline = time.monotonic() + 120
    while not (run / RUN_STATE).is_file() and child.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(delay)
    child.send_signal(signal.SIGKILL)
    child.wait()
    model, vocab, manifest = read_checkpoint(out)  # whole, whenever the kill came
    steps = load_run(run).stats.steps
    assert steps >= 1 and sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith(".")) == \
        ["cache", "out", "run"]  # a half-written folder is never visible (a hidden one may be left)
    subprocess.run([*args, str(steps + 2)], check=True, timeout=120)
    assert not list(tmp_path.glob(".*tmp*"))  # the resumed run cleared the killed writer's leftovers
    assert load_run(run).stats.steps == steps + 2
    assert json.loads((out / "manifest.json").read_text())["training"]["steps"] == steps + 2


def test_a_recipe_that_goes_on_from_another_decoder_trains_that_one_first(tiny_mlm_dir, tiny_base_dir, tmp_path,
                                                                         monkeypatch, capsys):
    """recipes/vec2sent-*.json with "init_recipe": one command builds --init by that recipe while its run is
    unfinished, then goes on from it; run again, nothing is trained twice."""
    import core.vec2sent.train as training
    from core import Engine
    from core.cli import main

    monkeypatch.setattr(training, "RUNS_DIR", tmp_path / "runs")
    monkeypatch.setattr(training, "EMBEDDING_CACHE", tmp_path / "embeddings")
    encoder = Engine.from_base(str(tiny_mlm_dir)).save(tmp_path / "encoder")
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "train.txt").write_text("\n".join(FIVE * 4) + "\n", encoding="utf-8")
    shared = {"encoder": str(encoder), "corpus": str(corpus), "architecture": "transformer",
              "base": str(tiny_base_dir), "prefix_length": 3, "dropout": 0.0, "batch_size": 4, "minutes": 10.0,
              "eval_every": 1000, "sampled_negatives": 0}
    first, second = tmp_path / "first.json", tmp_path / "second.json"
    first.write_text(json.dumps({"flags": {**shared, "max_steps": 3}}))
    second.write_text(json.dumps({"init_recipe": str(first),
                                  "flags": {**shared, "max_steps": 2, "lr": 1e-4, "init": str(tmp_path / "base")}}))
    argv = ["vec2sent-train", "--recipe", str(second), "--out", str(tmp_path / "out")]

    def training(folder: str) -> dict:
        return json.loads((tmp_path / folder / "manifest.json").read_text())["training"]

    assert main(argv) == 0
    assert "first the decoder it goes on from" in capsys.readouterr().out
    assert training("base")["steps"] == 3
    assert (training("out")["init"], training("out")["steps"], training("out")["settings"]["lr"]) == (
        str(tmp_path / "base"), 2, 1e-4)
    assert training("out")["validation_sentences"] == 2  # a tenth of a corpus smaller than 5,000 sentences

    assert main([*argv, "--resume"]) == 0  # both finished: neither trains again
    assert "first the decoder" not in capsys.readouterr().out
    assert training("base")["steps"] == 3 and training("out")["steps"] == 2


def test_a_corpus_no_larger_than_its_validation_set_is_refused_not_trained_forever(tiny_base_dir, tokenizer, tmp_path):
    settings = TrainSettings(minutes=1, max_steps=2, batch_size=2)
    with pytest.raises(ValueError, match="a decoder trains on more than the 500 it is validated on"):
        train_for_encoder(FIVE * 4, make_link(tokenizer), tmp_path / "out", {**TRANSFORMER, "base": str(tiny_base_dir)},
                          settings, cache_dir=tmp_path / "cache", progress=False)
