"""The Embedding Projector's TSV files (core/explore/projector.py): round trip and every bad input named."""
from __future__ import annotations

import numpy as np
import pytest

import core.explore.projector as projector
from core.explore.projector import ProjectorPoints, read_projector, write_projector


def test_written_points_are_read_back_with_their_columns(tmp_path):
    points = ProjectorPoints(np.array([[0.5, -1.25], [3.0, 1e-3], [0.0, 2.0]], dtype=np.float32),
                             {"word": ["ice cream", "dog\tdays", ""], "pos": ["noun", "noun", "verb"]})
    vectors, metadata = write_projector(tmp_path / "out", points)
    back = read_projector(vectors, metadata)
    np.testing.assert_allclose(back.vectors, points.vectors, rtol=1e-6)
    assert back.columns == {"word": ["ice cream", "dog days", ""], "pos": ["noun", "noun", "verb"]}
    assert back.labels == ["ice cream", "dog days", ""]
    assert read_projector(vectors).labels == ["point 1", "point 2", "point 3"]


def test_one_metadata_column_has_no_header(tmp_path):
    (tmp_path / "v.tsv").write_text("1\t2\n3\t4\n", encoding="utf-8")
    (tmp_path / "m.tsv").write_text("cat\ndog\n", encoding="utf-8")
    assert read_projector(tmp_path / "v.tsv", tmp_path / "m.tsv").columns == {"label": ["cat", "dog"]}


@pytest.mark.parametrize("vectors, metadata, message", [
    ("1\t2\n3\n", None, "v.tsv line 2: 1 numbers, where line 1 has 2"),
    ("1\t2\nnan\t4\n", None, "v.tsv line 2: NaN or infinite value"),
    ("1\tinf\n", None, "v.tsv line 1: NaN or infinite value"),
    ("1\tx\n", None, "v.tsv line 1: not a row of numbers"),
    ("1\t2\n\n3\t4\n", None, "v.tsv line 2: not a row of numbers"),
    ("", None, "holds no vectors"),
    ("1\t2\n3\t4\n", "cat\n", "m.tsv has 1 rows for 2 vectors"),
    ("1\t2\n3\t4\n", "word\tpos\ncat\tn\ndog\n", "m.tsv line 3: 1 columns, where the header has 2"),
    ("1\t2\n3\t4\n", "word\tpos\ncat\tn\n", "m.tsv has 1 rows under its header for 2 vectors"),
    ("1\t2\n3\t4\n", "word\tpos\tword\ncat\tn\tc\ndog\tv\td\n", "m.tsv line 1: the column name 'word' is used twice"),
    ("1\t2\n", "\t".join(f"c{i}" for i in range(101)) + "\n" + "\t".join("x" * 101) + "\n",
     "m.tsv line 1: 101 columns; at most 100 can be read"),
])
def test_bad_files_are_refused_naming_the_line(tmp_path, vectors, metadata, message):
    (tmp_path / "v.tsv").write_text(vectors, encoding="utf-8")
    if metadata is not None:
        (tmp_path / "m.tsv").write_text(metadata, encoding="utf-8")
    with pytest.raises(ValueError, match=message):
        read_projector(tmp_path / "v.tsv", tmp_path / "m.tsv" if metadata is not None else None)


def test_bounds(tmp_path, monkeypatch):
    (tmp_path / "v.tsv").write_text("1\t2\n3\t4\n5\t6\n", encoding="utf-8")
    with pytest.raises(ValueError, match="3 points; at most 2"):
        read_projector(tmp_path / "v.tsv", max_points=2)
    monkeypatch.setattr(projector, "MAX_WIDTH", 1)
    with pytest.raises(ValueError, match="vectors of at most 1"):
        read_projector(tmp_path / "v.tsv")
    monkeypatch.setattr(projector, "MAX_WIDTH", 4)
    monkeypatch.setattr(projector, "MAX_FILE_BYTES", 5)
    with pytest.raises(ValueError, match="at most 0 MB"):
        read_projector(tmp_path / "v.tsv")
    (tmp_path / "latin1.tsv").write_bytes(b"caf\xe9\n")
    monkeypatch.setattr(projector, "MAX_FILE_BYTES", 1000)
    with pytest.raises(ValueError, match="not UTF-8"):
        read_projector(tmp_path / "v.tsv", tmp_path / "latin1.tsv")
