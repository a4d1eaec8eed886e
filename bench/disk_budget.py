"""Disk budget bench (issue 55, item 2): what a visitor of a public server can make it write, against the one
budget (app.server.public). A Gradio server on 127.0.0.1 with the app's middleware (app.server.gate) and a budget of
`--budget-mb`, its temp folder and caches in a fresh folder; then, as a visitor would:

1. `--downloads` Projector exports of `--points` points (app.shared.export.projector_download, as the Map's
   download), each with a copy of its zip in Gradio's temp folder, as Gradio serves it;
2. `--uploads` raw uploads of `--upload-mb` each to /gradio_api/upload (no session needed);

counting those accepted and refused, the largest disk use seen (app.server.public.disk_used) and the refusal message;
then, on a fresh budget (issue 61):

3. the race: the disk filled to `--free-mb` under the budget, then `--parallel` uploads of `--parallel-mb` each
   sent at once, each from an address of its own (127.0.0.N), while a thread reads the disk use as fast as it can;
4. one address's share: uploads of `--parallel-mb` from 127.0.0.1 until one is refused, then one from 127.0.0.2.

    python -m bench.disk_budget                       # 8 exports, then 10 x 19 MB uploads, a 100 MB budget
    python -m bench.disk_budget --downloads 0 --uploads 0 --parallel 20 --parallel-mb 2 --free-mb 5
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Callable


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--budget-mb", type=float, default=100.0)
    parser.add_argument("--uploads", type=int, default=10)
    parser.add_argument("--upload-mb", type=float, default=19.0)
    parser.add_argument("--downloads", type=int, default=8)
    parser.add_argument("--points", type=int, default=2_000, help="points of each export (384-d vectors)")
    parser.add_argument("--parallel", type=int, default=30, help="uploads sent at once in the race (0: no race)")
    parser.add_argument("--parallel-mb", type=float, default=2.0, help="size of each of them")
    parser.add_argument("--free-mb", type=float, default=5.0, help="room left under the budget before the race")
    args = parser.parse_args(argv)
    if args.budget_mb <= 0 or args.uploads < 0 or args.downloads < 0 or args.points < 1 or not 0 < args.upload_mb <= 20:
        parser.error("a positive budget and points, at least 0 uploads and downloads, uploads of at most 20 MB")
    if not 0 <= args.parallel <= 200 or not 0 < args.parallel_mb <= 20 or not 0 <= args.free_mb <= args.budget_mb:
        parser.error("0-200 parallel uploads of at most 20 MB, and room before the race within the budget")
    return args


def run(args: argparse.Namespace, work: Path) -> dict:
    os.environ["DEFSENT_CACHE_DIR"], os.environ["GRADIO_TEMP_DIR"] = str(work / "cache"), str(work / "gradio")
    tempfile.tempdir = str(work)  # the download folder (app.settings.download_dir)
    import gradio as gr
    import httpx
    import numpy as np

    from app.shared.export import projector_download
    from app.server.public import DiskBudget, PublicLimits, disk_used, use_disk_budget
    from app.server.gate import middleware
    from app.settings import upload_dir
    from bench.bench_app import free_port

    use_disk_budget(DiskBudget(PublicLimits(disk_bytes=int(args.budget_mb * 1e6))))
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
        if args.parallel:
            race = upload_race(demo.local_url, args, upload_dir())
            shares = address_share(demo.local_url, args)
    finally:
        demo.close()
    return {"budget_mb": args.budget_mb, "uploads": uploads, "downloads": downloads, "peak_mb": peak / 1e6,
            "message": message, **(race if args.parallel else {}), **(shares if args.parallel else {})}


def send_upload(url: str, content: bytes, name: str, source: str) -> "httpx.Response":
    """One raw upload of `content` as a file `name` to the server at `url`, from the loopback address `source`."""
    import httpx
    with httpx.Client(transport=httpx.HTTPTransport(local_address=source), timeout=120) as client:
        return client.post(url + "gradio_api/upload", files={"files": (name, content)})


def upload_race(url: str, args: argparse.Namespace, uploads: Path) -> dict:
    """Phase 3: a fresh budget filled to `free_mb` under its end, then `parallel` uploads at once, each from its
    own address; their codes and the largest disk use read meanwhile."""
    from app.server.public import DiskBudget, PublicLimits, disk_used, use_disk_budget
    shutil.rmtree(uploads, ignore_errors=True)
    uploads.mkdir(parents=True)
    use_disk_budget(DiskBudget(PublicLimits(disk_bytes=int(args.budget_mb * 1e6))))
    (uploads / "filler").write_bytes(b"\0" * max(0, int((args.budget_mb - args.free_mb) * 1e6) - disk_used()))
    codes = []
    peak = at_once([lambda i=i: codes.append(send_upload(url, os.urandom(int(args.parallel_mb * 1e6)),
                                                         f"race{i}.bin", f"127.0.0.{10 + i}").status_code)
                    for i in range(args.parallel)])
    return {"race_before_mb": (args.budget_mb - args.free_mb), "race_codes": codes, "race_peak_mb": peak / 1e6,
            "race_after_mb": disk_used() / 1e6}


def at_once(sends: list[Callable[[], None]]) -> int:
    """Run `sends`, each in a thread of its own, all starting together; the largest disk use
    (app.server.public.disk_used) read meanwhile, as fast as a thread can."""
    import threading

    from app.server.public import disk_used
    start, peak, done = threading.Barrier(len(sends)), [disk_used()], threading.Event()

    def send(work: Callable[[], None]) -> None:
        start.wait()
        work()

    def watch() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], disk_used())
    threads = [threading.Thread(target=send, args=(work,)) for work in sends]
    watcher = threading.Thread(target=watch)
    watcher.start()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    done.set()
    watcher.join()
    return max(peak[0], disk_used())


def address_share(url: str, args: argparse.Namespace) -> dict:
    """Phase 4: a fresh, empty budget; uploads from one address until one is refused, then one from another."""
    from app.server.public import DiskBudget, PublicLimits, use_disk_budget
    from app.settings import upload_dir
    shutil.rmtree(upload_dir(), ignore_errors=True)
    upload_dir().mkdir(parents=True)
    use_disk_budget(DiskBudget(PublicLimits(disk_bytes=int(args.budget_mb * 1e6))))
    accepted, answer = 0, None
    for i in range(int(args.budget_mb / args.parallel_mb) + 2):
        answer = send_upload(url, os.urandom(int(args.parallel_mb * 1e6)), f"mine{i}.bin", "127.0.0.1")
        if answer.status_code != 200:
            break
        accepted += 1
    other = send_upload(url, os.urandom(int(args.parallel_mb * 1e6)), "other.bin", "127.0.0.2")
    return {"share_accepted": accepted, "share_refusal": answer.text if answer is not None else "",
            "share_other": other.status_code}


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
    if args.parallel:
        codes = result["race_codes"]
        print(f"Race: {args.parallel} uploads of {args.parallel_mb:g} MB at once, each from its own address, with "
              f"{args.free_mb:g} MB free ({result['race_before_mb']:.1f} MB of {args.budget_mb:g} MB used): "
              f"{codes.count(200)} accepted, {len(codes) - codes.count(200)} refused; largest disk use seen "
              f"{result['race_peak_mb']:.1f} MB, {result['race_after_mb']:.1f} MB after.")
        print(f"One address: {result['share_accepted']} uploads of {args.parallel_mb:g} MB accepted "
              f"({result['share_accepted'] * args.parallel_mb:g} MB), then: {result['share_refusal']}\n"
              f"Another address's upload after that: {result['share_other']}.")
        within = within and result["race_peak_mb"] <= args.budget_mb
    print(f"- disk use within the budget: {'met' if within else 'MISSED'}")
    return 0 if within else 1


if __name__ == "__main__":
    sys.exit(main())
