"""A session flood against the public server (issue 75): `python app.py --public` on a free local port with a tiny
model; a visitor (gradio_client, 127.0.0.1) chooses the second model, then `--addresses` other loopback addresses
send `--requests` POSTs to /gradio_api/component_server in all, each naming a new session (Gradio made a session
for each, answered 404). Prints the app's resident memory before and after, how many of the flood's sessions were
made and refused, and whether the visitor still gets their model's answers (their session kept).

    python -m bench.session_flood                                 # 3,000 requests from 40 addresses
    python -m bench.session_flood --requests 10100 --addresses 1  # the issue's probe
    python -m bench.session_flood --app-dir /tmp/old-checkout     # the same against another checkout

Only loopback addresses are spoken to; the loop is bounded by --requests.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import httpx

from bench.bench_app import QUERY, REPO, first_answer, free_port
from bench.load_phases import rss_mb, tiny_checkpoints


def flood(base: str, requests: int, addresses: int) -> Counter:
    """POST /gradio_api/component_server `requests` times, each naming a new session, from 127.0.0.2 onwards in
    turn; the answers' status codes, counted."""
    clients = [httpx.Client(transport=httpx.HTTPTransport(local_address=f"127.0.0.{2 + i}"), timeout=60)
               for i in range(addresses)]
    codes: Counter = Counter()
    try:
        for i in range(requests):
            answer = clients[i % addresses].post(f"{base}/gradio_api/component_server", json={
                "session_hash": f"flood-{i}", "component_id": 1, "fn_name": "nothing", "data": None})
            codes[answer.status_code] += 1
    finally:
        for client in clients:
            client.close()
    return codes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=3_000, help="flood requests in all (default 3,000)")
    parser.add_argument("--addresses", type=int, default=40, help="loopback addresses they come from (default 40)")
    parser.add_argument("--app-dir", type=Path, default=REPO, help="the checkout whose app.py is served")
    parser.add_argument("--json", type=Path, help="also write the results to this JSON file")
    args = parser.parse_args(argv)
    if not 1 <= args.addresses <= 250 or not 0 <= args.requests <= 20_000:
        parser.error("--addresses 1..250, --requests 0..20,000")
    with tempfile.TemporaryDirectory(prefix="session-flood-") as tmp:
        work = Path(tmp)
        checkpoints = work / "checkpoints"
        checkpoints.mkdir()
        model, _ = tiny_checkpoints(work, checkpoints)
        port, log = free_port(), work / "app.log"
        env = {**os.environ, "DEFSENT_CACHE_DIR": str(work / "cache"), "GRADIO_TEMP_DIR": str(work / "gradio")}
        command = [sys.executable, "app.py", "--public", "--port", str(port), "--model", str(model),
                   "--checkpoints", str(checkpoints), "--single-token-words", "--no-umap-warmup"]
        process = subprocess.Popen(command, cwd=args.app_dir, stdout=log.open("w"), stderr=subprocess.STDOUT,
                                   env=env)
        try:
            base = f"http://127.0.0.1:{port}"
            visitor = first_answer(base + "/", process)
            visitor.predict("tiny-b", api_name="/switch_model")
            before_answer = visitor.predict(*QUERY, api_name="/reverse_dictionary")
            time.sleep(2)
            rss_before = rss_mb(process.pid)
            started = time.perf_counter()
            codes = flood(base, args.requests, args.addresses)
            seconds = time.perf_counter() - started
            rss_after = rss_mb(process.pid)
            kept = visitor.predict(*QUERY, api_name="/reverse_dictionary") == before_answer
        finally:
            process.terminate()
            process.wait(30)
    made = codes.get(404, 0) + codes.get(200, 0)  # answered by the route: a session was made for it
    result = {"requests": args.requests, "addresses": args.addresses, "seconds": round(seconds, 1),
              "sessions_made": made, "refused_503": codes.get(503, 0), "other": {str(k): v for k, v in codes.items()
                                                                                 if k not in (200, 404, 503)},
              "rss_before_mb": round(rss_before), "rss_after_mb": round(rss_after),
              "rss_growth_mb": round(rss_after - rss_before), "visitor_kept_their_model": kept}
    print(json.dumps(result, indent=1))
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
