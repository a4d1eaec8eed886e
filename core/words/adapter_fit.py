"""Training the everyday expert's query adapter (core/words/query_adapter.py) on descriptions people wrote.

    adapter = fit_adapter(engine, people, dictionary, AdapterFitConfig())

Each step scores `people_batch` descriptions people wrote (core/lexicon/norms.py, training words only) and
`dictionary_batch` glosses of the dictionary's training words (their own gloss left out of the definition
channel, as in training the word tower) against every candidate, through the mixture of the open vocabulary
(core/words/open_vocab.py), the adapter feeding the everyday expert; the loss is the negative log-probability
of the described word in that mixture at a sharper temperature and a larger everyday share than the app's
(`AdapterFitConfig.train_temperature`, `train_share`). The glosses keep what the adapter learns general: without them it
would learn the 3,300 words people described (issue 53 asks that words outside the norms lose nothing).
The encoder, head, tower and every vector stay fixed, so each text is embedded once (cached).
"""
from __future__ import annotations

import hashlib
import math
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import torch

from ..atomic import save_npy_atomically
from ..lexicon.dictionary import lemma_split
from ..lexicon.norms import HELD_OUT_SHARE, NORMS_SOURCE, Description, split_norm_words
from ..text import singular
from .query_adapter import AdapterConfig, QueryAdapter

Progress = Callable[[str], None]


@dataclass(frozen=True)
class AdapterFitConfig:
    """How `fit_adapter` trains (a recipe's "adapter" block; saved in the manifest)."""
    hidden: int = 512  # the adapter's hidden width
    steps: int = 1500  # training steps
    people_batch: int = 64  # descriptions people wrote, a step
    dictionary_batch: int = 64  # dictionary glosses, a step
    lr: float = 1e-3  # AdamW's peak learning rate
    weight_decay: float = 0.01  # AdamW's
    warmup_steps: int = 100  # of a linear warm-up
    seed: int = 0  # of the weights and the batches
    eval_every: int = 250  # steps between measurements
    measured: int = 1000  # held-out descriptions ranked before, every eval_every steps, and after
    candidates: int = 20000  # the most common candidates trained against (`common_candidates`), with every gold
    # What the loss reads: the mixture with the everyday expert's share near 1 at a temperature sharper than the
    # app's 64, whose softmax is so flat that the first adapter barely learnt (docs/results.md, "People's words":
    # at 16 every figure rose with the compact vectors and moved within noise with the exact ones; at 1 all fell).
    # The adapter answers in the app's mixture.
    train_temperature: float = 16.0  # the mixture's temperature in the loss
    train_share: float = 0.999  # the everyday expert's share in the loss

    def __post_init__(self) -> None:
        if self.steps < 1 or self.people_batch < 1 or self.dictionary_batch < 0 or self.hidden < 1:
            raise ValueError("steps, people_batch and hidden must be at least 1, dictionary_batch at least 0")
        if not 0.0 < self.train_share < 1.0 or not self.train_temperature > 0.0:
            raise ValueError("train_share must be between 0 and 1 and train_temperature above 0")


@dataclass
class Examples:
    """Queries for training or measuring: vectors (n, d), the candidate row of each one's word (n,), and the
    definition each one is (n,; -1: a description, no definition to leave out)."""
    vectors: torch.Tensor
    gold: torch.Tensor
    own: torch.Tensor

    def __len__(self) -> int:
        return len(self.gold)

    def take(self, rows: torch.Tensor) -> "Examples":
        return Examples(self.vectors[rows], self.gold[rows], self.own[rows])


