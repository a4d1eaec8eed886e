"""The GPU path end to end in a few minutes, each step timed beside this machine's CPU (issue 40).

    python bench/device_check.py                          # on a machine without a GPU: says so, exits 0
    python bench/device_check.py --device cuda --out results/device_check.json

1. the shipped engine loaded on the GPU and on the CPU;
2. STS-B test (SentEval's sts-test.csv) encoded on both: Spearman x100 must agree within 0.1
   (float32; the GPU's bfloat16 autocast is reported beside it), sentences a second;
3. a reverse-dictionary query (the head's words; the open vocabulary's after step 6), top 10 compared;
4. decoding (greedy, and beam 5 with reranking) of STS-B sentences, float32 decoder weights on both;
5. 50 timed steps of each recipe (recipes/*.json: DefSent batch 16; Vec2Sent, the transformer
   decoder warm-started from MiniLM, batch 64, bfloat16, sampled softmax) after 5 warm-up steps, on
   WordNet definitions and usage examples; the CPU times fewer steps (`--cpu-steps`);
6. the open vocabulary's embedding: every WordNet word and definition on the GPU, a sample on the CPU;
7. a one-process DDP run: torchrun --nproc_per_node 1 -m core train (NCCL), 20 steps, saved.

Exit status 1 when a step fails or the Spearman scores differ; 0 with a note when there is no GPU.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

QUERY = "a person who is in charge"
SPEARMAN_TOLERANCE = 0.1  # Spearman x100 points between the GPU's float32 scores and the CPU's
WARMUP_STEPS = 5


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    import torch

    from core.runtime.device import DeviceError, resolve_device

    try:
        device = resolve_device(args.device)
    except DeviceError as err:
        print(f"device check: {err}")
        return 0 if args.device == "auto" else 2
    if device.type == "cpu":
        print("device check: no GPU on this machine (torch sees no CUDA or MPS device); nothing to check.")
        return 0
    torch.set_float32_matmul_precision("highest")  # float32 as on the CPU: the comparison is of like with like
    report = {"device": torch.cuda.get_device_name(device) if device.type == "cuda" else str(device),
              "torch": torch.__version__, "cpu_threads": torch.get_num_threads(), "steps": {}}
    failures = []
    for name, step in STEPS:
        started = time.perf_counter()
        try:
            result = step(args, device, report)
        except Exception as err:  # a failed step is reported; the others still run
            result = {"error": f"{type(err).__name__}: {err}"}
            failures.append(name)
        result["seconds"] = round(time.perf_counter() - started, 1)
        report["steps"][name] = result
        print(f"{name}: {json.dumps(result)}", flush=True)
    if report["steps"].get("sts-b", {}).get("agree") is False:
        failures.append("sts-b (Spearman differs)")
    report["passed"] = not failures
    print(summary(report))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=1) + "\n")
    if failures:
        print("FAILED: " + ", ".join(failures))
    return 1 if failures else 0


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    from core.checkpoint import DEFAULT_CHECKPOINT
    from core.paths import SENTEVAL_DIR

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="auto", help="the GPU to check (default auto: CUDA, else MPS)")
    parser.add_argument("--model", type=Path, default=DEFAULT_CHECKPOINT)
    parser.add_argument("--decoder", type=Path, default=DEFAULT_CHECKPOINT.parent / "vec2sent-defsent-minilm")
    parser.add_argument("--sts", type=Path, default=SENTEVAL_DIR / "STS/STSBenchmark/sts-test.csv")
    parser.add_argument("--steps", type=int, default=50, help="timed training steps on the GPU")
    parser.add_argument("--cpu-steps", type=int, default=10, help="timed training steps on the CPU")
    parser.add_argument("--cpu-sample", type=int, default=2000, help="open-vocabulary texts timed on the CPU")
    parser.add_argument("--out", type=Path, help="also write the report here as JSON")
    return parser.parse_args(argv)


# ---- the steps ------------------------------------------------------------------------------------

ENGINES: dict = {}  # "cpu" / "gpu" -> the shipped engine, loaded by the first step


def load(args, device, report) -> dict:
    from core import Engine

    seconds = {}
    for name, where in (("cpu", "cpu"), ("gpu", device)):
        started = time.perf_counter()
        ENGINES[name] = Engine.load(args.model, open_vocabulary=False, decoder=None, device=where)
        ENGINES[name].set_decoder(args.decoder, precision="float32")
        seconds[name] = round(time.perf_counter() - started, 2)
    return {"load_seconds": seconds, "gpu_engine_on": str(ENGINES["gpu"].device)}


def sts_b(args, device, report) -> dict:
    from core.evaluation.sts import evaluate_sts, load_sts_benchmark

    pairs = {"test": load_sts_benchmark(args.sts)}
    sentences = len(set(pairs["test"].sentences))
    result = {"sentences": sentences}
    for name, engine, precision in (("cpu float32", ENGINES["cpu"], "float32"),
                                    ("gpu float32", ENGINES["gpu"], "float32"),
                                    ("gpu bfloat16", ENGINES["gpu"], "bfloat16")):
        engine.set_precision(precision)
        evaluate_sts(engine, pairs, show_progress=False)  # warm-up (CUDA kernels, allocator)
        started = time.perf_counter()
        score = evaluate_sts(engine, pairs, show_progress=False).all
        seconds = time.perf_counter() - started
        result[name] = {"spearman": round(score, 3), "sentences_per_second": round(sentences / seconds)}
    ENGINES["gpu"].set_precision("float32")
    result["agree"] = abs(result["gpu float32"]["spearman"] - result["cpu float32"]["spearman"]) <= SPEARMAN_TOLERANCE
    return result


def reverse_dictionary(args, device, report) -> dict:
    words = {name: [w for w, _ in ENGINES[name].predict_words(QUERY, k=10)] for name in ("cpu", "gpu")}
    return {"query": QUERY, "cpu": words["cpu"], "gpu": words["gpu"],
            "same_top10": words["cpu"] == words["gpu"]}


def decoding(args, device, report) -> dict:
    from core.evaluation.sts import load_sts_benchmark

    sentences = load_sts_benchmark(args.sts).sentences[:8]
    vectors = ENGINES["cpu"].encode(sentences)
    result = {}
    for label, options in (("greedy", {"beam": 1, "rerank": False, "correct": None}), ("beam 5", {"beam": 5})):
        texts = {}
        for name in ("cpu", "gpu"):
            started = time.perf_counter()
            texts[name] = ENGINES[name].decode(vectors, **options)
            result.setdefault(label, {})[f"{name}_ms_per_sentence"] = round(
                1000 * (time.perf_counter() - started) / len(sentences))
        result[label]["same_texts"] = sum(a == b for a, b in zip(texts["cpu"], texts["gpu"]))
        result[label]["sentences"] = len(sentences)
        result[label]["gpu_examples"] = texts["gpu"][:2]
    return result


def defsent_steps(args, device, report) -> dict:
    """Definitions a second of the DefSent recipe's steps (its batch size and lr; the word-vector
    term left out of the loss here, and dev scored on 64 definitions, so that only the steps count)."""
    from core import Engine
    from core.lexicon.dictionary import load_wordnet, split_by_word
    from core.train import TrainConfig, train

    recipe = json.loads((REPO / "recipes/defsent-minilm.json").read_text())["flags"]
    split = split_by_word(load_wordnet(), seed=0)
    result = {}
    for name, where, precision, steps in (("cpu float32", "cpu", "float32", args.cpu_steps),
                                          ("gpu float32", device, "float32", args.steps),
                                          ("gpu bfloat16", device, "bfloat16", args.steps)):
        engine = Engine.from_base(unit_rows=recipe["unit_rows"]).to(where)
        config = TrainConfig(lr=recipe["lr"], batch_size=recipe["batch_size"], max_steps=WARMUP_STEPS + steps,
                             eval_every=10 ** 6, word_vector_scale=0, hub_weight=0, precision=precision)
        times = {}
        train(engine, split.train, split.dev[:64], config, progress=lambda p: times.setdefault(p.step, time.perf_counter()))
        timed = times[WARMUP_STEPS + steps - 1] - times[WARMUP_STEPS]  # steps 6 .. last-1: no evaluation inside
        result[name] = {"definitions_per_second": round((steps - 1) * config.batch_size / timed, 1)}
    return result


def vec2sent_steps(args, device, report) -> dict:
    """Sentences a second of the Vec2Sent recipe's steps on WordNet usage examples."""
    import numpy as np

    from core.lexicon.dictionary import load_wordnet
    from core.vec2sent.train import TrainSettings, _initial_model, base_vocabulary, prepare_data, train_decoder

    recipe = json.loads((REPO / "recipes/vec2sent-defsent-minilm.json").read_text())["flags"]
    sentences = sorted({x for e in load_wordnet() for x in e.examples})[:20000]
    tokenizer = ENGINES["gpu"].encoder.tokenizer
    vocab, data = prepare_data(sentences, ENGINES["gpu"].encode(sentences, batch_size=256), tokenizer,
                               vocab=base_vocabulary(tokenizer))
    overrides = {k: recipe[k] for k in ("architecture", "base", "prefix_length", "dropout")}
    kept = {k: recipe[k] for k in ("batch_size", "lr", "clip", "precision", "sampled_negatives", "frequent_pieces")}
    result = {"sentences": len(sentences)}
    for name, where, steps in (("cpu", "cpu", args.cpu_steps), ("gpu", str(device), args.steps)):
        model = _initial_model(None, vocab, data.embeddings.shape[1], overrides, tokenizer)
        settings = TrainSettings(minutes=30, log_every=10 ** 6, eval_every=10 ** 6, device=where, **kept)
        train_decoder(model, data, TrainSettings(**{**vars(settings), "max_steps": WARMUP_STEPS}), progress=False)
        if where != "cpu":
            __import__("torch").cuda.synchronize()
        stats = train_decoder(model, data, TrainSettings(**{**vars(settings), "max_steps": steps}), progress=False)
        result[name] = {"sentences_per_second": round(stats.sentences_per_second, 1),
                        "final_loss": round(float(np.mean([p["loss"] for p in stats.curve[-1:]])), 3)}
    return result


