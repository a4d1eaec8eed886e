"""The engine: one object that holds the encoder, the words (`engine.words`, core/words/scorer.py: the
frozen word head, its vocabulary and the open vocabulary's scorer), the open vocabulary's life (`engine.vocabulary`,
core/words/open_vocabulary.py: which vectors it answers with, their caches, its transitions) and the reader of
vectors (`engine.reader`, core/readout.py: the Vec2Sent decoder), loads and saves them as one checkpoint.

    from core import Engine
    engine = Engine.load()                                   # the shipped default checkpoint
    engine.encode(["a sentence", "another"])                 # np.ndarray (2, d), float32
    engine.predict_words("a person who is in charge", k=10)  # [("chief", 0.002), ...]: all WordNet lemmas
    engine.rank_words(vectors, k=10)                         # the same for vectors already embedded (n, d)
    engine.vocabulary.state                                  # VocabularyState: SINGLE_TOKEN, COMPACT, REUSED, EXACT
    engine.decode(vectors, beam=5)                           # Vec2Sent: ["a sentence.", ...]
    engine.analogy(a, b, c); engine.interpolate(x, y)        # see core/readout.py
"""
from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any, Callable, Sequence

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
from .words.hubness import DEFAULT_K, DEFAULT_WEIGHT, HubPenalty, group_definitions
from .lora import add_into, dense_delta, factored_delta, is_low_rank, stored_factors
from .words.open_vocab import COMPACT_VECTORS
from .words.open_vocabulary import OpenVocabulary
from .readout import ANALOGY, REFERENCE_SIZE, AnalogyResult, InterpolationPoint, Reference, VectorReader
from .explore.reference import VocabularyTexts
from .explore.vocabulary_map import layout_path
from .vec2sent.checkpoint import Vec2Sent
from .vec2sent.fluency import FluencyModel
from .vec2sent.reading import API_DEFAULT, PATH_DEFAULT, DecodeSettings
from .words.scorer import WordScorer
from .words.vocabulary import WordFilter, WordVocabulary
from .words.word_head import WordHead, WordHeadConfig
from .words.word_tower import word_tower
from .words.word_vectors import DEFAULT_SCALE, WordVectors


