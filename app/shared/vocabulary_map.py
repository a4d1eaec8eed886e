"""One model's map of every word in the app (the Map tab's "Every word" and "Every definition"): its layout, named
regions, the moves of a fine-tune's own words, the points' colours, and every definition placed on it. Each is built
once a layout version and kept in the cache of the model it belongs to (`ActiveModel.once`); laying the map out and
placing the definitions take minutes, so each runs in the background (`laying_out`, `placing`)."""
from __future__ import annotations

import numpy as np

from core.engine import Engine
from core.explore import (LABEL_LEVELS, Region, build_map, default_parent, definition_layout, kept_definition_positions,
                          layout_stamp, load_moves, region_labels)
from core.text import short_reason
from core.words import frequency_bands

from .jobs import BackgroundOnce
from .services import POS_NAMES


class VocabularyMap:
    """The map of every word of one loaded model (`ActiveModel.vocabulary_map`)."""

    def __init__(self, model) -> None:
        self.model = model  # the ActiveModel it belongs to: its engine, spec, cache (`once`) and `model_flag`
        self.placing = BackgroundOnce("definitions-on-the-map", self.definition_positions, self.definitions_placed)
        self.laying_out = BackgroundOnce("map-of-every-word", self._lay_out, self._laid_out)
        self.failure = ""  # why preparing the map at the model's start failed (`failed`); the Map tab says it

    def failed(self, err: BaseException) -> None:
        """Keep why preparing the map failed, in a line for the user (the Map tab shows it)."""
        self.failure = short_reason(err)

    @property
    def engine(self) -> Engine:
        return self.model.engine

    def layout(self) -> np.ndarray:
        """The model's map of every word (C, 2), loaded once a version; ValueError saying how to build it."""
        return self.model.once(self.layout_key(), lambda: np.load(self.engine.vocabulary_layout_path()))

    def regions(self) -> list[list[Region]]:
        """The map of every word's named regions at each zoom level (core.explore.vocabulary_map.region_labels),
        computed once per layout (a few seconds)."""
        layout = self.layout()
        return self.model.once(f"regions-{self.layout_key()}",
                               lambda: region_labels(self.engine.vocabulary.scorer, layout))

    def moves(self) -> list[dict]:
        """This model's own words' moves on its map aligned to its parent's (core.explore.vocabulary_map.lay_out)."""
        return self.model.once(f"moves-{self.layout_key()}",
                               lambda: load_moves(self.engine.vocabulary_layout_path()))

    def layout_key(self) -> str:
        """Names the current layout file's version: what is derived from the layout is cached under it."""
        return f"layout-{self.engine.vocabulary_layout_path().name}-{self.layout_stamp()}"

    def layout_stamp(self) -> int:
        """The current layout file's version (core.explore.layout_stamp); ValueError saying how to build it."""
        path = self.engine.vocabulary_layout_path()
        if not path.is_file():
            raise ValueError(f"No map of every word for this model yet: the Map tab lays it out, or `python -m core "
                             f"vocabulary-map{self.model.model_flag()}` (minutes; docs/results.md).")
        return layout_stamp(path)

    def _laid_out(self) -> bool:
        return self.engine.vocabulary_layout_path().is_file()

    def _lay_out(self) -> None:
        """This model's map of every word, laid out and kept (core.explore.vocabulary_map.build_map): a fine-tune's
        on the shipped model's map, loaded for this with its exact vectors (and laid out first if need be)."""
        parent = default_parent(self.engine, self.model.spec.path)
        build_map(self.engine, Engine.load_with_exact_vectors(parent) if parent is not None else None)

    def word_groups(self, colour: str = "part of speech") -> list[str]:
        """Each open-vocabulary word's colour on the map of every word: its main part of speech, its
        region (the middle zoom level's names) or its frequency band."""
        candidates = self.engine.vocabulary.scorer.candidates
        if colour == "cluster":
            return self.model.once(f"word-groups-region-{self.layout_key()}", self._region_groups)
        build = {"part of speech": lambda: [candidates.filters.main_pos(w) or "other" for w in candidates.words],
                 "frequency": lambda: frequency_bands(candidates.words)}[colour]
        return self.model.once(f"word-groups-{colour}-{candidates.fingerprint()}", build)

    def _region_groups(self) -> list[str]:
        groups = [""] * len(self.engine.vocabulary.scorer.candidates.words)
        for region in self.regions()[len(LABEL_LEVELS) // 2]:  # the middle zoom level's regions
            for row in region.members.tolist():
                groups[row] = region.name
        return groups

    def definition_positions(self) -> np.ndarray:
        """Every definition of the open vocabulary on the map of every word (G, 2): on its nearest word, a
        little jittered (core.explore.vocabulary_map.definition_layout); read from the user cache, or placed
        once per layout version and kept there."""
        stamp = self.layout_stamp()  # taken before the layout is read: positions never outlive it
        layout = self.layout()
        return self.model.once(f"definitions-{stamp}", lambda: definition_layout(
            self.engine.vocabulary.scorer, layout, self.engine.vocabulary_layout_path(), stamp))

    def definitions_placed(self) -> bool:
        """Whether every definition's place on the current map of every word is ready (kept or built)."""
        stamp = self.layout_stamp()
        if self.model.built(f"definitions-{stamp}"):
            return True
        count = len(self.engine.vocabulary.scorer.candidates.definitions)
        kept = kept_definition_positions(self.engine.vocabulary_layout_path(), stamp, count)
        if kept is not None:  # read once: `definition_positions` takes them from here
            self.model.once(f"definitions-{stamp}", lambda: kept)
        return kept is not None

    def definition_groups(self, colour: str = "part of speech") -> list[str]:
        """Each definition's colour on the map of every word: its part of speech, the region (the middle zoom
        level's) whose centre is nearest it on the map, or the frequency band of the first word it defines."""
        candidates = self.engine.vocabulary.scorer.candidates
        if colour == "cluster":
            return self.model.once(f"definition-groups-region-{self.layout_key()}", self._definition_regions)
        if colour == "frequency":
            bands = self.word_groups("frequency")
            return self.model.once(f"definition-groups-frequency-{candidates.fingerprint()}",
                                   lambda: [bands[rows[0]] for rows in candidates.defined_rows])
        if colour != "part of speech":
            raise ValueError(f"unknown colour {colour!r}")
        return self.model.once(f"definition-groups-pos-{candidates.fingerprint()}",
                               lambda: [POS_NAMES.get(tag, "other") for tag in candidates.definition_pos])

    def _definition_regions(self) -> list[str]:
        regions = self.regions()[len(LABEL_LEVELS) // 2]
        centres = np.array([[r.x, r.y] for r in regions], dtype=np.float32)  # (R, 2)
        positions = self.definition_positions()  # (G, 2)
        parts = np.array_split(positions, max(1, -(-len(positions) // 16_384)))  # at most 16,384 rows each
        nearest = np.concatenate([((part[:, None] - centres[None]) ** 2).sum(-1).argmin(1) for part in parts])  # (n x R)
        return [regions[i].name for i in nearest.tolist()]
