"""How much the GCIDE cross-dictionary test depends on the rule that keeps copies out of the index
(not shipped). Scores GCIDE test with the checkpoint's weights and four indexes: every WordNet text,
without the texts equal to the one scored, and without near-copies at three shares (Jaccard) of content words.

    python research/gcide_copies.py [--model checkpoints/defsent-minilm]
"""
from __future__ import annotations

import argparse
from pathlib import Path

from core import Engine
from core.lexicon.dictionary import extend_split, load_wordnet, load_wordnet_lemmas, split_by_word
from core.words.open_vocab_fit import Queries, near_copies, query_sets, read_gcide_dictd

CACHE = Path("data/cache/open-vocab")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", type=Path, default=Path("checkpoints/defsent-minilm"))
    args = p.parse_args()
    engine = Engine.load(args.model, decoder=None, precision="auto")
    engine.words.set_precision("float32")
    engine.enable_open_vocabulary(cache_dir=CACHE)
    scorer = engine.words.open_vocab
    split = split_by_word(load_wordnet(), seed=engine.manifest.get("training", {}).get("split_seed", 0))
    sets = query_sets(extend_split(split, load_wordnet_lemmas()), set(scorer.candidates.words), read_gcide_dictd())
    test = Queries(engine, "gcide-test", sets["gcide-test"], scorer.candidates.words, CACHE)
    indexes = {"every WordNet text": scorer,
               "without equal texts": scorer.without_definitions(e.definition for e in sets["gcide-test"])}
    for share in (1.0, 0.8, 0.6):
        indexes[f"without near-copies, share {share}"] = scorer.without_definitions(
            near_copies(sets["gcide-test"], scorer.candidates, share))
    for name, index in indexes.items():
        print(f"{name}: {index.definition_vectors.shape[0]} texts, gcide-test {test.report(index)['all']}", flush=True)


if __name__ == "__main__":
    main()
