"""2-D / 3-D projections of sentence vectors: PCA (instant) and UMAP (imported lazily, warmed up in
a background thread because numba compiles it on first use), with a small result cache.

Until UMAP is warm, a UMAP request is answered with PCA and a note saying so.
"""
from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from core.runtime import check_cancelled

from ..settings import configure_numba_cache

log = logging.getLogger(__name__)
METHODS = ("UMAP", "PCA")
MIN_UMAP_POINTS = 10
CACHED = "Cached result."  # a projection's note when the cache answered (its seconds: when it was computed)
WARMUP_SIZES = (1000, 5000)  # below 4,096 points UMAP finds neighbours exactly, above by NN-descent


@dataclass
class Projection:
    """Coordinates (n, dims) and how they were made."""
    coords: np.ndarray
    method: str
    seconds: float
    note: str = ""


def pca(vectors: np.ndarray, dims: int = 2) -> np.ndarray:
    """Principal components (n, dims) of the rows (n, d), via the eigenvectors of the smaller of the d x d scatter
    matrix and the n x n Gram matrix (a few hundred points of 4,096-d: the d x d one took 10-20 s)."""
    x = np.asarray(vectors, dtype=np.float64)
    x = x - x.mean(axis=0)
    if len(x) < x.shape[1]:  # x = U S V^T: the scores x V = U S, from x x^T = U S^2 U^T
        eigenvalues, eigenvectors = np.linalg.eigh(x @ x.T)  # (n, n), ascending eigenvalues
        coords = eigenvectors[:, ::-1][:, :dims] * np.sqrt(np.clip(eigenvalues[::-1][:dims], 0, None))
    else:
        _, eigenvectors = np.linalg.eigh(x.T @ x)  # (d, d), ascending eigenvalues
        coords = x @ eigenvectors[:, ::-1][:, :dims]
    if coords.shape[1] < dims:  # fewer dimensions than asked for: pad with zeros
        coords = np.pad(coords, ((0, 0), (0, dims - coords.shape[1])))
    return coords.astype(np.float32)


class _CancelAtEachEpoch:
    """A stand-in for the terminal that UMAP's epoch progress bar writes to: it writes nothing and
    raises core.runtime.cancel.Cancelled once the request was cancelled. UMAP's layout loop has no other
    hook, and its epochs are most of a map's seconds."""

    def write(self, _text: str) -> None:
        check_cancelled()

    def flush(self) -> None:
        check_cancelled()


# tqdm keywords: a bar drawn after every epoch (no minimum interval) into the checking stand-in.
EPOCH_CHECKS = {"disable": False, "file": _CancelAtEachEpoch(), "mininterval": 0, "miniters": 1, "delay": 0}


def umap_fit(vectors: np.ndarray, dims: int = 2, seed: int = 0) -> np.ndarray:
    """UMAP (cosine metric) of the rows; imports umap-learn on first call."""
    configure_numba_cache()
    import umap

    n_neighbors = max(2, min(15, len(vectors) - 1))
    reducer = umap.UMAP(n_components=dims, n_neighbors=n_neighbors, metric="cosine", min_dist=0.1,
                        random_state=seed, n_jobs=1, tqdm_kwds=dict(EPOCH_CHECKS))  # UMAP adds keys
    return reducer.fit_transform(np.asarray(vectors, dtype=np.float32)).astype(np.float32)


class Projector:
    """Projects point sets, caches results, and tracks whether UMAP is warm."""

    def __init__(self, cache_size: int = 16):
        self._cache: OrderedDict[tuple, Projection] = OrderedDict()
        self._cache_size = cache_size
        self._lock = threading.Lock()
        self._umap_ready = threading.Event()
        self.umap_state = "off (no warm-up was asked for)"
        self.umap_pending = False  # a warm-up is scheduled or running: the UI polls the status meanwhile

    @property
    def umap_ready(self) -> bool:
        return self._umap_ready.is_set()

    def expect_warm_up(self) -> None:
        """Announce a `warm_up` that will start later (the app delays it after the model loads)."""
        self.umap_state, self.umap_pending = "waiting to warm up", True

    def warm_up(self, sizes: tuple[int, ...] = WARMUP_SIZES) -> None:
        """Import UMAP and fit it on random data of each size, so numba compiles (or loads its cache)."""
        self.umap_state, self.umap_pending = "warming up", True
        start = time.perf_counter()
        try:
            rng = np.random.default_rng(0)
            for size in sizes:
                umap_fit(rng.normal(size=(size, 16)).astype(np.float32))
        except Exception as err:  # UMAP stays unavailable; PCA keeps working
            log.exception("UMAP warm-up failed")
            self.umap_state, self.umap_pending = f"unavailable ({type(err).__name__}: {err})", False
            return
        self.umap_state = f"ready (warmed up in {time.perf_counter() - start:.0f} s)"
        self._umap_ready.set()
        self.umap_pending = False

    def status(self) -> str:
        """One line for the UI."""
        if self.umap_ready:
            return f"UMAP is {self.umap_state}."
        until = " until it is ready" if self.umap_pending else ""
        return f"UMAP is {self.umap_state}: maps are drawn with PCA (instant){until}."

    def project(self, vectors: np.ndarray, method: str = "UMAP", dims: int = 2) -> Projection:
        """Project `vectors` (n, d) to `dims` (2 or 3) dimensions; cached by content."""
        if method not in METHODS:
            raise ValueError(f"Unknown projection {method!r}; choose UMAP or PCA.")
        if dims not in (2, 3):
            raise ValueError("A map has 2 or 3 dimensions.")
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        if len(vectors) < 2:
            raise ValueError("A map needs at least two points.")
        note = ""
        if method == "UMAP" and len(vectors) < MIN_UMAP_POINTS:
            method, note = "PCA", f"UMAP needs at least {MIN_UMAP_POINTS} points; showing PCA."
        elif method == "UMAP" and not self.umap_ready:
            method, note = "PCA", f"UMAP is {self.umap_state}; showing PCA meanwhile."
        key = (method, dims, hashlib.sha1(vectors.tobytes()).hexdigest(), vectors.shape)
        with self._lock:
            cached = self._cache.get(key)
            if cached is not None:
                self._cache.move_to_end(key)
                return Projection(cached.coords, cached.method, cached.seconds, note or CACHED)
        start = time.perf_counter()
        coords = umap_fit(vectors, dims) if method == "UMAP" else pca(vectors, dims)
        result = Projection(coords, method, time.perf_counter() - start, note)
        with self._lock:
            self._cache[key] = result
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        return result