class Engine:
    """An encoder, the words it reads vectors with (`words`, a `WordScorer`: the frozen head and its
    vocabulary; `vocabulary`, an `OpenVocabulary`: every WordNet word and phrase as an answer) and a reader of
    vectors (`reader`, a `VectorReader`: the Vec2Sent decoder when one fits, analogies, interpolations). Shared
    between users; holds no per-user state."""

    def __init__(self, encoder: SentenceEncoder, head: WordHead, base_source: str,
                 base_fingerprint: str, manifest: dict | None = None):
        self.encoder = encoder
        self.words = WordScorer.for_tokenizer(head, encoder.tokenizer, encoder.word_embeddings.shape[0])
        self.reader = VectorReader(self)  # no decoder until `set_decoder`
        self.vocabulary = OpenVocabulary(self.words, self)  # every WordNet word and phrase as an answer, once on
        self.checkpoint_dir: Path | None = None  # the folder it was loaded from (Engine.load)
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
        `engine.vocabulary.enable` (core/words/open_vocabulary.py).

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
        engine = _read_checkpoint(cls, path, untrained)
        engine.to(device)
        engine.set_precision(precision)
        engine.set_decoder(decoder, path.parent)
        engine.set_fluency(fluency)
        fitted = {"word_tower", "word_map"} & set(engine.manifest.get("open_vocab", {}))
        own_words = "user_dictionary" in engine.manifest  # a fine-tune's words are answers, towered or not
        engine.vocabulary.defer(bool(open_vocabulary and (fitted or own_words) and not untrained))
        return engine

    @classmethod
    def load_with_exact_vectors(cls, path: str | Path | None = None, progress=None) -> "Engine":
        """`load` without a decoder, with the open vocabulary's exact vectors (what the map of every word is
        drawn from), embedded first (minutes, `progress`) when the user cache has none."""
        engine = cls.load(path, decoder=None, open_vocabulary=False)
        engine.vocabulary.enable(cache_dir=user_cache_dir("open-vocab"), progress=progress, compact=False)
        return engine

    def save(self, path: str | Path, name: str | None = None, training: dict | None = None,
             metrics: dict | None = None) -> Path:
        """Write a checkpoint atomically: `path` is either left as it was or holds the new one."""
        self.manifest = _write_checkpoint(self, Path(path), name, training, metrics)
        return Path(path)

    def save_word_scoring(self, path: str | Path, metrics: dict | None = None) -> Path:
        """Replace the word vectors and hubness correction of the checkpoint at `path` (this
        engine's) by this engine's, atomically, leaving its encoder and head files (and compact
        open-vocabulary vectors) byte for byte as they are; `metrics` are added to the manifest's."""
        self.manifest = _write_word_scoring(self, Path(path), metrics)
        return Path(path)

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

    @property
    def fluency_model(self) -> FluencyModel | None:
        """The language model that judges analogies' grammar (loaded on first use), or None."""
        return self.reader.fluency_model

    @property
    def borrowed_decoding(self) -> dict | None:
        """A fine-tune's link to the decoder it borrows (`VectorReader.borrowed_decoding`), or None."""
        return self.reader.borrowed_decoding

    # `settings` (core/vec2sent/reading.py DecodeSettings: API_DEFAULT, PATH_DEFAULT, MOST_EXACT, ...) say how vectors
    # are decoded; `changes` change its fields by name: engine.decode(vectors, beam=20, correct=None).
    def decode(self, vectors: np.ndarray, settings: DecodeSettings = API_DEFAULT, **changes: Any) -> list[str]:
        """One sentence per row of `vectors` (n, d) or for one vector (d,) (`VectorReader.decode`)."""
        return self.reader.decode(vectors, settings.changed(**changes))

    def analogy(self, a: str, b: str, c: str, reference: Reference | None = None, k: int = 5,
                settings: DecodeSettings = PATH_DEFAULT, expression: str = ANALOGY, edits: bool = True,
                **changes: Any) -> AnalogyResult:
        """Read b - a + c (or `expression`): its sentence, words and nearest texts (`VectorReader.analogy`)."""
        return self.reader.analogy(a, b, c, reference, k, settings.changed(**changes), expression, edits)

    def interpolate(self, x: str, y: str, steps: int = 5, reference: Reference | None = None, k: int = 5,
                    settings: DecodeSettings = PATH_DEFAULT, edits: bool = True,
                    **changes: Any) -> list[InterpolationPoint]:
        """`steps` points from x to y, each read like an analogy and chosen along the path (`VectorReader.interpolate`)."""
        return self.reader.interpolate(x, y, steps, reference, k, settings.changed(**changes), edits)

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
        self.vocabulary.use_now()  # before encoding, as ever: a deferred open vocabulary is enabled first
        return self._ranked(self.encode(texts), k, texts if exclude_query_words else None, filters)

    def rank_words(self, vectors: np.ndarray, k: int = 10, texts: Sequence[str] | None = None,
                   exclude_query_words: bool = EXCLUDE_QUERY_WORDS, **filters) -> list[list[tuple[str, float]]]:
        """`predict_words_batch` for vectors already embedded (n, d), row i `encode`'s of `texts[i]` (whose
        words are left out with `exclude_query_words`; `texts` None: nothing left out): one ranked list a row."""
        self.vocabulary.use_now()
        return self._ranked(vectors, k, check_texts(texts) if texts is not None and exclude_query_words else None,
                            filters)

    def _ranked(self, vectors: np.ndarray, k: int, excluded: Sequence[str] | None, filters: dict
                ) -> list[list[tuple[str, float]]]:
        """The word ranking of `rank_words` once the open vocabulary is in use: `excluded`' words left out."""
        return self.words.ranked(vectors, k, WordFilter(**filters), excluded)

    @property
    def head_words(self) -> WordVocabulary:
        """The word head's single-token words and their filters (`token_id`, `words`)."""
        return self.words.vocab

    @property
    def has_word_vectors(self) -> bool:
        """Whether the word scores add cosines with word vectors (`add_word_vectors`)."""
        return self.words.vectors is not None

    def vocabulary_reference(self, kind: str = "definition") -> VocabularyTexts:
        """Every definition ("definition") or every word and phrase ("word") of the open vocabulary, as
        a reference collection for `analogy`, `interpolate` and search (core/explore/reference.py); built with
        the open vocabulary on first use, as `predict_words` does. ValueError when it is off."""
        try:
            return self.vocabulary.built_from_scorer(f"reference-{kind}", lambda scorer: VocabularyTexts(scorer, kind))
        except ValueError as off:
            if self.vocabulary.enabled:
                raise
            raise ValueError(f"{off} Use the {REFERENCE_SIZE:,}-definition sample or your own texts.") from None

    def vocabulary_layout_path(self) -> Path:
        """Where this model's map of every word is kept (core/explore/vocabulary_map.py; `python -m core
        vocabulary-map` builds it); ValueError without the open vocabulary."""
        return layout_path(self.vocabulary.current_cache_name())

    def word_encoder(self) -> SentenceEncoder:
        """What embeds the open vocabulary's candidates: the word tower when the model has one
        (a copy of the encoder with the tower's delta), else the encoder itself."""
        return word_tower(self.encoder, self.words.tower) if self.words.tower else self.encoder


