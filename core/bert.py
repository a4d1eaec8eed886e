"""BERT in plain PyTorch: the encoder, and the masked-LM head weights, of a Hugging Face BERT folder.

Why not `transformers.BertModel`: importing transformers' modelling code costs about 3 s of CPU,
most of the app's launch time. This file rebuilds the same network from the folder's config.json
and model.safetensors with the same parameter names, so state dicts, fingerprints and checkpoint
deltas are interchangeable with `transformers.BertModel` (tests/test_bert.py checks that both give
the same outputs). What it does not cover (other architectures, relative positions, decoders,
weights not in safetensors) raises `Unsupported`, and core/encoder.py loads it with transformers.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from pathlib import Path
from types import SimpleNamespace

import torch
from safetensors.torch import load_file, save_file
from torch import nn
from torch.nn import functional as F

WEIGHTS = "model.safetensors"
ACTIVATIONS = {"gelu": F.gelu, "relu": F.relu, "gelu_new": lambda x: F.gelu(x, approximate="tanh")}
HEAD_PREFIX = "cls.predictions."  # BertForMaskedLM's head; its decoder is tied to the word embeddings
HEAD_KEYS = ("transform.dense.weight", "transform.dense.bias", "transform.LayerNorm.weight",
             "transform.LayerNorm.bias", "bias")


class Unsupported(ValueError):
    """The folder is not a BERT checkpoint this file can load (transformers can still try)."""


@dataclass
class BertConfig:
    """The fields of a Hugging Face BERT config.json that the network needs; `raw` is the whole file."""
    vocab_size: int
    hidden_size: int
    num_hidden_layers: int
    num_attention_heads: int
    intermediate_size: int
    hidden_act: str = "gelu"
    hidden_dropout_prob: float = 0.1
    attention_probs_dropout_prob: float = 0.1
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    layer_norm_eps: float = 1e-12
    pad_token_id: int = 0
    model_type: str = "bert"
    raw: dict = field(default_factory=dict, repr=False)

    @classmethod
    def from_dict(cls, raw: dict) -> "BertConfig":
        if raw.get("model_type") != "bert":
            raise Unsupported(f"model_type {raw.get('model_type')!r} is not 'bert'")
        if raw.get("position_embedding_type", "absolute") != "absolute":
            raise Unsupported(f"position_embedding_type {raw['position_embedding_type']!r}")
        if raw.get("is_decoder") or raw.get("add_cross_attention"):
            raise Unsupported("a BERT decoder (causal or cross attention)")
        if raw.get("hidden_act", "gelu") not in ACTIVATIONS:
            raise Unsupported(f"activation {raw['hidden_act']!r}")
        names = {f.name for f in fields(cls)} - {"raw"}
        return cls(**{k: v for k, v in raw.items() if k in names and v is not None}, raw=raw)


class BertEmbeddings(nn.Module):
    def __init__(self, c: BertConfig, device: torch.device | str | None = None):
        super().__init__()
        self.word_embeddings = _embedding(c.vocab_size, c.hidden_size, c.pad_token_id, device)
        self.position_embeddings = _embedding(c.max_position_embeddings, c.hidden_size, None, device)
        self.token_type_embeddings = _embedding(c.type_vocab_size, c.hidden_size, None, device)
        self.LayerNorm = nn.LayerNorm(c.hidden_size, eps=c.layer_norm_eps, device=device)
        self.dropout = nn.Dropout(c.hidden_dropout_prob)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(input_ids.shape[1], device=input_ids.device)  # (T,)
        x = (self.word_embeddings(input_ids) + self.token_type_embeddings.weight[0]  # one segment: type 0
             + self.position_embeddings(positions))  # (B, T, H)
        return self.dropout(self.LayerNorm(x))


class BertSelfAttention(nn.Module):
    def __init__(self, c: BertConfig, device: torch.device | str | None = None):
        super().__init__()
        if c.hidden_size % c.num_attention_heads:
            raise Unsupported(f"hidden size {c.hidden_size} is not a multiple of {c.num_attention_heads} heads")
        self.heads = c.num_attention_heads
        self.query = nn.Linear(c.hidden_size, c.hidden_size, device=device)
        self.key = nn.Linear(c.hidden_size, c.hidden_size, device=device)
        self.value = nn.Linear(c.hidden_size, c.hidden_size, device=device)
        self.dropout = c.attention_probs_dropout_prob

    def forward(self, x: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
        """x (B, T, H), keep (B, 1, 1, T) True for real tokens -> (B, T, H)."""
        B, T, H = x.shape
        q, k, v = (proj(x).view(B, T, self.heads, H // self.heads).transpose(1, 2)  # (B, heads, T, H/heads)
                   for proj in (self.query, self.key, self.value))
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=keep,
                                             dropout_p=self.dropout if self.training else 0.0)
        return out.transpose(1, 2).reshape(B, T, H)


class BertResidualOutput(nn.Module):
    """dense -> dropout -> LayerNorm(+ residual): BERT's `attention.output` and `output` blocks."""

    def __init__(self, c: BertConfig, inputs: int, device: torch.device | str | None = None):
        super().__init__()
        self.dense = nn.Linear(inputs, c.hidden_size, device=device)
        self.LayerNorm = nn.LayerNorm(c.hidden_size, eps=c.layer_norm_eps, device=device)
        self.dropout = nn.Dropout(c.hidden_dropout_prob)

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        return self.LayerNorm(self.dropout(self.dense(x)) + residual)


