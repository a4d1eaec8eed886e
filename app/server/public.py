"""Public mode, for a Hugging Face Space or any server open to strangers (on when $SPACE_ID is set,
or with `python app.py --public`): what one visitor does must not change what another sees, and no
visitor can hold the server's CPU or fill its disk.

- The model a visitor chooses, and the models they fine-tune and save, belong to their session (a
  gr.State): switching or saving changes nothing for anyone else. Loaded models are shared between
  the sessions that chose them, at most `PublicLimits.loaded_models` besides the server's own.
- Fine-tuning: at most `finetunes_per_session` jobs a session and `finetunes_per_address_hour` an address
  within the hour (`RecentStarts`), `max_training_steps` steps a job, and
  `training_slots` jobs on the whole server at a time, with no waiting line (a Start while the slot is
  taken is refused).
- Disk: a session's saved models live in its own folder of the cache (`public_saves_dir()/KEY/`),
  never in checkpoints/. Everything a visitor can make the server write takes at most `disk_bytes`
  together (`disk_used`): saves of all sessions with their caches (a chosen model's vocabulary cache),
  fine-tuned models waiting to be saved, the download zips, and Gradio's temp folder (raw uploads and its
  copies of the zips it serves). Each such write reserves its room under one lock first (`DiskBudget`,
  `reserved`), expired sessions' saves, old downloads and old files of Gradio's deleted to make room, else it
  is refused with a message; one network address may hold at most `address_share` of the budget.
  A session's folder, and its fine-tune (running or waiting to be saved), are deleted when the session ends (the tab is closed or its state expires
  after `session_lifetime`); the folders also at every start.
- The Evaluate tab reads only the bundled smoke set (app/data), no SentEval folder.
- A refined interpolation (the most exact decoding, about 2 s a step) has at most
  `refined_interpolation_steps` steps.

Plain Python (no gradio): the rules here are used by app.handlers; app.ui only wires them.
"""
from __future__ import annotations

import contextvars
import itertools
import os
import shutil
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from .sessions import SessionLimits
from ..settings import (UPLOAD_LIFETIME_S, cache_dir, download_dir, folder_bytes, remove_old_downloads, staging_root,
                        upload_dir)

PUBLIC_ENV = "SPACE_ID"  # set by Hugging Face Spaces
YOURS = "yours/"  # the prefix of a session's own models in the model list: no checkpoint name has a "/"


@dataclass(frozen=True)
class PublicLimits:
    """The bounds of public mode, in one place (each is named in the message that enforces it)."""
    finetunes_per_session: int = 2
    # Fine-tunes one network address may start an hour: a new session (a reload) had a fresh quota, so one visitor
    # could hold the one training slot for good (session 49's review).
    finetunes_per_address_hour: int = 3
    training_slots: int = 1  # fine-tunes on the whole server at a time; no waiting line
    # Steps of one public fine-tune: about a second each for the shipped model on the free 2-core tier,
    # so the slot is free again within about 20 minutes.
    max_training_steps: int = 1_000
    disk_bytes: int = 1_500_000_000  # saved models (with their caches), staged fine-tunes and download zips
    session_lifetime: float = 2 * 3600.0  # seconds a session's state (and its saved models) is kept unused
    loaded_models: int = 2  # models loaded for sessions besides the server's own (each ~100-300 MB)
    refined_interpolation_steps: int = 10  # the most exact decoding takes about 2 s a step
    # Of disk_bytes one network address may use (150 MB: seven full-size uploads), so that a few addresses cannot
    # lock others out: two addresses had filled the budget at 0.5 (issue 75).
    address_share: float = 0.1
    # Seconds Gradio's temp files (uploads, served copies) are kept once the budget needs room (Gradio's own
    # deletion keeps them an hour): a full budget frees itself within this (issue 75).
    temp_lifetime: float = 900.0
    sessions: SessionLimits = SessionLimits()  # Gradio's sessions, per address and in all (app.server.sessions)
    # Bytes of the vectors all sessions keep for themselves (a searched file's, a drawn map's points and coordinates:
    # up to ~60 MB a session), the least recently used session's going first (app.handlers.session.HeldVectors).
    session_vectors_bytes: int = 400_000_000
    # Connections one address holds open (app.server.connections): 19,990 half-sent requests from one address took
    # every file descriptor, and every other visitor's request timed out (session 51). A browser holds at most 6 to a
    # host (a page's heartbeat and event streams, a few requests): 128 is an address's 32 sessions' worth and more.
    connections_per_address: int = 128
    # Seconds a new connection has to send its first request's headers (app.server.connections): uvicorn keeps one
    # that never ends them for good, so the bound above alone let 128 such connections of every address stay; a
    # browser sends its headers at once.
    headers_seconds: float = 20.0


