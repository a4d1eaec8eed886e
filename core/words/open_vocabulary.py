"""The open vocabulary's life: one object (`OpenVocabulary`, `engine.vocabulary`) that owns which vectors a model
answers every WordNet word and phrase with, where they are kept, and the transitions between them.

    vocabulary = engine.vocabulary
    vocabulary.state                      # VocabularyState.SINGLE_TOKEN, COMPACT, REUSED or EXACT
    vocabulary.read_stored(cache)         # seconds: stored vectors (compact, cached, a parent's), else nothing
    vocabulary.enable(cache_dir=cache)    # minutes the first time: every candidate embedded, then cached
    vocabulary.embed_exact(cache)         # the model's own exact vectors, replacing approximate ones
    vocabulary.progress                   # (done, total, seconds left) while it embeds, else None
    vocabulary.failure                    # why the last transition failed ("" when it did not)

The scorer it sets is the words' (`WordScorer.open_vocab`, core/words/scorer.py), which scores with it; everything
about where its vectors come from lives here (core/words/open_vocab.py holds the scorer and its files).
"""
from __future__ import annotations

import contextlib
import sys
import threading
import time
from enum import Enum
from pathlib import Path
from typing import Callable, Iterable, Iterator, NamedTuple, Protocol, Sequence, TypeVar

import numpy as np

from ..lexicon.dictionary import Entry
from ..paths import user_cache_dir
from ..runtime.hardware import return_freed_memory
from ..text import short_reason
from .exact_rescoring import ExactRescorer, ExactVectors
from .open_vocab import COMPACT_SUBSPACES, COMPACT_VECTORS, Candidates, OpenScorer, open_scorer, stored_vectors
from .scorer import WordScorer
from .word_tower import tower_fingerprint

# Candidates (words and definitions) from which enabling the open vocabulary hands freed memory back: WordNet's
# 264k leave ~430 MB in glibc's arenas; a dictionary's few thousand leave too little to pay a full garbage collection
# (0.3-1.5 s with the GIL held, on a large heap).
TRIM_AFTER_CANDIDATES = 20_000
REUSED = "-reused"  # the cache of vectors a fine-tuned model took over from its parent (`OpenVocabulary.enable`)
# A checkpoint's folder of precomputed open-vocabulary vectors, read before embedding anything: too large
# for the repository (git-ignored), uploaded with a Space (scripts/deploy_space.py --vectors).
SHIPPED_VECTORS = "open-vocab"
Built = TypeVar("Built")


def reused_name(name: str) -> str:
    """The cache file name of vectors partly reused from a parent, for the cache file `name`."""
    path = Path(name)
    return path.stem + REUSED + path.suffix


class VocabularyState(Enum):
    """What a model answers its word queries from."""
    SINGLE_TOKEN = "single-token"  # the word head's single-token words only: the open vocabulary is off
    COMPACT = "compact"  # every word, from the checkpoint's product-quantized vectors (first candidates exact),
    # whether they were quantized from the model's own vectors or from its parent's (a fine-tune's download)
    REUSED = "reused"  # every word, partly from the vectors of the model it was fine-tuned from
    EXACT = "exact"  # every word, from this model's own vectors


APPROXIMATE = (VocabularyState.COMPACT, VocabularyState.REUSED)


class Answering(NamedTuple):
    """What a model answers its word queries with: the scorer (None while the open vocabulary is off) and the
    state that describes it. Replaced whole, never edited: a request reads both from one pair."""
    scorer: OpenScorer | None
    state: VocabularyState


OFF = Answering(None, VocabularyState.SINGLE_TOKEN)


class EmbeddingProgress(NamedTuple):
    """The open vocabulary's embedding under way: texts embedded, texts in all, seconds left (estimated)."""
    done: int
    total: int
    seconds_left: float