class BertLayer(nn.Module):
    def __init__(self, c: BertConfig, device: torch.device | str | None = None):
        super().__init__()
        self.attention = nn.Module()  # named as in transformers: attention.self, attention.output
        self.attention.self = BertSelfAttention(c, device)
        self.attention.output = BertResidualOutput(c, c.hidden_size, device)
        self.intermediate = nn.Module()
        self.intermediate.dense = nn.Linear(c.hidden_size, c.intermediate_size, device=device)
        self.output = BertResidualOutput(c, c.intermediate_size, device)
        self.act = ACTIVATIONS[c.hidden_act]

    def forward(self, x: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
        x = self.attention.output(self.attention.self(x, keep), x)  # (B, T, H)
        return self.output(self.act(self.intermediate.dense(x)), x)  # (B, T, H)


class BertModel(nn.Module):
    """`forward(input_ids (B, T), attention_mask (B, T))` -> `.last_hidden_state` (B, T, H). Built on the
    "meta" `device`, it holds no numbers until weights are assigned (`load_bert`)."""

    def __init__(self, config: BertConfig, device: torch.device | str | None = None):
        super().__init__()
        self.config = config
        self.embeddings = BertEmbeddings(config, device)
        self.encoder = nn.Module()
        self.encoder.layer = nn.ModuleList(BertLayer(config, device) for _ in range(config.num_hidden_layers))

    def get_input_embeddings(self) -> nn.Embedding:
        return self.embeddings.word_embeddings

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> SimpleNamespace:
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        keep = attention_mask.bool()[:, None, None, :]  # (B, 1, 1, T): padding is never attended to
        x = self.embeddings(input_ids)  # (B, T, H)
        for layer in self.encoder.layer:
            x = layer(x, keep)
        return SimpleNamespace(last_hidden_state=x)

    def save_pretrained(self, directory: str | Path) -> None:
        """Write config.json and model.safetensors as `transformers.BertModel.save_pretrained` does."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        config = {**self.config.raw, "architectures": ["BertModel"]}
        (directory / "config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
        save_file({k: v.contiguous() for k, v in self.state_dict().items()}, str(directory / WEIGHTS),
                  metadata={"format": "pt"})


class BertMaskedLMHead(nn.Module):
    """The pretrained weights of BertForMaskedLM's head (`cls.predictions`): `transform` (dense,
    then the activation, then LayerNorm) and the output `bias`; its decoder is the word embedding
    matrix. core/words/word_head.py builds the word head from them."""

    def __init__(self, config: BertConfig, device: torch.device | str | None = None):
        super().__init__()
        self.transform = nn.Module()
        self.transform.dense = nn.Linear(config.hidden_size, config.hidden_size, device=device)
        self.transform.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps, device=device)
        self.bias = nn.Parameter(torch.zeros(config.vocab_size, device=device))


def _embedding(rows: int, width: int, padding_idx: int | None, device: torch.device | str | None) -> nn.Embedding:
    """nn.Embedding; on the meta device without its random start (`normal_` there sets up for seconds first)."""
    if device is not None and torch.device(device).type == "meta":
        return nn.Embedding(rows, width, padding_idx, _weight=torch.empty(rows, width, device="meta"))
    return nn.Embedding(rows, width, padding_idx, device=device)


def load_bert(path: str | Path, random_start: bool = True) -> tuple[BertModel, BertMaskedLMHead | None]:
    """The encoder of a BERT checkpoint folder, and its masked-LM head when the file has one.

    `random_start`: the network is first built with random weights, as transformers builds it, which the
    file's then replace; this draws from torch's global random generator, as callers that seed it and
    then draw more expect (a decoder warm-started from BERT: core/vec2sent/transformer.py). False: built on
    the meta device and only the file's weights are ever held (a fraction of a second off each cold start),
    torch's generator left as it was.
    Raises Unsupported for anything else (the caller falls back to transformers).
    """
    path = Path(path)
    if not (path / "config.json").is_file() or not (path / WEIGHTS).is_file():
        raise Unsupported(f"{path} has no config.json and {WEIGHTS}")
    config = BertConfig.from_dict(json.loads((path / "config.json").read_text(encoding="utf-8")))
    tensors = {_modern_name(k): v.float() for k, v in load_file(str(path / WEIGHTS)).items()}
    prefix = "bert." if any(k.startswith("bert.") for k in tensors) else ""
    body = {k[len(prefix):]: v for k, v in tensors.items() if k.startswith(prefix)
            and not k.startswith((prefix + "pooler.", prefix + "embeddings.position_ids"))}
    head = {k[len(HEAD_PREFIX):]: v for k, v in tensors.items()
            if k.startswith(HEAD_PREFIX) and k[len(HEAD_PREFIX):] in HEAD_KEYS}
    device = None if random_start else "meta"
    model, mlm_head = BertModel(config, device), BertMaskedLMHead(config, device)
    _assign(model, body, path)
    if len(head) < len(HEAD_KEYS):
        return model, None
    _assign(mlm_head, head, path)
    return model, mlm_head


def _modern_name(key: str) -> str:
    # Checkpoints from the TensorFlow era name LayerNorm parameters gamma/beta (SPLADE-tiny does).
    return key.replace("LayerNorm.gamma", "LayerNorm.weight").replace("LayerNorm.beta", "LayerNorm.bias")


def _assign(module: nn.Module, state: dict[str, torch.Tensor], path: Path) -> None:
    expected = set(module.state_dict())
    if set(state) != expected:
        missing, unexpected = sorted(expected - set(state)), sorted(set(state) - expected)
        raise Unsupported(f"{path / WEIGHTS} does not fit BERT (missing {missing[:3]}, unexpected {unexpected[:3]})")
    module.load_state_dict(state, assign=True)