class RecentStarts:
    """When each address started something in the last `window` seconds, at most `most` each (thread-safe; the
    addresses of older starts are forgotten): `wait` says how long one must wait to start, `record` counts a start."""

    def __init__(self, most: int, window: float):
        self.most, self.window, self.lock = most, window, threading.Lock()
        self.starts: dict[str, list[float]] = {}

    def wait(self, address: str, now: float | None = None) -> float:
        """Seconds until `address` may start again (0: now)."""
        now = time.monotonic() if now is None else now
        with self.lock:
            mine = self._recent(now).get(address, [])
            return mine[0] + self.window - now if len(mine) >= self.most else 0.0

    def record(self, address: str, now: float | None = None) -> None:
        """Count a start of `address` (one that happened: a refused one is not counted)."""
        now = time.monotonic() if now is None else now
        with self.lock:
            self._recent(now).setdefault(address, []).append(now)

    def _recent(self, now: float) -> dict[str, list[float]]:
        for who in list(self.starts):
            self.starts[who] = [t for t in self.starts[who] if now - t < self.window]
            if not self.starts[who]:
                del self.starts[who]
        return self.starts


def public_mode(flag: bool = False) -> bool:
    """True with --public, or on a Hugging Face Space ($SPACE_ID set)."""
    return bool(flag or os.environ.get(PUBLIC_ENV, "").strip())


def public_saves_dir() -> Path:
    """The folder of every session's saved models (one folder per session), created."""
    return cache_dir("public-saves")


def session_folder(key: str) -> Path:
    """The folder of one session's saved models (not created)."""
    if not key or not key.isalnum():
        raise ValueError("A session key is letters and digits.")
    return public_saves_dir() / key


def models_bytes() -> int:
    """Bytes of visitors' models on disk: every session's saved models and the fine-tuned models
    waiting to be saved."""
    return folder_bytes(public_saves_dir()) + folder_bytes(staging_root())


def disk_used() -> int:
    """Bytes of public mode's disk use: visitors' models (with their caches), the download folder, and
    Gradio's temp folder (uploads, and the copies of returned files it serves)."""
    return models_bytes() + folder_bytes(download_dir()) + folder_bytes(upload_dir())


def is_visitors_model(checkpoint: Path | None) -> bool:
    """Whether `checkpoint` is a model a public-mode visitor saved (it goes with their session)."""
    return checkpoint is not None and checkpoint.resolve().parent.parent == public_saves_dir().resolve()


def model_cache_dir(checkpoint: Path | None, kind: str) -> Path:
    """Where a model's `kind` cache (e.g. "open-vocab") goes: for a visitor's saved model, a hidden
    folder of its session's folder, so the cache counts in the disk budget and goes with the session;
    for any other model, the app's cache."""
    if is_visitors_model(checkpoint):
        path = checkpoint.parent / ".caches" / kind
        path.mkdir(parents=True, exist_ok=True)
        return path
    return cache_dir(kind)


def remove_session(key: str) -> None:
    """Delete a session's saved models (at session end)."""
    if key:
        shutil.rmtree(session_folder(key), ignore_errors=True)


def remove_expired(lifetime: float, now: float | None = None) -> list[Path]:
    """Delete the session folders unchanged for `lifetime` seconds (sessions that ended without
    the server noticing); returns them."""
    cutoff = (now or time.time()) - lifetime
    removed = []
    for folder in sorted(public_saves_dir().iterdir(), key=lambda p: p.stat().st_mtime):
        if folder.is_dir() and folder.stat().st_mtime < cutoff:
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    return removed


def remove_all_sessions() -> None:
    """At a start: no session outlives the server, so neither do their saved models."""
    shutil.rmtree(public_saves_dir(), ignore_errors=True)
    public_saves_dir()


EMPTY_FOLDER_AGE_S = 60.0  # an empty folder of Gradio's temp folder is swept once this old (`remove_empty_folders`)


def remove_old_temp_files(lifetime: float = UPLOAD_LIFETIME_S, now: float | None = None) -> None:
    """Delete what Gradio's temp folder holds unchanged for `lifetime` (uploads and served copies of ended
    requests; Gradio itself deletes them only every ten minutes)."""
    cutoff = (now or time.time()) - lifetime
    folder = upload_dir()
    for entry in folder.iterdir() if folder.is_dir() else []:
        try:
            if entry.lstat().st_mtime < cutoff:
                shutil.rmtree(entry, ignore_errors=True) if entry.is_dir() else entry.unlink(missing_ok=True)
        except OSError:  # gone meanwhile
            continue


