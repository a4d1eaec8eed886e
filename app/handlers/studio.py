"""The Studio assembled: the shared backend with each tab's handlers beside it (`studio.map.draw_map`,
...), how a model is prepared before it answers, and a studio started with its model loading.

Everything the UI calls is here, as plain methods without gradio; app/tabs/ wires them to the page.
"""
from __future__ import annotations

import functools
import logging
import time
from pathlib import Path

from core.checkpoint import CheckpointError
from core.runtime import freeze_long_lived
from core.words import VocabularyState

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
    studio.start()  # the server's start: clean-ups and the disk budget (process-wide: never in a constructor)
    if warm_up_umap:
        studio.projector.expect_warm_up()

    def after_load(active: ActiveModel) -> None:
        time.sleep(delay)
        # between its stages and batches this start-up preparation waits while a fine-tune uses every core (beside
        # it a 30-word glossary's training took 142 s instead of 37 s: issue 76), unless a model switch waits for it
        def pause(*_, **__) -> None:
            yield_to_jobs(unless=studio.models.switch_wanted)
        studio.models.prepare_first(active, progress=pause)
        if warm_up_umap:
            pause()
            studio.projector.warm_up()
    studio.models.load_in_background(spec, first=read_stored_vocabulary if open_vocabulary else None,
                                     then=after_load)
    return studio


def read_stored_vocabulary(active: ActiveModel) -> None:
    """Give `active` its whole vocabulary (147k WordNet words and phrases) before its first answer when the
    vectors are at hand (its checkpoint's compact ones, its cache, a fine-tune's parent's): seconds, where the
    first answers came from the head's 21.7k words for about 20 s (issue 76). A model without them answers from
    those while `prepare_model` embeds them (minutes, once per model), and says so."""
    active.engine.vocabulary.read_stored(open_vocab_cache(active))


def prepare_model(active: ActiveModel, progress: sv.Progress = sv.no_progress, open_vocabulary: bool = True) -> None:
    """Build, in this order, what a model's answers need: the word scoring (a reverse-dictionary
    query builds its int8 matrices), the open vocabulary (`OpenVocabulary.enable`, cached per
    model: minutes the first time), the reference sentences, the Vec2Sent decoder with the language
    model that judges its paths' grammar, and the untrained twin that "compare" uses (~20 s)."""
    active.engine.predict_words("a word")
    active.single_token_words = not open_vocabulary
    vocabulary = active.engine.vocabulary
    if open_vocabulary and not vocabulary.enabled:
        def embedded(done: int, total: int) -> None:
            left = vocabulary.progress.seconds_left if vocabulary.progress is not None else 0.0
            progress(0.1 + 0.6 * done / total, desc=f"open vocabulary: {render.embedding_progress(done, total, left)}")
        # A visitor's model writes its cache into their session's folder: its room is reserved while it is written.
        writes = is_visitors_model(active.spec.path) and not any(open_vocab_cache(active).iterdir())
        needed = vocabulary.cache_bytes() if writes else 0
        # a fine-tuned model starts with its parent's vectors: seconds, where all would take minutes
        with reserved(needed, "this model's vocabulary cache") as written:
            written.append(open_vocab_cache(active))
            vocabulary.enable(cache_dir=open_vocab_cache(active), progress=embedded, reuse=True)
    progress(0.7, desc="embedding the reference sentences")
    active.reference()
    progress(0.85, desc="loading the decoder, its language model and the untrained twin")
    try:  # found and loaded now rather than by the first analogy
        decoder = active.engine.decoder
    except CheckpointError:  # a corrupt decoder manifest: the model answers the rest, and decoding says why
        log.warning("the decoder of %s could not be looked up", active.spec.name, exc_info=True)
        decoder = None
    _ = active.engine.fluency_model if decoder is not None else None  # analogies' grammar
    _ = active.untrained()
    engine = active.engine
    own_vectors = vocabulary.state in (VocabularyState.REUSED, VocabularyState.EXACT)  # not compact ones
    if own_vectors and engine.vocabulary_layout_path().is_file():
        try:  # the map of every word, when it was laid out: its first draw is then instant
            vocabulary_figure(active)
            own = vocabulary.state is VocabularyState.EXACT  # definitions are placed by the model's own vectors only
            # the map of every definition's first draw: instant too
            if own and active.vocabulary_map.definitions_placed():
                vocabulary_figure(active, kind="definition")
            elif own:  # minutes, once per layout, in the background
                active.vocabulary_map.placing.start()
        except Exception as err:  # the map is optional: the model answers without it, and the Map tab says why
            log.warning("the map of every word could not be prepared", exc_info=True)
            active.vocabulary_map.failed(err)
    # then its own exact vectors, in the background, where it answers with its parent's or with the shipped
    # compact ones; not for a visitor's model, which may go with its session first
    if vocabulary.approximate and not is_visitors_model(active.spec.path):
        in_background(lambda: embed_own_vectors(active), "own-vectors")
    freeze_long_lived()  # the model's objects out of the collector's walks, which stalled every request


def open_vocab_cache(active: ActiveModel) -> Path:
    return model_cache_dir(active.spec.path, "open-vocab")


def embed_own_vectors(active: ActiveModel) -> None:
    """Embed a model's whole open vocabulary with the model itself and answer with it once done (started in
    the background by `prepare_model`, at a lower priority than requests). Its vectors until then were
    approximate: its parent's (a fine-tune's activation) or the checkpoint's compact ones (a fresh clone):
    docs/results.md."""
    # its progress (`OpenVocabulary.progress`) is shown where the map of every word waits for these vectors;
    # failing, the old ones answer and the tabs say why (`OpenVocabulary.failure`)
    # a fine-tune using every core has them: this waits between batches while one trains (`yield_to_jobs`)
    active.engine.vocabulary.embed_exact(open_vocab_cache(active), progress=lambda done, total: yield_to_jobs())
    freeze_long_lived()

