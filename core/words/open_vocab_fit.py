"""Fit the open vocabulary of a trained model (core/words/open_vocab.py): its word tower and its weights.

    fit_open_vocabulary(engine, split, read_gcide_dictd())   # what `python -m core train` runs at its end

The queries come from a split over all candidates (default every WordNet lemma) that extends the
model's own training split (`core.lexicon.dictionary.extend_split`), so no evaluated text was trained on:
- the word tower is trained on that split's training definitions (`core.words.word_tower.fit_word_tower`,
  all candidates);
- word_scale, head_weight and multi_bias are chosen by WordNet dev MRR with the definition channel
  off (in the leak-free index a held-out word has no definition of its own to match);
- definition_weight by GCIDE dev MRR: another dictionary's definitions of the dev words, the closest
  thing to a person's description, scored with the product's index (every WordNet definition) less the
  near-copies of the GCIDE texts scored (`near_copies`: Webster and WordNet sometimes word a sense alike).
  GCIDE's senses taken from WordNet 1.5 are not read (core/lexicon/gcide.py).
WordNet dev and test are scored with an index that leaves out every dev and test text.
"""
from __future__ import annotations

import itertools
import re
import time
from collections import defaultdict
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Callable, Iterator, Sequence

import numpy as np
import torch

from ..lexicon.dictionary import DictionarySplit, Entry, definition_key, extend_split, load_wordnet_lemmas
from ..lexicon.gcide import read_gcide
from ..paths import CACHE_DIR
from .open_vocab import Candidates, OpenScorer, OpenVocabConfig
from .word_eval import rank_of_gold
from .word_tower import WordTowerConfig, fit_word_tower

GCIDE_DICTD = CACHE_DIR / "deb" / "gcide" / "usr" / "share" / "dictd"  # where scripts/fetch_gcide.sh unpacks it
FETCH_GCIDE = "scripts/fetch_gcide.sh"
QUERY_SETS = ("wordnet-dev", "wordnet-test", "gcide-dev", "gcide-test")

Say = Callable[[str], None]
NEAR_COPY_SHARE = 0.8  # a text nearly copies another when this share of their content words (Jaccard) is in both
_FUNCTION_WORDS = frozenset("a an the of or and to in on for by with as at from that which is be it its this".split())


@dataclass(frozen=True)
class WeightGrid:
    """The weights `choose_weights` tries (recipes/defsent-minilm.json records them): every
    (word scale, head weight, bias), then every definition weight, then every temperature; each
    scored on a fixed sample of `sample` dev definitions."""
    word_scales: tuple[float, ...] = (45.0, 60.0, 80.0, 100.0)
    head_weights: tuple[float, ...] = (0.5, 0.75)
    biases: tuple[float, ...] = (4.0, 6.0, 8.0)
    definition_weights: tuple[float, ...] = (0.0, 20.0, 40.0, 80.0, 160.0, 320.0, 640.0)
    temperatures: tuple[float, ...] = (1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0)
    sample: int = 3000


def missing_gcide(dictd_dir: Path = GCIDE_DICTD) -> str | None:
    """None when `dictd_dir` holds the unpacked dict-gcide files, else a message saying how to get them."""
    absent = [name for name in ("gcide.index", "gcide.dict.dz") if not (Path(dictd_dir) / name).is_file()]
    if not absent:
        return None
    return (f"GCIDE (Debian dict-gcide) is needed to choose the open vocabulary's definition weight, but "
            f"{dictd_dir} lacks {' and '.join(absent)}: run {FETCH_GCIDE} (online, a few MB)")


def read_gcide_dictd(dictd_dir: Path = GCIDE_DICTD) -> list[Entry]:
    """Every GCIDE sense of a one-word headword; FileNotFoundError naming the fetch script when absent."""
    message = missing_gcide(dictd_dir)
    if message:
        raise FileNotFoundError(message)
    return read_gcide(Path(dictd_dir), None)


