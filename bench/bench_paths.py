"""Paths through the embedding space, read by the decoder (issue 59): analogies and interpolations.

    python -m bench.bench_paths [--shared ../shared] [--analogies 8 | --held-out [2|3]] [--structure] [--pairs 40]
                                [--pairs-split dev|test|test-2]
                                [--steps 6] [--settings app api] [--threads 2] [--no-fluency] [--no-walk]

On the dev set of bench/path_set.py it prints, for each decode setting ("app": beam 20 as the app
decodes, "api": `engine.analogy`'s and `engine.interpolate`'s defaults):

- analogies: the share decoded exactly as expected (lower-case words, punctuation aside), and for each kind
  its share and ms per analogy, wall-clock and CPU (its sentence, top words and nearest reference texts, as the
  app reads it);
  `--structure`: the analogies that change a sentence's structure (issue 74: possessives, irregular forms,
  negation with do and modals, two changes at once, yes/no questions, passives) instead of the simple kinds,
  rule-made (10 of each) or with `--held-out` the hand-written held-out ones (`--held-out 2`: the second held-out
  set, HELD_OUT_STRUCTURE_2, written in session 48 before that session's changes; `--held-out 3`: the third,
  written in session 49, run once after its changes);
- interpolations of --steps points between related sentence pairs (STS-B dev, or held out: test with
  `--pairs-split test`, measured since session 47; `test-2`, other test pairs, written in session 50 before its
  changes): the share of interior points
  whose decoding differs from both ends and from both ends' decodings ("own sentence"); the mean
  fidelity gain, cos(encode(decoded), point) minus the nearer end sentence's cosine to the point;
  the share of paths whose decodings' cosine to the start never rises from step to step ("steady");
  ms per path.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
import torch

from bench.machine import machine_line
from bench.path_set import (HELD_OUT, HELD_OUT_STRUCTURE, HELD_OUT_STRUCTURE_2, HELD_OUT_STRUCTURE_3, PAIR_SPLITS,
                            interpolation_pairs, path_analogies, structure_analogies, words_of)
from core import Engine
from core.encoder import l2_normalize
from core.readout import EmbeddedTexts
from core.vec2sent import PATH_DEFAULT, DecodeSettings
from core.vec2sent.fluency import FluencyModel
from core.vec2sent.grammar import agreement_variants

ROOT = Path(__file__).resolve().parents[1]
SETTINGS = {"app": PATH_DEFAULT.app(), "api": PATH_DEFAULT}


def analogy_scores(engine: Engine, setting: DecodeSettings, items, reference, show: int = 0, progress: bool = False,
                   edits: bool = True) -> dict:
    """Exact share overall and by kind, and ms per analogy, for the analogies `items`; `progress`: a line on
    stderr for each."""
    hits, by_kind, times, kind_times, kind_cpu, misses = [], defaultdict(list), [], defaultdict(list), defaultdict(list), []
    for item in items:
        start, cpu = time.perf_counter(), time.process_time()
        result = engine.analogy(item.a, item.b, item.c, reference=reference, k=5, settings=setting, edits=edits)
        times.append((time.perf_counter() - start) * 1000)
        kind_times[item.kind].append(times[-1])
        kind_cpu[item.kind].append((time.process_time() - cpu) * 1000)  # what it costs alone, on a busy machine
        exact = words_of(result.decoded) == words_of(item.expected)
        hits.append(exact)
        by_kind[item.kind].append(exact)
        if not exact:
            misses.append(f"{item.kind}: {item.expected} -> {result.decoded}")
        if progress:  # a long run on a busy machine keeps what it measured
            print(f"    {len(hits)}/{len(items)} {item.kind} {'exact' if exact else 'miss'} {times[-1]:.0f} ms: "
                  f"{result.decoded}", file=sys.stderr, flush=True)
    return {"exact": float(np.mean(hits)), "n": len(hits), "ms": statistics.mean(times),
            "by_kind": {k: float(np.mean(v)) for k, v in by_kind.items()},
            "kind_ms": {k: statistics.mean(v) for k, v in kind_times.items()},
            "kind_cpu_ms": {k: statistics.mean(v) for k, v in kind_cpu.items()}, "misses": misses[:show]}


def path_measures(engine: Engine, x: str, y: str, points) -> tuple[list[bool], list[float], bool]:
    """For one path: per interior point whether it decodes a sentence of its own and its fidelity
    gain, and whether the decodings' cosine to the start never rises."""
    decoded = [p.decoded for p in points]
    vectors = l2_normalize(np.stack([p.vector for p in points]))  # (steps, d)
    ends = l2_normalize(engine.encode([x, y]))  # (2, d)
    embedded = l2_normalize(engine.encode(decoded))  # (steps, d)
    seen = {words_of(x), words_of(y), words_of(decoded[0]), words_of(decoded[-1])}
    own, gains = [], []
    for i in range(1, len(points) - 1):
        own.append(words_of(decoded[i]) not in seen)
        nearer_end = float((ends @ vectors[i]).max())
        gains.append(float(embedded[i] @ vectors[i]) - nearer_end)
    to_start = embedded @ ends[0]  # (steps,)
    steady = bool(np.all(np.diff(to_start) <= 1e-6))
    return own, gains, steady