def open_vocabulary(args, device, report) -> dict:
    engine = ENGINES["gpu"]
    candidates = engine.words.candidates()
    texts = len(candidates.words) + len(candidates.definitions)
    started = time.perf_counter()
    engine.vocabulary.enable()
    gpu_seconds = time.perf_counter() - started
    sample = list(candidates.words[:args.cpu_sample])
    tower = ENGINES["cpu"].word_encoder()
    started = time.perf_counter()
    tower.encode(sample, batch_size=128)
    cpu_rate = len(sample) / (time.perf_counter() - started)
    return {"texts": texts, "gpu_seconds": round(gpu_seconds, 1), "gpu_texts_per_second": round(texts / gpu_seconds),
            "cpu_texts_per_second": round(cpu_rate), "cpu_seconds_estimated": round(texts / cpu_rate),
            "gpu_answer": [w for w, _ in engine.predict_words(QUERY, k=10)]}


def ddp_run(args, device, report) -> dict:
    if device.type != "cuda":
        return {"skipped": "NCCL needs CUDA"}
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "ddp"
        command = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "1", "-m", "core", "train",
                   "--out", str(out), "--device", "cuda", "--no-open-vocab", "--head-stage", "none",
                   "--max-steps", "20", "--eval-every", "20", "--word-vector-scale", "0", "--hub-weight", "0",
                   "--senteval", str(Path(tmp) / "none")]
        run = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=400,
                             env={**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])})
        joined = next((line for line in run.stdout.splitlines() if line.startswith("distributed:")), None)
        saved = (out / "manifest.json").is_file()
        if run.returncode != 0 or not joined or not saved:
            raise RuntimeError(f"torchrun exit {run.returncode}, joined: {joined}, saved: {saved}; "
                               f"{(run.stdout + run.stderr)[-1500:]}")
        return {"command": " ".join(command[1:]).replace(str(out), "OUT"), "joined": joined, "saved": saved}