def remove_empty_folders(min_age: float = EMPTY_FOLDER_AGE_S, now: float | None = None) -> None:
    """Delete the empty folders of Gradio's temp folder unchanged for `min_age` seconds: an upload's or a served
    file's folder once Gradio has deleted its file (Gradio deletes files, not folders: each upload left two for the
    life of the server, walked by every reservation). A younger empty folder may be about to get its file."""
    cutoff = (now or time.time()) - min_age
    folder = upload_dir()
    for entry in folder.iterdir() if folder.is_dir() else []:
        try:
            if entry.is_dir() and not entry.is_symlink() and entry.lstat().st_mtime < cutoff \
                    and not any(entry.iterdir()):
                entry.rmdir()
        except OSError:  # gone, or filled, meanwhile
            continue


def make_room(limits: PublicLimits) -> None:
    """Delete what has outlived its time: expired sessions' saves, old downloads and Gradio's temp files older than
    `limits.temp_lifetime`."""
    remove_expired(limits.session_lifetime)
    remove_old_downloads(download_dir())
    remove_old_temp_files(limits.temp_lifetime)


def own_temp_folder(port: int) -> Path:
    """Give this public server a temp folder of its own for Gradio ($GRADIO_TEMP_DIR set to a folder of the one it
    had, named by the port, which no other live server has), emptied: what a killed server on this port left there
    was counted in the new one's disk budget until it was an hour old (277 MB after a kill -9, issue 75). Call it
    before the app is built (Gradio reads the variable when it stores a file). Returns the folder.

    The folder is claimed with a lock held for the life of this process (a killed server's lock goes with it): a
    second server started on the port of a live one is refused here, before it empties the live one's files."""
    folder = upload_dir() / f"defsent-public-{port}"
    if port not in _TEMP_FOLDER_LOCKS:
        _TEMP_FOLDER_LOCKS[port] = _claim(folder.with_name(folder.name + ".lock"), port)
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    os.environ["GRADIO_TEMP_DIR"] = str(folder)
    return folder


_TEMP_FOLDER_LOCKS: dict[int, object] = {}  # port -> the open lock file of its temp folder, held until exit


def _claim(lock_path: Path, port: int):
    """The lock file at `lock_path`, opened and locked; RuntimeError when a live process holds it."""
    try:
        import fcntl
    except ImportError:  # Windows: no advisory locks; a public server there is not run twice on one port
        return None
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    lock = open(lock_path, "a")  # noqa: SIM115 - held open for the life of the server
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        lock.close()
        raise RuntimeError(f"Another public server on port {port} is running (it holds {lock_path}): "
                           "stop it or choose another --port.") from None
    return lock


# The address of the visitor whose request is being handled (app.wiring sets it; None outside a request). Plain
# contextvars, so this module needs no gradio.
VISITOR: contextvars.ContextVar[str | None] = contextvars.ContextVar("visitor", default=None)
COPY_LINGER_S = 30.0  # room for Gradio's copy of a returned file is kept this long after its handler


@dataclass
class Hold:
    """Room reserved for a write under way: `size` bytes for `owner` (an address, or None), until `until`
    (time.monotonic) once released with room kept for a copy, else until released."""
    owner: str | None
    size: int
    until: float | None = None