# ---- the checkpoint's files ----------------------------------------------------------------------
def _read_checkpoint(cls: type[Engine], path: Path, untrained: bool) -> Engine:
    """The engine of the checkpoint (or plain Hugging Face model) at `path`, on the CPU (`Engine.load`)."""
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
    engine.words.head = _read_head(path, engine.encoder)
    if not untrained:
        delta = load_file(str(path / ENCODER_DELTA))
        _add_delta(engine.encoder, dense_delta(delta))
        engine.weights_changed()
        engine.low_rank = stored_factors(delta)
        engine.words.load(path, manifest)
    elif "word_vectors" in manifest:  # the base's own word vectors: a like-for-like "before" model
        engine.add_word_vectors(manifest["word_vectors"]["scale"])
    engine.manifest = manifest
    engine.checkpoint_dir = path
    return engine


def _read_head(path: Path, encoder: SentenceEncoder) -> WordHead:
    """The word head stored at `path`, over `encoder`'s (frozen) word embeddings."""
    config = WordHeadConfig(**json.loads((path / HEAD_CONFIG).read_text(encoding="utf-8")))
    head = WordHead(config, encoder.word_embeddings)
    missing, unexpected = head.load_state_dict(load_file(str(path / HEAD_WEIGHTS)), strict=False)
    if [k for k in missing if k != "embeddings"] or unexpected:
        raise CheckpointError(f"{path / HEAD_WEIGHTS} does not fit its head config "
                              f"(missing {missing}, unexpected {unexpected})")
    return head.eval()


def _add_delta(encoder: SentenceEncoder, delta: dict[str, torch.Tensor]) -> None:
    """Add a checkpoint's (dense) weight differences into `encoder`'s weights, in place."""
    state = encoder.state_dict()
    unknown = sorted(set(delta) - set(state))
    if unknown:
        raise CheckpointError(f"checkpoint changes tensors the base does not have: {unknown[:5]}")
    for name, d in delta.items():
        add_into(state[name], d)  # in its dtype, on its device


