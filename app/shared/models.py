"""The models shared by every user: the active engine (loaded in the background at launch, with
the Vec2Sent decoder beside it that fits, if any), its untrained twin for comparisons, the
embedded reference sentences and its map of every word (vocabulary_map.py). Per-user data never lives here.
"""
from __future__ import annotations

import collections
import contextlib
import logging
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

from core.runtime import uncancellable
from core.checkpoint import (CHECKPOINTS_DIR, DEFAULT_BASE, DEFAULT_CHECKPOINT, CheckpointError, checkpoint_problem,
                             encoder_folders)
from core.collection import Collection, build_steps, collection_uri, is_complete, table_version
from core.engine import Engine
from core.export import encoder_facts
from core.readout import REFERENCE_SIZE, EmbeddedTexts, Reference

from ..messages import quoted
from ..server.public import is_visitors_model, model_cache_dir, reserved
from ..settings import model_device
from .services import (CORPUS_NAME, CORPUS_SENTENCES, EVERY_DEFINITION, LARGEST_READY, REFERENCE_CHOICES, SAMPLE,
                       UPLOADED_FILE, VOCABULARY_REFERENCES, Progress, no_progress, reference_corpus)
from .vocabulary_map import VocabularyMap

log = logging.getLogger(__name__)
BASE_LABEL = "untrained base (all-MiniLM-L6-v2)"


@dataclass(frozen=True)
class ModelSpec:
    """How to load one model: a checkpoint folder, or a base model (`path` None) by its source. A checkpoint
    that cannot be loaded says why (`broken`): it stays in the model list, labelled so, and is not loaded."""
    name: str
    path: Path | None = None
    base: str = DEFAULT_BASE
    broken: str = ""  # why the checkpoint cannot be loaded (core.checkpoint.checkpoint_problem); "": it can

    @property
    def label(self) -> str:
        """The model's name in the model list, with why it cannot be loaded when it cannot."""
        return f"{self.name} (broken: {self.broken})" if self.broken else self.name

    def load(self, public: bool = False) -> Engine:
        """The model on the app's device (`model_device`); CheckpointError saying why for a broken one (`public`:
        naming the model only, never its server folder)."""
        self._refuse_broken(public)
        # open_vocabulary=False: the app builds it in the background (handlers.prepare_model), not in a request
        engine = (Engine.load(self.path, open_vocabulary=False, device=model_device()) if self.path
                  else Engine.from_base(self.base).to(model_device()))
        engine.set_precision("auto")  # bfloat16 encoding where the CPU or GPU has it: 2.8x on the CPU, same STS-B
        return engine

    def load_untrained(self) -> Engine | None:
        """The same model before DefSent training (None: this model is the untrained base)."""
        self._refuse_broken()
        return Engine.load(self.path, untrained=True, decoder=None, device=model_device()) if self.path else None

    def _refuse_broken(self, public: bool = False) -> None:
        if self.broken:
            where = "" if public else f" (in {self.path})"  # a public server never shows its paths
            raise CheckpointError(f"The model {quoted(self.name)} cannot be loaded: {self.broken}{where}.")


def default_spec(checkpoints: Path = CHECKPOINTS_DIR) -> ModelSpec:
    """The shipped checkpoint's folder in `checkpoints` if it exists (broken or not: see ModelSpec.broken), else the
    shipped checkpoint itself (a folder of one's own fine-tunes served the untrained base), else the untrained base."""
    for folder in dict.fromkeys([checkpoints / DEFAULT_CHECKPOINT.name, DEFAULT_CHECKPOINT]):
        if folder.is_dir():
            return checkpoint_spec(DEFAULT_CHECKPOINT.name, folder)
    return ModelSpec(BASE_LABEL)


def available_specs(checkpoints: Path = CHECKPOINTS_DIR) -> list[ModelSpec]:
    """Every encoder checkpoint in `checkpoints`, broken ones too (Vec2Sent decoders are not models one can
    switch to: each is loaded with its encoder), then the untrained base."""
    return checkpoint_specs(checkpoints) + [ModelSpec(BASE_LABEL)]


def checkpoint_specs(folder: Path, prefix: str = "") -> list[ModelSpec]:
    """The encoder checkpoints in `folder` (none if it does not exist), named `prefix` + folder name; a broken
    one with why (`ModelSpec.broken`), so that it is listed as such rather than silently missing."""
    return [checkpoint_spec(prefix + p.name, p) for p in encoder_folders(folder)]


