"""The frozen word-prediction head: sentence vector -> scores over the vocabulary.

Same shape as BERT's masked-LM head, with the decoder tied to the (frozen) input word embeddings:

    logits = transform(u) @ E.T + b,   transform = LayerNorm(gelu(dense(u)))   ("mlm")

Lighter transforms are available for bases that ship without a head: "layernorm" (LayerNorm(u))
and "identity" (u). With `unit_rows`, E's rows are scaled to their mean length first, so words
compete on direction alone and long rows (frequent words) no longer crowd out the rest. A head is rebuilt from its `WordHeadConfig`, saved as JSON beside the weights.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

import torch
from torch import nn

from ..runtime.hardware import RowwiseInt8Product

HEAD_KINDS = ("mlm", "layernorm", "identity")


@dataclass
class WordHeadConfig:
    hidden_size: int
    vocab_size: int
    kind: str = "mlm"
    layer_norm_eps: float = 1e-12
    unit_rows: bool = False  # score against E's rows rescaled to equal length (see the module doc)

    def to_dict(self) -> dict:
        return asdict(self)


class WordHead(nn.Module):
    """u (B, H) -> logits (B, V). `embeddings` is the encoder's word embedding matrix E (V, H),
    shared (not copied) so the decoder stays tied to it."""

    def __init__(self, config: WordHeadConfig, embeddings: torch.Tensor):
        super().__init__()
        if config.kind not in HEAD_KINDS:
            raise ValueError(f"unknown head kind {config.kind!r}; choose one of {HEAD_KINDS}")
        if tuple(embeddings.shape) != (config.vocab_size, config.hidden_size):
            raise ValueError(f"embedding matrix is {tuple(embeddings.shape)}, head expects "
                             f"({config.vocab_size}, {config.hidden_size})")
        self.config = config
        self.embeddings = embeddings  # E (V, H): a parameter owned by the encoder
        h = config.hidden_size
        self.dense = nn.Linear(h, h) if config.kind == "mlm" else None
        self.layer_norm = nn.LayerNorm(h, eps=config.layer_norm_eps) if config.kind != "identity" else None
        self.bias = nn.Parameter(torch.zeros(config.vocab_size))

    def transform(self, u: torch.Tensor) -> torch.Tensor:
        if self.dense is not None:
            u = nn.functional.gelu(self.dense(u))
        if self.layer_norm is not None:
            u = self.layer_norm(u)
        return u  # (B, H)

    def decoder_matrix(self) -> torch.Tensor:
        """The (V, H) matrix the transformed vector is scored against: E, or E with equal-length rows."""
        if not self.config.unit_rows:
            return self.embeddings
        norms = self.embeddings.norm(dim=1, keepdim=True)  # (V, 1)
        return self.embeddings / norms.clamp(min=1e-6) * norms.mean()

    def forward(self, u: torch.Tensor, int8: bool = False) -> torch.Tensor:
        """Logits (B, V). `int8`: the product with E in int8 (`RowwiseInt8Product`), when no
        gradient is wanted; ranks as float32 does within noise (docs/results.md, Speed)."""
        if int8 and not torch.is_grad_enabled():
            return self._decoder_int8()(self.transform(u)) + self.bias
        return self.transform(u) @ self._decoder_t() + self.bias  # (B, V)

    def _decoder_t(self) -> torch.Tensor:
        """decoder_matrix().T (H, V). E is frozen, so it is a contiguous copy, kept until E changes:
        a product with it reads memory in order and runs twice as fast as with a transposed view."""
        E = self.embeddings
        if E.requires_grad:
            return self.decoder_matrix().T
        key = (E.data_ptr(), E._version, E.dtype, self.config.unit_rows)
        if getattr(self, "_cached_key", None) != key:
            with torch.inference_mode(False), torch.no_grad():  # usable later by training too
                self._cached_t = self.decoder_matrix().T.contiguous()
            self._cached_key = key
        return self._cached_t

    def _decoder_int8(self) -> RowwiseInt8Product:
        """An int8 copy of `_decoder_t()`, remade whenever that cache is (not a submodule: never saved)."""
        decoder_t = self._decoder_t()
        if getattr(self, "_int8_source", None) is not decoder_t:
            self._int8_product, self._int8_source = RowwiseInt8Product(decoder_t.detach()), decoder_t
        return self._int8_product

    def own_state_dict(self) -> dict[str, torch.Tensor]:
        """The head's own weights, without the shared embedding matrix."""
        return {k: v for k, v in self.state_dict().items() if k != "embeddings"}

    @classmethod
    def from_mlm_head(cls, mlm_head: nn.Module, embeddings: torch.Tensor) -> "WordHead":
        """Copy a pretrained masked-LM head (BERT `cls.predictions` or RoBERTa `lm_head`)."""
        dense, norm = _mlm_transform_parts(mlm_head)
        config = WordHeadConfig(hidden_size=embeddings.shape[1], vocab_size=embeddings.shape[0],
                                kind="mlm", layer_norm_eps=norm.eps)
        head = cls(config, embeddings)
        with torch.no_grad():
            head.dense.load_state_dict(dense.state_dict())
            head.layer_norm.load_state_dict(norm.state_dict())
            head.bias.copy_(mlm_head.bias if hasattr(mlm_head, "bias") and mlm_head.bias is not None
                            else mlm_head.decoder.bias)
        return head


def _mlm_transform_parts(mlm_head: nn.Module) -> tuple[nn.Linear, nn.LayerNorm]:
    if hasattr(mlm_head, "transform"):  # BERT: BertLMPredictionHead
        return mlm_head.transform.dense, mlm_head.transform.LayerNorm
    if hasattr(mlm_head, "dense") and hasattr(mlm_head, "layer_norm"):  # RoBERTa: RobertaLMHead
        return mlm_head.dense, mlm_head.layer_norm
    raise ValueError(f"unsupported masked-LM head {type(mlm_head).__name__}")