def reading_measures(x: str, y: str, shown: list[str], mean_log_probs) -> tuple[list[bool], list[float]]:
    """For the distinct interior sentences `shown` of one path (neither end's words): whether each has a slip the
    repair's rules find (`agreement_variants`: "Two NATO soldier", "An woman"), and how it reads against the
    worse-reading end: its mean log-probability a piece minus that end's (`mean_log_probs`: the fluency model's)."""
    if not shown:
        return [], []
    scores = mean_log_probs([*shown, x, y])
    worse_end = min(scores[-2], scores[-1])
    return [bool(agreement_variants(t)) for t in shown], [float(v - worse_end) for v in scores[:-2]]


def interpolation_scores(engine: Engine, setting: DecodeSettings, pairs, steps: int, reference, show: int = 0,
                         edits: bool = True, judge: FluencyModel | None = None) -> dict:
    """Own sentence share, fidelity gain, steady share, ms a path (`path_measures`); with a language model to judge
    (`judge`, default the engine's fluency model), the own sentences' slips and reading (`reading_measures`, None
    without one)."""
    own, gains, steady, times, examples, slips, reading = [], [], [], [], [], [], []
    fluency_model = judge or engine.reader.fluency_model
    for x, y in pairs:
        start = time.perf_counter()
        points = engine.interpolate(x, y, steps=steps, reference=reference, k=3, settings=setting, edits=edits)
        times.append((time.perf_counter() - start) * 1000)
        o, g, s = path_measures(engine, x, y, points)
        own += o
        gains += g
        steady.append(s)
        if fluency_model is not None:
            inner = list(dict.fromkeys(p.decoded for p, is_own in zip(points[1:-1], o) if is_own))
            path_slips, path_reading = reading_measures(x, y, inner, fluency_model.mean_log_probs)
            slips += path_slips
            reading += path_reading
        if len(examples) < show:
            examples.append(" | ".join(p.decoded for p in points))
    return {"own": float(np.mean(own)), "gain": float(np.mean(gains)), "steady": float(np.mean(steady)),
            "paths": len(pairs), "ms": statistics.mean(times), "examples": examples,
            "slips": float(np.mean(slips)) if fluency_model is not None and slips else None,
            "reading": float(np.mean(reading)) if fluency_model is not None and reading else None}


