"""The engine: one object that holds the encoder, the words (`engine.words`, core/words/scorer.py: the
frozen word head, its vocabulary and the open vocabulary) and the reader of vectors (`engine.reader`,
core/readout.py: the Vec2Sent decoder), loads and saves them as one checkpoint.

    from core import Engine
    engine = Engine.load()                                   # the shipped default checkpoint
    engine.encode(["a sentence", "another"])                 # np.ndarray (2, d), float32
    engine.predict_words("a person who is in charge", k=10)  # [("chief", 0.002), ...]: all WordNet lemmas
    engine.words.ranked(vectors, k=10)                       # the same for any vectors (n, d)
    engine.decode(vectors, beam=5)                           # Vec2Sent: ["a sentence.", ...]
    engine.analogy(a, b, c); engine.interpolate(x, y)        # see core/readout.py
"""
from __future__ import annotations

import json
import shutil
import sys
import threading
import time
from pathlib import Path
from typing import Callable, Iterable, Sequence

import numpy as np
import torch
from safetensors.torch import load_file, save_file

from .answers import EXCLUDE_QUERY_WORDS
from .paths import CHECKPOINTS_DIR, user_cache_dir
from .checkpoint import (DEFAULT_BASE, DEFAULT_CHECKPOINT, ENCODER_DELTA, FORMAT, FORMAT_VERSION, HEAD_CONFIG,
                         HEAD_WEIGHTS, MANIFEST, CheckpointError, atomic_directory, fingerprint, library_versions,
                         read_manifest, resolve_base, write_json)
from .runtime.device import resolve_device
from .encoder import SentenceEncoder, check_texts, l2_normalize, semantic_search
from .runtime.hardware import return_freed_memory
from .words.exact_rescoring import ExactRescorer, ExactVectors
from .words.hubness import DEFAULT_K, DEFAULT_WEIGHT, HubPenalty, group_definitions
from .lexicon.dictionary import Entry
from .lora import add_into, dense_delta, factored_delta, is_low_rank, stored_factors
from .words.open_vocab import COMPACT_SUBSPACES, COMPACT_VECTORS, Candidates, OpenScorer, open_scorer, stored_vectors
from .readout import (ANALOGY, DEFAULT_CORRECTION, PATH_FLUENCY, REFERENCE_SIZE, AnalogyResult, InterpolationPoint,
                      Reference, VectorReader)
from .explore.reference import VocabularyTexts
from .explore.vocabulary_map import layout_path
from .vec2sent.checkpoint import Vec2Sent
from .vec2sent.fluency import FluencySettings
from .vec2sent.refine import CorrectSettings, RefineSettings
from .words.scorer import WordScorer
from .words.vocabulary import WordFilter
from .words.word_head import WordHead, WordHeadConfig
from .words.word_tower import tower_fingerprint, word_tower
from .words.word_vectors import DEFAULT_SCALE, WordVectors

# Candidates (words and definitions) from which enabling the open vocabulary hands freed memory back: WordNet's
# 264k leave ~430 MB in glibc's arenas; a dictionary's few thousand leave too little to pay a full garbage collection
# (0.3-1.5 s with the GIL held, on a large heap).
TRIM_AFTER_CANDIDATES = 20_000
REUSED = "-reused"  # the cache of vectors a fine-tuned model took over from its parent (`enable_open_vocabulary`)


def reused_name(name: str) -> str:
    """The cache file name of vectors partly reused from a parent, for the cache file `name`."""
    path = Path(name)
    return path.stem + REUSED + path.suffix
# A checkpoint's folder of precomputed open-vocabulary vectors, read before embedding anything: too large
# for the repository (git-ignored), uploaded with a Space (scripts/deploy_space.py --vectors).
SHIPPED_VECTORS = "open-vocab"


