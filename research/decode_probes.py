"""Probes of Vec2Sent decoding on held-out sentences: how far better choices among the decoder's
hypotheses could take BLEU. Ideas measured, not shipped (docs/vec2sent.md).

    python research/decode_probes.py --oracle --beams 5 20 50 --limit 500
    python research/decode_probes.py --mbr 0.005 0.01 0.02 0.05 --beams 20 --limit 500
    python research/decode_probes.py --refine-rounds 2 4 8 --refine-pool 5 10 --beams 20 --limit 200
    python research/decode_probes.py --vector-correction 0.5 1 2 --beams 1 --limit 300

- --oracle: per sentence, the hypothesis with the best sentence BLEU against the reference: what a
  perfect reranker of the n-best would reach (an upper bound, it reads the reference);
- --mbr TAU...: minimum-Bayes-risk choice, the hypothesis with the highest expected sentence BLEU
  against the others, weighted by softmax(cosine to the vector / TAU) (a large TAU: uniform);
- --refine-rounds / --refine-pool: the refined decoding (core/vec2sent/refine.py) with more edit
  rounds or a larger word pool than the app's 2 rounds and pool 5;
- --vector-correction LAMBDA...: correction in the embedding space with step LAMBDA (adopted with
  0.25 and one round as engine.decode's default): decode the vector v, embed the closest output (u),
  decode normalise(v + LAMBDA (v - u)), and so on for --correction-rounds; per sentence the output
  closest to v by cosine wins.
Every run also prints the reranked n-best (the API's decoding without its correction round) to compare with.
"""
from __future__ import annotations

import argparse
import functools
import sys
import time
from pathlib import Path

import numpy as np
import torch

from core.encoder import l2_normalize
from core.paths import HELDOUT_SENTENCES
from core.vec2sent.checkpoint import closest_hypotheses, load_checkpoint
from core.vec2sent.diagnostics import read_test_sentences, score_reconstructions
from core.vec2sent.encoder_link import link_engine
from core.vec2sent.refine import CorrectSettings, RefineSettings, correct, refine
from core.text import canonical_tokens


@functools.cache
def bleu_scorer():
    from sacrebleu.metrics import BLEU

    return BLEU(tokenize="none", effective_order=True, force=True)  # force: already tokenised


def sentence_bleu(hypothesis: str, reference: str) -> float:
    """sacrebleu's sentence BLEU (effective order) on canonical tokens."""
    return bleu_scorer().sentence_score(" ".join(canonical_tokens(hypothesis)), [" ".join(canonical_tokens(reference))]).score


def oracle(beams: list[list[str]], references: list[str]) -> list[str]:
    """Per row, the hypothesis closest to its reference by sentence BLEU (the likelier on ties)."""
    return [max(hs, key=lambda h: sentence_bleu(h, ref)) for hs, ref in zip(beams, references)]


def minimum_bayes_risk(beams: list[list[str]], vectors: np.ndarray, encode, tau: float) -> list[str]:
    """Per row, argmax_h sum_j w_j BLEU(h, h_j) with w = softmax(cos(h_j, vector) / tau)."""
    chosen = []
    for hs, vector in zip(beams, l2_normalize(vectors)):
        cosines = l2_normalize(encode(list(hs))) @ vector  # (H,)
        weights = np.exp((cosines - cosines.max()) / tau)
        utility = np.array([[sentence_bleu(h, other) for other in hs] for h in hs])  # (H, H)
        chosen.append(hs[int(np.argmax(utility @ (weights / weights.sum())))])
    return chosen


def vector_corrected(decoder, vectors: np.ndarray, encode, step: float, rounds: int, width: int) -> list[str]:
    """Per row, the most faithful (cosine) output over `rounds` of core's correction after the first
    decoding (core/vec2sent/refine.py: correct, which engine.decode runs once by default)."""
    return correct(lambda targets: decoder.hypotheses(targets, beam_width=width), vectors, encode,
                   CorrectSettings(rounds=rounds, step=step)).closest


def show(name: str, references: list[str], outputs: list[str], seconds: float | None = None) -> None:
    s = score_reconstructions(references, outputs)
    took = "" if seconds is None else f"{1000 * seconds / len(references):.0f}"
    print(f"| {name} | {s.identity:.1f} | {s.bleu:.1f} | {took} |", flush=True)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--encoder", type=Path, default=Path("checkpoints/defsent-minilm"))
    p.add_argument("--decoder", type=Path, default=Path("checkpoints/vec2sent-defsent-minilm"))
    p.add_argument("--test", type=Path, default=HELDOUT_SENTENCES)
    p.add_argument("--limit", type=int, default=200, help="first N held-out sentences")
    p.add_argument("--beams", type=int, nargs="+", default=[20])
    p.add_argument("--oracle", action="store_true")
    p.add_argument("--mbr", type=float, nargs="*", default=[], metavar="TAU")
    p.add_argument("--refine-rounds", type=int, nargs="*", default=[])
    p.add_argument("--refine-pool", type=int, nargs="+", default=[5])
    p.add_argument("--vector-correction", type=float, nargs="*", default=[], metavar="LAMBDA")
    p.add_argument("--correction-rounds", type=int, default=2)
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    link = link_engine(args.encoder, precision="bfloat16")
    decoder = load_checkpoint(args.decoder, encoder_fingerprint=link.fingerprint)
    references, _ = read_test_sentences(args.test, args.limit)
    vectors = link.encode(references)
    print(f"{len(references)} held-out sentences\n\n| decoding | Id % | BLEU | ms a sentence |\n|---|---:|---:|---:|")
    for width in args.beams:
        for step in args.vector_correction:
            start = time.perf_counter()
            corrected = vector_corrected(decoder, vectors, link.encode, step, args.correction_rounds, width)
            show(f"beam {width}, vector correction {step:g} x {args.correction_rounds}", references, corrected,
                 time.perf_counter() - start)
        beams = decoder.hypotheses(vectors, beam_width=width)
        show(f"beam {width}, reranked", references, closest_hypotheses(beams, vectors, link.encode))
        if args.oracle:
            show(f"beam {width}, oracle (reads the reference)", references, oracle(beams, references))
        for tau in args.mbr:
            show(f"beam {width}, MBR tau {tau:g}", references, minimum_bayes_risk(beams, vectors, link.encode, tau))
        for rounds in args.refine_rounds:
            for pool in args.refine_pool:
                settings, start = RefineSettings(rounds=rounds, pool=pool), time.perf_counter()
                refined = refine(beams, vectors, link.encode, link.vector_words(vectors, pool), settings)
                show(f"beam {width}, refined, {rounds} rounds, pool {pool}", references, refined,
                     time.perf_counter() - start)
    return 0


if __name__ == "__main__":
    sys.exit(main())