def _write_checkpoint(engine: Engine, path: Path, name: str | None, training: dict | None, metrics: dict | None
                      ) -> dict:
    """`Engine.save`'s writing: returns the manifest written."""
    if engine.encoder.precision == "int8":
        raise CheckpointError("an int8-quantised engine is for inference only: save the float32 model")
    if is_low_rank(engine.encoder.backbone):
        raise CheckpointError("low-rank deltas are still attached: merge them first (core.lora.merge_low_rank)")
    # Only the base weights are needed here, not a whole Engine (vocabulary, head, fingerprint).
    base_encoder, _ = SentenceEncoder.from_pretrained(resolve_base(engine.base_source), engine.encoder.pooling,
                                                      engine.encoder.max_length)
    delta = factored_delta(_encoder_delta(engine.encoder.state_dict(), base_encoder.state_dict()), engine.low_rank)
    factors = [v for k, v in delta.items() if k.endswith(".lora_A")]  # A: (rank, in)
    manifest = {
        "format": FORMAT, "format_version": FORMAT_VERSION,
        "name": name or path.name, "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "base": {"source": engine.base_source, "fingerprint": engine.base_fingerprint,
                 "hidden_size": engine.encoder.hidden_size},
        "pooling": engine.encoder.pooling, "max_length": engine.encoder.max_length,
        "head": {**engine.manifest.get("head", {}), "kind": engine.words.head.config.kind},
        "encoder_delta": {"file": ENCODER_DELTA, "dtype": "float16", "tensors": len(delta),
                          "parameters": int(sum(t.numel() for t in delta.values())),
                          **({"low_rank": {"matrices": len(factors), "rank": factors[0].shape[0]}}
                             if factors else {})},
        "training": training if training is not None else engine.manifest.get("training", {}),
        "metrics": metrics if metrics is not None else engine.manifest.get("metrics", {}),
        "versions": library_versions(),
    }
    with atomic_directory(path) as tmp:
        save_file({k: v.half().contiguous() for k, v in delta.items()}, str(tmp / ENCODER_DELTA))
        save_file({k: v.cpu().contiguous() for k, v in engine.words.head.own_state_dict().items()},
                  str(tmp / HEAD_WEIGHTS))
        write_json(tmp / HEAD_CONFIG, engine.words.head.config.to_dict())
        engine.words.save(tmp, manifest)
        write_json(tmp / MANIFEST, manifest)  # written last: no manifest, no checkpoint
    return manifest


def _write_word_scoring(engine: Engine, path: Path, metrics: dict | None) -> dict:
    """`Engine.save_word_scoring`'s writing: returns the manifest written."""
    manifest = read_manifest(path)
    if manifest["base"]["fingerprint"] != engine.base_fingerprint:
        raise CheckpointError(f"{path} holds a checkpoint of another base model")
    for written_again in ("word_vectors", "hub_penalty", "open_vocab", "user_dictionary", "everyday_adapter"):
        manifest.pop(written_again, None)
    manifest["metrics"] = {**manifest.get("metrics", {}), **(metrics or {})}
    with atomic_directory(path) as tmp:
        for name in (ENCODER_DELTA, HEAD_WEIGHTS, HEAD_CONFIG):
            shutil.copy2(path / name, tmp / name)
        if (path / COMPACT_VECTORS).is_file():  # kept: read only while still made for these candidates
            shutil.copy2(path / COMPACT_VECTORS, tmp / COMPACT_VECTORS)
        engine.words.save(tmp, manifest)
        write_json(tmp / MANIFEST, manifest)
    return manifest


def _freeze_embeddings(encoder: SentenceEncoder) -> None:
    # The head's decoder is tied to E; DefSent keeps both frozen so the head stays a fixed target.
    encoder.backbone.get_input_embeddings().weight.requires_grad_(False)


def _encoder_delta(trained: dict, base: dict) -> dict[str, torch.Tensor]:
    """(trained - base) for every tensor that differs: what a checkpoint has to store."""
    trained = {k: v.cpu() for k, v in trained.items()}
    return {k: (v.float() - base[k].float()) for k, v in trained.items()
            if v.is_floating_point() and not torch.equal(v, base[k])}
