"""The reverse dictionary as users meet it: where the described word ranks among every candidate the
engine answers with, scored as the app scores (the description's own words left out, as its default).

Query sets (`reverse_query_sets`):
- "human-dev": 179 descriptions written by people (../shared/data/human-descriptions, dev only: it
  chooses weights and compares changes; never trained on). A plural the candidates lack counts through
  its singular ("facts" -> fact). "human-dev/actions": those that describe an action or a state as people
  do ("to ...", "when ...", `core.lexicon.forms.describes_action`; issue 60).
- "defsent-table6": the 12 definitions of the DefSent paper's Table 6.
- "wordnet-dev/actions": WordNet dev verbs' and adjectives' glosses rewritten into people's shapes for actions
  and states ("to ...", "when you ...", "the act of ...ing": core/lexicon/action_shapes.py, issue 60), scored with
  the leak-free index of "wordnet-test" (no dev or test gloss, nor its rewrites).
- "wordnet-test": WordNet test definitions of words never trained on, scored with an index that holds
  no dev or test definition (leak-free), as core/words/open_vocab_fit.py does; also apart for multi-token words.
- "gcide-test": GCIDE's definitions of those test words, with an index without their near copies.
- "norms-heldout": people's descriptions of the feature norms' held-out words (core/lexicon/norms.py: never
  trained on), and the human dev set apart for the words the norms describe ("human-dev/in-norms") and
  the others ("human-dev/not-in-norms"), when the norms are there.
Each with no filter, with the word's initial letter given, and with its length given as well (the app's
filters). A rank past `MAX_RANK` counts as `MAX_RANK` (the dev set's README asks for 1000).

    python -m core eval-reverse          # every set, every filter; the table and a JSON report
"""
from __future__ import annotations

import contextlib
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Sequence

import numpy as np
import torch

from core.runtime.cancel import check_cancelled
from core.lexicon.forms import asked_form, lemmas_written_as
from core.text import singular
from core.lexicon.norms import read_norms, split_norm_words
from core.paths import FEATURE_NORMS, HUMAN_DESCRIPTIONS
from core.words.vocabulary import WordFilter, letters

MAX_RANK = 1000
FILTERS = ("none", "initial", "initial+length")
SET_NAMES = ("defsent-table6", "human-dev", "human-dev/actions", "human-dev/in-norms", "human-dev/not-in-norms",
             "norms-heldout", "wordnet-dev/actions", "wordnet-test", "gcide-test")  # `reverse_query_sets`' names
# DefSent (Tsukagoshi et al. 2021), Table 6: (word, definition).
DEFSENT_TABLE6 = (
    ("cost", "be expensive for ( someone )"), ("preserve", "prevent ( food ) from rotting"),
    ("good", "that which is pleasing or valuable or useful"), ("linux", "an open-source operating system modelled on unix."),
    ("pile", "place or lay as if in a pile"), ("weird", "very strange; bizarre"),
    ("sale", "the general activity of selling"), ("satellite", "a celestial body orbiting the earth or another planet."),
    ("logic", "the quality of being justifiable by reason"), ("custom", "a thing that one does habitually"),
    ("chief", "a person who is in charge"), ("nirvana", "an ideal or idyllic state or place"))


@dataclass(frozen=True)
class Query:
    """A description and the word it describes."""
    text: str
    word: str


def read_human_descriptions(path: Path = HUMAN_DESCRIPTIONS) -> list[Query]:
    """The human dev set (`description<TAB>word` lines); FileNotFoundError when it is not there."""
    if not Path(path).is_file():
        raise FileNotFoundError(f"{path} is missing: the human descriptions are in ../shared/data beside the "
                                "repository on development machines and in CI")
    rows = [line.split("\t") for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]
    return [Query(text.strip(), word.strip().lower()) for text, word in rows]


def table6() -> list[Query]:
    return [Query(definition, word) for word, definition in DEFSENT_TABLE6]


def ranks(engine, queries: Sequence[Query], mode: str = "none", batch_size: int = 64) -> np.ndarray:
    """(n,) rank of each query's word among the engine's candidates (1 = first; ties count against it),
    at most MAX_RANK; MAX_RANK when the word is not a candidate. `mode`: one of FILTERS."""
    return ranks_by_mode(engine, queries, [mode], batch_size)[mode]


def ranks_by_mode(engine, queries: Sequence[Query], modes: Sequence[str] = FILTERS,
                  batch_size: int = 64) -> dict[str, np.ndarray]:
    """`ranks` for each filter mode, each query scored once."""
    unknown = [mode for mode in modes if mode not in FILTERS]
    if unknown:
        raise ValueError(f"unknown filter mode {unknown[0]!r}; one of {', '.join(FILTERS)}")
    out, masks = {mode: [] for mode in modes}, {}  # masks: one per filter (initials and lengths: a few hundred)
    for start in range(0, len(queries), batch_size):
        check_cancelled()
        batch = queries[start:start + batch_size]
        scored = engine.words.scores(engine.encode([q.text for q in batch]), exclude_words_of=[q.text for q in batch])
        for mode in modes:
            out[mode].extend(_rows(scored, batch, mode, masks))
    return {mode: np.array(rows, dtype=np.int64) for mode, rows in out.items()}


def _rows(scored, batch: Sequence[Query], mode: str, masks: dict) -> Iterator[int]:
    index = scored.vocab.id_of
    for i, query in enumerate(batch):
        form = asked_form(query.text)  # "biggest" is answered by "big", written in the superlative asked
        lemmas = lemmas_written_as(query.word, form) if form else []
        forms = [w for w in dict.fromkeys([query.word, singular(query.word), *lemmas]) if w in index]
        yield min((_rank(scored, i, index[w], _mask(scored.vocab, _filter(w, mode), masks)) for w in forms),
                  default=MAX_RANK)