def query_sets(split: DictionarySplit, candidates: set[str], gcide: Sequence[Entry]) -> dict[str, list[Entry]]:
    """WordNet dev and test of `split`, and the GCIDE senses of those words that are candidates."""
    dev_words, test_words = ({e.word for e in part} for part in (split.dev, split.test))
    return {"wordnet-dev": list(split.dev), "wordnet-test": list(split.test),
            "gcide-dev": [e for e in gcide if e.word in dev_words and e.word in candidates],
            "gcide-test": [e for e in gcide if e.word in test_words and e.word in candidates]}


def near_copies(evaluated: Sequence[Entry], candidates: Candidates, share: float = NEAR_COPY_SHARE) -> set[str]:
    """The definition texts of `candidates` that nearly copy an `evaluated` definition of the same word:
    the same text, or content words in common for `share` of both texts' content words (Jaccard), so
    "a female lion" copies "A female lion." while "capable of being specified" does not copy "admitting
    specification; capable of being specified" (a person's description may match it alike). An index
    must leave them out while those definitions are scored."""
    texts_of = defaultdict(list)
    for g, i in zip(candidates.pair_definition.tolist(), candidates.pair_word.tolist()):
        texts_of[candidates.words[i]].append(candidates.definitions[g])
    return {text for entry in evaluated for text in texts_of[entry.word] if _nearly_same(entry.definition, text, share)}


def _nearly_same(a: str, b: str, share: float) -> bool:
    words_a, words_b = (set(re.findall(r"[a-z]+", text.lower())) - _FUNCTION_WORDS for text in (a, b))
    if not words_a or not words_b:
        return definition_key(a) == definition_key(b)
    return len(words_a & words_b) >= share * len(words_a | words_b)


class Queries:
    """Definitions with their embeddings (cached per model and set under `cache_dir` when given),
    the engine's token scores and their words' candidate rows (`gold`)."""

    def __init__(self, engine, name: str, entries: Sequence[Entry], words: Sequence[str],
                 cache_dir: Path | None = None, say: Say = print):
        encode = lambda: engine.encode([e.definition for e in entries], batch_size=128,  # noqa: E731
                                       progress=progress(f"{name} definitions", say))
        if cache_dir is None:
            vectors = encode()
        else:
            path = Path(cache_dir) / f"{engine.fingerprint[:12]}-{name}-{len(entries)}.npy"
            if not path.exists():
                path.parent.mkdir(parents=True, exist_ok=True)
                np.save(path, encode())
            vectors = np.load(path)
        self.vectors = torch.from_numpy(vectors)  # (n, d)
        self.engine = engine
        index = {w: i for i, w in enumerate(words)}
        self.gold = torch.tensor([index[e.word] for e in entries], dtype=torch.long)  # (n,)

    def __len__(self) -> int:
        return len(self.gold)

    def _scores(self, scorer: OpenScorer, rows: torch.Tensor) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        """(gold (b,), candidate scores (b, C)) for `rows`, 512 queries at a time."""
        for batch in rows.split(512):
            u = self.vectors[batch]
            yield self.gold[batch], scorer.scores(u, self.engine.words.logits(u))

    def ranks(self, scorer: OpenScorer, rows: torch.Tensor | None = None) -> torch.Tensor:
        """(n,) rank of each query's word among all candidates (1 = first)."""
        rows = torch.arange(len(self.gold)) if rows is None else rows
        return torch.cat([rank_of_gold(scores, gold) for gold, scores in self._scores(scorer, rows)])

    def log_likelihoods(self, scorer: OpenScorer, temperatures: Sequence[float], rows: torch.Tensor) -> list[float]:
        """Per temperature T, the mean log-probability of each query's word under softmax(scores / T)."""
        total = torch.zeros(len(temperatures))
        for gold, scores in self._scores(scorer, rows):
            for i, t in enumerate(temperatures):
                total[i] += (scores / t).log_softmax(-1).gather(1, gold[:, None]).sum()
        return (total / len(rows)).tolist()

    def report(self, scorer: OpenScorer, rows: torch.Tensor | None = None) -> dict:
        """`metrics` over all queries (or `rows`), and apart for single- and multi-token words."""
        ranks = self.ranks(scorer, rows)
        gold = self.gold if rows is None else self.gold[rows]
        multi = torch.from_numpy(~scorer.candidates.single_token)[gold]
        return {"all": metrics(ranks), "single_token": metrics(ranks[~multi]), "multi_token": metrics(ranks[multi])}


