"""The Vec2Sent decoder: an LSTM language model conditioned on a sentence embedding.

As in Kerscher & Eger (2020), the sentence embedding is concatenated to the input token embedding
at every step. Optionally (`init_state`) the LSTM also starts from a projection of the embedding,
which the paper's simple-LSTM variant uses instead. With `tie_weights` the output layer reuses the
input embedding matrix (after a projection from the hidden size), which halves the parameters spent
on the vocabulary.
"""
from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, fields
from pathlib import Path

import torch
from torch import nn
from torch.nn import functional as F

from core.runtime import hardware
from core.vec2sent.vocab import PAD

State = tuple[torch.Tensor, torch.Tensor]  # LSTM (h, c), each (layers, B, hidden)


def _lstm_autocast_unsupported(inputs: torch.Tensor) -> bool:
    """Whether nn.LSTM under bfloat16 autocast would fail here: oneDNN has no bfloat16 LSTM for CPUs
    without bfloat16 instructions ("could not create a primitive descriptor"), so there it runs in float32."""
    return (inputs.device.type == "cpu" and torch.is_autocast_enabled("cpu")
            and not hardware.native_bfloat16())


class JsonConfig:
    """save/load of a dataclass config as config.json (unknown keys refused)."""

    def save(self, path: Path) -> None:
        path.write_text(json.dumps(asdict(self), indent=2) + "\n", encoding="utf-8")

    @classmethod
    def load(cls, path: Path):
        data = json.loads(path.read_text(encoding="utf-8"))
        unknown = set(data) - {f.name for f in fields(cls)}
        if unknown:
            raise ValueError(f"{path}: unknown config keys {sorted(unknown)}")
        return cls(**data)


@dataclass
class Vec2SentConfig(JsonConfig):
    """Everything needed to rebuild the decoder; saved as config.json beside the weights."""
    vocab_size: int
    architecture: str = "lstm"  # core/vec2sent/transformer.py's config says "transformer"
    sent_dim: int = 384
    emb_dim: int = 256  # the LSTM's piece embeddings
    hidden: int = 512  # the LSTM's state
    layers: int = 2  # the LSTM's layers
    dropout: float = 0.2  # in training
    tie_weights: bool = True  # the LSTM's output layer shares the piece embeddings
    init_state: bool = True  # the LSTM's initial state comes from the sentence vector too
    # The encoder is compared by cosine, so only the direction of an embedding carries meaning;
    # normalising makes decoding of `2 * a` or `b - a + c` insensitive to their length.
    normalize_input: bool = True  # unit-length sentence vectors in
    max_length: int = 48  # decoding stops after this many pieces (longest training sentence + [EOS])