class DiskBudget:
    """The public disk budget, shared by every write a visitor can cause (issue 61): each reserves its room
    under one lock before writing (`reserve`) and hands it back after (`release`), so that what is on disk
    plus what is reserved never passes `limits.disk_bytes`, however many writes run at once; the counted
    use is the folders' size plus every reservation (a write under way is counted twice: never too little).
    One address may hold at most `limits.address_share` of the budget: its reservations, and the files
    and folders its writes made (`release(own=...)`) while they exist."""

    def __init__(self, limits: PublicLimits):
        self.limits, self.lock = limits, threading.Lock()
        self.holds: dict[int, Hold] = {}
        self.owned: dict[Path, str] = {}  # a file or folder a visitor's write made -> their address
        self._keys = itertools.count()

    def reserve(self, needed: int, what: str, owner: str | None = None) -> int:
        """Reserve `needed` bytes for `what` (a key for `release`); ValueError saying why when the budget or
        `owner`'s share of it has no room for them even after `make_room`."""
        with self.lock:
            self._drop_expired()
            remove_empty_folders()
            used = disk_used() + self.reserved()
            if used + needed > self.limits.disk_bytes:
                make_room(self.limits)
                used = disk_used() + self.reserved()
            if used + needed > self.limits.disk_bytes:
                raise ValueError(_full(used, self.limits.disk_bytes, what, needed))
            share = int(self.limits.disk_bytes * self.limits.address_share)
            mine = self.reserved(owner) + self.owned_bytes(owner) if owner is not None else 0
            if owner is not None and mine + needed > share:
                raise ValueError(f"Your network address already uses {mine / 1e6:,.0f} MB of this public server's "
                                 f"storage for visitors' files (each address may use {share / 1e6:,.0f} MB); "
                                 f"{what} needs {needed / 1e6:,.0f} MB, so nothing was written. Try again once "
                                 "your uploads, saves or downloads have expired.")
            key = next(self._keys)
            self.holds[key] = Hold(owner, needed)
            return key

    def release(self, key: int, own: tuple[Path, ...] = (), copied: bool = False) -> None:
        """The write of reservation `key` has ended: its room is handed back; `own` (what it wrote) counts in its
        owner's share while it exists. With `copied`, room for a copy of `own` (Gradio's of a returned file)
        stays reserved COPY_LINGER_S more seconds."""
        sizes = sum(_bytes(Path(path)) for path in own) if copied else 0
        with self.lock:
            hold = self.holds.pop(key, None)
            if hold is None:
                return
            if sizes > 0:
                self.holds[key] = Hold(hold.owner, min(sizes, hold.size), time.monotonic() + COPY_LINGER_S)
            for path in own if hold.owner is not None else ():
                self.owned[Path(path)] = hold.owner

    def reserved(self, owner: str | None = None) -> int:
        """Bytes reserved now (by `owner` alone, when given)."""
        return sum(h.size for h in self.holds.values() if owner is None or h.owner == owner)

    def owned_bytes(self, owner: str) -> int:
        """Bytes of the files and folders `owner`'s writes made that still exist (the others are forgotten)."""
        total = 0
        for path, who in list(self.owned.items()):
            if not path.exists():
                del self.owned[path]
            elif who == owner:
                total += _bytes(path)
        return total

    def _drop_expired(self) -> None:
        now = time.monotonic()
        for key in [k for k, h in self.holds.items() if h.until is not None and h.until <= now]:
            del self.holds[key]


def _bytes(path: Path) -> int:
    """The size of a file, or of the files under a folder (0 when gone)."""
    try:
        return folder_bytes(path) if path.is_dir() else path.stat().st_size
    except OSError:
        return 0


def _full(used: int, budget: int, what: str, needed: int) -> str:
    return (f"This public server's storage for visitors' files is full ({used / 1e6:,.0f} MB of {budget / 1e6:,.0f} MB "
            f"used; {what} needs {needed / 1e6:,.0f} MB), so nothing was written. Try again later (saves, uploads and "
            "downloads expire), or run DefSent Studio on your own machine.")


_BUDGET: list[DiskBudget] = []  # the disk budget in force: the server's (Backend.disk_budget), from its start


def use_disk_budget(budget: DiskBudget | None) -> None:
    """Hold every visitor's write to `budget` from now on (None: a private server, no budget). The server's start
    (app.handlers.Backend.start) calls it, once; making a Backend does not."""
    _BUDGET[:] = [budget] if budget is not None else []


def disk_budget() -> DiskBudget | None:
    """This server's disk budget; None on a private server."""
    return _BUDGET[0] if _BUDGET else None


def reservation(needed: int, what: str, copied: bool = False) -> Callable[[tuple[Path, ...]], None]:
    """Reserve room for a write of `needed` bytes that the visitor being served (VISITOR) asked for (ValueError
    when there is none); returns the function to call, once, with what was written, when the write has ended
    (with `copied`, room for a copy of it then stays reserved a while: Gradio's of a returned file). Nothing on
    a private server, or for 0 bytes."""
    budget = disk_budget()
    if budget is None or needed <= 0:
        return lambda written=(): None
    key = budget.reserve(needed, what, VISITOR.get())
    return lambda written=(): budget.release(key, tuple(written), copied)


@contextmanager
def reserved(needed: int, what: str, copied: bool = False) -> Iterator[list[Path]]:
    """`reservation` held while the block runs; the block appends what it wrote to the list it is given, to
    count in the visitor's share (nothing when it raises)."""
    release, written = reservation(needed, what, copied), []
    try:
        yield written
    except BaseException:
        release(())
        raise
    release(written)


def guard_write(needed: int, what: str) -> None:
    """Before a write of `needed` bytes that outlives the request (a model's cache, written while it loads):
    ValueError when the budget has no room for it now. Nothing on a private server."""
    with reserved(needed, what):
        pass
