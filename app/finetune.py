"""Fine-tuning on a user's dictionary, as a background job: validate the upload, split it by word,
train a fresh copy of the active model, and compare before/after on the user's held-out words.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

from core.checkpoint import CHECKPOINTS_DIR, safe_checkpoint_name
from core.dictionary import DictionarySplit, Entry, read_user_dictionary, split_by_word
from core.engine import Engine
from core.train import TrainConfig, TrainingCancelled, TrainProgress, train
from core.word_eval import definition_pairs, evaluate_words

from .jobs import Job, JobCancelled

EXAMPLES = 6
TOP_WORDS = 3


@dataclass(frozen=True)
class FinetuneSettings:
    """What the user chooses before starting."""
    epochs: float = 3.0
    lr: float = 5e-5
    batch_size: int = 16
    trainable_layers: int = 0
    max_steps: int = 0
    evaluations: int = 10
    seed: int = 0

    def train_config(self, train_pairs: int) -> TrainConfig:
        """The core TrainConfig, with dev evaluations spread evenly over the run."""
        if self.epochs <= 0 or self.lr <= 0 or self.batch_size < 1 or self.evaluations < 1:
            raise ValueError("Epochs, learning rate, batch size and evaluations must be positive.")
        total = self.max_steps or max(1, int(self.epochs * math.ceil(train_pairs / self.batch_size)))
        return TrainConfig(lr=self.lr, epochs=self.epochs, batch_size=int(self.batch_size),
                           trainable_layers=int(self.trainable_layers), max_steps=int(self.max_steps),
                           eval_every=max(1, total // int(self.evaluations)), seed=int(self.seed))


@dataclass
class Upload:
    """A validated user dictionary, split by word (the test words are held out for before/after)."""
    name: str
    entries: list[Entry]
    split: DictionarySplit
    report: str


def validate_upload(engine: Engine, path: str | Path, seed: int = 0) -> Upload:
    """Read and check a TSV/CSV/JSONL dictionary; ValueError (with the report) when it is unusable."""
    path = Path(path)
    entries, report = read_user_dictionary(path, vocab=lambda word: engine.vocab.token_id(word) is not None)
    if not report.ok:
        raise ValueError(report.summary())
    split = split_by_word(entries, seed=seed)
    empty = [name for name, part in (("training", split.train), ("dev", split.dev), ("test", split.test))
             if not part]
    if empty:
        words = len({e.word for e in entries})
        raise ValueError(f"{report.summary()}\nOnly {words} different usable words: the {' and '.join(empty)} "
                         "part(s) of the split by word would be empty. Add more words (at least 10).")
    return Upload(path.name, entries, split, report.summary() + "\n" + split.report())


@dataclass
class FinetuneResult:
    """The trained engine and how it compares with the model it started from."""
    engine: Engine
    before: dict
    after: dict
    examples: list[dict]
    training: dict


def run_finetune(job: Job, load_engine: Callable[[], Engine], upload: Upload, settings: FinetuneSettings,
                 started_from: str) -> FinetuneResult:
    """The job body: train a fresh copy of the model, reporting progress to `job`."""
    job.report(stage="loading a copy of the model", step=0, total=0)
    engine = load_engine()
    split = upload.split
    job.report(stage="scoring the held-out words before training")
    before = evaluate_words(engine, split.test)
    examples = _examples(split.test)
    before_words = _top_words(engine, examples)
    config = settings.train_config(len(definition_pairs(split.train, engine.vocab)[0]))
    history: list[dict] = []

    def progress(p: TrainProgress) -> None:
        history.append({"step": p.step, "loss": p.loss, "dev_mrr": p.dev.get("mrr")})
        job.report(stage="training", step=p.step, total=p.total_steps, loss=p.loss,
                   dev_mrr=p.dev.get("mrr"), history=history)

    try:
        result = train(engine, split.train, split.dev, config, progress=progress, should_stop=job.should_stop)
    except TrainingCancelled as err:
        raise JobCancelled(str(err)) from None
    job.report(stage="scoring the held-out words after training")
    after = evaluate_words(engine, split.test)
    after_words = _top_words(engine, examples)
    rows = [{"word": e.word, "definition": e.definition, "before": b, "after": a}
            for e, b, a in zip(examples, before_words, after_words, strict=True)]
    training = {"data": upload.name, "finetuned_from": started_from, "split": split.stats(),
                "settings": asdict(settings), "result": result.to_dict()}
    return FinetuneResult(engine, before, after, rows, training)


def _examples(entries: list[Entry]) -> list[Entry]:
    """One entry each for the first few held-out words."""
    seen: dict[str, Entry] = {}
    for entry in entries:
        seen.setdefault(entry.word, entry)
    return list(seen.values())[:EXAMPLES]


def _top_words(engine: Engine, entries: list[Entry]) -> list[str]:
    if not entries:
        return []
    ranked = engine.predict_words_batch([e.definition for e in entries], k=TOP_WORDS)
    return [", ".join(word for word, _ in words) for words in ranked]


def comparison_rows(result: FinetuneResult) -> list[list]:
    """[metric, before, after] rows for the before/after table."""
    return [[name, round(result.before[key], 4), round(result.after[key], 4)]
            for key, name in (("mrr", "MRR"), ("top1", "top-1"), ("top3", "top-3"), ("top10", "top-10"))]


def save_finetuned(result: FinetuneResult, name: str, directory: Path = CHECKPOINTS_DIR) -> Path:
    """Save the trained engine as checkpoint `directory/name`; never overwrites an existing one."""
    name = safe_checkpoint_name((name or "").strip())
    target = directory / name
    if target.exists():
        raise ValueError(f"A checkpoint called {name!r} already exists; choose another name.")
    return result.engine.save(target, name=name, training=result.training,
                              metrics={"user_test": {"before": result.before, "after": result.after}})
