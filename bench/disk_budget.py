"""Disk budget bench (issue 55, item 2): what a visitor of a public server can make it write, against the one
budget (app.public). A Gradio server on 127.0.0.1 with the app's middleware (app.server) and a budget of
`--budget-mb`, its temp folder and caches in a fresh folder; then, as a visitor would:

1. `--downloads` Projector exports of `--points` points (app.export.projector_download, as the Map's
   download), each with a copy of its zip in Gradio's temp folder, as Gradio serves it;
2. `--uploads` raw uploads of `--upload-mb` each to /gradio_api/upload (no session needed);

counting those accepted and refused, the largest disk use seen (app.public.disk_used) and the refusal message.

    python -m bench.disk_budget                       # 8 exports, then 10 x 19 MB uploads, a 100 MB budget
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--budget-mb", type=float, default=100.0)
    parser.add_argument("--uploads", type=int, default=10)
    parser.add_argument("--upload-mb", type=float, default=19.0)
    parser.add_argument("--downloads", type=int, default=8)
    parser.add_argument("--points", type=int, default=2_000, help="points of each export (384-d vectors)")
    args = parser.parse_args(argv)
    if args.budget_mb <= 0 or args.uploads < 0 or args.downloads < 0 or args.points < 1 or not 0 < args.upload_mb <= 20:
        parser.error("a positive budget and points, at least 0 uploads and downloads, uploads of at most 20 MB")
    return args


def run(args: argparse.Namespace, work: Path) -> dict:
    os.environ["DEFSENT_CACHE_DIR"], os.environ["GRADIO_TEMP_DIR"] = str(work / "cache"), str(work / "gradio")
    tempfile.tempdir = str(work)  # the download folder (app.settings.download_dir)
    import gradio as gr
    import httpx
    import numpy as np

    from app.export import projector_download
    from app.public import PublicLimits, disk_used, set_disk_budget
    from app.server import middleware
    from app.settings import upload_dir
    from bench.bench_app import free_port

    set_disk_budget(PublicLimits(disk_bytes=int(args.budget_mb * 1e6)))
    with gr.Blocks() as demo:
        gr.File()
    demo.launch(server_name="127.0.0.1", server_port=free_port(), prevent_thread_lock=True, quiet=True,
                app_kwargs={"middleware": middleware(demo)})
    peak, uploads, downloads, message = 0, [], [], ""
    try:
        vectors = np.random.default_rng(0).standard_normal((args.points, 384)).astype(np.float32)
        for i in range(args.downloads):
            try:
                archive = projector_download(vectors, {"text": [f"point {j}" for j in range(args.points)]})
                copy = upload_dir() / f"served{i}"  # Gradio's copy of a returned file
                copy.mkdir(parents=True)
                shutil.copy(archive, copy)
                downloads.append("ok")
            except ValueError as err:
                downloads.append("refused")
                message = str(err)
            peak = max(peak, disk_used())
        for i in range(args.uploads):
            answer = httpx.post(demo.local_url + "gradio_api/upload", timeout=60,
                                files={"files": (f"upload{i}.txt", b"x" * int(args.upload_mb * 1e6))})
            uploads.append(answer.status_code)
            message = answer.text if answer.status_code != 200 else message
            peak = max(peak, disk_used())
    finally:
        demo.close()
    return {"budget_mb": args.budget_mb, "uploads": uploads, "downloads": downloads, "peak_mb": peak / 1e6,
            "message": message}


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="disk_budget_") as tmp:
        result = run(args, Path(tmp))
    ups, downs = result["uploads"], result["downloads"]
    print(f"Budget {result['budget_mb']:.0f} MB. Uploads of {args.upload_mb:g} MB: {ups.count(200)} accepted, "
          f"{len(ups) - ups.count(200)} refused ({sorted(set(ups))}). Projector exports of {args.points:,} points: "
          f"{downs.count('ok')} written, {downs.count('refused')} refused. Largest disk use seen: "
          f"{result['peak_mb']:.1f} MB.\nRefusal: {result['message']}")
    within = result["peak_mb"] <= result["budget_mb"]
    print(f"- disk use within the budget: {'met' if within else 'MISSED'}")
    return 0 if within else 1


if __name__ == "__main__":
    sys.exit(main())
