"""The Studio assembled: the shared backend with each tab's handlers beside it (`studio.map.draw_map`,
...), how a model is prepared before it answers, and a studio started with its model loading.

Everything the UI calls is here, as plain methods without gradio; app/tabs/ wires them to the page.
"""
from __future__ import annotations

import functools
import logging
import time
from pathlib import Path
from typing import Callable

from core.checkpoint import CheckpointError
from core.runtime import freeze_long_lived

from ..server.public import PublicLimits, is_visitors_model, model_cache_dir, reserved
from ..shared import services as sv
from ..shared.jobs import JobManager, in_background, yield_to_jobs
from ..shared.models import ActiveModel, Models, ModelSpec
from ..views import render
from ..views.projection import Projector
from .analogy import AnalogyHandlers
from .backend import Backend
from .evaluate import EvaluateHandlers
from .finetune import FinetuneHandlers
from .map import MapHandlers, vocabulary_figure
from .reverse import ReverseHandlers
from .similarity import SimilarityHandlers

log = logging.getLogger(__name__)


class Studio(Backend):
    """Everything the UI calls: the backend shared by every tab (models, projector, jobs, the model each
    session uses: the model bar and the About tab) and, composed over it, one object of handlers per tab."""

    def __init__(self, models: Models, projector: Projector | None = None, jobs: JobManager | None = None,
                 public: PublicLimits | None = None):
        super().__init__(models, projector, jobs, public)
        self.reverse = ReverseHandlers(self)
        self.similarity = SimilarityHandlers(self)
        self.analogy = AnalogyHandlers(self)
        self.map = MapHandlers(self)
        self.finetune = FinetuneHandlers(self)
        self.evaluate = EvaluateHandlers(self)


def start_studio(spec: ModelSpec, checkpoints: Path, warm_up_umap: bool = True, delay: float = 10.0,
                 open_vocabulary: bool = True, public: PublicLimits | None = None) -> Studio:
    """A Studio whose model loads in the background and is served at once; `delay` seconds later
    (so that the first requests get the CPU) it is prepared (`prepare_model`) and UMAP is warmed up,
    in the same thread. Models switched to later are prepared before they answer (`Models`)."""
    studio = Studio(Models(checkpoints, functools.partial(prepare_model, open_vocabulary=open_vocabulary)),
                    public=public)
    if warm_up_umap:
        studio.projector.expect_warm_up()

    def after_load(active: ActiveModel) -> None:
        time.sleep(delay)
        # between its stages and batches this start-up preparation waits while a fine-tune uses every core:
        # beside it a 30-word glossary's training took 142 s instead of 37 s (issue 76; `yield_to_jobs`)
        studio.models.prepare_first(active, progress=lambda *_, **__: yield_to_jobs())
        if warm_up_umap:
            yield_to_jobs()
            studio.projector.warm_up()
    studio.models.load_in_background(spec, first=read_stored_vocabulary if open_vocabulary else None,
                                     then=after_load)
    return studio


def read_stored_vocabulary(active: ActiveModel) -> None:
    """Give `active` its whole vocabulary (147k WordNet words and phrases) before its first answer when the
    vectors are at hand (its checkpoint's compact ones, its cache, a fine-tune's parent's): seconds, where the
    first answers came from the head's 21.7k words for about 20 s (issue 76). A model without them answers from
    those while `prepare_model` embeds them (minutes, once per model), and says so."""
    engine, cache = active.engine, open_vocab_cache(active)
    if engine.words.open_vocab is None and engine.open_vocab_vectors_at_hand(cache):
        engine.enable_open_vocabulary(cache_dir=cache, reuse=True)