def metrics(ranks: torch.Tensor) -> dict:
    """MRR, acc@1/10/100 and the median rank of 1-based `ranks` ({"n": 0} when empty)."""
    r = ranks.float()
    if not len(r):
        return {"n": 0}
    return {"n": len(r), "mrr": round(float((1 / r).mean()), 4),
            **{f"acc@{k}": round(float((r <= k).float().mean()), 4) for k in (1, 10, 100)},
            "median_rank": float(r.median())}


def choose_weights(scorer: OpenScorer, queries: dict[str, Queries], start: OpenVocabConfig,
                   grid: WeightGrid = WeightGrid(), say: Say = print) -> OpenVocabConfig:
    """The dictionary expert's weights (the everyday expert's, core/words/open_vocab.py, are kept as `start` has
    them): word_scale, head_weight and multi_bias by "wordnet-dev" MRR (definition channel off: held-out
    words have no definition in the leak-free index), then definition_weight by "gcide-dev" MRR,
    then the temperature by "gcide-dev" likelihood (calibrated probabilities), each on a fixed sample
    of `grid.sample` queries (seed 0); the first best setting wins ties."""
    for name in ("wordnet-dev", "gcide-dev"):
        if not len(queries[name]):
            raise ValueError(f"no {name} queries to choose the open vocabulary's weights on")
    sample = {name: torch.randperm(len(q.gold), generator=torch.Generator().manual_seed(0))[:grid.sample]
              for name, q in queries.items()}

    def mrr(name: str, config: OpenVocabConfig) -> float:
        return queries[name].report(scorer.with_config(config), sample[name])["all"]["mrr"]

    share, start = start.everyday_share, replace(start, everyday_share=0.0)  # the dictionary expert's own weights
    best = None
    for scale, head, bias in itertools.product(grid.word_scales, grid.head_weights, grid.biases):
        config = replace(start, word_scale=scale, head_weight=head, multi_bias=bias, definition_weight=0.0)
        score = mrr("wordnet-dev", config)
        say(f"wordnet-dev word scale {scale} head weight {head} bias {bias}: MRR {score:.4f}")
        if best is None or score > best[0]:
            best = (score, config)
    chosen, best = best[1], None
    for weight in grid.definition_weights:
        config = replace(chosen, definition_weight=weight)
        score = mrr("gcide-dev", config)
        say(f"gcide-dev definition weight {weight}: MRR {score:.4f}")
        if best is None or score > best[0]:
            best = (score, config)
    chosen = best[1]
    likelihoods = queries["gcide-dev"].log_likelihoods(scorer.with_config(chosen), grid.temperatures,
                                                       sample["gcide-dev"])
    for t, likelihood in zip(grid.temperatures, likelihoods):
        say(f"gcide-dev temperature {t}: mean log-likelihood {likelihood:.3f}")
    chosen = replace(chosen, temperature=grid.temperatures[likelihoods.index(max(likelihoods))], everyday_share=share)
    say(f"chosen: {chosen}")
    return chosen


