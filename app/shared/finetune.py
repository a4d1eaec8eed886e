"""Fine-tuning on a user's dictionary, as a background job: validate the upload, split it by word,
train a fresh copy of the active model in a child process, compare before/after on the user's
held-out words, and stage the trained model on disk until the user saves it under a name.

The training process writes the staged model atomically, so a kill leaves no half-written model
anywhere; staged models live in a per-server folder of the cache (`staging/server-PID`), removed
with their job, or at the next start when the server itself was killed.

A validated upload is kept packed (its rows compressed, a tenth of their memory) in `UPLOADS`, a
store bounded in bytes and in time; a session holds only a ticket to it (`Upload`).
"""
from __future__ import annotations

import collections
import json
import logging
import math
import os
import shutil
import tempfile
import textwrap
import threading
import time
import uuid
import zlib
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Protocol

from core.checkpoint import (CHECKPOINTS_DIR, MANIFEST, atomic_directory, claimed_name, process_alive,
                             read_manifest, remove_stale_temporaries, safe_checkpoint_name, write_json)
from core.lexicon import DictionarySplit, Entry, read_user_dictionary, split_by_word
from core.engine import Engine
from core.export import encoder_facts
from core.runtime import resolve_precision
from core.train import TrainConfig, TrainProgress, train
from core.words import evaluate_among
from core.readout import BorrowedDecoding
from core.words import definition_pairs

from ..messages import quoted
from ..settings import folder_bytes, staging_root
from .jobs import Job, env_int, run_in_process, short_reason, usable_cores
from .models import ModelSpec

log = logging.getLogger(__name__)
TRAINING_THREADS_ENV = "DEFSENT_TRAINING_THREADS"
STAGED_MODEL = "model"
EXAMPLES = 6
TOP_WORDS = 3
# What a dictionary file must look like: said on the tab before the upload, and when none was given.
FILE_FORMAT = ("A TSV or CSV file whose first line is the header `word<TAB>definition` (or `word,definition`; an "
               "optional third column `pos`), then one word and its definition a line; or JSONL, one "
               '`{"word": ..., "definition": ...}` a line.')
HELD_OUT_SHOWN = 40  # words of each part of the split the validation report names
MISSED_CHECKED = 2_000  # entries whose top answer is checked after training (every entry of a glossary)


@dataclass(frozen=True)
class Bound:
    """The allowed range of one fine-tune setting, and its name on the Fine-tune tab."""
    label: str
    low: float
    high: float
    whole: bool = True  # a whole number
    above_low: bool = False  # `low` itself is not allowed (epochs and learning rate must be > 0)

    def describe(self) -> str:
        kind = "a whole number" if self.whole else "a number"
        if self.above_low:
            return f"{kind} above {_shown(self.low)} and at most {_shown(self.high)}"
        return f"{kind} from {_shown(self.low)} to {_shown(self.high)}"

    def parse(self, value: object) -> int | float:
        """`value` as a number in range; ValueError naming the setting and its range otherwise."""
        if value is None or (isinstance(value, str) and not value.strip()):
            raise ValueError(f"{self.label} is empty: enter {self.describe()}.")
        try:
            number = float(value)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            raise ValueError(f"{self.label} must be {self.describe()} (got {str(value)[:40]!r}).") from None
        too_low = number <= self.low if self.above_low else number < self.low
        if not math.isfinite(number) or too_low or number > self.high or (self.whole and not number.is_integer()):
            raise ValueError(f"{self.label} must be {self.describe()} (got {_shown(number)}).")
        return int(number) if self.whole else number


def _shown(number: float) -> str:
    """A bound or a value as a user reads it: 100,000 and 2,147,483,647, 0.01 and 5e-05."""
    return f"{int(number):,}" if math.isfinite(number) and float(number).is_integer() else f"{number:g}"