def checkpoint_spec(name: str, path: Path) -> ModelSpec:
    """The checkpoint at `path`, called `name`, with why it cannot be loaded if it cannot."""
    return ModelSpec(name, path, broken=checkpoint_problem(path))


class ModelUnavailable(RuntimeError):
    """No model can serve requests yet (still loading, or loading failed)."""


@dataclass
class ActiveModel:
    """One loaded model plus what is derived from it lazily (each built once, thread-safely)."""
    spec: ModelSpec
    engine: Engine
    checkpoints: Path = CHECKPOINTS_DIR
    single_token_words: bool = False  # the server answers from the word head's single-token words only, for good
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)  # guards _key_locks
    _key_locks: dict = field(default_factory=dict, repr=False)
    _cache: dict = field(default_factory=dict, repr=False)
    vocabulary_map: VocabularyMap = field(init=False, repr=False)  # the map of every word, kept in this cache

    def __post_init__(self) -> None:
        self.vocabulary_map = VocabularyMap(self)

    def once(self, key: str, build: Callable[[], object]):
        """`build()` the first time, shared by every request after: a cancelled request does not stop it.
        One lock a key, so a quick build (the map's layout) never waits behind a slow one of another key
        (the untrained twin: ~20 s)."""
        with self._lock:
            key_lock = self._key_locks.setdefault(key, threading.Lock())
        with key_lock, uncancellable():
            if key not in self._cache:
                self._cache[key] = build()
            return self._cache[key]

    def built(self, key: str) -> bool:
        """Whether `once(key, ...)` has built its value already."""
        return key in self._cache

    def untrained(self) -> Engine:
        """The model before DefSent training (the engine itself when it is the base)."""
        return self.once("untrained", lambda: self.spec.load_untrained() or self.engine)

    @property
    def is_base(self) -> bool:
        return self.spec.path is None

    def reference(self, progress: Progress = no_progress, size: int = REFERENCE_SIZE) -> EmbeddedTexts:
        """The embedded WordNet reference sentences for nearest-neighbour look-ups and search, cached on disk:
        a visitor's saved model's cache (3 MB a model and size) goes in their session's folder, within the disk
        budget and deleted with the session (app.server.public.model_cache_dir); it went to the shared cache for
        good."""
        return self.once(f"reference-{size}", lambda: self._embedded_reference(size, progress))

    def _embedded_reference(self, size: int, progress: Progress) -> EmbeddedTexts:
        needed = 4 * size * encoder_facts(self.engine).hidden_size if is_visitors_model(self.spec.path) else 0
        with reserved(needed, "the reference sentences' cache"):  # float32 vectors
            return reference_corpus(self.engine, size, progress, model_cache_dir(self.spec.path, "embeddings"))

    def model_flag(self) -> str:
        """" --model X" naming this model on the command line; "" for the shipped one (the default)."""
        shipped = self.spec.path is not None and Path(self.spec.path).resolve() == DEFAULT_CHECKPOINT.resolve()
        return "" if shipped else f" --model {self.spec.path or self.spec.base}"

    def corpus_uri(self) -> str:
        """Where `python -m core corpus-index` puts this model's collection of the modern corpus."""
        return collection_uri(self.engine.fingerprint, CORPUS_NAME)

    def corpus_index(self) -> Collection:
        """This model's collection of the modern corpus, opened once; ValueError saying how to build it."""
        uri = self.corpus_uri()
        if not is_complete(uri):
            raise ValueError(f"No corpus collection for this model yet: {build_steps(self.model_flag())}; then "
                             "choose it again.")
        # keyed by the table's version: a collection built again while the app runs is opened again
        return self.once(f"corpus-{uri}-{table_version(uri)}", lambda: Collection(uri, self.engine.fingerprint))

    def reference_texts(self, choice: str, progress: Progress = no_progress) -> Reference:
        """The collection of `choice` (one of REFERENCE_CHOICES): LARGEST_READY is the corpus's index
        when it was built for this model, else every WordNet definition once the open vocabulary is
        there (from a fresh clone's compact vectors too: they found "violin, harp, lute" for "a musical
        instrument with strings" in 2 s, where the 2,000-definition sample found "wheel: an instrument of
        torture", issue 62), else the sample. ValueError for a collection that is not ready."""
        if choice == LARGEST_READY:
            choice = (CORPUS_SENTENCES if is_complete(self.corpus_uri())
                      else EVERY_DEFINITION if self.engine.vocabulary.enabled else SAMPLE)
        if choice == SAMPLE:
            return self.reference(progress)
        if choice == CORPUS_SENTENCES:
            return self.corpus_index()
        if choice not in VOCABULARY_REFERENCES:
            raise ValueError(f"Unknown reference texts {choice!r}; choose one of {', '.join(REFERENCE_CHOICES)}"
                             f" (or {UPLOADED_FILE!r} where offered).")
        if not self.engine.vocabulary.enabled:
            raise ValueError(f"Searching {choice} needs the full vocabulary, which this model does not have yet "
                             f"(the Reverse dictionary tab shows its progress); meanwhile choose {LARGEST_READY!r} "
                             f"or {SAMPLE!r}.")
        return self.engine.vocabulary_reference(VOCABULARY_REFERENCES[choice])


