"""Where the app keeps its files (caches that outlive a run, uploads, downloads and how long a download stays),
and the server's few fixed numbers."""
from __future__ import annotations

import os
import shutil
import stat
import tempfile
import time
from pathlib import Path

from core.paths import user_cache_dir

APP_NAME = "defsent-studio"
QUEUE_SIZE = 64  # requests that may wait beyond those running; past it a request is refused at once
# Gradio refuses bigger uploads before writing them to disk; the dictionary loader's own cap is the same.
MAX_UPLOAD_BYTES = 20_000_000
UPLOAD_LIFETIME_S = 3600  # seconds Gradio keeps an upload or a served copy (app.ui's delete_cache)
DOWNLOAD_PREFIX = "defsent-download-"  # the name of every download folder under download_dir()
# Gradio copies a returned file into its own cache before answering (and deletes that copy after
# UPLOAD_LIFETIME_S), so a download folder is needed for seconds; ten minutes leaves API callers that read
# the path themselves time to do so.
DOWNLOAD_LIFETIME = 600.0
# Where models load and fine-tunes train: `python app.py --device` sets it, and the spawned training
# processes inherit it. A name core.runtime.device.resolve_device takes.
DEVICE_ENV = "DEFSENT_DEVICE"


def model_device() -> str:
    """The device models load on: $DEFSENT_DEVICE, else "auto" (a GPU when there is one)."""
    return os.environ.get(DEVICE_ENV, "auto")


def upload_dir() -> Path:
    """Where Gradio stores uploads (one folder per upload): $GRADIO_TEMP_DIR, else <tmp>/gradio."""
    return Path(os.environ.get("GRADIO_TEMP_DIR") or Path(tempfile.gettempdir()) / "gradio").resolve()


def download_dir() -> Path:
    """Where download zips are built, created: a folder of the system temp folder, because Gradio
    serves a returned file only from there, the working directory, its upload folder or the
    launch's allowed_paths (a zip under ~/.cache failed with a bare "Error"). Private to this user:
    the temp folder is shared, so a folder someone else made (or a symlink) is refused."""
    path = Path(tempfile.gettempdir()) / f"{APP_NAME}-downloads-{os.getuid()}"
    try:
        path.mkdir(mode=0o700)
    except FileExistsError:
        info = path.lstat()
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
            raise RuntimeError(f"{path} is not a folder of this user; remove it") from None
    return path


def download_folders(root: Path) -> list[Path]:
    """The download folders under `root`, oldest first."""
    return sorted((p for p in root.glob(f"{DOWNLOAD_PREFIX}*") if p.is_dir()), key=lambda p: p.stat().st_mtime)


def remove_old_downloads(root: Path, keep_seconds: float = DOWNLOAD_LIFETIME) -> None:
    """Delete download folders under `root` last changed more than `keep_seconds` ago."""
    cutoff = time.time() - keep_seconds
    for folder in download_folders(root):
        if folder.stat().st_mtime < cutoff:
            shutil.rmtree(folder, ignore_errors=True)


def cache_dir(*parts: str) -> Path:
    """A folder under the user cache dir ($DEFSENT_CACHE_DIR, else $XDG_CACHE_HOME or ~/.cache), created."""
    return user_cache_dir(*parts)


def folder_bytes(folder: Path) -> int:
    """The size of the files under `folder` (0 if it does not exist). A file or folder removed while they are
    counted (another request's upload finished) counts nothing: concurrent uploads answered 500 when it raised."""
    total = 0
    for root, _, names in os.walk(folder):  # a folder that vanishes mid-walk is skipped (os.walk ignores errors)
        for name in names:
            try:
                found = os.stat(os.path.join(root, name))
            except FileNotFoundError:
                continue
            total += found.st_size if stat.S_ISREG(found.st_mode) else 0
    return total


def staging_root() -> Path:
    """Where fine-tuned models wait until they are saved under a name (a folder per server process), created."""
    return cache_dir("staging")


def limit_threads(n: int) -> None:
    """Run numerical code on `n` threads: BLAS, OpenMP and numba through the environment (this must
    happen before numpy or numba is imported), and torch. Oversubscribed BLAS threads on a busy
    2-core machine made a 5,000-point PCA 50 times slower."""
    for variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
        os.environ.setdefault(variable, str(n))
    import torch
    torch.set_num_threads(n)


def configure_numba_cache() -> Path:
    """Point NUMBA_CACHE_DIR at a persistent folder (unless set) so UMAP's JIT work is kept across runs.

    Must run before numba is imported (UMAP imports it).
    """
    if not os.environ.get("NUMBA_CACHE_DIR"):
        os.environ["NUMBA_CACHE_DIR"] = str(cache_dir("numba"))
    return Path(os.environ["NUMBA_CACHE_DIR"])