def _mask(vocab, word_filter: WordFilter, masks: dict) -> torch.Tensor:
    if word_filter not in masks:
        masks[word_filter] = torch.from_numpy(vocab.mask(word_filter))
    return masks[word_filter]


def _rank(scored, row: int, gold: int, mask: torch.Tensor) -> int:
    """1 + the allowed candidates scored above `gold` (MAX_RANK at most, or when `gold` is not allowed)."""
    allowed = scored.allowed[row] & mask
    if not allowed[gold]:
        return MAX_RANK
    scores = scored.scores[row].masked_fill(~allowed, float("-inf"))
    return min(int((scores > scores[gold]).sum()) + 1, MAX_RANK)


def _filter(word: str, mode: str) -> WordFilter:
    if mode == "none":
        return WordFilter()
    if mode == "initial":
        return WordFilter(initial=word[0])
    return WordFilter(initial=word[0], min_length=letters(word), max_length=letters(word))


def summary(r: np.ndarray) -> dict:
    """acc@1/3/10/100, MRR and median rank of 1-based ranks ({"n": 0} when empty)."""
    if not len(r):
        return {"n": 0}
    r = np.asarray(r, dtype=np.float64)
    return {"n": len(r), **{f"acc@{k}": round(float((r <= k).mean()), 4) for k in (1, 3, 10, 100)},
            "mrr": round(float((1 / r).mean()), 4), "median": float(np.median(r))}


def reverse_query_sets(engine, gcide: Sequence | None = None, human: Path = HUMAN_DESCRIPTIONS,
                       norms: Path | None = FEATURE_NORMS, norms_sample: int = 0
                       ) -> dict[str, tuple[list[Query], object | None]]:
    """{set name: (queries, the open-vocabulary index to score them with, None for the engine's own)}
    for the sets the module docstring lists; a set whose data is missing is left out. Needs
    `engine.words.open_vocab` in float32 (the leak-free indexes drop definitions). `norms_sample`: score
    a seeded sample of that many of the held-out norms' descriptions (0: all of them)."""
    from core.lexicon.action_shapes import action_queries, glosses_and_shapes
    from core.lexicon.dictionary import lemma_split
    from core.lexicon.forms import describes_action
    from core.words.open_vocab_fit import near_copies, query_sets

    scorer = engine.words.open_vocab
    sets: dict[str, tuple[list[Query], object | None]] = {"defsent-table6": (table6(), None)}
    if Path(human).is_file():
        sets["human-dev"] = (read_human_descriptions(human), None)
        sets["human-dev/actions"] = ([q for q in sets["human-dev"][0] if describes_action(q.text)], None)
    if norms is not None and Path(norms).is_file():
        sets |= norms_query_sets(engine, read_norms(norms), sets.get("human-dev", ([], None))[0], norms_sample)
    if scorer is None:  # single-token words only: the dictionary sets' words are mostly not candidates
        return sets
    seed = int(engine.manifest.get("training", {}).get("split_seed", 0))
    split = lemma_split(seed)
    entries = query_sets(split, set(scorer.candidates.words), gcide or [])
    leak_free = scorer.without_definitions(glosses_and_shapes(split.dev + split.test))
    sets["wordnet-dev/actions"] = ([Query(e.definition, e.word) for e in action_queries(split.dev)], leak_free)
    sets["wordnet-test"] = ([Query(e.definition, e.word) for e in entries["wordnet-test"]], leak_free)
    if gcide:
        copies = near_copies(entries["gcide-dev"] + entries["gcide-test"], scorer.candidates)
        sets["gcide-test"] = ([Query(e.definition, e.word) for e in entries["gcide-test"]],
                              scorer.without_definitions(copies))
    return sets


def norms_query_sets(engine, descriptions: Sequence, human: Sequence[Query], sample: int = 0
                     ) -> dict[str, tuple[list[Query], None]]:
    """The human dev set split by whether the norms describe its word, and the held-out norm words'
    descriptions (the split the everyday adapter was trained with; a seeded `sample` of them if above 0)."""
    words = {d.word for d in descriptions}
    seed = int(engine.manifest.get("everyday_adapter", {}).get("training", {}).get("split_seed", 0))
    held_out = split_norm_words(words, seed).held_out
    queries = [Query(d.text, d.word) for d in descriptions if d.word in held_out]
    if 0 < sample < len(queries):
        queries = random.Random(seed).sample(queries, sample)
    sets = {"norms-heldout": (queries, None)}
    if human:
        sets["human-dev/in-norms"] = ([q for q in human if q.word in words], None)
        sets["human-dev/not-in-norms"] = ([q for q in human if q.word not in words], None)
    return sets


def evaluate_reverse(engine, sets: dict[str, tuple[list[Query], object | None]],
                     modes: Sequence[str] = FILTERS, say=print) -> dict:
    """{set: {filter mode: summary}} plus, for wordnet-test, its multi-token words apart."""
    results = {}
    for name, (queries, index) in sets.items():
        # a leak-free index drops definitions from the engine's own scorer: its vectors are the engine's state's
        with (engine.vocabulary.scoring_with(index, engine.vocabulary.state) if index is not None
              else contextlib.nullcontext()):
            results[name] = {mode: summary(r) for mode, r in ranks_by_mode(engine, queries, modes).items()}
            if name == "wordnet-test" and engine.words.open_vocab is not None:
                multi = [q for q in queries if " " in q.word or engine.words.vocab.token_id(q.word) is None]
                results[name]["multi-token"] = summary(ranks(engine, multi, "none"))
        say(f"{name}: {results[name]}")
    return results