class Engine:
    """An encoder, the words it reads vectors with (`words`, a `WordScorer`: the frozen head and its
    vocabulary) and a reader of vectors (`reader`, a `VectorReader`: the Vec2Sent decoder when one fits,
    analogies, interpolations). Shared between users; holds no per-user state."""

    def __init__(self, encoder: SentenceEncoder, head: WordHead, base_source: str,
                 base_fingerprint: str, manifest: dict | None = None):
        self.encoder = encoder
        self.words = WordScorer.for_tokenizer(head, encoder.tokenizer, encoder.word_embeddings.shape[0])
        self.reader = VectorReader(self)  # no decoder until `set_decoder`
        self.open_vocabulary_on_first_use = False  # Engine.load: enable it at the first word query
        self._vocabulary_references: dict[str, VocabularyTexts] = {}  # `vocabulary_reference`, per kind
        self.checkpoint_dir: Path | None = None  # the folder it was loaded from (Engine.load)
        self._open_vocabulary_lock = threading.Lock()
        # {encoder weight name: (B, A)} of a low-rank training run (core/lora.py): saved as factors
        self.low_rank: dict[str, tuple[torch.Tensor, torch.Tensor]] = {}
        self.base_source = base_source
        self.base_fingerprint = base_fingerprint
        self.manifest = manifest or {}
        self._fingerprint: str | None = None

    # ---- construction -------------------------------------------------------------------------
    @classmethod
    def from_base(cls, base: str = DEFAULT_BASE, pooling: str = "mean", head_kind: str = "mlm",
                  max_length: int = 128, unit_rows: bool = False) -> "Engine":
        """An untrained engine: the base encoder, and its masked-LM head if it has one (else a new
        head of kind `head_kind`, untrained, see `WordHeadConfig` for `unit_rows`). `base` is
        "package:NAME", a path or a hub id."""
        encoder, mlm_head = SentenceEncoder.from_pretrained(resolve_base(base), pooling, max_length)
        _freeze_embeddings(encoder)
        base_fp = fingerprint(encoder.state_dict())
        E = encoder.word_embeddings
        if mlm_head is not None:
            head = WordHead.from_mlm_head(mlm_head, E)
            origin = "pretrained masked-LM head of the base"
        else:
            with torch.random.fork_rng():  # a fixed initialisation: same base, same engine
                torch.manual_seed(0)
                head = WordHead(WordHeadConfig(E.shape[1], E.shape[0], kind=head_kind, unit_rows=unit_rows), E)
            origin = "new (untrained)"
        manifest = {"base": {"source": base, "fingerprint": base_fp},
                    "pooling": pooling, "max_length": max_length,
                    "head": {"kind": head.config.kind, "origin": origin}}
        return cls(encoder, head.eval(), base, base_fp, manifest)

    @classmethod
    def load(cls, path: str | Path | None = None, untrained: bool = False,
             decoder: str | Path | None = "auto", precision: str = "float32",
             open_vocabulary: bool = True, device: str = "auto", fluency: str | Path | None = "auto") -> "Engine":
        """Load a checkpoint directory (default: the shipped one) and its Vec2Sent decoder.

        `open_vocabulary`: a checkpoint fitted for the open vocabulary (its manifest names a word
        tower, as the shipped one does) or fine-tuned on a dictionary (a model the app's Fine-tune tab
        saved or downloaded) answers `predict_words` with every WordNet word and phrase, and its user
        dictionary's words, as the app does: embedded at the first `predict_words` call
        (minutes once per model, progress on stderr), then cached under
        `core.paths.user_cache_dir("open-vocab")`. Other readings of vectors (analogy, interpolation)
        use it once it is enabled. False (or `untrained`): the head's single-token words until
        `enable_open_vocabulary`.

        `untrained=True` keeps the base encoder weights but the checkpoint's head (and word vectors
        computed from the base, if the checkpoint has any): the "before DefSent training" model. A path without a manifest is treated as a
        plain Hugging Face model (see `from_base`). `decoder`: "auto" is the decoder checkpoint
        beside `path` trained on this encoder, if any, loaded on first use; a path is loaded now
        and refused (EncoderMismatchError) if trained on another encoder; None loads none.
        `precision`: "float32", or "bfloat16" / "int8" / "auto" for faster encoding (see `set_precision`).
        `device`: where the encoder, head and decoder compute ("auto", the default: a GPU when there is
        one, else the CPU; "cpu", "cuda"...: see `to`). `fluency`: the language model that judges the
        grammar of analogies' and interpolations' sentences ("auto": the packaged Gemma 3 270M when
        installed, loaded on first use; a path; None: none; see `set_fluency`).
        """
        path = Path(path) if path is not None else DEFAULT_CHECKPOINT
        engine = cls._load_encoder(path, untrained)
        engine.to(device)
        engine.set_precision(precision)
        engine.set_decoder(decoder, path.parent)
        engine.set_fluency(fluency)
        fitted = {"word_tower", "word_map"} & set(engine.manifest.get("open_vocab", {}))
        own_words = "user_dictionary" in engine.manifest  # a fine-tune's words are answers, towered or not
        engine.open_vocabulary_on_first_use = bool(open_vocabulary and (fitted or own_words) and not untrained)
        return engine

    @classmethod
    def load_with_exact_vectors(cls, path: str | Path | None = None, progress=None) -> "Engine":
        """`load` without a decoder, with the open vocabulary's exact vectors (what the map of every word is
        drawn from), embedded first (minutes, `progress`) when the user cache has none."""
        engine = cls.load(path, decoder=None, open_vocabulary=False)
        engine.enable_open_vocabulary(cache_dir=user_cache_dir("open-vocab"), progress=progress, compact=False)
        return engine

    @classmethod
    def _load_encoder(cls, path: Path, untrained: bool) -> "Engine":
        if path.is_dir() and not (path / MANIFEST).exists() and (path / "config.json").exists():
            return cls.from_base(str(path))
        if not path.exists():
            raise CheckpointError(f"no checkpoint at {path}")
        manifest = read_manifest(path)
        base = manifest["base"]["source"]
        engine = cls.from_base(base, manifest["pooling"], manifest["head"]["kind"],
                               manifest.get("max_length", 128))
        if engine.base_fingerprint != manifest["base"]["fingerprint"]:
            raise CheckpointError(
                f"{path} was trained on a different base model: it expects {base!r} with "
                f"fingerprint {manifest['base']['fingerprint']}, but that loads as "
                f"{engine.base_fingerprint}. Install the base it names or retrain.")
        engine._load_head(path)
        if not untrained:
            delta = load_file(str(path / ENCODER_DELTA))
            engine._apply_delta(dense_delta(delta))
            engine.low_rank = stored_factors(delta)
            engine.words.load(path, manifest)
        elif "word_vectors" in manifest:  # the base's own word vectors: a like-for-like "before" model
            engine.add_word_vectors(manifest["word_vectors"]["scale"])
        engine.manifest = manifest
        engine.checkpoint_dir = path
        return engine

    def _load_head(self, path: Path) -> None:
        config = WordHeadConfig(**json.loads((path / HEAD_CONFIG).read_text(encoding="utf-8")))
        head = WordHead(config, self.encoder.word_embeddings)
        missing, unexpected = head.load_state_dict(load_file(str(path / HEAD_WEIGHTS)), strict=False)
        if [k for k in missing if k != "embeddings"] or unexpected:
            raise CheckpointError(f"{path / HEAD_WEIGHTS} does not fit its head config "
                                  f"(missing {missing}, unexpected {unexpected})")
        self.words.head = head.eval()

    def _apply_delta(self, delta: dict[str, torch.Tensor]) -> None:
        state = self.encoder.state_dict()
        unknown = sorted(set(delta) - set(state))
        if unknown:
            raise CheckpointError(f"checkpoint changes tensors the base does not have: {unknown[:5]}")
        for name, d in delta.items():
            add_into(state[name], d)  # in its dtype, on its device
        self._fingerprint = None

    def save(self, path: str | Path, name: str | None = None, training: dict | None = None,
             metrics: dict | None = None) -> Path:
        """Write a checkpoint atomically: `path` is either left as it was or holds the new one."""
        path = Path(path)
        if self.encoder.precision == "int8":
            raise CheckpointError("an int8-quantised engine is for inference only: save the float32 model")
        if is_low_rank(self.encoder.backbone):
            raise CheckpointError("low-rank deltas are still attached: merge them first (core.lora.merge_low_rank)")
        # Only the base weights are needed here, not a whole Engine (vocabulary, head, fingerprint).
        base_encoder, _ = SentenceEncoder.from_pretrained(resolve_base(self.base_source), self.encoder.pooling,
                                                          self.encoder.max_length)
        delta = factored_delta(_encoder_delta(self.encoder.state_dict(), base_encoder.state_dict()), self.low_rank)
        factors = [v for k, v in delta.items() if k.endswith(".lora_A")]  # A: (rank, in)
        manifest = {
            "format": FORMAT, "format_version": FORMAT_VERSION,
            "name": name or path.name, "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "base": {"source": self.base_source, "fingerprint": self.base_fingerprint,
                     "hidden_size": self.encoder.hidden_size},
            "pooling": self.encoder.pooling, "max_length": self.encoder.max_length,
            "head": {**self.manifest.get("head", {}), "kind": self.words.head.config.kind},
            "encoder_delta": {"file": ENCODER_DELTA, "dtype": "float16", "tensors": len(delta),
                              "parameters": int(sum(t.numel() for t in delta.values())),
                              **({"low_rank": {"matrices": len(factors), "rank": factors[0].shape[0]}}
                                 if factors else {})},
            "training": training if training is not None else self.manifest.get("training", {}),
            "metrics": metrics if metrics is not None else self.manifest.get("metrics", {}),
            "versions": library_versions(),
        }
        with atomic_directory(path) as tmp:
            save_file({k: v.half().contiguous() for k, v in delta.items()}, str(tmp / ENCODER_DELTA))
            save_file({k: v.cpu().contiguous() for k, v in self.words.head.own_state_dict().items()},
                      str(tmp / HEAD_WEIGHTS))
            write_json(tmp / HEAD_CONFIG, self.words.head.config.to_dict())
            self.words.save(tmp, manifest)
            write_json(tmp / MANIFEST, manifest)  # written last: no manifest, no checkpoint
        self.manifest = manifest
        return path

    def save_word_scoring(self, path: str | Path, metrics: dict | None = None) -> Path:
        """Replace the word vectors and hubness correction of the checkpoint at `path` (this
        engine's) by this engine's, atomically, leaving its encoder and head files (and compact
        open-vocabulary vectors) byte for byte as they are; `metrics` are added to the manifest's."""
        path = Path(path)
        manifest = read_manifest(path)
        if manifest["base"]["fingerprint"] != self.base_fingerprint:
            raise CheckpointError(f"{path} holds a checkpoint of another base model")
        for written_again in ("word_vectors", "hub_penalty", "open_vocab", "user_dictionary", "everyday_adapter"):
            manifest.pop(written_again, None)
        manifest["metrics"] = {**manifest.get("metrics", {}), **(metrics or {})}
        with atomic_directory(path) as tmp:
            for name in (ENCODER_DELTA, HEAD_WEIGHTS, HEAD_CONFIG):
                shutil.copy2(path / name, tmp / name)
            if (path / COMPACT_VECTORS).is_file():  # kept: read only while still made for these candidates
                shutil.copy2(path / COMPACT_VECTORS, tmp / COMPACT_VECTORS)
            self.words.save(tmp, manifest)
            write_json(tmp / MANIFEST, manifest)
        self.manifest = manifest
        return path

    def add_word_vectors(self, scale: float = DEFAULT_SCALE, batch_size: int = 256,
                         progress: Callable[[int, int], None] | None = None) -> None:
        """Embed every whole word of the vocabulary on its own with the current encoder, and add
        `scale` * cos(u, word vector) to the head's scores from now on (core/words/word_vectors.py).
        Recompute after the encoder changes; `scale` 0 removes them. The hubness correction is
        dropped: it was measured on the old scores (`add_hub_penalty` again)."""
        self.words.hub_penalty = None
        self.words.vectors = None if scale == 0 else WordVectors.compute(
            lambda words: self.encode(words, batch_size=batch_size, progress=progress), self.words.vocab.words, scale)

    def add_hub_penalty(self, texts: Sequence[str], gold: Sequence[int], k: int = DEFAULT_K,
                        weight: float = DEFAULT_WEIGHT, batch_size: int = 256,
                        progress: Callable[[int, int], None] | None = None) -> None:
        """Subtract from every word's score `weight` times its mean score over the k reference
        definitions (`texts`, defining the ids `gold`) nearest to it, a definition never counting for
        its own words (core/words/hubness.py). Recompute after the encoder or the word vectors change."""
        self.words.hub_penalty = None  # references are scored without the old correction
        unique, defined = group_definitions(texts, gold)
        vectors = self.encode(unique, batch_size=batch_size, progress=progress)
        self.words.hub_penalty = HubPenalty.compute(self.words.logits, vectors, defined, k, weight)

    @property
    def device(self) -> torch.device:
        """Where the encoder, the head and the decoder compute; word scoring past the head runs on the CPU."""
        return self.encoder.device

    def to(self, device: str | torch.device) -> "Engine":
        """Compute on `device` from now on ("cpu", "cuda", "cuda:N", "mps", or "auto": CUDA, else MPS,
        else the CPU; core/runtime/device.py): the encoder and the head move there; a decoder not loaded yet
        is loaded there on first use (move an engine before `set_decoder(path)`, which loads at once).
        Word scores leave the head for the CPU, where the rest of the scoring runs; the scoring
        precision is reset to the device's default (int8 is a CPU path: float32 elsewhere). DeviceError
        (nothing moved) for a device this machine lacks; ValueError for an int8 encoder anywhere but
        the CPU."""
        device = resolve_device(device)
        if device.type != "cpu" and self.encoder.precision == "int8":
            raise ValueError("an int8 engine runs on the CPU only: load it again in float32 or bfloat16")
        self.encoder.to(device)
        self.words.head.to(device)
        self.words.set_precision("auto" if device.type == "cpu" else "float32")
        return self

    def set_precision(self, precision: str) -> None:
        """Encode in "float32", "bfloat16" or "int8" from now on (`SentenceEncoder.set_precision`).
        `fingerprint` stays that of the float32 weights, which int8 replaces by packed ones."""
        if precision == "int8":
            _ = self.fingerprint  # computed (and kept) before quantisation
        self.encoder.set_precision(precision)

    def weights_changed(self) -> None:
        """Say that the encoder or head weights were changed in place (training, blending): the
        fingerprint is computed again on next use."""
        self._fingerprint = None

    @property
    def fingerprint(self) -> str:
        """Identifies the exact encoder + head weights (the Vec2Sent decoder is tied to it)."""
        if self._fingerprint is None:
            self._fingerprint = fingerprint({**self.encoder.state_dict(),
                                             **{"head." + k: v for k, v in self.words.head.own_state_dict().items()}})
        return self._fingerprint

    # ---- embeddings ---------------------------------------------------------------------------
    def encode(self, texts: Sequence[str], batch_size: int = 64, normalize: bool = False,
               progress: Callable[[int, int], None] | None = None) -> np.ndarray:
        """Embed texts: float32 (n, d), row i for texts[i]; unit rows if `normalize`."""
        return self.encoder.encode(texts, batch_size=batch_size, normalize=normalize, progress=progress)

    def similarity(self, a: Sequence[str] | np.ndarray, b: Sequence[str] | np.ndarray) -> np.ndarray:
        """Cosine similarity matrix: res[i][j] = cos(a[i], b[j]). Texts are encoded first."""
        a, b = (self.encode(x, normalize=True) if not isinstance(x, np.ndarray) else l2_normalize(x) for x in (a, b))
        return a @ b.T

    @staticmethod
    def semantic_search(query_embeddings: np.ndarray, corpus_embeddings: np.ndarray,
                        top_k: int = 10) -> list[list[dict]]:
        """For each query, the top_k corpus rows by cosine: [{"corpus_id": j, "score": s}, ...]."""
        return semantic_search(query_embeddings, corpus_embeddings, top_k)

    # ---- reading vectors back (core/readout.py) -----------------------------------------------
    def set_decoder(self, decoder: str | Path | None = "auto", checkpoints: Path = CHECKPOINTS_DIR,
                    precision: str = "auto") -> None:
        """Choose the Vec2Sent decoder: "auto", a path or None (`VectorReader.set_decoder`)."""
        self.reader.set_decoder(decoder, checkpoints, precision)

    @property
    def decoder(self) -> Vec2Sent | None:
        """The Vec2Sent decoder for this encoder, or None."""
        return self.reader.decoder

    def set_fluency(self, model: str | Path | None = "auto") -> None:
        """Choose the language model that judges fluency ("auto", a path or None; `VectorReader.set_fluency`);
        a GGUF model is de-quantised once and kept in the user cache."""
        self.reader.set_fluency(model, user_cache_dir("fluency"))

    def decode(self, vectors: np.ndarray, beam: int = 5, max_length: int | None = None, rerank: bool = True,
               refine: RefineSettings | None = None, correct: CorrectSettings | None = DEFAULT_CORRECTION,
               fluency: FluencySettings | None = None) -> list[str]:
        """One sentence per row of `vectors` (n, d) or for one vector (d,) (`VectorReader.decode`)."""
        return self.reader.decode(vectors, beam, max_length, rerank, refine, correct, fluency)

    def analogy(self, a: str, b: str, c: str, reference: Reference | None = None, k: int = 5, beam: int = 5,
                expression: str = ANALOGY, refine: RefineSettings | None = None,
                correct: CorrectSettings | None = DEFAULT_CORRECTION,
                fluency: FluencySettings | None = PATH_FLUENCY, edits: bool = True) -> AnalogyResult:
        """Read b - a + c (or `expression`): its sentence, words and nearest texts (`VectorReader.analogy`)."""
        return self.reader.analogy(a, b, c, reference, k, beam, expression, refine, correct, fluency, edits)

    def interpolate(self, x: str, y: str, steps: int = 5, reference: Reference | None = None, k: int = 5,
                    beam: int = 5, refine: RefineSettings | None = None,
                    correct: CorrectSettings | None = DEFAULT_CORRECTION,
                    fluency: FluencySettings | None = PATH_FLUENCY, edits: bool = True) -> list[InterpolationPoint]:
        """`steps` points from x to y, each read like an analogy and chosen along the path (`VectorReader.interpolate`)."""
        return self.reader.interpolate(x, y, steps, reference, k, beam, refine, correct, fluency, edits)

    # ---- reverse dictionary -------------------------------------------------------------------
    def predict_words(self, text: str, k: int = 10, exclude_query_words: bool = EXCLUDE_QUERY_WORDS,
                      **filters) -> list[tuple[str, float]]:
        """Top-k whole words for `text` with probabilities (softmax over all whole-word tokens).

        Filters (`pos`, `min_length`, `max_length`, `initial`, `pattern` with ? and *) are masks
        applied before top-k. Never returns special tokens, `##` pieces or punctuation.
        `exclude_query_words`: leave out the words of `text` (core/answers.py: on by default, as in the
        app and on the command line).
        """
        return self.predict_words_batch([text], k, exclude_query_words, **filters)[0]

    def predict_words_batch(self, texts: Sequence[str], k: int = 10, exclude_query_words: bool = EXCLUDE_QUERY_WORDS,
                            **filters) -> list[list[tuple[str, float]]]:
        """`predict_words` for many texts at once: one ranked list per text."""
        texts = check_texts(texts)
        self.use_open_vocabulary_now()
        return self.words.ranked(self.encode(texts), k, WordFilter(**filters),
                                 texts if exclude_query_words else None)

    def enable_open_vocabulary(self, extra: Iterable[Entry] | None = None, cache_dir: str | Path | None = None,
                               progress: Callable[[int, int], None] | None = None,
                               dictionary: Iterable[Entry] | None = None, reuse: bool = False,
                               compact: bool = True) -> None:
        """Answer with every word and phrase of `dictionary` (default: all 147k WordNet lemmas,
        "ice cream", "give up") and of `extra` (default: the dictionary this model was fine-tuned
        on, `user_dictionary`), scored as core/words/open_vocab.py
        says. The first call for a model embeds them all (about 4 minutes on 2 cores for WordNet;
        `progress(done, total)` per batch, `done` only growing: the words, then the definitions, of
        one total); with `cache_dir` the vectors are kept there per model and candidate list (and WordNet's
        candidate list in the user cache, as arrays: core/words/candidate_cache.py). Vectors
        precomputed in the checkpoint's SHIPPED_VECTORS folder are read instead (a Space's), else its
        product-quantized COMPACT_VECTORS when they were made for these candidates (a fresh clone's;
        `words.compact`; not with `compact=False`, which embeds instead). With
        `reuse` (the app's activation), a model fine-tuned in the app (`training.open_vocab_parent` in
        its manifest) whose parent's vectors are cached (in `cache_dir`, the user cache or the parent's
        shipped folder) reuses them and embeds only its new words and definitions: seconds
        (`open_vocab_parent_scorer`), though the reused vectors come from the encoder before
        fine-tuning; they are cached apart ("-reused") and flagged (`words.reused`) until a call
        without `reuse` embeds everything with this model."""
        candidates = self.words.candidates(extra, dictionary, cached=cache_dir is not None)
        name = self._open_vocab_cache_name(candidates)
        cache = Path(cache_dir) / name if cache_dir is not None else None
        stored = self._stored_open_vocab(name, [] if cache_dir is None else [Path(cache_dir)], compact)
        stored_reused = None if stored or not compact else self._stored_open_vocab(reused_name(name), [])
        cache = stored or stored_reused or cache
        parent = None
        if reuse and cache is not None and not cache.exists() and extra is None:
            reused = cache.with_name(reused_name(cache.name))
            parent = None if reused.exists() else self.open_vocab_parent_scorer(
                [Path(cache_dir), user_cache_dir("open-vocab")], dictionary)
            if reused.exists() or parent is not None:
                cache = reused
        words, total = len(candidates.words), len(candidates.words) + len(candidates.definitions)
        progress = None if parent is not None else progress  # seconds: the few new texts only
        on_words = progress and (lambda done, _: progress(done, total))
        on_definitions = progress and (lambda done, _: progress(words + done, total))
        # the tower (a copy of the encoder) is built only when the candidates are embedded, and dropped after
        scorer = open_scorer(lambda texts: self.word_encoder().encode(texts, batch_size=128, progress=on_words),
                             lambda texts: self.encode(texts, batch_size=128, progress=on_definitions),
                             candidates, self.words.config, self.words.word_map, cache, parent)
        self.words.open_vocab = scorer.quantize() if self.words.int8 else scorer
        self.words.reused = stored_reused is not None or (cache is not None and cache.stem.endswith(REUSED))
        self.words.compact = cache is not None and cache.name == COMPACT_VECTORS
        if self.words.compact:  # the first candidates of each query scored again with exact vectors
            scorer.rescorer = ExactRescorer(self.exact_vectors(cache_dir))
        if total >= TRIM_AFTER_CANDIDATES:
            return_freed_memory()

    def exact_vectors(self, cache_dir: str | Path | None) -> ExactVectors:
        """This model's open-vocabulary vectors embedded on demand, text by text (the word tower's for words,
        the encoder's for definitions), kept in `cache_dir` under this model's and its tower's fingerprints
        (core/words/exact_rescoring.py)."""
        def words() -> Callable[[list[str]], np.ndarray]:
            tower = self.word_encoder()  # a copy of the encoder with the tower's delta: built once, kept
            return lambda texts: tower.encode(texts, batch_size=128)

        key = f"{self.fingerprint[:16]}-{tower_fingerprint(self.words.tower)[:8]}-exact"
        return ExactVectors({"word": words, "definition": lambda: lambda texts: self.encode(texts, batch_size=128)},
                            None if cache_dir is None else Path(cache_dir), key)

    def save_compact_open_vocab(self, subspaces: int = COMPACT_SUBSPACES,
                                progress: Callable[[int, int], None] | None = None,
                                dictionary: Iterable[Entry] | None = None, reuse: bool = False,
                                cache_dir: str | Path | None = None) -> Path:
        """Product-quantize this model's open vocabulary (`dictionary`, default WordNet, and its own
        words) into its checkpoint's COMPACT_VECTORS, which a fresh clone (or a downloaded model) then
        reads in seconds: the vectors are taken from `cache_dir` (default: the user cache), or embedded
        with this model first (minutes). With `reuse`, a model fine-tuned in the app takes its parent's
        vectors where it has no own ones (`enable_open_vocabulary`): the file is then marked as reused,
        and a model loaded from it is flagged `words.reused`. Scores in float32 afterwards. Returns the file."""
        if self.checkpoint_dir is None:
            raise ValueError("compact vectors are saved into a checkpoint folder: load one, or save this model first")
        self.words.set_precision("float32")  # keeps the float vectors to quantize
        self.enable_open_vocabulary(cache_dir=cache_dir or user_cache_dir("open-vocab"), progress=progress,
                                    dictionary=dictionary, compact=False, reuse=reuse)
        target = self.checkpoint_dir / COMPACT_VECTORS
        name = self._open_vocab_cache_name(self.words.open_vocab.candidates)
        self.words.open_vocab.save_compact(target, reused_name(name) if self.words.reused else name, subspaces)
        return target

    def open_vocab_vectors_at_hand(self, cache_dir: str | Path) -> bool:
        """Whether this model's open vocabulary (WordNet and its own words) can be had without embedding
        it all: its vectors stored (in `cache_dir`, its shipped folder or its compact file), or, for a
        model fine-tuned in the app, its parent's (`open_vocab_parent_scorer`)."""
        name = self._open_vocab_cache_name(self.words.candidates(cached=True))  # read again by the caller, fast
        return (self._stored_open_vocab(name, [Path(cache_dir)]) is not None
                or self._stored_open_vocab(reused_name(name), [Path(cache_dir)]) is not None
                or self._open_vocab_parent_file([Path(cache_dir), user_cache_dir("open-vocab")]) is not None)

    def _stored_open_vocab(self, name: str, folders: list[Path], compact: bool = True) -> Path | None:
        """`stored_vectors` of cache `name` in `folders`, else this checkpoint's SHIPPED_VECTORS folder, else
        (with `compact`) its COMPACT_VECTORS."""
        if self.checkpoint_dir is None:
            return stored_vectors(name, folders)
        return stored_vectors(name, [*folders, self.checkpoint_dir / SHIPPED_VECTORS],
                              [self.checkpoint_dir / COMPACT_VECTORS] if compact else [])

    def _open_vocab_cache_name(self, candidates: Candidates, fingerprint: str | None = None) -> str:
        """The cache file of `candidates`' vectors embedded by the model of `fingerprint` (default:
        this one) with this model's word tower."""
        return (f"{(fingerprint or self.fingerprint)[:16]}-{tower_fingerprint(self.words.tower)[:8]}-"
                f"{candidates.fingerprint()}.safetensors")

    def open_vocab_parent_scorer(self, folders: Sequence[Path], dictionary: Iterable[Entry] | None = None
                                 ) -> OpenScorer | None:
        """The cached open-vocabulary vectors of the model this one was fine-tuned from in the app (its
        manifest's `training.open_vocab_parent`: that model's fingerprint and how many of this model's
        user entries it had), from the first of `folders` holding them; None when there are none."""
        found = self._open_vocab_parent_file(folders, dictionary)
        return None if found is None else OpenScorer.load(*found, self.words.config, self.words.word_map)

    def _open_vocab_parent_file(self, folders: Sequence[Path], dictionary: Iterable[Entry] | None = None
                                ) -> tuple[Path, Candidates] | None:
        """(the file, the candidates) of `open_vocab_parent_scorer`; None when there is none."""
        parent = self.manifest.get("training", {}).get("open_vocab_parent")
        if not parent:
            return None
        # cached: a parent without words of its own has WordNet's list, read in a moment rather than built (~10 s)
        candidates = self.words.candidates(self.words.user_dictionary[:parent["user_entries"]], dictionary, cached=True)
        name = self._open_vocab_cache_name(candidates, parent["fingerprint"])
        folders = [*folders, *([Path(parent["shipped"])] if parent.get("shipped") else [])]
        found = stored_vectors(name, folders, [Path(parent["compact"])] if parent.get("compact") else [])
        return None if found is None else (found, candidates)

    def open_vocab_parent_record(self) -> dict:
        """What a model fine-tuned from this one records (`training.open_vocab_parent`) so that its
        open vocabulary can reuse this one's vectors: the fingerprint, how many user entries this one
        has (the fine-tuned model's come after them) and where this one's shipped vectors are."""
        record = {"fingerprint": self.fingerprint, "user_entries": len(self.words.user_dictionary)}
        if self.checkpoint_dir is not None and (self.checkpoint_dir / SHIPPED_VECTORS).is_dir():
            record["shipped"] = str((self.checkpoint_dir / SHIPPED_VECTORS).resolve())
        if self.checkpoint_dir is not None and (self.checkpoint_dir / COMPACT_VECTORS).is_file():
            record["compact"] = str((self.checkpoint_dir / COMPACT_VECTORS).resolve())
        return record

    def vocabulary_reference(self, kind: str = "definition") -> VocabularyTexts:
        """Every definition ("definition") or every word and phrase ("word") of the open vocabulary, as
        a reference collection for `analogy`, `interpolate` and search (core/explore/reference.py); built with
        the open vocabulary on first use, as `predict_words` does. ValueError when it is off."""
        self.use_open_vocabulary_now()
        scorer = self.words.open_vocab
        if scorer is None:
            raise ValueError("This model answers without the open vocabulary, so its definitions and words "
                             f"cannot be searched; use the {REFERENCE_SIZE:,}-definition sample or your own texts.")
        references = self._vocabulary_references
        if any(built.scorer is not scorer for built in references.values()):  # a new scorer: the old ones go
            references.clear()
        if kind not in references:
            references[kind] = VocabularyTexts(scorer, kind)
        return references[kind]

    def vocabulary_layout_path(self) -> Path:
        """Where this model's map of every word is kept (core/explore/vocabulary_map.py; `python -m core
        vocabulary-map` builds it); ValueError without the open vocabulary."""
        if self.words.open_vocab is None:
            raise ValueError("The map of every word needs the open vocabulary, which this model does not have.")
        return layout_path(self._open_vocab_cache_name(self.words.open_vocab.candidates))

    def use_open_vocabulary_now(self) -> None:
        """Enable the open vocabulary now if `load` left it for the first word query (`predict_words` calls
        this; analogies and interpolations read vectors with it only once it is on); nothing otherwise."""
        if self.words.open_vocab is None and self.open_vocabulary_on_first_use:
            self._open_vocabulary_now()

    def _open_vocabulary_now(self) -> None:
        """`enable_open_vocabulary` once, for `Engine.load`'s first word query, with a progress bar."""
        from tqdm.auto import tqdm

        with self._open_vocabulary_lock:
            if self.words.open_vocab is not None or not self.open_vocabulary_on_first_use:
                return
            started, bar = time.monotonic(), None
            print("open vocabulary: listing every WordNet word and phrase, and reading their vectors where "
                  "they are stored...", file=sys.stderr)

            def advance(done: int, total: int) -> None:  # a bar only for texts really embedded
                nonlocal bar
                bar = bar or tqdm(desc="open vocabulary: embedding (once per model, then read from the cache)",
                                  total=total, unit="text", file=sys.stderr)
                bar.update(done - bar.n)
            try:
                self.enable_open_vocabulary(cache_dir=user_cache_dir("open-vocab"), progress=advance)
            finally:
                if bar is not None:
                    bar.close()
            how = "embedded" if bar is not None else "read from " + ("the checkpoint's compact vectors"
                                                                     if self.words.compact else "the cache")
            print(f"open vocabulary: {len(self.words.open_vocab.candidates):,} words and phrases ready in "
                  f"{time.monotonic() - started:.0f} s ({how})", file=sys.stderr)
            self.open_vocabulary_on_first_use = False

    def reset_open_vocabulary(self) -> None:
        """Forget the open vocabulary's word tower, older map and weights (back to the defaults):
        they were fitted to an encoder this one no longer is."""
        self.words.reset_open_vocabulary()
        self.open_vocabulary_on_first_use = False
        self._vocabulary_references.clear()

    def word_encoder(self) -> SentenceEncoder:
        """What embeds the open vocabulary's candidates: the word tower when the model has one
        (a copy of the encoder with the tower's delta), else the encoder itself."""
        return word_tower(self.encoder, self.words.tower) if self.words.tower else self.encoder


def _freeze_embeddings(encoder: SentenceEncoder) -> None:
    # The head's decoder is tied to E; DefSent keeps both frozen so the head stays a fixed target.
    encoder.backbone.get_input_embeddings().weight.requires_grad_(False)


def _encoder_delta(trained: dict, base: dict) -> dict[str, torch.Tensor]:
    """(trained - base) for every tensor that differs: what a checkpoint has to store."""
    trained = {k: v.cpu() for k, v in trained.items()}
    return {k: (v.float() - base[k].float()) for k, v in trained.items()
            if v.is_floating_point() and not torch.equal(v, base[k])}
