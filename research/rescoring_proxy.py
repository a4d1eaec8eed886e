"""Issue 60, 3, a proxy while the exact vectors are not embedded: how much of a ranking the re-scoring of the
first candidates recovers, with the checkpoint's compact vectors (32 bytes a row) standing for the exact ones
and a coarser product quantization of them (`--subspaces` bytes a row) for the compact ones. The coarser
vectors are chosen to disagree with the 32-byte ones about as often as the 32-byte ones disagree with the
exact ones (the same first answer for 72.5 % of the human dev set, issue 60); the proxy then says how the
share of the same first answer and the overlap of the first ten grow with the candidates re-scored.

    python -m research.rescoring_proxy --subspaces 8 --first 30 50 100
"""
from __future__ import annotations

import argparse
from collections import OrderedDict

from bench.bench_first_answers import answers, summary
from core.engine import Engine
from core.evaluation.reverse import read_human_descriptions
from core.words.exact_rescoring import MARGIN, ExactRescorer, ExactVectors
from core.words.open_vocab import OpenScorer, int8_rows
from core.words.product_quantizer import decode, fit_codes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--subspaces", type=int, nargs="+", default=[8])
    parser.add_argument("--first", type=int, nargs="+", default=[30, 50, 100])
    parser.add_argument("--margin", type=float, default=MARGIN)
    args = parser.parse_args(argv)
    queries = read_human_descriptions()
    engine = Engine.load(decoder=None, open_vocabulary=False)
    engine.words.set_precision("float32")  # the vectors kept, to quantize again
    engine.vocabulary.enable()  # the checkpoint's compact vectors: the proxy's "exact" ones
    fine = engine.words.open_vocab
    fine.rescorer = None
    reference = answers(engine, queries)
    print(f"32-byte vectors (standing for the exact ones): {summary(reference, reference, queries)}")
    for subspaces in args.subspaces:
        coarse = OpenScorer(fine.candidates, *(decode(*fit_codes(v, subspaces)) for v in (fine.word_vectors,
                            fine.definition_vectors)), fine.config, fine.word_map)
        engine.words.open_vocab = coarse
        print(f"{subspaces}-byte vectors alone: {summary(answers(engine, queries), reference, queries)}")
        for first in args.first:
            vectors = ExactVectors({}, None, "proxy")
            vectors._rows = {kind: OrderedDict(zip(texts, int8_rows(rows))) for kind, texts, rows in (
                ("word", fine.candidates.words, fine.word_vectors),
                ("definition", fine.candidates.definitions, fine.definition_vectors))}
            coarse.rescorer = ExactRescorer(vectors, first, args.margin)
            print(f"{subspaces}-byte vectors, first {first} re-scored with the 32-byte ones: "
                  f"{summary(answers(engine, queries), reference, queries)}")
        coarse.rescorer = None
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