STEPS = [("load", load), ("sts-b", sts_b), ("reverse dictionary", reverse_dictionary), ("decoding", decoding),
         ("defsent recipe steps", defsent_steps), ("vec2sent recipe steps", vec2sent_steps),
         ("open vocabulary", open_vocabulary), ("one-process ddp", ddp_run)]


def summary(report: dict) -> str:
    steps = report["steps"]
    lines = [f"device check on {report['device']} (torch {report['torch']}, {report['cpu_threads']} CPU threads):"]
    sts = steps.get("sts-b", {})
    if "cpu float32" in sts:
        lines.append(f"  STS-B test Spearman: CPU {sts['cpu float32']['spearman']}, GPU {sts['gpu float32']['spearman']} "
                     f"(bfloat16 {sts['gpu bfloat16']['spearman']}); sentences/s CPU "
                     f"{sts['cpu float32']['sentences_per_second']}, GPU {sts['gpu float32']['sentences_per_second']} "
                     f"(bfloat16 {sts['gpu bfloat16']['sentences_per_second']})")
    for name, unit in (("defsent recipe steps", "definitions_per_second"), ("vec2sent recipe steps", "sentences_per_second")):
        rows = {k: v[unit] for k, v in steps.get(name, {}).items() if isinstance(v, dict) and unit in v}
        if rows:
            lines.append(f"  {name}, {unit.replace('_', ' ')}: " + ", ".join(f"{k} {v}" for k, v in rows.items()))
    vocab = steps.get("open vocabulary", {})
    if "texts" in vocab:
        lines.append(f"  open vocabulary: {vocab['texts']} texts in {vocab['gpu_seconds']} s on the GPU; the CPU "
                     f"would take about {vocab['cpu_seconds_estimated']} s")
    lines.append("  passed" if report.get("passed") else "  FAILED")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