def _analogies(held_out: int, structure: bool, per_kind: int) -> list:
    """The analogies asked for: the simple or the structural kinds (issue 74), rule-made (`held_out` 0) or held out
    (1; for the structural kinds 2 and 3 are the second and third held-out sets)."""
    if structure:
        return [structure_analogies(max(per_kind, 10)), HELD_OUT_STRUCTURE, HELD_OUT_STRUCTURE_2,
                HELD_OUT_STRUCTURE_3][held_out]
    if held_out > 1:
        raise ValueError(f"--held-out {held_out} is a set of the structural kinds: add --structure")
    return HELD_OUT if held_out else path_analogies(per_kind)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shared", type=Path, default=ROOT.parent / "shared")
    parser.add_argument("--analogies", type=int, default=8, help="rule-made analogies of each kind")
    parser.add_argument("--held-out", type=int, nargs="?", const=1, default=0, choices=[1, 2, 3],
                        help="the held-out analogies (bench/path_set.py HELD_OUT, HELD_OUT_STRUCTURE; 2: "
                             "HELD_OUT_STRUCTURE_2, 3: _3, with --structure) instead of the dev set")
    parser.add_argument("--structure", action="store_true",
                        help="the analogies that change a sentence's structure (issue 74) instead of the simple kinds")
    parser.add_argument("--pairs", type=int, default=40)
    parser.add_argument("--pairs-split", choices=PAIR_SPLITS, default="dev",
                        help="STS-B split the interpolation pairs come from (test, test-2: held out)")
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--settings", nargs="+", choices=sorted(SETTINGS), default=["app", "api"])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--show", type=int, default=10, help="misses and paths to print")
    parser.add_argument("--skip", nargs="*", choices=["analogies", "interpolations"], default=[])
    parser.add_argument("--progress", action="store_true", help="a line on stderr for each analogy")
    parser.add_argument("--no-fluency", action="store_true", help="choose by cosine alone (no language model)")
    parser.add_argument("--no-edits", action="store_true", help="no candidates made of the given sentences' word edits")
    parser.add_argument("--judge", type=Path, help="a causal LM (folder or .gguf) that judges how the interpolations' "
                        "own sentences read, other than the one that chose them (default: the fluency model)")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    print(machine_line(), flush=True)
    engine = Engine.load()
    if engine.decoder is None:
        print("no Vec2Sent decoder for the shipped encoder", file=sys.stderr)
        return 2
    # A small fixed reference keeps the timings about the decoding (the app's default is larger).
    reference = EmbeddedTexts(["a"], l2_normalize(engine.encode(["a"])), name="one text")
    judge = FluencyModel.load(args.judge) if args.judge else None
    pairs = [] if "interpolations" in args.skip else interpolation_pairs(args.shared, args.pairs, split=args.pairs_split)
    flags = "".join(f", {flag}" for flag, on in [("no fluency", args.no_fluency), ("no edits", args.no_edits)] if on)
    for name in args.settings:
        setting = SETTINGS[name].changed(fluency=None) if args.no_fluency else SETTINGS[name]
        if "analogies" not in args.skip:
            items = _analogies(args.held_out, args.structure, args.analogies)
            a = analogy_scores(engine, setting, items, reference, args.show, args.progress, not args.no_edits)
            kinds = ", ".join(f"{k} {v:.0%} {a['kind_ms'][k]:.0f} ms ({a['kind_cpu_ms'][k]:.0f} CPU)"
                              for k, v in sorted(a["by_kind"].items()))
            print(f"[{name}{flags}] analogies: {a['exact']:.1%} exact of {a['n']} ({kinds}); {a['ms']:.0f} ms each")
            for miss in a["misses"]:
                print(f"    miss  {miss}")
            sys.stdout.flush()
        if pairs:
            p = interpolation_scores(engine, setting, pairs, args.steps, reference, min(args.show, 5),
                                     not args.no_edits, judge)
            print(f"[{name}{flags}] interpolations ({p['paths']} paths, {args.steps} steps): own sentence "
                  f"{p['own']:.1%} of interior points, fidelity gain {p['gain']:+.5f}, steady {p['steady']:.1%}; "
                  f"{p['ms']:.0f} ms a path")
            if p["slips"] is not None:
                print(f"[{name}{flags}] interpolations' own sentences: {p['slips']:.1%} with a slip the rules find, "
                      f"reading {p['reading']:+.3f} nats a piece against the worse-reading end"
                      f"{f' (judged by {args.judge.name})' if args.judge else ''}")
            for example in p["examples"]:
                print(f"    path  {example}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