def embedded_texts(engine, texts: Sequence[str], cache_dir: Path | None, say: Progress = print) -> np.ndarray:
    """engine.encode(texts) (n, d), cached in `cache_dir` by the encoder's fingerprint and the texts."""
    digest = hashlib.sha256("\n".join(texts).encode()).hexdigest()[:16]
    path = None if cache_dir is None else Path(cache_dir) / f"{engine.fingerprint}-{digest}.npy"
    if path is not None and path.is_file():
        return np.load(path)
    say(f"embedding {len(texts):,} descriptions (once; cached)")
    step = max(1, len(texts) // 20)
    vectors = engine.encode(list(texts), batch_size=128,
                            progress=lambda done, total: done % step < 128 and say(f"  {done:,}/{total:,}"))
    if path is not None:
        save_npy_atomically(path, vectors.astype(np.float32))
    return vectors


def people_examples(engine, descriptions: Sequence[Description], vectors: np.ndarray) -> Examples:
    """The descriptions (with their vectors (n, d), `embedded_texts`) whose word, or its singular, is a
    candidate of the engine's open vocabulary."""
    index = {w: i for i, w in enumerate(engine.words.open_vocab.candidates.words)}
    gold = torch.tensor([index.get(d.word, index.get(singular(d.word), -1)) for d in descriptions], dtype=torch.long)
    known = gold >= 0
    return Examples(torch.from_numpy(np.asarray(vectors, dtype=np.float32))[known], gold[known],
                    torch.full((int(known.sum()),), -1, dtype=torch.long))


def dictionary_examples(scorer, words: set[str]) -> Examples:
    """Every definition of the open vocabulary whose words are all in `words` (a dictionary split's training
    words), as a query for its first word, with its own vector (the encoder's, as the index holds it)."""
    candidates = scorer.candidates
    rows = [(g, defined[0]) for g, defined in enumerate(candidates.defined_rows)
            if defined and all(candidates.words[i] in words for i in defined)]
    own = torch.tensor([g for g, _ in rows], dtype=torch.long)
    return Examples(scorer.definition_vectors[own], torch.tensor([i for _, i in rows], dtype=torch.long), own)


def log_probabilities(engine, adapter: QueryAdapter | None, batch: Examples, scorer=None) -> torch.Tensor:
    """(B, C) log p(c) of the mixture for the batch's queries over the candidates of `scorer` (default: the
    engine's open vocabulary), the adapter reading them for the everyday expert (None: no adapter, as before
    it); each query's own definition left out."""
    words, scorer = engine.words, scorer or engine.words.open_vocab
    with torch.no_grad():
        logits = words.token_scores(batch.vectors)  # (B, V)
    everyday = None
    if adapter is not None:
        u_e = adapter(batch.vectors)  # (B, d)
        everyday = (u_e, words.token_scores(u_e))
    return scorer.mixture(batch.vectors, logits, everyday, own=batch.own)


def ranks(engine, adapter: QueryAdapter | None, examples: Examples, batch_size: int = 256) -> np.ndarray:
    """(n,) 1-based rank of each query's word among all candidates (ties against it)."""
    out = []
    with torch.no_grad():
        for start in range(0, len(examples), batch_size):
            batch = examples.take(torch.arange(start, min(start + batch_size, len(examples))))
            scores = log_probabilities(engine, adapter, batch)  # (B, C)
            gold = scores.gather(1, batch.gold[:, None])  # (B, 1)
            out.append(((scores > gold).sum(1) + 1).numpy())
    return np.concatenate(out) if out else np.zeros(0, dtype=np.int64)


def summary(r: np.ndarray) -> str:
    return (f"acc@1 {np.mean(r <= 1):.3f} acc@10 {np.mean(r <= 10):.3f} MRR {np.mean(1 / r):.3f} "
            f"median {np.median(r):.0f} (n {len(r)})")


def fit_adapter(engine, people: Examples, dictionary: Examples, config: AdapterFitConfig = AdapterFitConfig(),
                checks: dict[str, Examples] | None = None, say: Progress = print, scorer=None) -> QueryAdapter:
    """A query adapter trained as the module docstring says, over the candidates of `scorer` (default: the
    engine's open vocabulary; the examples' gold and own rows are its rows); `checks` ({name: examples of the
    engine's own open vocabulary}) are ranked every `eval_every` steps and at the end (said, not used to
    choose anything). The open vocabulary must hold float32 vectors (`set_precision("float32")` first)."""
    torch.manual_seed(config.seed)
    generator = torch.Generator().manual_seed(config.seed)
    scorer = scorer or engine.words.open_vocab
    learnt_through = scorer.with_config(replace(scorer.config, everyday_share=config.train_share,
                                                mixture_temperature=config.train_temperature))
    adapter = QueryAdapter(AdapterConfig(dim=people.vectors.shape[1], hidden=config.hidden))
    optimizer = torch.optim.AdamW(adapter.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    losses = []
    for step in range(1, config.steps + 1):
        for group in optimizer.param_groups:
            group["lr"] = config.lr * _schedule(step, config)
        batch = _concat(people.take(torch.randint(len(people), (config.people_batch,), generator=generator)),
                        dictionary.take(torch.randint(len(dictionary), (config.dictionary_batch,), generator=generator))
                        if config.dictionary_batch and len(dictionary) else None)
        loss = -log_probabilities(engine, adapter, batch, learnt_through).gather(1, batch.gold[:, None]).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        if step % 20 == 0:
            say(f"step {step}/{config.steps}: loss {np.mean(losses[-20:]):.3f}")
        if step % config.eval_every == 0 or step == config.steps:
            for name, examples in (checks or {}).items():
                say(f"  {name}: {summary(ranks(engine, adapter.eval(), examples))}")
            adapter.train()
    return adapter.eval().requires_grad_(False)


def _schedule(step: int, config: AdapterFitConfig) -> float:
    """Linear warm-up, then cosine decay to 0."""
    if step <= config.warmup_steps:
        return step / config.warmup_steps
    return 0.5 * (1 + math.cos(math.pi * (step - config.warmup_steps) / max(1, config.steps - config.warmup_steps)))


def _concat(a: Examples, b: Examples | None) -> Examples:
    if b is None:
        return a
    return Examples(torch.cat([a.vectors, b.vectors]), torch.cat([a.gold, b.gold]), torch.cat([a.own, b.own]))



def train_everyday_adapter(engine, descriptions: Sequence[Description], vectors: np.ndarray, split_seed: int = 0,
                           held_out_share: float = HELD_OUT_SHARE, config: AdapterFitConfig = AdapterFitConfig(),
                           say: Progress = print) -> dict:
    """Fit the adapter on the norms' training words and the dictionary's training glosses, set it on the engine
    (`engine.words.adapter`, with the manifest's record) and return the held-out words' ranks before and after.

    `descriptions` and their `vectors` (n, d) are all of the norms; the split holds out a seeded share of their
    words (`split_norm_words`) and keeps the WordNet split's dev and test words (`lemma_split(split_seed)`, the
    dictionary guards' words) out of training."""
    split = lemma_split(split_seed)
    train_words = {e.word for e in split.train}
    norms = split_norm_words({d.word for d in descriptions}, split_seed, held_out_share,
                             not_trained={e.word for e in split.dev + split.test})
    rows = {part: [i for i, d in enumerate(descriptions) if d.word in getattr(norms, part)]
            for part in ("train", "held_out")}
    people, held_out = (people_examples(engine, [descriptions[i] for i in rows[part]], vectors[rows[part]])
                        for part in ("train", "held_out"))
    dictionary = dictionary_examples(engine.words.open_vocab, train_words)
    scorer, people, dictionary = common_candidates(engine.words.open_vocab, people, dictionary, config.candidates)
    say(f"training on {len(people):,} descriptions of {len(norms.train):,} words and {len(dictionary):,} glosses "
        f"among {len(scorer.candidates):,} candidates; {len(held_out):,} descriptions of {len(norms.held_out):,} "
        "held-out words")
    engine.words.adapter = None
    measured = held_out.take(torch.randperm(len(held_out), generator=torch.Generator().manual_seed(split_seed))
                             [:config.measured])  # a sample: every description would take most of the run
    before = ranks(engine, None, measured)
    say(f"held-out words ({len(measured):,} descriptions) before: {summary(before)}")
    adapter = fit_adapter(engine, people, dictionary, config, {"held-out words": measured}, say, scorer)
    after = ranks(engine, adapter, measured)
    engine.words.adapter = adapter
    engine.words.adapter_training = {
        "config": asdict(config), "split_seed": split_seed, "held_out_share": held_out_share,
        "trained_on": [{**NORMS_SOURCE, "descriptions": len(people), "words": len(norms.train)},
                       {"name": "WordNet 3.0 glosses of the training split's words", "license": "WordNet 3.0 license",
                        "glosses": len(dictionary)}],
        "held_out": {"words": len(norms.held_out), "descriptions": len(held_out), "measured": len(measured),
                     "before": summary(before), "after": summary(after)}}
    return {"before": before, "after": after}


def common_candidates(scorer, people: Examples, dictionary: Examples, size: int) -> tuple:
    """(the scorer of the `size` most common candidates and the people's words, the people's examples and the
    dictionary's whose word is among them, with their rows in it). Training against all 147k candidates costs
    ~10 s a step on 2 cores; people mean common words, and the word prior keeps the rare ones down anyway."""
    common = np.argsort(-scorer.candidates.zipf, kind="stable")[:size]
    rows = np.union1d(common, people.gold.numpy())  # (C',) sorted
    new_row = np.full(len(scorer.candidates), -1)
    new_row[rows] = np.arange(len(rows))
    subset = scorer.subset(rows)

    def moved(examples: Examples) -> Examples:
        kept = torch.from_numpy(new_row[examples.gold.numpy()] >= 0)
        examples = examples.take(kept.nonzero()[:, 0])
        own = examples.own.numpy()
        own = np.where(own >= 0, np.searchsorted(subset.candidates.kept_definitions, own), -1)
        return Examples(examples.vectors, torch.from_numpy(new_row[examples.gold.numpy()]), torch.from_numpy(own))
    return subset, moved(people), moved(dictionary)


def adapt_engine(engine, norms: Path, config: AdapterFitConfig = AdapterFitConfig(), split_seed: int = 0,
                 held_out_share: float = HELD_OUT_SHARE, say: Progress = print) -> dict:
    """`train_everyday_adapter` from the norms file: the engine answers with its exact open-vocabulary vectors
    in float32 (embedded, or read from the user cache), the descriptions are embedded once (cached too).
    Returns the held-out words' ranks before and after."""
    from ..lexicon.norms import read_norms
    from ..paths import user_cache_dir
    from .open_vocab_fit import progress

    descriptions = read_norms(norms)
    engine.words.set_precision("float32")  # the adapter trains through float32 vectors
    engine.vocabulary.enable(cache_dir=user_cache_dir("open-vocab"), progress=progress("candidates", say),
                             compact=False)
    vectors = embedded_texts(engine, [d.text for d in descriptions], user_cache_dir("norms"), say)
    return train_everyday_adapter(engine, descriptions, vectors, split_seed, held_out_share, config, say)