# The fine-tune settings' allowed ranges, in one place: checked before a job is queued (and again in
# the training process), so a bad value is refused with its range and starts nothing. Chosen for a
# CPU app: one DefSent epoch over WordNet (1,905 steps of 16) takes about 10-17 minutes on this
# machine, so 100,000 steps are days; the shipped model trained at 5e-5, and past 1e-2 Adam wrecks
# the encoder; 256 definitions a step already take seconds each.
MAX_TOTAL_STEPS = 100_000  # steps of one job, whether set by max_steps or by epochs x batches
# A glossary of 40 entries (32 training definitions: 2 batches an epoch) got 6 steps from 3 epochs and learned
# nothing (dev MRR .356 -> .345, issue 62): a run by epochs takes at least this many steps, chosen on a few small
# glossaries (bench/bench_finetune_small.py, docs/results.md "Fine-tuning a small glossary"). A large dictionary's
# epochs give more; Max steps sets the count exactly.
MIN_STEPS = 150
# The hubness correction of a glossary of a few dozen definitions, computed on them alone, cost the model
# a fifth of its MRR on WordNet's test words; topped up to 2,000 references (WordNet's) it costs nothing
# and embeds for about 10 s (docs/results.md, "Fine-tuning a small glossary").
HUB_REFERENCES = 2_000
# WordNet training definitions rehearsed beside each batch of a dictionary of fewer than REHEARSE_BELOW training
# definitions: on four 40-entry glossaries every training word learnt (13 of 128 missed before) and WordNet's
# test MRR kept better (docs/results.md, "Rehearsal"); a larger dictionary is not slowed by it (not measured).
REHEARSAL = 16
REHEARSE_BELOW = 2_000


def setting_bounds(layers: int | None) -> dict[str, Bound]:
    """{FinetuneSettings field: its Bound}, for a model of `layers` transformer layers (None: no model,
    trainable_layers unbounded above)."""
    return {
        "epochs": Bound("Epochs", 0, 50, whole=False, above_low=True),
        "lr": Bound("Learning rate", 0, 1e-2, whole=False, above_low=True),
        "batch_size": Bound("Batch size", 1, 256),
        "trainable_layers": Bound("Train top layers", 0, math.inf if layers is None else layers),  # 0: all
        "max_steps": Bound("Max steps", 0, MAX_TOTAL_STEPS),  # 0: as many as the epochs give, at least min_steps
        "evaluations": Bound("Dev evaluations", 1, 100),
        "seed": Bound("Seed", 0, 2**31 - 1),
    }


def model_layers(engine: Engine) -> int:
    """How many transformer layers the engine's encoder has (the bound of trainable_layers)."""
    return encoder_facts(engine).layers


