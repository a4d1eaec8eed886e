"""Exploring the space at scale: `reference` (WordNet's definitions and words as searchable collections),
`vocabulary_map` (one 2-D map of every word) and `projector` (the Embedding Projector's TSV files in and out)."""
from .projector import ProjectorPoints, holds_vectors, read_projector, table_columns, write_projector, zip_projector
from .reference import VocabularyTexts
from .vocabulary_map import (
    LABEL_LEVELS,
    Region,
    aligned_layout,
    build_layout,
    build_map,
    default_parent,
    definition_layout,
    kept_definition_positions,
    layout_stamp,
    lay_out,
    load_moves,
    place,
    region_labels,
)

__all__ = [
    "aligned_layout",
    "build_map",
    "default_parent",
    "build_layout",
    "definition_layout",
    "kept_definition_positions",
    "layout_stamp",
    "holds_vectors",
    "LABEL_LEVELS",
    "lay_out",
    "load_moves",
    "place",
    "ProjectorPoints",
    "read_projector",
    "Region",
    "region_labels",
    "table_columns",
    "VocabularyTexts",
    "write_projector",
    "zip_projector",
]
