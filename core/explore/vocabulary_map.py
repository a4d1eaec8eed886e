"""One map of every word: a 2-D layout of the open vocabulary's 147k words and phrases, computed once per
model and kept, so that the map stays the same and can be learned like a real one (issue 39, item 2).

    python -m core vocabulary-map          # UMAP of the shipped model's words: minutes on 2 cores, once

The definitions (117k WordNet glosses) are points of the same map: each on its nearest word, plus a small
seeded jitter (`definition_layout`), computed once per layout and kept beside it.

The layout is UMAP (cosine, 15 neighbours) of the word vectors the reverse dictionary scores
(`OpenScorer.vectors_of("word")`), saved in the user cache under the open vocabulary's cache name, so a
fine-tuned model gets its own, on its parent's map (`aligned_layout`: the words it kept keep their places,
so a move means the model moved). New points (a description, an analogy's vector) land on it without
recomputing: on their nearest word. Measured (research/placement_probe.py at 666302e, docs/results.md) against a
cosine-weighted mean of the 10 nearest words' positions, UMAP's own transform and a regression: the
nearest word keeps the most of a new point's 10 nearest words around it on the map.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from ..atomic import save_json_atomically, save_npy_atomically
from ..checkpoint import DEFAULT_CHECKPOINT
from ..paths import user_cache_dir
from ..words.open_vocab import OpenScorer
from ..words.word_prior import zipf_frequencies

LABEL_LEVELS = (12, 48, 192)  # regions named at each zoom level: the whole map, about x4, about x16
LABEL_WORDS = 2  # words that name a region
LABEL_POOL = 200  # a region's words nearest its mean vector, of which the most common name it
DEFINITION_BATCH = 1_024  # definitions placed at a time: a (1,024 x 147k) float32 cosine product, 0.6 GB
DEFINITION_JITTER = 0.5  # a definition's distance from its nearest word, at most, in typical word spacings
MAX_MOVES = 500  # the user's words whose before/after move an aligned layout keeps (the first ones)
PLACEMENT_NEIGHBOURS = 1  # the nearest word's position: a mean of several lands between their clusters
UMAP_NEIGHBOURS = 15


def layout_path(cache_name: str) -> Path:
    """Where the layout of the open vocabulary cached as `cache_name` is kept (the user cache)."""
    return user_cache_dir("vocabulary-map") / cache_name.replace(".safetensors", ".npy")


def build_layout(scorer: OpenScorer, seed: int = 0) -> np.ndarray:
    """(C, 2) float32 positions of `scorer.candidates.words`: UMAP of their unit word vectors."""
    import umap

    vectors = scorer.vectors_of("word", torch.arange(len(scorer.candidates))).numpy()  # (C, d)
    neighbours = min(UMAP_NEIGHBOURS, len(vectors) - 1)
    reducer = umap.UMAP(n_components=2, n_neighbors=neighbours, metric="cosine", random_state=seed,
                        low_memory=True, init="spectral" if len(vectors) > neighbours + 2 else "random")
    return reducer.fit_transform(vectors).astype(np.float32)


def aligned_layout(scorer: OpenScorer, parent: OpenScorer, parent_coords: np.ndarray,
                   batch: int = DEFINITION_BATCH) -> np.ndarray:
    """(C, 2) layout of a fine-tuned model's words on its parent's map `parent_coords` (C', 2), still by
    construction: the fine-tune's word vectors are rotated onto the parent's (`procrustes` over the words
    both hold), then each word lands on the parent word nearest its rotated vector. A word whose meaning the
    fine-tune kept is nearest itself and keeps its exact place (99.7 % of a real fine-tune's words,
    docs/results.md); a word it moved lands on the word it now means; a word the parent lacks, on its
    nearest parent word. Why not UMAP again from the parent's positions: it moved every word (a median
    3.5 % of the map's width on that fine-tune), so a move on the map did not mean that the model moved."""
    words = scorer.candidates.words
    where = {w: i for i, w in enumerate(parent.candidates.words)}
    shared = np.array([i for i, w in enumerate(words) if w in where], dtype=np.int64)  # (S,)
    if len(shared) < 3:
        raise ValueError("The model shares fewer than 3 words with the map it should align to.")
    theirs = parent.vectors_of("word", torch.arange(len(parent.candidates.words))).float()  # (C', d) unit
    ours = scorer.vectors_of("word", torch.from_numpy(shared)).float()  # (S, d) unit
    rotation = procrustes(ours, theirs[[where[words[i]] for i in shared]])  # (d, d)
    coords = np.empty((len(words), 2), dtype=np.float32)
    for start in range(0, len(words), batch):  # a (batch x C') product at a time: memory stays bounded
        rows = torch.arange(start, min(start + batch, len(words)))
        rotated = scorer.vectors_of("word", rows).float() @ rotation  # (b, d), still unit
        coords[start:start + len(rows)] = parent_coords[(rotated @ theirs.T).argmax(1).numpy()]  # (b, C') cosines
    return coords


def procrustes(source: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """(d, d) the rotation R that takes the rows of `source` (n, d) closest to those of `target` (n, d) in
    least squares (orthogonal Procrustes). A fine-tune turns its whole space: on a real one the unit word
    vectors keep a median cosine of .88 with the parent's, .94 once rotated back."""
    u, _, vt = torch.linalg.svd(source.T @ target)  # (d, d), (d,), (d, d)
    return u @ vt


def word_moves(parent: OpenScorer, parent_coords: np.ndarray, before: np.ndarray, words: list[str],
               child_words: list[str], child_coords: np.ndarray) -> list[dict]:
    """[{word, before: [x, y], after: [x, y]}] for `words`: before, where the parent model's vectors
    `before` (n, d) of them (their definitions, as the parent read them) land on its map; after,
    their place on the fine-tuned model's map. Not where the fine-tune reads the definitions: a
    description lands on its nearest word by cosine, which a fine-tune hardly changes (the median move
    of a real one's own words was 0), while what it taught is that the definitions answer the word."""
    row = {w: i for i, w in enumerate(child_words)}
    landed = place(parent, parent_coords, before)  # (n, 2)
    return [{"word": w, "before": [float(x) for x in landed[i]], "after": [float(x) for x in child_coords[row[w]]]}
            for i, w in enumerate(words) if w in row]


def lay_out(engine, parent=None, seed: int = 0) -> tuple[np.ndarray, list[dict]]:
    """(layout (C, 2), moves) of the Engine `engine`'s open vocabulary: on the map of the Engine `parent`
    (its layout built; `aligned_layout`), with the moves of `engine`'s own dictionary words; alone (UMAP)
    without one."""
    if parent is None:
        return build_layout(engine.words.open_vocab, seed), []
    parent_path = parent.vocabulary_layout_path()
    if not parent_path.is_file():
        raise ValueError(f"The map to align to is not laid out yet ({parent_path.name}): run `python -m core "
                         f"vocabulary-map` for that model first.")
    parent_coords = np.load(parent_path)
    words = engine.words.open_vocab.candidates.words
    coords = aligned_layout(engine.words.open_vocab, parent.words.open_vocab, parent_coords)
    definitions: dict[str, list[str]] = {}
    for entry in engine.words.user_dictionary:
        definitions.setdefault(entry.word, []).append(entry.definition)
    own = list(definitions)[:MAX_MOVES]
    if not own:
        return coords, []
    before = np.stack([parent.encode(definitions[w], normalize=True).mean(0) for w in own])  # (n, d)
    return coords, word_moves(parent.words.open_vocab, parent_coords, before, own, words, coords)


def build_map(engine, parent=None, seed: int = 0) -> tuple[Path, list[dict], int]:
    """Lay out the Engine `engine`'s map of every word (on the Engine `parent`'s map when given, which is
    laid out first if it has none: `lay_out`), keep it and its moves in the user cache, then place every
    definition on it; returns (the layout's path, the moves, the number of definitions placed)."""
    if parent is not None and not parent.vocabulary_layout_path().is_file():
        build_map(parent, seed=seed)
    coords, moves = lay_out(engine, parent, seed)
    path = engine.vocabulary_layout_path()
    save_moves(moves, path)  # first: a layout read in between would be kept with no moves for its version
    save_layout(coords, path)
    return path, moves, len(definition_layout(engine.words.open_vocab, coords, path, layout_stamp(path), seed))


def default_parent(engine, model: str | Path | None) -> Path | None:
    """The model whose map the map of `engine` (loaded from `model`; None: the shipped one) goes on by
    default: the shipped model's, for a fine-tune with its own words; None (laid out alone) otherwise."""
    shipped = model is None or Path(model).resolve() == DEFAULT_CHECKPOINT.resolve()
    return DEFAULT_CHECKPOINT if engine.words.user_dictionary and not shipped else None


def save_moves(moves: list[dict], layout: Path) -> None:
    """Write `moves` beside `layout` atomically; no moves: no file (an older one is removed)."""
    path = moves_path(layout)
    if not moves:
        path.unlink(missing_ok=True)
        return
    save_json_atomically(path, moves, indent=None)


def load_moves(layout: Path) -> list[dict]:
    """The moves saved beside `layout` (empty when it was laid out alone)."""
    path = moves_path(layout)
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else []


def moves_path(layout: Path) -> Path:
    """Where the user's words' before/after positions of an aligned layout are kept, beside it."""
    return layout.with_suffix(".moves.json")


def save_layout(coords: np.ndarray, path: Path) -> None:
    """Write atomically: a killed build leaves no half layout."""
    save_npy_atomically(path, coords)


def place(scorer: OpenScorer, coords: np.ndarray, vectors: np.ndarray, k: int = PLACEMENT_NEIGHBOURS) -> np.ndarray:
    """(B, 2) positions of vectors (B, d) on the layout `coords` (C, 2): the mean position of their k
    nearest words (cosine), weighted by those cosines (clipped at a small positive floor); by default
    k = 1, the nearest word's position (measured best: module docstring)."""
    unit = torch.nn.functional.normalize(torch.from_numpy(np.atleast_2d(vectors)).float(), dim=1)  # (B, d)
    top = scorer.cosines(unit, "word").topk(min(k, len(coords)))  # (B, k)
    weights = top.values.clamp(min=1e-3).numpy()  # (B, k)
    return (coords[top.indices.numpy()] * weights[..., None]).sum(1) / weights.sum(1, keepdims=True)


def layout_stamp(layout: Path) -> int:
    """The version of the layout file `layout` (its modification time, ns): what is derived from it is kept
    under it. Layouts are replaced atomically, so a layout read after its stamp is at least that new."""
    return os.stat(layout).st_mtime_ns


def definitions_path(layout: Path, stamp: int) -> Path:
    """Where the definitions' positions on version `stamp` of the layout file `layout` are kept, beside it."""
    return layout.with_name(f"{layout.stem}.definitions-{stamp}.npy")


def place_definitions(scorer: OpenScorer, coords: np.ndarray, seed: int = 0,
                      batch: int = DEFINITION_BATCH) -> np.ndarray:
    """(G, 2) float32 positions of `scorer.candidates.definitions` on the word layout `coords` (C, 2): each on
    its nearest word (what `place` does with k = 1, the measured best way to land a new point), `batch`
    definitions at a time so memory stays bounded, then moved by a seeded jitter, uniform in a disc of
    DEFINITION_JITTER times the typical distance between neighbouring words. Why the jitter: many
    definitions share a nearest word (a word's own senses, a hub word's many neighbours), and without it
    they would be one point, a pixel hiding all but one of them; half the typical spacing keeps most of
    them nearer their own word than the next one, so the map still reads as the map of words.

    The cosines are float products of the unit vectors the scorer holds (`vectors_of`), not its int8
    product (`cosines`, what `place` uses), which multiplies one query row at a time: 3.5 min for the
    shipped model's 117k definitions on 2 busy cores, where `place` would take 35-60 min; 255 of 256
    sampled definitions land on the same word either way (docs/results.md)."""
    count = len(scorer.candidates.definitions)
    words = scorer.vectors_of("word", torch.arange(len(coords))).float()  # (C, d) unit
    landed = np.empty((count, 2), dtype=np.float32)
    for start in range(0, count, batch):
        rows = torch.arange(start, min(start + batch, count))
        unit = torch.nn.functional.normalize(scorer.vectors_of("definition", rows).float(), dim=1)  # (b, d)
        landed[start:start + len(rows)] = coords[(unit @ words.T).argmax(1).numpy()]  # (b, C) cosines
    rng = np.random.default_rng(seed)
    radius = DEFINITION_JITTER * word_spacing(coords) * np.sqrt(rng.random(count))  # (G,) uniform in the disc
    angle = 2 * np.pi * rng.random(count)  # (G,)
    return (landed + np.stack([radius * np.cos(angle), radius * np.sin(angle)], 1)).astype(np.float32)


def word_spacing(coords: np.ndarray, sample: int = 20_000, seed: int = 0) -> float:
    """The typical distance between neighbouring words of the layout `coords` (C, 2): the median distance
    from a word (a sample of `sample`) to its nearest other word; 0 for fewer than 2 words."""
    from scipy.spatial import cKDTree

    if len(coords) < 2:
        return 0.0
    rows = np.random.default_rng(seed).choice(len(coords), min(sample, len(coords)), replace=False)
    distances = cKDTree(coords).query(coords[rows], k=2)[0][:, 1]  # (n,) the first is the word itself
    return float(np.median(distances))


def definition_layout(scorer: OpenScorer, coords: np.ndarray, layout: Path, stamp: int, seed: int = 0) -> np.ndarray:
    """(G, 2) positions of every definition on the word layout `coords`, version `stamp` of the file `layout`
    (read after taking the stamp): kept beside it (`definitions_path`) once placed (`place_definitions`),
    written atomically, the positions on older versions removed."""
    kept = kept_definition_positions(layout, stamp, len(scorer.candidates.definitions))
    if kept is not None:
        return kept
    positions = place_definitions(scorer, coords, seed)
    path = definitions_path(layout, stamp)
    save_npy_atomically(path, positions)
    for older in layout.parent.glob(f"{layout.stem}.definitions-*.npy"):
        if older != path:
            older.unlink(missing_ok=True)
    return positions


def kept_definition_positions(layout: Path, stamp: int, count: int) -> np.ndarray | None:
    """The `count` definitions' positions kept for version `stamp` of the layout file `layout`, or None
    (none placed on that version, or a file that cannot be read as such)."""
    try:
        kept = np.load(definitions_path(layout, stamp))
    except (OSError, ValueError):
        return None
    return kept if kept.shape == (count, 2) else None


@dataclass
class Region:
    """A named part of the map: its members' mean position, the words that name it, its members' rows."""
    x: float
    y: float
    name: str
    members: np.ndarray = field(repr=False)

    @property
    def size(self) -> int:
        return len(self.members)


def region_labels(scorer: OpenScorer, coords: np.ndarray, levels: tuple[int, ...] = LABEL_LEVELS,
                  seed: int = 0) -> list[list[Region]]:
    """For each level n, the layout's n k-means regions (in 2-D), each named by its most common words
    among the LABEL_POOL nearest (cosine) to its members' mean vector: central and readable (single words
    before phrases, whose frequencies are their words')."""
    from sklearn.cluster import MiniBatchKMeans

    unit = scorer.vectors_of("word", torch.arange(len(coords))).float().numpy()  # (C, d)
    words = scorer.candidates.words
    common = zipf_frequencies(words)  # (C,)
    # A phrase's frequency is read off its words ("henry sweet" 4.5, as common as "bird"): single words name first.
    phrase = np.array([" " in w or "-" in w for w in words])  # (C,)
    result = []
    for n in levels:
        n = min(n, len(coords))
        assigned = MiniBatchKMeans(n, random_state=seed, n_init=1, batch_size=4096).fit_predict(coords)  # (C,)
        result.append([_region(unit, common, phrase, words, coords, np.flatnonzero(assigned == c))
                       for c in range(n) if (assigned == c).any()])
    return result


def _region(unit: np.ndarray, common: np.ndarray, phrase: np.ndarray, words: list[str], coords: np.ndarray,
            members: np.ndarray) -> Region:
    central = members[np.argsort(-(unit[members] @ unit[members].mean(0)))[:LABEL_POOL]]  # (<= POOL,)
    named = central[np.lexsort((-common[central], phrase[central]))[:LABEL_WORDS]]  # single words, then commonest
    x, y = coords[members].mean(0)
    return Region(float(x), float(y), ", ".join(words[i] for i in named), members)