@dataclass(frozen=True)
class FinetuneSettings:
    """What the user chooses before starting (allowed ranges: `setting_bounds`)."""
    epochs: float = 3.0
    lr: float = 5e-5
    batch_size: int = 16
    trainable_layers: int = 0
    max_steps: int = 0
    evaluations: int = 10
    min_steps: int = MIN_STEPS  # of a run by epochs (max_steps 0)
    seed: int = 0
    # bfloat16 training steps (2.5-3x faster) on CPUs that multiply bfloat16 natively, else float32;
    # measured on WordNet to learn as float32 does (README, "Training the shipped checkpoint")
    precision: str = "auto"
    # decode 100 sentences before and after training, to say how well the borrowed decoder reads the
    # fine-tuned model: off by default, it took most of a short fine-tune's time
    measure_decoder: bool = False
    # every word of the dictionary trains (core.train.OwnWords), not only those the word head scores
    own_words: bool = True
    # WordNet training definitions rehearsed in every batch (core.train.TrainConfig.rehearsal); None: REHEARSAL
    # for a small dictionary, none for a large one
    rehearsal: int | None = None
    # > 0: a low-rank delta of this rank trains instead of the whole encoder (not on the form: measured worse
    # on small glossaries, docs/results.md)
    lora_rank: int = 0

    @classmethod
    def from_form(cls, layers: int | None, measure_decoder: bool = False, **values: object) -> "FinetuneSettings":
        """Settings from the form's raw values (numbers, text or None), each parsed against its bound;
        ValueError naming the first bad one and its allowed range."""
        bounds = setting_bounds(layers)
        return cls(**{name: bounds[name].parse(value) for name, value in values.items()},
                   measure_decoder=bool(measure_decoder))

    def summary(self) -> str:
        """The form's settings in words ("1 epoch, learning rate 0.001, batch 4, all layers, at most 4 steps, 2 dev
        evaluations, seed 0"): what a person following the job from another page needs to know."""
        parts = [f"{self.epochs:g} epoch{'' if self.epochs == 1 else 's'}", f"learning rate {self.lr:g}",
                 f"batch {self.batch_size}",
                 f"top {self.trainable_layers} layers" if self.trainable_layers else "all layers",
                 *([f"at most {self.max_steps} steps"] if self.max_steps else []),
                 f"{self.evaluations} dev evaluations", f"seed {self.seed}",
                 *(["measuring the decoder"] if self.measure_decoder else [])]
        return ", ".join(parts)

    def check(self, train_pairs: int, layers: int | None = None) -> None:
        """ValueError naming the first setting out of its range, or when the run would take more than
        MAX_TOTAL_STEPS steps on `train_pairs` training definitions. `layers`: the model's number of
        layers, the top of trainable_layers (None: checked against no model)."""
        for name, bound in setting_bounds(layers).items():
            bound.parse(getattr(self, name))
        steps = self.total_steps(train_pairs)
        if steps > MAX_TOTAL_STEPS:
            raise ValueError(f"{self.epochs:g} epochs of {math.ceil(train_pairs / self.batch_size):,} batches make "
                             f"{steps:,} training steps, over the limit of {MAX_TOTAL_STEPS:,}: lower Epochs, "
                             "raise Batch size or set Max steps.")

    def total_steps(self, train_pairs: int) -> int:
        """Training steps of the run: max_steps, else epochs x batches of `train_pairs` definitions, at least
        min_steps (a small glossary's epochs are a few steps)."""
        return self.max_steps or max(1, self.min_steps, int(self.epochs * math.ceil(train_pairs / self.batch_size)))

    def train_config(self, train_pairs: int, layers: int | None = None, device="cpu") -> TrainConfig:
        """The core TrainConfig, with dev evaluations spread evenly over the run (settings checked first);
        precision "auto" is bfloat16 where `device` (the model's) multiplies it natively."""
        self.check(train_pairs, layers)
        return TrainConfig(lr=self.lr, epochs=self.epochs, batch_size=int(self.batch_size),
                           trainable_layers=int(self.trainable_layers), max_steps=self.total_steps(train_pairs),
                           eval_every=max(1, self.total_steps(train_pairs) // int(self.evaluations)),
                           seed=int(self.seed), precision=resolve_precision(self.precision, device),
                           own_words=self.own_words, hub_references=HUB_REFERENCES,
                           rehearsal=self.rehearsal_for(train_pairs), lora_rank=self.lora_rank)

    def rehearsal_for(self, train_pairs: int) -> int:
        """WordNet definitions rehearsed a batch for a dictionary of `train_pairs` training definitions."""
        if self.rehearsal is not None:
            return self.rehearsal
        return REHEARSAL if train_pairs < REHEARSE_BELOW else 0


@dataclass(frozen=True)
class UploadData:
    """A validated user dictionary: its rows packed (zlib-compressed JSON, about a tenth of the memory
    of the rows as objects: 5 MB instead of 55 MB for a 12 MB file), unpacked when a job needs them.
    The split by word is recomputed from the rows and the seed (it is deterministic)."""
    name: str
    report: str
    seed: int
    train_size: int  # training definitions of the split
    packed: bytes

    @classmethod
    def pack(cls, name: str, report: str, seed: int, entries: list[Entry], train_size: int) -> "UploadData":
        rows = [[e.word, e.definition, e.pos] for e in entries]  # all a user file gives (read_user_dictionary)
        return cls(name, report, seed, train_size, zlib.compress(json.dumps(rows, ensure_ascii=False).encode()))

    @property
    def entries(self) -> list[Entry]:
        return [Entry(word, definition, pos) for word, definition, pos in json.loads(zlib.decompress(self.packed))]

    @property
    def split(self) -> DictionarySplit:
        """The split by word (the test words are held out for before/after)."""
        return split_by_word(self.entries, seed=self.seed)


def validate_upload(engine: Engine, path: str | Path, seed: int | float | None = 0) -> UploadData:
    """Read and check a TSV/CSV/JSONL dictionary, split by word with `seed` (checked against its
    bound); ValueError (with the report) when it is unusable."""
    seed = setting_bounds(None)["seed"].parse(seed)
    path = Path(path)
    entries, report = read_user_dictionary(path)  # every word and phrase is an answer (open vocabulary)
    if not report.ok:
        raise ValueError(report.summary())
    split = split_by_word(entries, seed=seed)
    empty = [name for name, part in (("training", split.train), ("dev", split.dev), ("test", split.test))
             if not part]
    if empty:
        words = len({e.word for e in entries})
        raise ValueError(f"{report.summary()}\nOnly {words} different usable words: the {' and '.join(empty)} "
                         "part(s) of the split by word would be empty. Add more words (at least 10).")
    # The report is short whatever the file: the reader's summary is cut at 10,000 characters.
    return UploadData.pack(path.name, "\n".join([report.summary(), split.report(), split_note(split),
                                                 _open_vocabulary_note(entries, engine)]),
                           seed, entries, len(split.train))


def split_note(split: DictionarySplit, most: int = HELD_OUT_SHOWN) -> str:
    """Every part of the split by word, named: "Training (32 words): ant, bee, ... (and 12 more)", then the
    dev words (which choose the best step) and the held-out ones, which training never sees and the
    before/after comparison scores."""
    parts = (("Training", split.train), ("Dev, which chooses the best step of the run", split.dev),
             ("Held out from training, scored before and after it", split.test))
    return "\n".join(words_line(title, {e.word for e in part}, most) for title, part in parts)


def words_line(title: str, words: set[str], most: int = HELD_OUT_SHOWN, count: bool = True) -> str:
    """"Title (n words): a, b, c (and 12 more)" ("Title: ..." without `count`), wrapped to the report's width."""
    words = sorted(words)
    more = f" (and {len(words) - most} more)" if len(words) > most else ""
    title = f"{title} ({len(words)} words)" if count else title
    return textwrap.fill(f"{title}: {', '.join(words[:most]) or 'none'}{more}", width=72, break_long_words=False)


def _open_vocabulary_note(entries: list[Entry], engine: Engine) -> str:
    words = {e.word for e in entries}
    single = sum(engine.head_words.token_id(w) is not None for w in words)
    return (f"{len(words)} words, all of them answers and evaluated.\n"
            f"The definitions of the training words train the encoder, every word of them:\n"
            f"{single} single tokens of the model's vocabulary, {len(words) - single} of several pieces "
            "(phrases, rare or invented words).")


UPLOAD_LIFETIME = 3600.0  # seconds a validated upload is kept for its session; then it must be uploaded again
MAX_KEPT_UPLOAD_BYTES = 200_000_000  # packed uploads of all sessions together; the oldest are dropped first


@dataclass(frozen=True)
class Upload:
    """What a session keeps of its validated upload: the report, and a ticket to its rows in UPLOADS."""
    ticket: str
    name: str
    report: str


class UploadStore:
    """Validated uploads kept for their sessions, at most `lifetime` seconds and `max_bytes` packed
    bytes in all: a session left open, or thousands of them, cannot hold memory for ever. Past the bound the
    oldest upload of whoever keeps the most bytes goes first, so that a few visitors validating many uploads
    drop their own, not everyone's (they were dropped oldest first, anyone's: session 49's review). Thread-safe."""

    def __init__(self, lifetime: float = UPLOAD_LIFETIME, max_bytes: int = MAX_KEPT_UPLOAD_BYTES):
        self.lifetime, self.max_bytes = lifetime, max_bytes
        self._kept: collections.OrderedDict[str, tuple[float, UploadData, str]] = collections.OrderedDict()
        self._lock = threading.Lock()

    def keep(self, data: UploadData, owner: str = "") -> Upload:
        """Keep `data` for `owner` (a visitor's address; "" on a private server) and return the session's ticket."""
        with self._lock:
            self._drop_expired()
            while self._kept and self.kept_bytes() + len(data.packed) > self.max_bytes:
                self._kept.pop(self._oldest_of_the_largest_owner())
            ticket = uuid.uuid4().hex
            self._kept[ticket] = (time.monotonic(), data, owner)
        return Upload(ticket, data.name, data.report)

    def _oldest_of_the_largest_owner(self) -> str:
        held: collections.Counter[str] = collections.Counter()
        for _, data, owner in self._kept.values():
            held[owner] += len(data.packed)
        largest = held.most_common(1)[0][0]
        return next(ticket for ticket, (_, _, owner) in self._kept.items() if owner == largest)

    def get(self, upload: Upload) -> UploadData:
        """The rows behind a ticket; ValueError when they are no longer kept."""
        with self._lock:
            self._drop_expired()
            kept = self._kept.get(upload.ticket)
        if kept is None:
            raise ValueError(f"The validated dictionary {upload.name!r} is no longer kept on the server (uploads "
                             f"are kept for {self.lifetime / 60:.0f} minutes, fewer when many are waiting); "
                             "upload it again.")
        return kept[1]

    def find(self, ticket: str) -> Upload | None:
        """The session's Upload behind `ticket` (kept in the browser: a reloaded page gets its upload
        back), or None when it is no longer kept."""
        with self._lock:
            self._drop_expired()
            kept = self._kept.get(ticket)
        return None if kept is None else Upload(ticket, kept[1].name, kept[1].report)

    def discard(self, upload: Upload | None) -> None:
        """Forget an upload (a new one replaces it)."""
        if upload is not None:
            with self._lock:
                self._kept.pop(upload.ticket, None)

    def kept_bytes(self) -> int:
        return sum(len(data.packed) for _, data, _ in self._kept.values())

    def _drop_expired(self) -> None:
        cutoff = time.monotonic() - self.lifetime
        while self._kept and next(iter(self._kept.values()))[0] < cutoff:  # oldest first
            self._kept.popitem(last=False)


UPLOADS = UploadStore()  # one per server process: the memory bound is the process's


class Reporter(Protocol):
    """Where a job body sends its progress: a Job, or the pipe to one (jobs.ChildReporter)."""

    def report(self, **progress) -> None: ...

    def record(self, **point) -> None: ...


@dataclass
class FinetuneResult:
    """How the trained model compares with the one it started from; the model itself is on disk."""
    checkpoint: Path  # the trained model, staged: not among the checkpoints until saved
    before: dict
    after: dict
    examples: list[dict]
    training: dict
    saved: Path | None = None  # the named checkpoint, once saved
    missed: dict[str, dict] | None = None  # `still_missed`: by part of the split


def run_finetune(job: Reporter, load_engine: Callable[[], Engine], upload: UploadData, settings: FinetuneSettings,
                 started_from: str, out: Path) -> FinetuneResult:
    """The job body (it runs in the training process): train a fresh copy of the model, reporting
    progress to `job` (and how long each stage took, in the result's `training["stage_seconds"]`), and
    write it atomically to the checkpoint folder `out`."""
    job = StageClock(job)
    job.report(stage="loading a copy of the model", step=0, total=0)
    engine = load_engine()
    split = upload.split
    pairs = len(split.train) if settings.own_words else len(definition_pairs(split.train, engine.head_words)[0])
    config = settings.train_config(pairs, model_layers(engine), engine.device)
    if not engine.has_word_vectors and config.word_vector_scale:  # score before and after alike
        job.report(stage="embedding every word of the vocabulary (word vectors)")
        engine.add_word_vectors(config.word_vector_scale)
    parent = engine.vocabulary.parent_record()  # the fine-tuned model's open vocabulary can reuse this one's vectors
    job.report(stage="scoring the held-out words before training")
    examples = _examples(split.test)
    before, before_words = _ranked_among_own_words(engine, split.test, upload.entries, examples)
    if settings.measure_decoder:
        job.report(stage="measuring how well the decoder reads the model before training")
    decoding = BorrowedDecoding.measure(engine, settings.measure_decoder)  # the fine-tuned model decodes with it

    def progress(p: TrainProgress) -> None:
        # After the last step, train() embeds every word and the training definitions again with the
        # trained encoder (word vectors and hubness correction).
        stage = "training" if p.step < p.total_steps else "embedding the vocabulary and definitions again"
        job.report(stage=stage, step=p.step, total=p.total_steps, loss=p.loss, dev_mrr=p.dev.get("mrr"))
        job.record(step=p.step, loss=p.loss, dev_mrr=p.dev.get("mrr"))

    result = train(engine, split.train, split.dev, config, progress=progress, held_out=split.test)
    engine.vocabulary.user_dictionary = _merged(engine.vocabulary.user_dictionary, upload.entries)  # its words: answers
    job.report(stage="scoring the held-out words after training")
    after, after_words = _ranked_among_own_words(engine, split.test, upload.entries, examples)
    job.report(stage="reading the vocabulary the trained model answers with once active")
    with tempfile.TemporaryDirectory() as cache:  # the reused vectors: activation writes its own (same numbers)
        engine.manifest = {**engine.manifest, "training": {"open_vocab_parent": parent}}  # as its saved one will say
        answer_as_activated(engine, Path(cache))
        job.report(stage="finding the entries the trained model still misses")
        missed = still_missed(engine, split, upload.entries)
    rows = [{"word": e.word, "definition": e.definition, "before": b, "after": a}
            for e, b, a in zip(examples, before_words, after_words, strict=True)]
    training = {"data": upload.name, "finetuned_from": started_from, "split": split.stats(),
                "settings": asdict(settings), "result": result.to_dict(), "open_vocab_parent": parent}
    if decoding is not None:
        if settings.measure_decoder:
            job.report(stage="measuring how well the decoder reads the model after training")
        training["borrowed_decoding"] = decoding.record(engine)
    job.report(stage="writing the trained model")
    training["stage_seconds"] = job.seconds()  # the manifest's: up to the save
    engine.save(out, training=training, metrics={"user_test": {"before": before, "after": after}})
    training = {**training, "stage_seconds": job.seconds()}  # the page's: the save too
    return FinetuneResult(out, before, after, rows, training, missed=missed)


class StageClock:
    """A Reporter that passes everything on and times each stage (from its first report to the next
    stage's): where a fine-tune's time goes."""

    def __init__(self, reporter: Reporter):
        self._reporter, self._stage, self._started = reporter, None, time.monotonic()
        self._seconds: dict[str, float] = {}

    def report(self, **progress) -> None:
        if "stage" in progress and progress["stage"] != self._stage:
            self._close()
            self._stage = progress["stage"]
        self._reporter.report(**progress)

    def record(self, **point) -> None:
        self._reporter.record(**point)

    def seconds(self) -> dict[str, float]:
        """{stage: seconds} of the stages so far, the current one up to now, in order."""
        self._close()
        return dict(self._seconds)

    def _close(self) -> None:
        now = time.monotonic()
        if self._stage is not None:
            self._seconds[self._stage] = round(self._seconds.get(self._stage, 0.0) + now - self._started, 1)
        self._started = now


def stage_summary(stage_seconds: dict[str, float], most: int = 3) -> str:
    """"54 s: training 20 s, scoring the held-out words before training 8 s, ...": the whole and the
    `most` longest stages."""
    longest = sorted(stage_seconds.items(), key=lambda item: -item[1])[:most]
    return (f"{sum(stage_seconds.values()):.0f} s: "
            + ", ".join(f"{stage} {seconds:.0f} s" for stage, seconds in longest))


def training_threads(public: bool) -> int:
    """A fine-tune's torch threads: DEFSENT_TRAINING_THREADS, else every usable core on a private
    server (its process runs at a lower priority, so requests still come first) and one in public
    mode, where several visitors share the machine."""
    return env_int(TRAINING_THREADS_ENV, 1 if public else usable_cores(), 1)


@dataclass(frozen=True)
class FinetuneJob:
    """A fine-tuning job's work: `run_finetune` in a training process, its model staged in
    `staged_folder(job)`."""
    spec: ModelSpec
    upload: UploadData
    settings: FinetuneSettings
    threads: int = 1  # torch threads of the training process (`training_threads`)

    def __call__(self, job: Job) -> FinetuneResult:
        try:
            return run_in_process(job, run_finetune, self.spec.load, self.upload, self.settings, self.spec.name,
                                  staged_folder(job) / STAGED_MODEL, threads=self.threads)
        except BaseException:  # failed, cancelled or killed: nothing staged is worth keeping
            discard_staged(job)
            raise


def staged_folder(job: Job) -> Path:
    """Where a job's trained model is staged until it is saved under a name."""
    return staging_dir() / job.id


def expected_staged_bytes(checkpoint: Path | None, engine: Engine) -> int:
    """About what a fine-tune of this model stages on disk: its checkpoint folder's size, or for a
    base model (no folder) its encoder's weights in float16, the most a checkpoint's delta of the
    changed weights takes."""
    if checkpoint is not None:
        return folder_bytes(checkpoint)
    return 2 * encoder_facts(engine).parameters


def discard_staged(job: Job) -> None:
    """Delete a job's staged model (when the job fails or is forgotten)."""
    shutil.rmtree(staged_folder(job), ignore_errors=True)


def staging_dir() -> Path:
    """This server's folder for trained models not yet saved under a name."""
    path = staging_root() / f"server-{os.getpid()}"
    path.mkdir(exist_ok=True)
    return path


def remove_leftovers(checkpoints: Path) -> list[Path]:
    """Remove what killed processes left behind: hidden temporaries of interrupted saves in
    `checkpoints` (see core.checkpoint.remove_stale_temporaries) and the staging folders of
    servers that no longer run. Returns the paths removed or restored."""
    removed = remove_stale_temporaries(checkpoints)
    for folder in staging_root().glob("server-*"):
        pid = folder.name.removeprefix("server-")
        if pid.isdigit() and not process_alive(int(pid)):
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    if removed:
        log.info("removed leftovers of killed processes: %s", ", ".join(map(str, removed)))
    return removed


def _examples(entries: list[Entry]) -> list[Entry]:
    """One entry each for the first few held-out words."""
    seen: dict[str, Entry] = {}
    for entry in entries:
        seen.setdefault(entry.word, entry)
    return list(seen.values())[:EXAMPLES]


def _merged(kept: list[Entry], new: list[Entry]) -> list[Entry]:
    """`kept` then the entries of `new` it lacks (a model fine-tuned twice knows both dictionaries)."""
    seen = set(kept)
    return [*kept, *(e for e in new if e not in seen)]


def _ranked_among_own_words(engine: Engine, test: list[Entry], dictionary: list[Entry],
                            examples: list[Entry]) -> tuple[dict, list[str]]:
    """MRR / top-k of the held-out words ranked among all the words of the user's dictionary
    (phrases included), and the top words of each example."""
    metrics, top = evaluate_among(engine, test, dictionary, k=TOP_WORDS)
    top_of = dict(zip(test, top))
    return metrics, [", ".join(top_of[e]) for e in examples]


def answer_as_activated(engine: Engine, cache: Path) -> bool:
    """Give the trained `engine` (its manifest naming its parent, `OpenVocabulary.parent_record`, and its user dictionary
    set) the whole vocabulary its activation in the app starts with: its parent's vectors, its new words and
    definitions embedded (seconds: `OpenVocabulary.enable` with reuse, written in `cache`). False, nothing
    changed, when its parent's vectors are not at hand: embedding them all would take minutes."""
    if not engine.vocabulary.vectors_at_hand(cache):
        return False
    engine.vocabulary.enable(cache_dir=cache, reuse=True)  # again if on: the trained model's vectors differ
    return True


def still_missed(engine: Engine, split: DictionarySplit, dictionary: list[Entry],
                 most: int = MISSED_CHECKED) -> dict[str, dict]:
    """{part of the split: {"words": how many were checked, "missed": those with a definition whose first answer is
    another word, "among": what the answers were chosen from}}, for the held-out, dev and training parts (in that
    order, at most `most` entries in all: every entry of a glossary). With an open vocabulary (`answer_as_activated`)
    a training word's first answer is the Reverse dictionary's once the model is active: every word it knows, its
    definitions in its index, the description's own words left out; the report said 8 of 24 words missed where the
    activated model found all 30 (issue 76). Held-out and dev words, and every word without one: among the
    dictionary's words, the checked definitions left out of the index, so a word is found from its definition,
    not by matching it (`evaluate_among`)."""
    parts = {"held out": split.test, "dev": split.dev, "training": split.train}
    checked, left = {}, most
    for name, entries in parts.items():
        checked[name], left = entries[:max(left, 0)], left - len(entries)
    activated = engine.vocabulary.enabled

    def how(name: str) -> str:
        # Training words as the activated model answers them. Held-out and dev words among the dictionary's words,
        # their own definitions left out, as the before/after table scores them: the activated model's index holds
        # every definition of the upload, so it "found" a held-out word by matching its definition ("0 of 3 missed"
        # beside a held-out top-1 of .33: session 47's walk).
        return ACTIVATED_ANSWERS if activated and name == "training" else OWN_WORDS_ANSWERS
    asked = [e for name, part in checked.items() if how(name) == ACTIVATED_ANSWERS for e in part]
    rest = [e for name, part in checked.items() if how(name) == OWN_WORDS_ANSWERS for e in part]
    first = {}
    if asked:
        first.update(zip(asked, (words[0][0] for words in engine.predict_words_batch([e.definition for e in asked],
                                                                                      k=1))))
    if rest:
        first.update(zip(rest, (words[0] for words in evaluate_among(engine, rest, dictionary, k=1)[1])))
    return {name: {"words": len({e.word for e in part}), "among": how(name),
                   "missed": sorted({e.word for e in part if first[e] != e.word})} for name, part in checked.items()}


ACTIVATED_ANSWERS = "the Reverse dictionary's first answer to each definition once this model is active"
OWN_WORDS_ANSWERS = "each definition's first answer among your dictionary's words, the definition itself left out"


def missed_note(missed: dict[str, dict], most: int = HELD_OUT_SHOWN) -> str:
    """The words the trained model still misses (`still_missed`), by part of the split ("none": it finds all), under
    how each part was checked."""
    lines = []
    for among in dict.fromkeys(part.get("among", OWN_WORDS_ANSWERS) for part in missed.values()):
        lines.append(f"Checked: {among}.")
        lines += [words_line(f"Still missed after training, {name}: {len(part['missed'])} of {part['words']}",
                             set(part["missed"]), most, count=False) + "."
                  for name, part in missed.items() if part.get("among", OWN_WORDS_ANSWERS) == among]
    return "\n".join(lines)


def comparison_rows(result: FinetuneResult) -> list[list]:
    """[metric, before, after] rows for the before/after table."""
    return [[name, round(result.before[key], 4), round(result.after[key], 4)]
            for key, name in (("mrr", "MRR"), ("top1", "top-1"), ("top3", "top-3"), ("top10", "top-10"))]


def save_finetuned(result: FinetuneResult, name: str, directory: Path = CHECKPOINTS_DIR) -> Path:
    """Copy the staged model to checkpoint `directory/name`, atomically; never overwrites one.

    ValueError with the reason when the name is bad or taken (by a checkpoint in any case, or by a
    save in progress: core.checkpoint.claimed_name), the disk is full or the folder is not writable;
    then nothing is left behind and the checkpoints already there are unchanged.
    """
    name = safe_checkpoint_name((name or "").strip())
    try:
        with claimed_name(Path(directory), name) as target:
            manifest = read_manifest(result.checkpoint)
            with atomic_directory(target) as tmp:
                for file in result.checkpoint.iterdir():
                    if file.name != MANIFEST:
                        shutil.copyfile(file, tmp / file.name)
                write_json(tmp / MANIFEST, {**manifest, "name": name})  # written last: no manifest, no checkpoint
    except OSError as err:
        raise ValueError(f"Could not save {quoted(name)} in {directory}: {short_reason(err)}. Nothing was saved; "
                         "the checkpoints already there are unchanged.") from err
    return target
