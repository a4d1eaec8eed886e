"""The Vec2Sent transformer decoder: a BERT stack with a causal mask, conditioned by prefix vectors.

As in BERT2BERT warm-starting (Rothe et al., 2020), the layers, position and WordPiece embeddings
come from the pretrained encoder (all-MiniLM-L6-v2 by default), so the decoder starts with the
language knowledge of the base model instead of learning English from the corpus alone. The
sentence vector is mapped by a small MLP to `prefix_length` vectors placed before the text, as
ClipCap and vec2text do (10-16 prefix positions condition far better than one). The prefix attends
to itself in both directions; each text position attends to the prefix and to the positions before
it. The output layer is tied to the input embeddings.

The interface is the LSTM decoder's (core/vec2sent/model.py), so decoding, training and the
checkpoint code serve both: `start(vectors)` runs the prefix once and returns its keys and values
as the decoding state, `step(tokens, x, state)` extends them.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import torch
from torch import nn
from torch.nn import functional as F

from core.bert import BertConfig, BertLayer, load_bert
from core.vec2sent.model import JsonConfig, _int8_linear
from core.vec2sent.vocab import PAD

State = tuple[torch.Tensor, torch.Tensor]  # keys, values, each (L, B, heads, T, H/heads)


@dataclass
class TransformerConfig(JsonConfig):
    """Everything needed to rebuild the decoder; saved as config.json beside the weights."""
    vocab_size: int
    architecture: str = "transformer"
    sent_dim: int = 384
    hidden: int = 384
    layers: int = 6
    heads: int = 12
    intermediate: int = 1536
    prefix_length: int = 10
    max_positions: int = 512
    dropout: float = 0.1
    layer_norm_eps: float = 1e-12
    normalize_input: bool = True  # only the direction of an embedding carries meaning (see model.py)
    max_length: int = 48  # decoding stops after this many pieces

    def bert(self) -> BertConfig:
        return BertConfig(vocab_size=self.vocab_size, hidden_size=self.hidden, num_hidden_layers=self.layers,
                          num_attention_heads=self.heads, intermediate_size=self.intermediate,
                          hidden_dropout_prob=self.dropout, attention_probs_dropout_prob=self.dropout,
                          max_position_embeddings=self.max_positions, layer_norm_eps=self.layer_norm_eps)


class TransformerDecoder(nn.Module):
    """`forward(sentences (B, S), inputs (B, T)) -> logits (B, T, V)` with teacher forcing."""

    def __init__(self, config: TransformerConfig):
        super().__init__()
        self.config = c = config
        if c.prefix_length + c.max_length + 1 > c.max_positions:
            raise ValueError(f"prefix {c.prefix_length} + {c.max_length} pieces exceed {c.max_positions} positions")
        self.embed = nn.Embedding(c.vocab_size, c.hidden, padding_idx=PAD)
        self.position = nn.Embedding(c.max_positions, c.hidden)
        self.embed_norm = nn.LayerNorm(c.hidden, eps=c.layer_norm_eps)
        self.prefix = nn.Sequential(nn.Linear(c.sent_dim, 4 * c.hidden), nn.GELU(),
                                    nn.Linear(4 * c.hidden, c.prefix_length * c.hidden))
        self.layers = nn.ModuleList(BertLayer(c.bert()) for _ in range(c.layers))
        self.head_dense = nn.Linear(c.hidden, c.hidden)
        self.head_norm = nn.LayerNorm(c.hidden, eps=c.layer_norm_eps)
        self.output_bias = nn.Parameter(torch.zeros(c.vocab_size))
        self.drop = nn.Dropout(c.dropout)
        self.int8_output: nn.Module | None = None  # see `quantize`
        self.eval()  # inference mode once; training switches per step (core.runtime.hardware.train_mode)

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())

    # ------------------------------------------------------------------ the network

    def _inputs(self, x: torch.Tensor, offset: int) -> torch.Tensor:
        """Vectors (B, T, H) at positions offset.. -> the first layer's input (B, T, H)."""
        positions = torch.arange(offset, offset + x.shape[1], device=x.device)  # (T,)
        return self.drop(self.embed_norm(x + self.position(positions)))

    def _prefix_vectors(self, sentences: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Sentence vectors (B, S) -> the conditioning input x (B, S) and prefix vectors (B, K, H)."""
        x = sentences.float()  # (B, S)
        if self.config.normalize_input:
            x = F.normalize(x, dim=-1) * math.sqrt(self.config.sent_dim)
        x = x.to(self.embed.weight.dtype)
        return x, self.prefix(x).view(x.shape[0], self.config.prefix_length, self.config.hidden)

    def _run(self, h: torch.Tensor, past: State | None, mask: torch.Tensor | None
             ) -> tuple[torch.Tensor, State]:
        """All layers on h (B, T, H) after the cached positions `past`; returns (B, T, H) and the
        keys and values of all positions so far."""
        keys, values = [], []
        for i, layer in enumerate(self.layers):
            h, (k, v) = self._layer(layer, h, None if past is None else (past[0][i], past[1][i]), mask)
            keys.append(k)
            values.append(v)
        return h, (torch.stack(keys), torch.stack(values))

    def _layer(self, layer: BertLayer, h: torch.Tensor, past: tuple[torch.Tensor, torch.Tensor] | None,
               mask: torch.Tensor | None) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
        attention = layer.attention.self
        B, T, H = h.shape
        q, k, v = (proj(h).view(B, T, attention.heads, H // attention.heads).transpose(1, 2)
                   for proj in (attention.query, attention.key, attention.value))  # (B, heads, T, H/heads)
        if past is not None:
            k, v = torch.cat([past[0], k], 2), torch.cat([past[1], v], 2)  # (B, heads, P+T, H/heads)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask,
                                             dropout_p=attention.dropout if self.training else 0.0)
        h = layer.attention.output(out.transpose(1, 2).reshape(B, T, H), h)  # (B, T, H)
        return layer.output(layer.act(layer.intermediate.dense(h)), h), (k, v)

    def hidden_states(self, sentences: torch.Tensor, inputs: torch.Tensor) -> torch.Tensor:
        """Teacher-forced top-layer states (B, T, H) of the text positions (for a sampled softmax)."""
        _, prefix = self._prefix_vectors(sentences)  # (B, K, H)
        K, T = prefix.shape[1], inputs.shape[1]
        h = self._inputs(torch.cat([prefix, self.embed(inputs)], 1), 0)  # (B, K+T, H)
        h, _ = self._run(h, None, prefix_mask(K, T, h.device))
        return self.drop(h[:, K:])

    def forward(self, sentences: torch.Tensor, inputs: torch.Tensor) -> torch.Tensor:
        return self.output_logits(self.hidden_states(sentences, inputs))  # (B, T, V)

    def output_logits(self, hidden: torch.Tensor, rows: torch.Tensor | None = None) -> torch.Tensor:
        """Logits (B, T, V) of hidden states (B, T, H); with `rows` (R,) only those pieces' (B, T, R)."""
        hidden = self.head_norm(F.gelu(self.head_dense(hidden)))  # (B, T, H)
        if rows is None and self.int8_output is not None and not self.training:
            return self.int8_output(hidden.float())  # (B, T, V), float32
        weight, bias = self.embed.weight, self.output_bias
        if rows is not None:
            weight, bias = weight[rows], bias[rows]  # (R, H), (R,)
        return F.linear(hidden, weight, bias)

    # ------------------------------------------------------------------ decoding

    def start(self, sentences: torch.Tensor) -> tuple[torch.Tensor, State]:
        """Run the prefix of sentence vectors (B, S); return the conditioning input and its keys
        and values, the state `step` extends."""
        x, prefix = self._prefix_vectors(sentences)
        _, state = self._run(self._inputs(prefix, 0), None, None)  # the prefix sees all of itself
        return x, state

    def step(self, tokens: torch.Tensor, x: torch.Tensor, state: State) -> tuple[torch.Tensor, State]:
        """Run tokens (B, T) after the positions in `state`; return logits (B, T, V) and the state.
        (`x` is unused: the prefix in `state` carries the sentence vector.)"""
        done, T = state[0].shape[3], tokens.shape[1]
        positions = torch.arange(done + T, device=tokens.device)  # (P+T,)
        mask = None if T == 1 else positions[None, :] <= done + positions[:T, None]
        h, state = self._run(self._inputs(self.embed(tokens), done), state, mask)
        return self.output_logits(h), state

    def quantize(self) -> None:
        """Decode with an int8 copy of the output layer (the product with all V pieces is the
        largest at each step); training and `rows=` keep the full weights."""
        self.int8_output = _int8_linear(self.embed.weight, self.output_bias)


def prefix_mask(prefix: int, steps: int, device=None) -> torch.Tensor:
    """Which positions each one may attend to (K+T, K+T): every position sees the K prefix
    positions; a text position also sees itself and the text before it."""
    i = torch.arange(prefix + steps, device=device)
    return (i[None, :] < prefix) | (i[None, :] <= i[:, None])


def warm_start(config: TransformerConfig, base: str | Path, encoder_ids: Sequence[int],
               special_ids: Sequence[int]) -> TransformerDecoder:
    """A decoder whose layers and embeddings come from the BERT checkpoint `base`.

    `encoder_ids[i]` is the base vocabulary's id of compact piece i, or -1 for the specials, which
    take the rows `special_ids` ([PAD], [CLS] for [BOS], [SEP] for [EOS], [UNK]) in order. The
    prefix MLP and the output transform start fresh.
    """
    bert, _ = load_bert(base)
    b = bert.config
    if (b.hidden_size, b.num_hidden_layers, b.num_attention_heads, b.intermediate_size) != (
            config.hidden, config.layers, config.heads, config.intermediate):
        raise ValueError(f"{base} has hidden {b.hidden_size}, {b.num_hidden_layers} layers, "
                         f"{b.num_attention_heads} heads, intermediate {b.intermediate_size}; "
                         f"the decoder config asks for {config.hidden}, {config.layers}, {config.heads}, "
                         f"{config.intermediate}")
    model = TransformerDecoder(config)
    rows = list(special_ids) + [i for i in encoder_ids if i >= 0]
    if len(rows) != config.vocab_size:
        raise ValueError(f"{len(rows)} piece rows for a vocabulary of {config.vocab_size}")
    with torch.no_grad():
        model.embed.weight.copy_(bert.embeddings.word_embeddings.weight[torch.tensor(rows)])
        positions = bert.embeddings.position_embeddings.weight[:config.max_positions]
        model.position.weight[:len(positions)] = positions + bert.embeddings.token_type_embeddings.weight[0]
        model.embed_norm.load_state_dict(bert.embeddings.LayerNorm.state_dict())
        for mine, theirs in zip(model.layers, bert.encoder.layer):
            mine.load_state_dict(theirs.state_dict())
    return model.eval()