class Model(Protocol):
    """What the open vocabulary needs of the model it belongs to (core/engine.py's `Engine`)."""
    checkpoint_dir: Path | None
    manifest: dict

    @property
    def fingerprint(self) -> str: ...

    def encode(self, texts: Sequence[str], batch_size: int = 64, normalize: bool = False,
               progress: Callable[[int, int], None] | None = None) -> np.ndarray: ...

    def word_encoder(self): ...


class OpenVocabulary:
    """A model's open vocabulary: its state (`state`: off, or which vectors it answers with), its progress while
    it embeds (`progress`), the last failure (`failure`), and the transitions (`read_stored`, `enable`,
    `embed_exact`, `defer` / `use_now`, `scoring_with`, `forget_scorer`, `reset`). Requests read it while a transition runs in the
    background: the scorer and its state are one pair (`Answering`), replaced whole once the new scorer is ready, so
    a request never sees a scorer with another's state; the words' scorer (`words.open_vocab`) is set from it."""

    def __init__(self, words: WordScorer, model: Model):
        self.words = words  # whose scorer (`words.open_vocab`) the transitions set
        self.model = model
        self.deferred = False  # enabled at the first word query (`defer`, `use_now`): Engine.load's default
        self.progress: EmbeddingProgress | None = None  # while a transition embeds
        self.failure = ""  # why the last transition failed, for the user; "" after a success
        self._answering = OFF  # (scorer, state): replaced whole (`_answer_with`), never edited
        self._built: dict[str, tuple[OpenScorer, object]] = {}  # `built_from_scorer`: dropped with their scorer
        self._built_lock = threading.Lock()
        self._deferred_lock = threading.Lock()  # the first word queries wait for one `_enable_deferred`

    # ---- the state ----------------------------------------------------------------------------
    @property
    def answering(self) -> Answering:
        """(scorer, state) now, as one pair: read it once where both are needed."""
        return self._answering

    @property
    def scorer(self) -> OpenScorer | None:
        """What scores every candidate (core/words/open_vocab.py), or None while the open vocabulary is off."""
        return self._answering.scorer

    @property
    def state(self) -> VocabularyState:
        """What the model answers from now."""
        return self._answering.state

    @state.setter
    def state(self, vectors: VocabularyState) -> None:
        """Say which vectors the scorer in place holds (a test's or a study's own scorer)."""
        if vectors is VocabularyState.SINGLE_TOKEN or self.scorer is None:
            raise ValueError("the open vocabulary is turned off by `reset`, and turned on by `enable`, not by a state")
        self._answer_with(Answering(self.scorer, vectors))

    @property
    def enabled(self) -> bool:
        """Whether every word and phrase is an answer now (any state but SINGLE_TOKEN)."""
        return self._answering.scorer is not None

    @property
    def approximate(self) -> bool:
        """Whether the answers come from approximate vectors: a checkpoint's compact ones or a parent model's
        (`APPROXIMATE_ANSWERS` says so to the user)."""
        return self.state in APPROXIMATE

    @property
    def single_token_words(self) -> int:
        """How many single-token words the word head answers with while the open vocabulary is off."""
        return int(self.words.vocab.candidate_mask.sum())

    @property
    def user_dictionary(self) -> list[Entry]:
        """A fine-tune's own dictionary, whose words are answers too (saved with the model)."""
        return self.words.user_dictionary

    @user_dictionary.setter
    def user_dictionary(self, entries: list[Entry]) -> None:
        self.words.user_dictionary = list(entries)

    # ---- the transitions ----------------------------------------------------------------------
    def defer(self, deferred: bool = True) -> None:
        """Enable the open vocabulary at the first word query (`use_now`), not now."""
        self.deferred = deferred

    def use_now(self) -> None:
        """Enable the open vocabulary now if `defer` left it for the first word query (`Engine.predict_words` calls
        this; analogies and interpolations read vectors with it only once it is on); nothing otherwise."""
        if self.scorer is None and self.deferred:
            self._enable_deferred()

    def read_stored(self, cache_dir: str | Path) -> bool:
        """Enable the open vocabulary from vectors at hand (`vectors_at_hand`: its cache in `cache_dir`, its shipped
        or compact ones, a fine-tune's parent's with its new words embedded): seconds. False, nothing done, when
        it is on already or its vectors would have to be embedded (minutes: `enable`)."""
        if self.enabled or not self.vectors_at_hand(cache_dir):
            return False
        self.enable(cache_dir=cache_dir, reuse=True)
        return True

    def embed_exact(self, cache_dir: str | Path, progress: Callable[[int, int], None] | None = None) -> None:
        """Answer with this model's own exact vectors, embedded into `cache_dir` (minutes, once per model) where it
        answered from approximate ones (COMPACT, REUSED); those answer meanwhile, and still do if this fails."""
        self.enable(cache_dir=cache_dir, compact=False, progress=progress)

    def enable(self, extra: Iterable[Entry] | None = None, cache_dir: str | Path | None = None,
               progress: Callable[[int, int], None] | None = None,
               dictionary: Iterable[Entry] | None = None, reuse: bool = False, compact: bool = True) -> None:
        """Answer with every word and phrase of `dictionary` (default: all 147k WordNet lemmas,
        "ice cream", "give up") and of `extra` (default: the dictionary this model was fine-tuned
        on, `user_dictionary`), scored as core/words/open_vocab.py
        says. The first call for a model embeds them all (about 4 minutes on 2 cores for WordNet;
        `progress(done, total)` per batch, `done` only growing: the words, then the definitions, of
        one total; `self.progress` meanwhile); with `cache_dir` the vectors are kept there per model and candidate
        list (and WordNet's candidate list in the user cache, as arrays: core/words/candidate_cache.py). Vectors
        precomputed in the checkpoint's SHIPPED_VECTORS folder are read instead (a Space's), else its
        product-quantized COMPACT_VECTORS when they were made for these candidates (a fresh clone's;
        state COMPACT; not with `compact=False`, which embeds instead). With
        `reuse` (the app's activation), a model fine-tuned in the app (`training.open_vocab_parent` in
        its manifest) whose parent's vectors are cached (in `cache_dir`, the user cache or the parent's
        shipped folder) reuses them and embeds only its new words and definitions: seconds
        (`parent_scorer`), though the reused vectors come from the encoder before
        fine-tuning; they are cached apart ("-reused") and flagged (state REUSED) until a call
        without `reuse` embeds everything with this model. `failure` is cleared as it starts (a retry under way
        is no failure: the app's notice and its polling follow it); a failure is kept there and raised; the state is
        then as it was."""
        self.failure = ""
        try:
            self._enable(extra, cache_dir, progress, dictionary, reuse, compact)
        except Exception as err:
            self.failure = short_reason(err)
            raise
        finally:
            self.progress = None

    def _enable(self, extra: Iterable[Entry] | None, cache_dir: str | Path | None,
                progress: Callable[[int, int], None] | None, dictionary: Iterable[Entry] | None, reuse: bool,
                compact: bool) -> None:
        candidates = self.words.candidates(extra, dictionary, cached=cache_dir is not None)
        name = self.cache_name(candidates)
        cache = Path(cache_dir) / name if cache_dir is not None else None
        stored = self._stored(name, [] if cache_dir is None else [Path(cache_dir)], compact)
        stored_reused = None if stored or not compact else self._stored(reused_name(name), [])
        cache = stored or stored_reused or cache
        parent = None
        if reuse and cache is not None and not cache.exists() and extra is None:
            reused = cache.with_name(reused_name(cache.name))
            parent = None if reused.exists() else self.parent_scorer(
                [Path(cache_dir), user_cache_dir("open-vocab")], dictionary)
            if reused.exists() or parent is not None:
                cache = reused
        words, total = len(candidates.words), len(candidates.words) + len(candidates.definitions)
        recorded = None if parent is not None else self._recording(progress)  # seconds: the few new texts only
        on_words = recorded and (lambda done, _: recorded(done, total))
        on_definitions = recorded and (lambda done, _: recorded(words + done, total))
        model = self.model
        # the tower (a copy of the encoder) is built only when the candidates are embedded, and dropped after
        scorer = open_scorer(lambda texts: model.word_encoder().encode(texts, batch_size=128, progress=on_words),
                             lambda texts: model.encode(texts, batch_size=128, progress=on_definitions),
                             candidates, self.words.config, self.words.word_map, cache, parent)
        reused_vectors = stored_reused is not None or (cache is not None and cache.stem.endswith(REUSED))
        compact_vectors = cache is not None and cache.name == COMPACT_VECTORS
        if compact_vectors:  # the first candidates of each query scored again with exact vectors
            scorer.rescorer = ExactRescorer(self.exact_vectors(cache_dir))
        # compact vectors made from a parent's (a fine-tune's download) are compact first: quantized, re-scored
        state = (VocabularyState.COMPACT if compact_vectors else VocabularyState.REUSED if reused_vectors
                 else VocabularyState.EXACT)
        self._answer_with(Answering(scorer.quantize() if self.words.int8 else scorer, state))
        self.deferred = False
        if total >= TRIM_AFTER_CANDIDATES:
            return_freed_memory()

    @contextlib.contextmanager
    def scoring_with(self, scorer: OpenScorer, state: VocabularyState) -> Iterator[None]:
        """Answer with `scorer` (a study's own: a leak-free index, other weights), whose vectors are `state`'s, inside
        the block; the pair answering before afterwards. For a study's process: a transition run meanwhile is undone."""
        if scorer is None or state is VocabularyState.SINGLE_TOKEN:
            raise ValueError("scoring_with needs a scorer and the vectors it holds; `reset` turns the vocabulary off")
        kept = self._answering
        self._answer_with(Answering(scorer, state))
        try:
            yield
        finally:
            self._answer_with(kept)

    def forget_scorer(self) -> None:
        """Turn the open vocabulary off but keep its word tower, map and weights (unlike `reset`): its scorer was
        built with weights changed since (core/words/open_vocab_fit.py); `enable` builds it again with them."""
        self._answer_with(OFF)

    def _answer_with(self, answering: Answering) -> None:
        """Answer with `answering` from now on: the pair first (what `scorer` and `state` read), then the words'
        scorer (what the scores read)."""
        self._answering = answering
        self.words.open_vocab = answering.scorer

    def _recording(self, progress: Callable[[int, int], None] | None) -> Callable[[int, int], None]:
        """A `progress(done, total)` that keeps (done, total, seconds left) in `self.progress` and calls `progress`."""
        started = time.monotonic()

        def recorded(done: int, total: int) -> None:
            self.progress = EmbeddingProgress(done, total, (time.monotonic() - started) * (total - done) / max(done, 1))
            if progress is not None:
                progress(done, total)
        return recorded

    def _enable_deferred(self) -> None:
        """`enable` once, for `Engine.load`'s first word query, with a progress bar on stderr."""
        from tqdm.auto import tqdm

        with self._deferred_lock:
            if self.scorer is not None or not self.deferred:
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
                self.enable(cache_dir=user_cache_dir("open-vocab"), progress=advance)
            finally:
                if bar is not None:
                    bar.close()
            how = "embedded" if bar is not None else "read from " + ("the checkpoint's compact vectors"
                                                                     if self.state is VocabularyState.COMPACT
                                                                     else "the cache")
            print(f"open vocabulary: {len(self.scorer.candidates):,} words and phrases ready in "
                  f"{time.monotonic() - started:.0f} s ({how})", file=sys.stderr)

    def reset(self) -> None:
        """Forget the open vocabulary, its word tower, older map and weights (back to the defaults): they were
        fitted to an encoder this model no longer is."""
        self.words.reset_open_vocabulary()
        self._answer_with(OFF)
        self.deferred = False
        with self._built_lock:
            self._built.clear()

    # ---- what is built from it ----------------------------------------------------------------
    def built_from_scorer(self, key: str, build: Callable[[OpenScorer], Built]) -> Built:
        """`build(scorer)` for the scorer in use, once, kept until the scorer changes (enabled first if it was
        deferred); ValueError while the open vocabulary is off."""
        self.use_now()
        scorer = self.scorer
        if scorer is None:
            raise ValueError("This model answers without the open vocabulary, so its words and definitions "
                             "cannot be searched.")
        with self._built_lock:
            kept = self._built.get(key)
            if kept is None or kept[0] is not scorer:
                for stale in [k for k, (built_for, _) in self._built.items() if built_for is not scorer]:
                    del self._built[stale]  # a new scorer: what was built from the old one goes with it
                kept = self._built[key] = (scorer, build(scorer))
            return kept[1]

    def current_cache_name(self) -> str:
        """`cache_name` of the candidates answering now; ValueError while the open vocabulary is off."""
        scorer = self.scorer
        if scorer is None:
            raise ValueError("The map of every word needs the open vocabulary, which this model does not have.")
        return self.cache_name(scorer.candidates)

    def cache_bytes(self) -> int:
        """What this model's open-vocabulary cache takes: an int8 row for each word and definition
        (core/words/open_vocab.py), with 5% to spare (the shipped model's: 101.4 MB, this says 106.5 MB)."""
        candidates = self.words.candidates()
        return int(1.05 * self.words.head.config.hidden_size * (len(candidates.words) + len(candidates.definitions)))

    # ---- where its vectors are kept -----------------------------------------------------------
    def cache_name(self, candidates: Candidates, fingerprint: str | None = None) -> str:
        """The cache file of `candidates`' vectors embedded by the model of `fingerprint` (default:
        this one) with this model's word tower."""
        return (f"{(fingerprint or self.model.fingerprint)[:16]}-{tower_fingerprint(self.words.tower)[:8]}-"
                f"{candidates.fingerprint()}.safetensors")

    def exact_vectors(self, cache_dir: str | Path | None) -> ExactVectors:
        """This model's open-vocabulary vectors embedded on demand, text by text (the word tower's for words,
        the encoder's for definitions), kept in `cache_dir` under this model's and its tower's fingerprints
        (core/words/exact_rescoring.py)."""
        model = self.model

        def words() -> Callable[[list[str]], np.ndarray]:
            tower = model.word_encoder()  # a copy of the encoder with the tower's delta: built once, kept
            return lambda texts: tower.encode(texts, batch_size=128)

        key = f"{model.fingerprint[:16]}-{tower_fingerprint(self.words.tower)[:8]}-exact"
        return ExactVectors({"word": words, "definition": lambda: lambda texts: model.encode(texts, batch_size=128)},
                            None if cache_dir is None else Path(cache_dir), key)

    def save_compact(self, subspaces: int = COMPACT_SUBSPACES, progress: Callable[[int, int], None] | None = None,
                     dictionary: Iterable[Entry] | None = None, reuse: bool = False,
                     cache_dir: str | Path | None = None) -> Path:
        """Product-quantize this model's open vocabulary (`dictionary`, default WordNet, and its own
        words) into its checkpoint's COMPACT_VECTORS, which a fresh clone (or a downloaded model) then
        reads in seconds: the vectors are taken from `cache_dir` (default: the user cache), or embedded
        with this model first (minutes). With `reuse`, a model fine-tuned in the app takes its parent's
        vectors where it has no own ones (`enable`): the file is then marked as reused,
        and a model loaded from it is in state REUSED. Scores in float32 afterwards. Returns the file."""
        if self.model.checkpoint_dir is None:
            raise ValueError("compact vectors are saved into a checkpoint folder: load one, or save this model first")
        self.words.set_precision("float32")  # keeps the float vectors to quantize
        self.enable(cache_dir=cache_dir or user_cache_dir("open-vocab"), progress=progress,
                    dictionary=dictionary, compact=False, reuse=reuse)
        target = self.model.checkpoint_dir / COMPACT_VECTORS
        scorer, state = self.answering
        name = self.cache_name(scorer.candidates)
        reused = state is VocabularyState.REUSED
        scorer.save_compact(target, reused_name(name) if reused else name, subspaces)
        return target

    def vectors_at_hand(self, cache_dir: str | Path) -> bool:
        """Whether this model's open vocabulary (WordNet and its own words) can be had without embedding
        it all: its vectors stored (in `cache_dir`, its shipped folder or its compact file), or, for a
        model fine-tuned in the app, its parent's (`parent_scorer`)."""
        name = self.cache_name(self.words.candidates(cached=True))  # read again by the caller, fast
        return (self._stored(name, [Path(cache_dir)]) is not None
                or self._stored(reused_name(name), [Path(cache_dir)]) is not None
                or self._parent_file([Path(cache_dir), user_cache_dir("open-vocab")]) is not None)

    def _stored(self, name: str, folders: list[Path], compact: bool = True) -> Path | None:
        """`stored_vectors` of cache `name` in `folders`, else this checkpoint's SHIPPED_VECTORS folder, else
        (with `compact`) its COMPACT_VECTORS."""
        checkpoint = self.model.checkpoint_dir
        if checkpoint is None:
            return stored_vectors(name, folders)
        return stored_vectors(name, [*folders, checkpoint / SHIPPED_VECTORS],
                              [checkpoint / COMPACT_VECTORS] if compact else [])

    # ---- reuse from the model it was fine-tuned from ------------------------------------------
    def parent_scorer(self, folders: Sequence[Path], dictionary: Iterable[Entry] | None = None) -> OpenScorer | None:
        """The cached open-vocabulary vectors of the model this one was fine-tuned from in the app (its
        manifest's `training.open_vocab_parent`: that model's fingerprint and how many of this model's
        user entries it had), from the first of `folders` holding them; None when there are none."""
        found = self._parent_file(folders, dictionary)
        return None if found is None else OpenScorer.load(*found, self.words.config, self.words.word_map)

    def _parent_file(self, folders: Sequence[Path], dictionary: Iterable[Entry] | None = None
                     ) -> tuple[Path, Candidates] | None:
        """(the file, the candidates) of `parent_scorer`; None when there is none."""
        parent = self.model.manifest.get("training", {}).get("open_vocab_parent")
        if not parent:
            return None
        # cached: a parent without words of its own has WordNet's list, read in a moment rather than built (~10 s)
        candidates = self.words.candidates(self.words.user_dictionary[:parent["user_entries"]], dictionary, cached=True)
        name = self.cache_name(candidates, parent["fingerprint"])
        folders = [*folders, *([Path(parent["shipped"])] if parent.get("shipped") else [])]
        found = stored_vectors(name, folders, [Path(parent["compact"])] if parent.get("compact") else [])
        return None if found is None else (found, candidates)

    def parent_record(self) -> dict:
        """What a model fine-tuned from this one records (`training.open_vocab_parent`) so that its
        open vocabulary can reuse this one's vectors: the fingerprint, how many user entries this one
        has (the fine-tuned model's come after them) and where this one's shipped vectors are."""
        checkpoint = self.model.checkpoint_dir
        record = {"fingerprint": self.model.fingerprint, "user_entries": len(self.words.user_dictionary)}
        if checkpoint is not None and (checkpoint / SHIPPED_VECTORS).is_dir():
            record["shipped"] = str((checkpoint / SHIPPED_VECTORS).resolve())
        if checkpoint is not None and (checkpoint / COMPACT_VECTORS).is_file():
            record["compact"] = str((checkpoint / COMPACT_VECTORS).resolve())
        return record
