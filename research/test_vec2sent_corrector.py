"""research/vec2sent_corrector.py on a tiny decoder: the hypothesis' padding is masked, cached
decoding agrees with the teacher-forced pass, and a fresh corrector starts as its decoder."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from transformers import AutoTokenizer

from core.vec2sent.decode import beam_search, greedy_decode
from core.vec2sent.train import base_vocabulary
from core.vec2sent.transformer import TransformerConfig, warm_start
from core.vec2sent.vocab import BOS, PAD
from research.vec2sent_corrector import Corrector, conditioning_rows, from_decoder, hypothesis_ids
from tests.conftest import build_tiny_bert
from tests.test_vec2sent_transformer import assert_cached_steps_match_the_full_pass

SENT_DIM, LENGTH = 24, 6


@pytest.fixture(scope="module")
def base_dir(tmp_path_factory):
    return build_tiny_bert(tmp_path_factory.mktemp("tiny_base"), with_mlm_head=False)


@pytest.fixture(scope="module")
def tokenizer(base_dir):
    return AutoTokenizer.from_pretrained(str(base_dir))


@pytest.fixture(scope="module")
def vocab(tokenizer):
    return base_vocabulary(tokenizer)


@pytest.fixture(scope="module")
def decoder(base_dir, tokenizer, vocab):
    torch.manual_seed(0)
    bert = json.loads((base_dir / "config.json").read_text())
    config = TransformerConfig(vocab_size=len(vocab), sent_dim=SENT_DIM, hidden=bert["hidden_size"],
                               layers=bert["num_hidden_layers"], heads=bert["num_attention_heads"],
                               intermediate=bert["intermediate_size"], prefix_length=3, dropout=0.0,
                               max_positions=bert["max_position_embeddings"], max_length=10)
    return warm_start(config, base_dir, vocab.encoder_ids, tokenizer.convert_tokens_to_ids(["[PAD]", "[CLS]", "[SEP]", "[UNK]"]))


@pytest.fixture(scope="module")
def corrector(decoder) -> Corrector:
    model = from_decoder(decoder, hypothesis_length=LENGTH)
    with torch.no_grad():  # let u and v - u matter, as after training
        torch.nn.init.normal_(model.prefix[0].weight, std=0.05)
    return model


def rows_for(tokenizer, vocab, hypotheses: list[str], seed: int = 0) -> torch.Tensor:
    vectors = np.random.default_rng(seed).normal(size=(len(hypotheses), SENT_DIM)).astype(np.float32)
    fake_encode = lambda texts: np.random.default_rng(len(texts)).normal(size=(len(texts), SENT_DIM))  # noqa: E731
    return torch.from_numpy(conditioning_rows(vectors, hypotheses, fake_encode, tokenizer, vocab, LENGTH))


def test_hypothesis_ids_are_cut_and_padded(tokenizer, vocab):
    ids = hypothesis_ids(["the dog", "the dog is happy and the king visits italy"], tokenizer, vocab, LENGTH)
    assert ids.shape == (2, LENGTH)
    assert vocab.to_text(ids[0].astype(int)) == "the dog" and (ids[0, 2:] == PAD).all()
    assert (ids[1] != PAD).all()


def test_cached_steps_give_the_teacher_forced_logits_with_padded_hypotheses(corrector, tokenizer, vocab):
    rows = rows_for(tokenizer, vocab, ["the dog", "a red car in the road"])  # 2 and 6 pieces
    assert_cached_steps_match_the_full_pass(corrector, rows, torch.tensor([[BOS, 10, 11, 12], [BOS, 20, 21, 22]]))


def test_padding_is_never_read(corrector, tokenizer, vocab):
    """The [PAD] slots after a short hypothesis are masked: a different [PAD] embedding changes
    no hidden state, a different real piece does."""
    import copy

    rows = rows_for(tokenizer, vocab, ["the dog"])  # 2 pieces, 4 [PAD]
    inputs = torch.tensor([[BOS, 10, 11]])
    other_pad, other_piece = copy.deepcopy(corrector), rows.clone()
    other_piece[0, 2 * SENT_DIM] = 17
    with torch.no_grad():
        other_pad.embed.weight[PAD] = torch.randn(other_pad.config.hidden)
        hidden = corrector.hidden_states(rows, inputs)  # (the output layer is tied: [PAD]'s own logit moves)
        torch.testing.assert_close(other_pad.hidden_states(rows, inputs), hidden)
        assert not torch.allclose(corrector.hidden_states(other_piece, inputs), hidden)


@pytest.mark.parametrize("adapter_rank", [0, 2])
def test_a_fresh_corrector_without_a_hypothesis_is_its_decoder(decoder, adapter_rank):
    """The text keeps the decoder's positions and u's weights start at zero, so with only [PAD] for
    a hypothesis the corrector's logits are the decoder's, low-rank deltas or not."""
    model = from_decoder(decoder, hypothesis_length=LENGTH, adapter_rank=adapter_rank)
    v, u = torch.randn(2, SENT_DIM), torch.randn(2, SENT_DIM)
    rows = torch.cat([v, u, torch.full((2, LENGTH), float(PAD))], 1)
    inputs = torch.tensor([[BOS, 10, 11, 12], [BOS, 20, 21, 22]])
    with torch.no_grad():
        torch.testing.assert_close(model(rows, inputs), decoder(v, inputs))
        rows[:, 2 * SENT_DIM] = 17  # a hypothesis of one piece is read
        assert not torch.allclose(model(rows, inputs), decoder(v, inputs))


def test_beam_search_reorders_the_padding_mask_with_the_beams(corrector, tokenizer, vocab):
    rows = rows_for(tokenizer, vocab, ["the dog", "who drinks wine", "the small child's book"], seed=3)
    assert beam_search(corrector, rows, width=1, max_length=8) == greedy_decode(corrector, rows, max_length=8)
    # each row's padding must follow its beams: decoded together = decoded alone
    together = beam_search(corrector, rows, width=3, max_length=8)
    assert together == [beam_search(corrector, rows[i:i + 1], width=3, max_length=8)[0] for i in range(3)]