class Vec2SentDecoder(nn.Module):
    """`forward(sentences (B, S), inputs (B, T)) -> logits (B, T, V)` with teacher forcing."""

    def __init__(self, config: Vec2SentConfig):
        super().__init__()
        self.config = config
        c = config
        self.embed = nn.Embedding(c.vocab_size, c.emb_dim, padding_idx=PAD)
        self.lstm = nn.LSTM(c.emb_dim + c.sent_dim, c.hidden, c.layers, batch_first=True,
                            dropout=c.dropout if c.layers > 1 else 0.0)
        self.drop = nn.Dropout(c.dropout)
        self.initial = nn.Linear(c.sent_dim, 2 * c.layers * c.hidden) if c.init_state else None
        if c.tie_weights:
            self.to_embedding = nn.Linear(c.hidden, c.emb_dim)
            self.output_bias = nn.Parameter(torch.zeros(c.vocab_size))
        else:
            self.output = nn.Linear(c.hidden, c.vocab_size)
        self.int8_output: nn.Module | None = None  # see `quantize`
        self.int8_gates: nn.ModuleList | None = None
        self.eval()  # inference mode once; training switches per step (core.runtime.hardware.train_mode)

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def start(self, sentences: torch.Tensor) -> tuple[torch.Tensor, State | None]:
        """Prepare sentence vectors (B, S) for `step`: the conditioning input and the initial state."""
        x = sentences.float()  # (B, S)
        if self.config.normalize_input:
            # unit length times sqrt(S) keeps components near 1, the scale of the token embeddings
            x = F.normalize(x, dim=-1) * math.sqrt(self.config.sent_dim)
        x = x.to(self.embed.weight.dtype)  # a bfloat16 decoder (see checkpoint.load_checkpoint) computes in it
        if self.initial is None:
            return x, None
        batch, layers, hidden = x.shape[0], self.config.layers, self.config.hidden
        hc = torch.tanh(self.initial(x)).view(batch, 2, layers, hidden)  # (B, 2, L, H)
        h0, c0 = hc.permute(1, 2, 0, 3).contiguous()  # each (L, B, H)
        return x, (h0, c0)

    def step(self, tokens: torch.Tensor, x: torch.Tensor, state: State | None
             ) -> tuple[torch.Tensor, State]:
        """Run tokens (B, T) conditioned on x (B, S) from `state`; return logits (B, T, V) and state."""
        hidden, state = self._run(tokens, x, state)
        return self.output_logits(hidden), state

    def _run(self, tokens: torch.Tensor, x: torch.Tensor, state: State | None) -> tuple[torch.Tensor, State]:
        """Top-layer states (B, T, H), dropout applied, and the state after the last step."""
        steps = tokens.shape[1]
        inputs = torch.cat([self.embed(tokens), x.unsqueeze(1).expand(-1, steps, -1)], dim=-1)  # (B, T, E+S)
        if steps == 1 and not self.training:
            hidden, state = self._one_step(inputs[:, 0], state)  # (B, 1, H)
        elif _lstm_autocast_unsupported(inputs):
            with torch.autocast("cpu", enabled=False):
                state = None if state is None else (state[0].float(), state[1].float())
                hidden, state = self.lstm(self.drop(inputs).float(), state)  # (B, T, H), float32
        else:
            hidden, state = self.lstm(self.drop(inputs), state)  # (B, T, H)
        return self.drop(hidden), state

    def output_logits(self, hidden: torch.Tensor, rows: torch.Tensor | None = None) -> torch.Tensor:
        """Logits (B, T, V) of hidden states (B, T, H); with `rows` (R,) only those pieces' (B, T, R)."""
        if self.config.tie_weights:
            hidden = self.to_embedding(hidden)  # (B, T, E)
        if rows is None and self.int8_output is not None and not self.training:
            return self.int8_output(hidden.float())  # (B, T, V), float32
        weight, bias = self._output_weights()
        if rows is not None:
            weight, bias = weight[rows], bias[rows]  # (R, E), (R,)
        return F.linear(hidden, weight, bias)

    def _output_weights(self) -> tuple[torch.Tensor, torch.Tensor]:
        if self.config.tie_weights:
            return self.embed.weight, self.output_bias
        return self.output.weight, self.output.bias

    def quantize(self) -> None:
        """Decode with int8 copies of the output layer and of the LSTM's gate matrices (dynamic
        quantisation: weights per row, inputs per call). Reading these matrices at every step is
        most of a decoding step on CPU; fbgemm's int8 product of a beam's 5 states with the 25,468 x
        256 output matrix took 0.23 ms against 1.7 ms in bfloat16 (docs/vec2sent.md). Training and `rows=`
        keep the full weights."""
        self.int8_output = _int8_linear(*self._output_weights())
        self.int8_gates = nn.ModuleList(  # one product per layer: [input, h] @ [W_ih, W_hh].T
            _int8_linear(torch.cat([getattr(self.lstm, f"weight_ih_l{k}"), getattr(self.lstm, f"weight_hh_l{k}")], 1),
                         getattr(self.lstm, f"bias_ih_l{k}") + getattr(self.lstm, f"bias_hh_l{k}"))
            for k in range(self.config.layers))

    def _one_step(self, inputs: torch.Tensor, state: State | None) -> tuple[torch.Tensor, State]:
        """The LSTM on one step of inputs (B, E+S), written out: for decoding, where nn.LSTM's
        per-call overhead (about 9 ms on CPU) costs more than the arithmetic."""
        batch, layers, hidden = inputs.shape[0], self.config.layers, self.config.hidden
        if state is None:
            state = (inputs.new_zeros(layers, batch, hidden), inputs.new_zeros(layers, batch, hidden))
        h, c = state  # each (L, B, H)
        new_h, new_c, layer_input = [], [], inputs
        for k in range(layers):
            if self.int8_gates is not None and not self.training:
                gates = self.int8_gates[k](torch.cat([layer_input, h[k]], 1).float()).to(inputs.dtype)  # (B, 4H)
            else:
                w_ih, w_hh, b_ih, b_hh = (getattr(self.lstm, f"{name}_l{k}")
                                          for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"))
                gates = torch.addmm(b_ih + b_hh, layer_input, w_ih.t()) + h[k] @ w_hh.t()  # (B, 4H)
            i, f, g, o = gates.chunk(4, dim=1)  # PyTorch's gate order
            c_k = torch.sigmoid(f) * c[k] + torch.sigmoid(i) * torch.tanh(g)  # (B, H)
            layer_input = torch.sigmoid(o) * torch.tanh(c_k)  # (B, H)
            new_h.append(layer_input)
            new_c.append(c_k)
        return layer_input.unsqueeze(1), (torch.stack(new_h), torch.stack(new_c))

    def hidden_states(self, sentences: torch.Tensor, inputs: torch.Tensor) -> torch.Tensor:
        """Teacher-forced top-layer states (B, T, H) before the output layer (for a sampled softmax)."""
        x, state = self.start(sentences)
        return self._run(inputs, x, state)[0]

    def forward(self, sentences: torch.Tensor, inputs: torch.Tensor) -> torch.Tensor:
        return self.output_logits(self.hidden_states(sentences, inputs))  # (B, T, V)


def _int8_linear(weight: torch.Tensor, bias: torch.Tensor) -> nn.Module:
    """y = x @ weight.T + bias with weight (out, in) in int8 per row (float32 in and out)."""
    linear = nn.Linear(weight.shape[1], weight.shape[0])
    with torch.no_grad():
        linear.weight.copy_(weight.float())
        linear.bias.copy_(bias.float())
    return hardware.quantize_int8(linear)