def prepare_model(active: ActiveModel, progress: sv.Progress = sv.no_progress, open_vocabulary: bool = True) -> None:
    """Build, in this order, what a model's answers need: the word scoring (a reverse-dictionary
    query builds its int8 matrices), the open vocabulary (`Engine.enable_open_vocabulary`, cached per
    model: minutes the first time), the reference sentences, the Vec2Sent decoder with the language
    model that judges its paths' grammar, and the untrained twin that "compare" uses (~20 s)."""
    active.engine.predict_words("a word")
    active.single_token_words = not open_vocabulary
    if open_vocabulary and active.engine.words.open_vocab is None:
        embedded = recording_progress(active, lambda done, total, left: progress(
            0.1 + 0.6 * done / total, desc=f"open vocabulary: {render.embedding_progress(done, total, left)}"))
        # A visitor's model writes its cache into their session's folder: its room is reserved while it is written.
        writes = is_visitors_model(active.spec.path) and not any(open_vocab_cache(active).iterdir())
        needed = expected_open_vocab_bytes(active.engine) if writes else 0
        try:  # a fine-tuned model starts with its parent's vectors: seconds, where all would take minutes
            with reserved(needed, "this model's vocabulary cache") as written:
                written.append(open_vocab_cache(active))
                active.engine.enable_open_vocabulary(cache_dir=open_vocab_cache(active), progress=embedded,
                                                     reuse=True)
        finally:
            active.open_vocab_progress = None
    progress(0.7, desc="embedding the reference sentences")
    active.reference()
    progress(0.85, desc="loading the decoder, its language model and the untrained twin")
    try:  # found and loaded now rather than by the first analogy
        decoder = active.engine.decoder
    except CheckpointError:  # a corrupt decoder manifest: the model answers the rest, and decoding says why
        log.warning("the decoder of %s could not be looked up", active.spec.name, exc_info=True)
        decoder = None
    _ = active.engine.reader.fluency_model if decoder is not None else None  # analogies' grammar
    _ = active.untrained()
    engine = active.engine
    if engine.words.open_vocab is not None and not engine.words.compact and engine.vocabulary_layout_path().is_file():
        try:  # the map of every word, when it was laid out: its first draw is then instant
            vocabulary_figure(active)
            own = not engine.words.reused  # definitions are placed by the model's own vectors only
            # the map of every definition's first draw: instant too
            if own and active.vocabulary_map.definitions_placed():
                vocabulary_figure(active, kind="definition")
            elif own:  # minutes, once per layout, in the background
                active.vocabulary_map.placing.start()
        except Exception:  # the map is optional: the model answers without it, and the Map tab says why
            log.warning("the map of every word could not be prepared", exc_info=True)
    # then its own exact vectors, in the background, where it answers with its parent's or with the shipped
    # compact ones; not for a visitor's model, which may go with its session first
    approximate = active.engine.words.reused or active.engine.words.compact
    if approximate and not is_visitors_model(active.spec.path):
        in_background(lambda: embed_own_vectors(active), "own-vectors")
    freeze_long_lived()  # the model's objects out of the collector's walks, which stalled every request


def expected_open_vocab_bytes(engine) -> int:
    """What a model's open-vocabulary cache takes: an int8 row for each word and definition
    (core.words.open_vocab), with 5% to spare (the shipped model's: 101.4 MB, this says 106.5 MB)."""
    candidates = engine.words.candidates()
    return int(1.05 * engine.encoder.hidden_size * (len(candidates.words) + len(candidates.definitions)))


def open_vocab_cache(active: ActiveModel) -> Path:
    return model_cache_dir(active.spec.path, "open-vocab")


def embed_own_vectors(active: ActiveModel) -> None:
    """Embed a model's whole open vocabulary with the model itself and answer with it once done (started in
    the background by `prepare_model`, at a lower priority than requests). Its vectors until then were
    approximate: its parent's (a fine-tune's activation) or the checkpoint's compact ones (a fresh clone):
    docs/results.md."""
    try:  # its progress is shown where the map of every word waits for these vectors
        active.engine.enable_open_vocabulary(cache_dir=open_vocab_cache(active), compact=False,
                                             # a fine-tune using every core has them: this waits between
                                             # batches while one trains (`yield_to_jobs`)
                                             progress=recording_progress(active, lambda *_: yield_to_jobs()))
    finally:
        active.open_vocab_progress = None
    freeze_long_lived()


def recording_progress(active: ActiveModel, then: Callable[[int, int, float], None] | None = None
                       ) -> Callable[[int, int], None]:
    """A `progress(done, total)` for embedding `active`'s open vocabulary that keeps (done, total, seconds
    left) in `active.open_vocab_progress` for the tabs to show, and passes them on to `then`."""
    started = time.monotonic()

    def embedded(done: int, total: int) -> None:
        left = (time.monotonic() - started) * (total - done) / max(done, 1)
        active.open_vocab_progress = (done, total, left)
        if then is not None:
            then(done, total, left)
    return embedded
