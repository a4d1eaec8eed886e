"""Download of a fine-tuned model works with the default settings (the zips are built in a folder
Gradio serves, not under the cache folder), and the download folder's disk use is capped.

The end-to-end test deliberately does not set DEFSENT_CACHE_DIR: the other app tests point it at a
temporary folder, which is how they missed that Gradio refused to serve zips built under ~/.cache.
"""
from __future__ import annotations

import os
import shutil
import stat
import tempfile
import time
import zipfile
from pathlib import Path

import pytest

from app.shared import export
from app.shared.export import download_files, expected_download_bytes
from app.shared.finetune import FinetuneResult
from app.handlers import Studio
from app.shared.jobs import DONE, JobManager
from app.shared.models import Models, ModelSpec
from app.views.projection import Projector
from app.settings import DOWNLOAD_PREFIX, download_dir
from core import Engine


@pytest.fixture(scope="module")
def engine(tiny_mlm_dir) -> Engine:
    return Engine.from_base(str(tiny_mlm_dir))


@pytest.fixture
def new_downloads():
    """Removes the download folders a test makes in the real download folder."""
    before = set(download_dir().iterdir())
    yield
    for folder in set(download_dir().iterdir()) - before:
        shutil.rmtree(folder, ignore_errors=True)


def test_download_works_through_the_web_app_with_default_settings(engine, tiny_mlm_dir, tmp_path, monkeypatch,
                                                                  new_downloads):
    pytest.importorskip("gradio")
    from gradio_client import Client

    from app.ui import build_app
    from app.wiring import enable_queue
    from bench.bench_app import free_port

    monkeypatch.delenv("DEFSENT_CACHE_DIR", raising=False)  # the default cache folder, as a user runs the app
    monkeypatch.setenv("GRADIO_ANALYTICS_ENABLED", "False")
    checkpoints = tmp_path / "checkpoints"
    saved = engine.save(checkpoints / "mine", name="mine")
    studio = Studio(Models.from_engine(engine, ModelSpec("tiny", base=str(tiny_mlm_dir)), checkpoints), Projector(),
                    JobManager())
    job = studio.jobs.submit(lambda job: FinetuneResult(saved, {}, {}, [], {}, saved=saved), "a saved fine-tune")
    while studio.jobs.get(job.id).status != DONE:
        time.sleep(0.01)
    demo = enable_queue(build_app(studio))
    demo.launch(server_name="127.0.0.1", server_port=free_port(), prevent_thread_lock=True, quiet=True)
    try:
        client = Client(demo.local_url, verbose=False, download_files=str(tmp_path / "client"),
                        httpx_kwargs={"timeout": 300})
        checkpoint_zip, st_zip = client.predict(job.id, api_name="/download_finetuned")
    finally:
        demo.close()
    with zipfile.ZipFile(checkpoint_zip) as archive:
        assert "mine/manifest.json" in archive.namelist()
    with zipfile.ZipFile(st_zip) as archive:
        assert "mine-sentence-transformers/modules.json" in archive.namelist()


def test_the_download_folder_is_in_the_temp_folder_and_private(tmp_path, monkeypatch):
    folder = download_dir()
    assert folder.parent == Path(tempfile.gettempdir()) and stat.S_IMODE(folder.stat().st_mode) == 0o700
    monkeypatch.setattr(tempfile, "gettempdir", lambda: str(tmp_path))
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / f"defsent-studio-downloads-{os.getuid()}").symlink_to(tmp_path / "elsewhere")  # planted by another
    with pytest.raises(RuntimeError, match="is not a folder of this user"):
        download_dir()


def old_download(root: Path, size: int, age: float) -> Path:
    """A download folder of `size` bytes (sparse), last changed `age` seconds ago."""
    folder = root / f"{DOWNLOAD_PREFIX}{age:.0f}"
    folder.mkdir(parents=True)
    with open(folder / "model.zip", "wb") as file:
        file.truncate(size)
    os.utime(folder, (time.time() - age, time.time() - age))
    return folder


def test_the_oldest_downloads_make_room_for_a_new_one(engine, tmp_path):
    checkpoint = engine.save(tmp_path / "ckpt" / "mine")
    needed = expected_download_bytes(engine, checkpoint)
    root = tmp_path / "downloads"
    oldest, old = old_download(root, needed, age=300), old_download(root, needed, age=200)
    zips = download_files(engine, checkpoint, root, max_bytes=2 * needed + 1)
    assert not oldest.exists() and old.exists() and all(z.is_file() for z in zips)


def test_a_download_that_cannot_fit_is_refused_and_writes_nothing(engine, tmp_path):
    checkpoint = engine.save(tmp_path / "ckpt" / "mine")
    root = tmp_path / "downloads"
    young = old_download(root, 10**9, age=export.IN_USE_SECONDS / 2)  # may still be being copied by Gradio
    with pytest.raises(ValueError, match="The server is preparing too many downloads right now \\(at most 1 GB at a "
                                         "time; this one needs"):
        download_files(engine, checkpoint, root, max_bytes=10**9)
    assert [p.name for p in root.iterdir()] == [young.name]


def test_a_failed_export_leaves_no_half_download(engine, tmp_path, monkeypatch):
    checkpoint = engine.save(tmp_path / "ckpt" / "mine")

    def full(*args, **kwargs):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(export, "zip_folder", full)
    with pytest.raises(ValueError, match=r"^Could not prepare the download \(No space left on device\); nothing was "
                                         "kept. Try again later.$"):
        download_files(engine, checkpoint, tmp_path / "downloads")
    assert list((tmp_path / "downloads").iterdir()) == []