def fit_open_vocabulary(engine, split: DictionarySplit, gcide: Sequence[Entry], fit_tower: bool = True,
                        choose: bool = True, grid: WeightGrid = WeightGrid(),
                        tower_config: WordTowerConfig = WordTowerConfig(), dictionary: Sequence[Entry] | None = None,
                        report: Sequence[str] = QUERY_SETS, cache_dir: Path | None = None,
                        say: Say = print) -> dict:
    """Train `engine`'s open-vocabulary word tower (`fit_tower`) and choose its weights (`choose`)
    as the module docstring says, setting `engine.words.tower` and `engine.words.config`
    (what `Engine.save` / `save_word_scoring` store); with neither, only evaluate the engine's own.

    `split`: the split the model was trained on; `gcide`: GCIDE senses (`read_gcide_dictd`);
    `dictionary`: the candidates' entries (default all WordNet lemmas; the engine's user dictionary
    is added as `OpenVocabulary.enable` does). Vectors are cached under `cache_dir` when given.
    Returns {"config": the weights, "word_tower": bool, set name: `Queries.report`} for the `report`
    sets. Scores in float32 meanwhile; leaves the open vocabulary disabled (`engine.vocabulary.forget_scorer`)
    when it changed the tower or the weights."""
    int8_scoring = engine.words.int8
    engine.words.set_precision("float32")  # the float32 scorer can be re-weighted and re-indexed
    try:
        extended = extend_split(split, load_wordnet_lemmas() if dictionary is None else dictionary)
        if fit_tower:
            words = engine.words.candidates(dictionary=dictionary).words
            train = Queries(engine, "wordnet-train", extended.train, words, cache_dir, say)
            say(f"word tower: {tower_config}")
            engine.words.tower = fit_word_tower(
                engine.encoder, train.vectors, train.gold, words, tower_config,
                lambda step, steps, loss: say(f"word tower step {step}/{steps}: loss {loss:.3f}"))
            engine.words.word_map = None  # an older checkpoint's map of the encoder's word vectors
        started = time.time()
        engine.vocabulary.enable(dictionary=dictionary, cache_dir=cache_dir,
                                 progress=progress("candidates and definitions", say))
        scorer = engine.words.open_vocab
        words = scorer.candidates.words
        say(f"open vocabulary: {len(words)} candidates ({int(scorer.candidates.single_token.sum())} single-token), "
            f"{len(scorer.candidates.definitions)} definitions ({time.time() - started:.0f} s)")
        sets = query_sets(extended, set(words), gcide)
        needed = set(report) | ({"wordnet-dev", "gcide-dev"} if choose else set())
        queries = {name: Queries(engine, name, entries, words, cache_dir, say)
                   for name, entries in sets.items() if name in needed}
        wordnet_index = scorer.without_definitions(e.definition for e in extended.dev + extended.test)
        gcide_index = scorer.without_definitions(near_copies(sets["gcide-dev"] + sets["gcide-test"], scorer.candidates))
        if choose:  # wordnet-dev is scored with the definition channel off: any index serves it
            engine.words.config = choose_weights(gcide_index, queries, engine.words.config, grid, say)
        config = engine.words.config
        results = {"config": asdict(config), "word_tower": bool(engine.words.tower)}
        for name in report:
            index = wordnet_index if name.startswith("wordnet") else gcide_index
            results[name] = queries[name].report(index.with_config(config))
            say(f"{name}: {results[name]['all']}")
            if name.startswith("wordnet"):  # a held-out word has no definition here: its embedding alone
                off = f"{name}, definition channel off"
                results[off] = queries[name].report(index.with_config(replace(config, definition_weight=0.0)))
                say(f"{off}: {results[off]['all']}")
        if choose:
            engine.vocabulary.forget_scorer()  # scored with the old weights: `engine.vocabulary.enable` again
        return results
    finally:
        engine.words.int8 = int8_scoring


def overall(results: dict) -> dict:
    """{query set: its "all" metrics} of `fit_open_vocabulary`'s results (what a manifest records)."""
    return {name: value["all"] for name, value in results.items() if isinstance(value, dict) and "all" in value}


def progress(what: str, say: Say = print) -> Callable[[int, int], None]:
    """An encoding progress callback that says `what` is done at most every 30 s, and at the end."""
    last = [0.0]

    def report(done: int, total: int) -> None:
        if time.time() - last[0] > 30 or done == total:
            last[0] = time.time()
            say(f"  embedding {what}: {done}/{total}")
    return report