Prepare = Callable[[ActiveModel, Progress], None]


class Models:
    """The active model, swapped atomically; requests take `active()` once and use that object.

    `prepare(model, progress)` builds what changes or slows a model's answers (its open vocabulary,
    reference sentences...). A switched-to or shared model is prepared before any request sees it, so
    answers never come from a half-built model; only the first load is served while it is prepared
    (`prepare_first`), since there is no other model to answer meanwhile. Besides the active model,
    the `keep_loaded` most recently used ones stay loaded (switched from, or shared), so that going
    back to one is instant."""

    def __init__(self, checkpoints: Path = CHECKPOINTS_DIR, prepare: Prepare | None = None, keep_loaded: int = 1):
        self.checkpoints = checkpoints
        self.prepare = prepare
        self.keep_loaded = keep_loaded
        self.public = False  # public mode (app.server.public): a broken model's refusal names it, not its folder
        self._active: ActiveModel | None = None
        self._ready = threading.Event()
        self._error: str = ""
        self._switch_lock = threading.Lock()  # one switch at a time, and none while the first model is prepared
        self._switches_wanted = 0  # switches asked for and not yet done (`switch_wanted`)
        self._used: list[ModelSpec] = []  # every model made active, so one served from elsewhere stays listed
        self._kept_lock = threading.Lock()  # guards the two below; held only briefly
        self._loaded: "collections.OrderedDict[ModelSpec, ActiveModel]" = collections.OrderedDict()  # kept
        self._loading: dict[ModelSpec, threading.Lock] = {}  # shared(): only requests for that model wait on it

    @classmethod
    def from_engine(cls, engine: Engine, spec: ModelSpec, checkpoints: Path = CHECKPOINTS_DIR) -> "Models":
        """Models already holding a loaded engine (tests, or a caller that loaded it itself)."""
        models = cls(checkpoints)
        models.use(engine, spec)
        return models

    def load_in_background(self, spec: ModelSpec, first: Callable[[ActiveModel], None] | None = None,
                           then: Callable[[ActiveModel], None] | None = None) -> threading.Thread:
        """Load `spec` in a daemon thread; `first(model)` runs before the model serves any request (requests
        wait for it: what no answer may go without), `then(active)` after it is served, in the same thread."""
        def run() -> None:
            try:
                model = ActiveModel(spec, spec.load(self.public), self.checkpoints)
            except Exception as err:  # shown to users by active()
                log.exception("loading %s failed", spec.name)
                self._error = f"Loading the model {spec.name!r} failed: {err}"
                self._ready.set()
                return
            if first is not None:
                try:
                    first(model)
                except Exception:  # the model still answers; `then` builds what it needs
                    log.exception("getting %s ready before its first answer failed", spec.name)
            self._activate(model)
            log.info("model %s loaded", spec.name)
            if then is not None:
                try:
                    then(model)
                except Exception:  # warm-up is an optimisation: requests build what they need
                    log.exception("background work after loading %s failed", spec.name)
        thread = threading.Thread(target=run, name="load-model", daemon=True)
        thread.start()
        return thread

    def use(self, engine: Engine, spec: ModelSpec) -> ActiveModel:
        """Make `engine` the active model for every user."""
        return self._activate(ActiveModel(spec, engine, self.checkpoints))

    def prepare_first(self, model: ActiveModel, progress: Progress = no_progress) -> None:
        """Prepare the first model while it answers (no other model could); a switch waits for it."""
        with self._switch_lock:
            if self.prepare is not None:
                self.prepare(model, progress)

    def _activate(self, model: ActiveModel) -> ActiveModel:
        self._active = model
        if model.spec not in self._used:
            self._used.append(model.spec)
        self._error = ""
        self._ready.set()
        return model

    def _prepared(self, spec: ModelSpec, progress: Progress) -> ActiveModel:
        """`spec` loaded and prepared, not yet seen by any request."""
        progress(0.05, desc=f"loading {spec.name}")
        model = ActiveModel(spec, spec.load(self.public), self.checkpoints)
        if self.prepare is not None:
            self.prepare(model, progress)
        return model

    def switch(self, spec: ModelSpec, progress: Progress = no_progress) -> ActiveModel:
        """Make `spec` active for every user, once loaded and prepared (the previous model answers
        every request until then; it stays loaded). One switch at a time."""
        with self._wanting_a_switch(), self._switch_lock:
            previous = self._active
            if previous is not None and previous.spec == spec:
                return previous
            with self._kept_lock:
                kept = self._loaded.pop(spec, None)
            model = self._activate(kept or self._prepared(spec, progress))
            if previous is not None:
                self._keep(previous)
            return model

    @contextlib.contextmanager
    def _wanting_a_switch(self) -> Iterator[None]:
        with self._kept_lock:
            self._switches_wanted += 1
        try:
            yield
        finally:
            with self._kept_lock:
                self._switches_wanted -= 1

    def switch_wanted(self) -> bool:
        """Whether a switch waits or runs: the first model's preparation, which it waits for, then pauses no more
        (`prepare_first`)."""
        return self._switches_wanted > 0

    def shared(self, spec: ModelSpec, progress: Progress = no_progress) -> ActiveModel:
        """The model `spec` loaded and prepared for the sessions that chose it, without changing the
        active model (public mode): the active model itself when `spec` is it, else one kept loaded
        (loaded again once dropped). While it loads, only the requests for it wait."""
        model = self.loaded(spec)
        if model is not None:
            return model
        with self._kept_lock:
            loading = self._loading.setdefault(spec, threading.Lock())
        with loading:
            model = self.loaded(spec)  # loaded meanwhile, for another session
            if model is not None:
                return model
            with uncancellable():  # the sessions that chose this model wait for the same preparation
                return self._keep(self._prepared(spec, progress))

    def loaded(self, spec: ModelSpec) -> ActiveModel | None:
        """The model `spec` if it is loaded and prepared (the active model, or one kept loaded: now its most recently
        used), else None; never loads it, nor waits for a load under way."""
        active = self.active()
        if spec == active.spec:
            return active
        with self._kept_lock:
            if spec in self._loaded:
                self._loaded.move_to_end(spec)
                return self._loaded[spec]
        return None

    def _keep(self, model: ActiveModel) -> ActiveModel:
        """Keep `model` loaded; past `keep_loaded` models the least recently used is dropped."""
        with self._kept_lock:
            self._loaded[model.spec] = model
            while len(self._loaded) > max(0, self.keep_loaded):
                self._loaded.popitem(last=False)
        return model

    def kept(self) -> list[ModelSpec]:
        """The models kept loaded besides the active one, least recently used first."""
        with self._kept_lock:
            return list(self._loaded)

    def forget(self, specs: list[ModelSpec]) -> None:
        """Drop these models if they are kept loaded (a session's saved models, deleted with it)."""
        with self._kept_lock:
            for spec in specs:
                self._loaded.pop(spec, None)
                self._loading.pop(spec, None)

    def active(self, timeout: float = 300.0) -> ActiveModel:
        """The active model, waiting while it is still loading."""
        if not self._ready.wait(timeout):
            raise ModelUnavailable("The model is still loading; try again in a few seconds.")
        if self._active is None:
            raise ModelUnavailable(self._error or "No model is loaded.")
        return self._active

    @property
    def ready(self) -> bool:
        """True once a model is active."""
        return self._ready.is_set() and self._active is not None

    @property
    def loading(self) -> bool:
        """True while the first model loads (False once it is active, or its loading failed)."""
        return not self._ready.is_set()

    def status(self) -> str:
        """One line for the UI: which model is active, or that it is loading."""
        if not self._ready.is_set():
            return "Loading the model..."
        if self._active is None:
            return self._error
        return f"Active model: **{self._active.spec.name}**"

    def specs(self) -> list[ModelSpec]:
        """The models one can switch to: the checkpoints, the base, and those served from elsewhere."""
        specs = available_specs(self.checkpoints)
        return specs + [spec for spec in self._used if spec not in specs]

    def spec_named(self, name: str) -> ModelSpec:
        """The available model called `name`."""
        for spec in self.specs():
            if spec.name == name:
                return spec
        raise ValueError(f"No model called {quoted(name)}; choose one from the list.")
