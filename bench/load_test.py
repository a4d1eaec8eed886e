"""Load test of the web app: `python app.py` on a free local port, then concurrent gradio_client clients
sending mixed requests (reverse dictionary, similarity, analogy with decoding, a map of a few sentences)
while a fine-tuning job started through the API runs. Every concurrent answer is compared with the
answer the same request got alone, and the test exits with 1 on any failed request, any differing
answer, or a job problem. Phases, in order:

1. **Reference**: the requests come from a fixed pool (`--distinct` per kind, drawn with `--seed`), so
   every concurrent request has a reference: each distinct request is sent once, sequentially, and
   its answer recorded.
2. **Memory** (`--memory-requests`, `--memory-uploads`; 0 and 0 skip it, as on --tiny by default): the
   app's resident memory (VmRSS of its process; training jobs run in processes of their own) once
   warm, then while and after `--clients` clients send `--memory-requests` mixed requests in all and
   `--memory-uploads` dictionaries are uploaded and validated, each by a new client (a session of
   its own, which keeps its validated upload). Target: at most +200 MB over the warm state.
3. **Concurrent**: a fine-tuning job is started, then `--clients` clients send `--requests` requests
   each (kinds in equal shares, shuffled, drawn from the pool with fixed seeds). Each answer must
   equal its reference exactly (the returned data as JSON, floats included: the engine is
   deterministic). The one masked part: a map's status line says how long the projection took
   ("PCA in 0.0 s.") and whether it came from the projection cache; the coordinates are compared.
   Then the job's model is saved through the API and loaded with `Engine.load`.
4. **Hostile** (`--hostile-seconds`, 0 skips it): one probe client times /reverse_dictionary and
   GET /gradio_api/info, first alone, then while `--hostile-clients` clients send the costliest
   requests the app accepts (the 64-character wildcard '*' * 63 + 'q', 1,000-character texts,
   k = 50, a 20,000-line map, refined analogies of long sentences...). Prints the delay they add; the
   probe's answers are compared with their references too. Target: at most 2 s added.
5. **Model switching** (`--switches`, 0 skips it): a client switches the shared model to another
   (`--switch-to`: the untrained base; a second tiny model on --tiny) and back while the others send
   requests. (Not to the fine-tuned checkpoint: the API accepts only the models listed when the app
   started, as the dropdown's choices.) References are taken for both
   models first (switch, send each distinct request once; switch back, again: a switched-to model is
   a fresh load, so this is the state the concurrent requests meet). A request that started after
   a switch had answered and ended before the next one was sent knows its model; one that
   overlapped a switch may have been answered by either model (a handler takes the active model
   once) and must equal one of their references. This is a separate phase because switching
   changes answers legitimately: its latencies are not those of phase 2.

    python bench/load_test.py                                   # 8 clients x 200 requests, shipped model
    python bench/load_test.py --tiny --clients 4 --requests 25  # the CI form: a tiny random model
    python bench/load_test.py --json load.json                  # also write the numbers as JSON

The shipped model answers the reverse dictionary from all WordNet words and phrases once its open
vocabulary is ready (minutes once per model, then cached): the test waits for that before phase 1,
since answers change when it becomes ready. The tiny model serves single-token words only
(--single-token-words). The app runs with --no-umap-warmup (maps use PCA) and talks only to 127.0.0.1.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.bench_app import first_answer
from bench.load_phases import (
    concurrent_phase,
    hostile_phase,
    linked_checkpoint,
    memory_phase,
    running_app,
    switching_phase,
    tiny_checkpoints,
    wait_for_open_vocabulary,
    warm_up,
    write_dictionary,
)
from bench.load_requests import RD, request_pool

P99_TARGET_S = 2.0  # reverse dictionary, phase 2
HOSTILE_TARGET_S = 2.0  # delay a hostile request may add to another endpoint
MEMORY_TARGET_MB = 200.0  # the app's growth over its warm state after the memory phase


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=8, help="concurrent gradio_client clients (default 8)")
    parser.add_argument("--requests", type=int, default=200, help="requests per client (default 200)")
    parser.add_argument("--distinct", type=int, default=24, help="distinct requests of each kind (default 24)")
    parser.add_argument("--tiny", action="store_true", help="serve a tiny random model built here (CI form)")
    parser.add_argument("--model", type=Path, default=None, help="checkpoint to serve (default: the shipped one)")
    parser.add_argument("--single-token-words", action="store_true",
                        help="serve without the open vocabulary (always on with --tiny)")
    parser.add_argument("--threads", type=int, default=1, help="the app's torch threads (default 1)")
    parser.add_argument("--job-words", type=int, default=60, help="words in the fine-tuning dictionary (default 60)")
    parser.add_argument("--job-steps", type=int, default=None,
                        help="training steps of the job (default: 50 on --tiny, else 150)")
    parser.add_argument("--hostile-seconds", type=float, default=None,
                        help="length of the hostile phase (default: 10 on --tiny, else 60; 0 skips it)")
    parser.add_argument("--hostile-clients", type=int, default=2, help="clients sending hostile requests (default 2)")
    parser.add_argument("--probes", type=int, default=20, help="probe rounds alone before the hostile phase")
    parser.add_argument("--switches", type=int, default=None,
                        help="round trips of the model-switching client (default: 2 on --tiny, else 4; 0 skips)")
    parser.add_argument("--switch-requests", type=int, default=None,
                        help="requests per client while models switch (default: 10 on --tiny, else 40)")
    parser.add_argument("--switch-to", default=None,
                        help="the model the switching client switches to and back from (default: a second tiny "
                             "model on --tiny, else the untrained base)")
    parser.add_argument("--memory-requests", type=int, default=None,
                        help="mixed requests of the memory phase (default: 0 on --tiny, else 1000; 0 and "
                             "--memory-uploads 0 skip it)")
    parser.add_argument("--memory-uploads", type=int, default=None,
                        help="dictionary uploads of the memory phase, one new session each (default: 0 on --tiny, "
                             "else 20)")
    parser.add_argument("--memory-upload-words", type=int, default=20_000,
                        help="words of the memory phase's upload: all their WordNet definitions (default 20000, "
                             "about 2 MB)")
    parser.add_argument("--json", type=Path, default=None, help="also write the results to this JSON file")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    args.single_token_words = args.single_token_words or args.tiny
    args.switch_to = args.switch_to or ("tiny-b" if args.tiny else "untrained base (all-MiniLM-L6-v2)")
    for name, tiny, full in (("job_steps", 50, 150), ("hostile_seconds", 10.0, 60.0), ("switches", 2, 4),
                             ("switch_requests", 10, 40), ("memory_requests", 0, 1000), ("memory_uploads", 0, 20)):
        if getattr(args, name) is None:
            setattr(args, name, tiny if args.tiny else full)
    return args


# ---- the whole test ----------------------------------------------------------------------------------
def run(args: argparse.Namespace) -> dict:
    """The whole test; a dict of results (see `report`)."""
    from core.checkpoint import DEFAULT_CHECKPOINT

    with tempfile.TemporaryDirectory(prefix="load_test_") as tmp:
        work = Path(tmp)
        checkpoints = work / "checkpoints"
        checkpoints.mkdir()
        model, words = (tiny_checkpoints(work, checkpoints) if args.tiny
                        else (linked_checkpoint(args.model or DEFAULT_CHECKPOINT, checkpoints), None))
        dictionary = write_dictionary(work / "dictionary.tsv", args.job_words, args.seed, words)
        with running_app(model, work, args) as (url, process):
            result = measure(url, process, dictionary, checkpoints, model.name, args)
    result.update({"clients": args.clients, "requests_per_client": args.requests, "app_threads": args.threads,
                   "model": "tiny" if args.tiny else str(model.resolve()), "distinct_per_kind": args.distinct,
                   "job_steps": args.job_steps})
    return result


def measure(url: str, process: subprocess.Popen, dictionary: Path, checkpoints: Path, served: str,
            args: argparse.Namespace) -> dict:
    """Once the app answers: the phases in order."""
    marks = [("start", time.perf_counter())]
    client = first_answer(url, process)
    marks.append(("app answers", time.perf_counter()))
    waited = 0.0 if args.single_token_words else wait_for_open_vocabulary(client)
    pool = request_pool(args.distinct, args.seed)
    warm_up(client, pool)
    marks.append(("open vocabulary and warm-up", time.perf_counter()))
    memory = None
    if args.memory_requests > 0 or args.memory_uploads > 0:
        memory = memory_phase(url, pool, dictionary, process.pid, args)
        marks.append(("memory", time.perf_counter()))
    result = concurrent_phase(client, url, pool, dictionary, checkpoints, args)
    marks.append(("references, load and job", time.perf_counter()))
    result["open_vocab_wait_s"] = round(waited, 1)
    result["memory"] = memory
    refs = result.pop("_refs")
    result["hostile"] = hostile_phase(client, url, pool, refs, args) if args.hostile_seconds > 0 else None
    marks.append(("hostile", time.perf_counter()))
    result["switching"] = None
    if args.switches > 0 and args.clients > 1:
        result["switching"] = switching_phase(client, url, pool, served, args.switch_to, args)
    marks.append(("switching", time.perf_counter()))
    result["phase_seconds"] = {name: round(t - marks[i][1], 1) for i, (name, t) in enumerate(marks[1:])}
    return result


def report(result: dict) -> str:
    """The results as Markdown."""
    lines = ["| request | count | failed | p50 ms | p95 ms | p99 ms | max ms |", "|---|---:|---:|---:|---:|---:|---:|"]
    lines += [f"| {r['kind']} | {r['count']} | {r['failed']} | {r['p50_ms']:.0f} | {r['p95_ms']:.0f} | "
              f"{r['p99_ms']:.0f} | {r['max_ms']:.0f} |" for r in result["kinds"]]
    total = sum(r["count"] for r in result["kinds"])
    comparison = result["comparison"]
    rd = next(r for r in result["kinds"] if r["kind"] == RD)
    lines.append(f"\n{result['model']}: {result['clients']} clients x {result['requests_per_client']} requests in "
                 f"{result['load_seconds']} s ({total / max(result['load_seconds'], 1e-9):.1f} requests/s), drawn "
                 f"from {result['references']} distinct requests answered alone first "
                 f"({result['reference_seconds']} s; open vocabulary waited {result['open_vocab_wait_s']} s)")
    lines.append(f"errors: {result['failed']} (and {len(result['reference_failed'])} failed references)")
    lines += [f"  {error}" for error in result["errors"] + result["reference_failed"]]
    lines += _comparison_lines(comparison)
    met = "met" if rd["p99_ms"] <= 1000 * P99_TARGET_S else "MISSED"
    lines.append(f"reverse dictionary latency: p50 {rd['p50_ms']:.0f} ms, p95 {rd['p95_ms']:.0f} ms, "
                 f"p99 {rd['p99_ms']:.0f} ms (target p99 <= {1000 * P99_TARGET_S:.0f} ms: {met})")
    job = result["job"]
    lines.append(f"fine-tuning job ({result['job_steps']} steps): running when the load started: "
                 f"{_yes(job['running_at_load_start'])}, when it ended: {_yes(job['running_at_load_end'])}; "
                 f"finished: {_yes(job['finished'])} ({job['seconds']:.0f} s); checkpoint saved through the API "
                 f"loads with Engine.load: {_yes(job['checkpoint_loads'])}")
    lines += [f"  {job['error']}"] if job["error"] else []
    lines += _memory_lines(result.get("memory"))
    lines += _hostile_lines(result.get("hostile"))
    lines += _switching_lines(result.get("switching"))
    lines.append("\nseconds per phase: " + ", ".join(f"{name} {seconds}" for name, seconds
                                                      in result.get("phase_seconds", {}).items()))
    return "\n".join(lines)


def _comparison_lines(comparison: dict) -> list[str]:
    lines = [f"differing answers: {comparison['differing']} of {comparison['compared']} compared with the same "
             f"request answered alone" + (f" ({comparison['no_reference']} without a reference)"
                                          if comparison["no_reference"] else "")]
    return lines + [f"  {example}" for example in comparison["examples"]]


def _memory_lines(memory: dict | None) -> list[str]:
    if not memory:
        return ["memory phase: skipped"]
    met = "met" if memory["growth_mb"] <= MEMORY_TARGET_MB else "MISSED"
    lines = [f"\nmemory phase: {memory['requests']} mixed requests and {memory['uploads']} uploads of "
             f"{memory['upload_bytes'] / 1e6:.1f} MB (one new session each) in {memory['seconds']:.0f} s; "
             f"the app's resident memory warm {memory['warm_mb']:.0f} MB, peak "
             f"{memory['peak_mb']:.0f} MB, after {memory['after_mb']:.0f} MB: {memory['growth_mb']:+.0f} MB "
             f"(target <= +{MEMORY_TARGET_MB:.0f} MB: {met}); failed requests {memory['failed']}, failed uploads "
             f"{len(memory['uploads_failed'])}"]
    lines += [f"  {error}" for error in memory["errors"] + memory["uploads_failed"]]
    return lines + [f"  {r['kind']}: p50 {r['p50_ms']:.0f} ms, p99 {r['p99_ms']:.0f} ms" for r in memory["kinds"]]


def _hostile_lines(hostile: dict | None) -> list[str]:
    if not hostile:
        return ["hostile phase: skipped"]
    lines = [f"\nhostile phase: {hostile['clients']} clients sending hostile requests for {hostile['seconds']:.0f} s "
             f"while a probe times /reverse_dictionary and GET /gradio_api/info"]
    for name, label in (("rd", "/reverse_dictionary"), ("info", "/gradio_api/info")):
        a, h = hostile[f"{name}_alone"], hostile[f"{name}_hostile"]
        if not (a.get("n") and h.get("n")):
            lines.append(f"  {label}: no measurement ({a.get('n', 0)} alone, {h.get('n', 0)} under attack)")
            continue
        worst = hostile[f"{name}_added_max_ms"]
        met = "met" if worst <= 1000 * HOSTILE_TARGET_S else "MISSED"
        lines.append(f"  {label}: alone p50 {a['p50_ms']:.0f} ms (max {a['max_ms']:.0f}, n={a['n']}); under attack "
                     f"p50 {h['p50_ms']:.0f} / p95 {h['p95_ms']:.0f} / max {h['max_ms']:.0f} ms (n={h['n']}); "
                     f"added delay p50 {hostile[f'{name}_added_p50_ms']:.0f} ms, worst {worst:.0f} ms "
                     f"(target <= {1000 * HOSTILE_TARGET_S:.0f} ms: {met})")
    lines.append(f"  probe failures: {hostile['probe_failed']}; probe answers differing from the reference: "
                 f"{hostile['comparison']['differing']} of {hostile['comparison']['compared']}")
    lines += [f"    {example}" for example in hostile["comparison"]["examples"]]
    for name, row in hostile["hostile_requests"].items():
        refused = f", refused {row['refused']} ({row['error']})" if row["refused"] else ""
        lines.append(f"  hostile {name}: sent {row['sent']}, slowest {row['max_ms']:.0f} ms{refused}")
    return lines


def _switching_lines(switching: dict | None) -> list[str]:
    if not switching:
        return ["model switching phase: skipped"]
    if "error" in switching:
        return [f"model switching phase: {switching['error']}"]
    lines = [f"\nmodel switching phase: {switching['clients']} clients x {switching['requests_per_client']} requests "
             f"while another client made {switching['switches']} switches (slowest {switching['switch_s_max']} s); "
             f"errors: {switching['failed']}, failed switches: {len(switching['switch_failed'])}"]
    lines += [f"  {error}" for error in switching["errors"] + switching["switch_failed"]]
    lines += ["  " + line for line in _comparison_lines(switching["comparison"])]
    lines += [f"  {r['kind']}: p50 {r['p50_ms']:.0f} ms, p99 {r['p99_ms']:.0f} ms" for r in switching["kinds"]]
    return lines


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


def passed(result: dict) -> bool:
    """0 failed requests, 0 differing answers (in every phase), and the job finished with a loadable
    checkpoint. Latency targets are printed, not judged here."""
    phases = [result] + [p for p in (result.get("hostile"), result.get("switching")) if p]
    return (result["failed"] == 0 and not result["reference_failed"] and result["job"]["finished"]
            and result["job"]["checkpoint_loads"]
            and all("error" not in p and p["comparison"]["differing"] == 0 and not p["comparison"]["no_reference"]
                    for p in phases)
            and all(p.get("failed", 0) == 0 and not p.get("switch_failed") for p in phases[1:])
            and (not result.get("hostile") or result["hostile"]["probe_failed"] == 0)
            and (not result.get("memory")
                 or (result["memory"]["failed"] == 0 and not result["memory"]["uploads_failed"])))


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    import torch
    torch.set_num_threads(1)  # this process only loads the saved checkpoint at the end
    result = run(args)
    print(report(result))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0 if passed(result) else 1


if __name__ == "__main__":
    sys.exit(main())
