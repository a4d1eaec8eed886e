"""Vec2Sent decoding latency: one sentence embedding at a time, beam search and greedy.

    python bench/bench_decode.py [--model checkpoints/defsent-minilm] [--decoder auto] [--threads 1]
                                 [--sentences 50] [--beam 5] [--refine] [--correct 2 [--correct-step 0.5]]

Embeds held-out sentences (the first --sentences of data/cache/corpus-modern/heldout.jsonl, or a
few built-in ones when the corpus has not been built), then times `engine.decode(vector, beam=...)`
for each embedding alone (encoding the held-out sentence is not timed; re-encoding the beam's
hypotheses for reranking, the rounds of --correct and the edits of --refine are) and prints the
mean, median and 90th percentile in ms, with a few decoded examples.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
from bench.machine import machine_line
from core import Engine
from core.checkpoint import DEFAULT_CHECKPOINT
from core.runtime.hardware import PRECISIONS
from core.paths import HELDOUT_SENTENCES
from core.vec2sent.diagnostics import read_test_sentences
from core.vec2sent import API_DEFAULT, DecodeSettings
from core.vec2sent.refine import CorrectSettings, RefineSettings

BUILT_IN = ["he visits italy.", "she drinks wine.", "his name is robert.", "he is a doctor.",
            "the dog is sleeping on the sofa.", "a man is playing a guitar.", "it was a cold night.",
            "the children went to school by bus.", "she did not answer the letter.",
            "there is a small house near the river."]


def held_out_sentences(limit: int) -> tuple[list[str], str]:
    """Up to `limit` held-out corpus sentences, or the built-in ones when the corpus is absent."""
    if HELDOUT_SENTENCES.is_file():
        lines, _ = read_test_sentences(HELDOUT_SENTENCES, limit)
        return lines, f"{HELDOUT_SENTENCES.relative_to(ROOT)} (first {len(lines)})"
    return BUILT_IN[:limit], f"{min(limit, len(BUILT_IN))} built-in sentences ({HELDOUT_SENTENCES.name} not built)"


def latencies_ms(engine: Engine, vectors: np.ndarray, settings: DecodeSettings) -> list[float]:
    """Time decoding each vector alone, after one untimed warm-up."""
    engine.decode(vectors[0], settings)
    times = []
    for vector in vectors:
        start = time.perf_counter()
        engine.decode(vector, settings)
        times.append((time.perf_counter() - start) * 1000)
    return times


def label(settings: DecodeSettings) -> str:
    """The table's name of a decode setting: "beam 5 + rerank + correct x 2 (step 0.5)", "greedy", ..."""
    name = "greedy" if settings.beam == 1 else f"beam {settings.beam}"
    name += " + rerank" if settings.beam > 1 and settings.rerank and not settings.refine else ""
    name += f" + correct x {settings.correct.rounds} (step {settings.correct.step})" if settings.correct else ""
    return name + (" + refine" if settings.refine else "")


def p90(values: list[float]) -> float:
    return float(np.percentile(values, 90))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default=None, help="encoder checkpoint (default: the shipped one)")
    parser.add_argument("--decoder", default="auto",
                        help='decoder checkpoint; "auto" (default): the one beside --model trained on it')
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    parser.add_argument("--precision", nargs="+", default=["float32", "bfloat16", "int8"],
                        choices=PRECISIONS, help="decoder precisions to time")
    parser.add_argument("--encoder-precision", default="auto", choices=("auto", "float32", "bfloat16"),
                        help="encoder precision for reranking (auto, as in the app: bfloat16 where native)")
    parser.add_argument("--sentences", type=int, default=50)
    parser.add_argument("--beam", type=int, default=API_DEFAULT.beam)
    parser.add_argument("--refine", action="store_true", help="also time the beam refined by one-word edits")
    parser.add_argument("--correct", type=int, default=None, metavar="ROUNDS",
                        help="also time the beam with ROUNDS of correction (and refined, with --refine)")
    parser.add_argument("--correct-step", type=float, default=CorrectSettings.step,
                        help="how far a correction round moves the target")
    parser.add_argument("--examples", type=int, default=3, help="decoded examples to print")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    engine = Engine.load(args.model, decoder=None)
    engine.set_precision(args.encoder_precision)
    checkpoints = Path(args.model).parent if args.model else DEFAULT_CHECKPOINT.parent
    engine.set_decoder(args.decoder, checkpoints, args.precision[0])
    if engine.decoder is None:
        print("No Vec2Sent decoder fits this encoder; pass --decoder PATH.", file=sys.stderr)
        return 2
    sentences, source = held_out_sentences(args.sentences)
    vectors = engine.encode(sentences)  # (n, d)
    decoder = engine.decoder
    print(f"encoder {engine.manifest.get('name', args.model)}; decoder {args.decoder}: "
          f"{decoder.model.num_parameters() / 1e6:.1f}M parameters, {decoder.manifest.get('training', {}).get('steps', '?')} "
          f"training steps; threads={args.threads}; encoder {args.encoder_precision}; {source}\n{machine_line()}\n")
    print("| decoding one sentence | precision | mean ms | median ms | p90 ms |\n|---|---|---:|---:|---:|")
    for precision in args.precision:
        engine.set_decoder(args.decoder, checkpoints, precision)
        correct = None if args.correct is None else CorrectSettings(args.correct, args.correct_step)
        reranked = DecodeSettings(beam=args.beam, correct=None)
        rows = [reranked, reranked.changed(rerank=False)] if args.beam > 1 else []
        rows += [reranked.changed(refine=RefineSettings())] if args.refine else []
        rows += [reranked.changed(correct=correct)] if correct else []
        rows += [reranked.changed(refine=RefineSettings(), correct=correct)] if correct and args.refine else []
        for settings in rows + [DecodeSettings(beam=1, rerank=False, correct=None)]:
            times = latencies_ms(engine, vectors, settings)
            print(f"| {label(settings)} | {precision} | {statistics.mean(times):.1f} | {statistics.median(times):.1f} | "
                  f"{p90(times):.1f} |")
    print()
    decoded = engine.decode(vectors[:args.examples], beam=args.beam)
    for sentence, output in zip(sentences, decoded):
        print(f"- {sentence}\n  -> {output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
