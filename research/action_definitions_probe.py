"""Issue 60, item 1 (open): do people's descriptions of actions rank better when every WordNet verb's (and
adjective's) gloss is also among the candidates' definitions in people's shapes ("to ...", "when you ...",
"the act of ...ing": core/lexicon/action_shapes.py)? No training: the rewritten glosses are embedded by the
encoder, as the definitions are, and the definition channel (each candidate's best definition) reads them.

    python -m research.action_definitions_probe --shapes to "when you" "when somebody" "if you" "the act of"

Needs the exact vectors in the user cache (as `python -m core eval-reverse`). The new texts' vectors are kept in
data/cache/action-shapes/ (about 240 texts a second on one thread: minutes for all the verbs' shapes). Leakage:
every lemma's gloss is already a candidate's definition when the human sets are scored, so its rewritten
forms are the same information in another shape; "wordnet-dev/actions" and the WordNet sets drop the dev and
test glosses with their shapes (`glosses_and_shapes`), so their rewrites are never what is matched there.
Prints eval-reverse's summary of each set with no filter, before and after.
"""
from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

import numpy as np
import torch

from core.checkpoint import DEFAULT_CHECKPOINT
from core.engine import Engine
from core.evaluation.reverse import Query, evaluate_reverse, reverse_query_sets
from core.lexicon.action_shapes import STATE_SHAPES, VERB_SHAPES, action_queries, action_shapes
from core.lexicon.dictionary import Entry, lemma_split, load_wordnet_lemmas
from core.paths import CACHE_DIR, user_cache_dir
from core.words.open_vocab import Candidates, reusing

SETS = ("human-dev", "human-dev/actions", "human-dev/not-in-norms", "defsent-table6", "wordnet-dev/actions")


def shaped_entries(entries: list[Entry], shapes: set[str], parts: set[str]) -> list[Entry]:
    """Each entry of a part of speech in `parts` again, its gloss in each of `shapes`."""
    return [Entry(e.word, text, e.pos, synset=e.synset) for e in entries if e.pos in parts
            for shape, text in action_shapes(e.definition, e.pos).items() if shape in shapes]


def chosen_sets(engine: Engine, names: list[str]) -> dict:
    """reverse_query_sets' `names`, and "wordnet-dev/actions as glossed": the slice's senses with their own
    dictionary glosses (the shape of the gloss against people's shape, on the same words and index)."""
    sets = reverse_query_sets(engine)
    gloss = {(e.word, e.synset): e.definition for e in lemma_split(0).dev}
    queries = [Query(gloss[e.word, e.synset], e.word) for e in action_queries(lemma_split(0).dev)]
    return {**{name: sets[name] for name in names},
            "wordnet-dev/actions as glossed": (queries, sets["wordnet-dev/actions"][1])}


def cached_encoder(engine: Engine, folder: Path):
    """engine.encode, with every text's vector kept in `folder` (one .npz per call that embedded something)."""
    folder.mkdir(parents=True, exist_ok=True)
    known: dict[str, np.ndarray] = {}
    for path in sorted(folder.glob(f"{engine.fingerprint[:16]}-*.npz")):
        stored = np.load(path)
        known.update(zip(stored["texts"].tolist(), stored["vectors"]))

    def encode(texts: list[str]) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in known]
        if missing:
            print(f"embedding {len(missing)} texts", flush=True)
            vectors = engine.encode(missing, batch_size=128)
            np.savez(folder / f"{engine.fingerprint[:16]}-{len(list(folder.glob('*.npz')))}.npz",
                     texts=np.array(missing), vectors=vectors)
            known.update(zip(missing, vectors))
        return np.stack([known[t] for t in texts])
    return encode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", nargs="+", default=list(VERB_SHAPES), choices=sorted({*VERB_SHAPES, *STATE_SHAPES}))
    parser.add_argument("--parts", nargs="+", default=["v"], choices=["v", "a", "s"], help="parts of speech rewritten")
    parser.add_argument("--sets", nargs="+", default=list(SETS))
    parser.add_argument("--before", action="store_true", help="also score the sets without the new definitions")
    parser.add_argument("--weights", nargs="+", default=[], metavar="NAME=VALUE", help="open-vocabulary weights")
    args = parser.parse_args()
    torch.set_num_threads(1)
    engine = Engine.load(DEFAULT_CHECKPOINT, decoder=None, open_vocabulary=False)
    engine.words.set_precision("float32")
    engine.vocabulary.enable(cache_dir=user_cache_dir("open-vocab"), compact=False)
    weights = {k: float(v) for k, v in (pair.split("=") for pair in args.weights)}
    engine.words.config = dataclasses.replace(engine.words.config, **weights)
    base = engine.words.open_vocab.with_config(engine.words.config)
    say = lambda line: print(line, flush=True)  # noqa: E731
    if args.before:
        engine.words.open_vocab = base
        evaluate_reverse(engine, chosen_sets(engine, args.sets), ["none"], say=lambda line: say("before " + line))
    lemmas = load_wordnet_lemmas()
    extra = shaped_entries(lemmas, set(args.shapes), set(args.parts))
    candidates = Candidates([*lemmas, *extra], engine.words.vocab)
    assert candidates.words == base.candidates.words, "the rewritten glosses add no word"
    print(f"{len(extra)} rewritten entries, {len(candidates.definitions) - len(base.candidates.definitions)} new texts")
    encode_new = cached_encoder(engine, CACHE_DIR / "action-shapes")  # only the rewrites: every word is there
    engine.words.open_vocab = reusing(base, candidates, lambda texts: None, encode_new, engine.words.config,
                                      engine.words.word_map)
    evaluate_reverse(engine, chosen_sets(engine, args.sets), ["none"], say=lambda line: say("after " + line))


if __name__ == "__main__":
    main()
