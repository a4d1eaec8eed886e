"""The Map tab's handlers against a tiny random engine (no browser; UMAP stubbed or absent): maps of
sentences, words and files, selections, projector files in and out, the projection cache and UMAP's
warm-up. The fixtures are in tests/conftest.py.
"""
from __future__ import annotations

import json
import re

import numpy as np
import pytest

from app.shared import services as sv
from app.handlers import Session
from app.views.projection import CACHED, Projector, pca
from core.words.word_prior import frequency_bands
from tests.conftest import TINY_WORDS

pytestmark = pytest.mark.usefixtures("cache_in_tmp")  # the cache in tmp_path: tests/conftest.py


# ---- map ---------------------------------------------------------------------------------------------

def test_draw_map_then_search(studio):
    session = Session()
    figure, status, session = studio.map.draw_map("my sentences", 0, "a dog\na cat\nthe king\nwine", None, "UMAP",
                                              "3-D", "cluster", session)
    assert "PCA" in status and "UMAP needs at least 10 points" in status
    assert session.map.coords.shape == (4, 3) and figure.data[0].type == "scatter3d"
    figure, note, rows = studio.map.search_map("dog", 2, session)
    assert note.startswith("1 point contains 'dog'; 2 points ringed") and rows[0][2] == "a dog"
    assert figure.data[-1].name == "search hits" and len(figure.data[-1].x) == 2  # as many rings as it says (issue 76)
    labels = [t for t in figure.data if t.mode == "text"]  # a few texts of one's own: each named on the map
    assert len(labels) == 1 and sorted(labels[0].text) == ["a cat", "a dog", "the king", "wine"]
    from app.shared.services import SAMPLE
    with pytest.raises(ValueError, match="map of every word only"):  # this map's layout is its own
        studio.map.search_map("dog", 2, session, SAMPLE)
    with pytest.raises(ValueError, match="between 1 and 30"):
        studio.map.search_map("dog", 31, session)


def test_map_of_vocabulary_words_coloured_by_part_of_speech(studio):
    figure, _, session = studio.map.draw_map("vocabulary words", 30, "", None, "PCA", "2-D", "part of speech",
                                             Session())
    assert {t.name for t in figure.data if t.mode == "markers"} <= {"noun", "verb", "adjective", "adverb"}
    assert len(session.map.corpus.texts) == 30
    figure, _, session = studio.map.draw_map("vocabulary words", 30, "", None, "PCA", "2-D", "frequency", Session())
    assert session.map.groups == frequency_bands(session.map.corpus.texts)
    assert [t.name for t in figure.data if t.mode == "markers"] == list(dict.fromkeys(session.map.groups))
    assert [t.name for t in figure.data if t.mode == "text"] == ["labels"]  # 30 points: each named on the map


def test_a_selection_on_the_map_lists_its_points_and_their_csv(studio, monkeypatch, tmp_path):
    import csv
    import html

    from core.spreadsheet import inert as _inert
    from app.handlers.map import _plain

    assert [_inert(v) for v in ("=1+1", "-x", "ok", 3)] == ["'=1+1", "'-x", "ok", 3]  # no formula runs
    monkeypatch.setattr("app.shared.export.download_dir", lambda: tmp_path / "downloads")
    with pytest.raises(ValueError, match="Draw a map first"):
        studio.map.select_map("[[0, 0]]", Session())
    with pytest.raises(ValueError, match="still being prepared: search it once it is drawn"):  # not "Draw a map"
        studio.map.search_map("dog", 2, Session(waiting="every word (laid out once per model)"))
    figure, _, session = studio.map.draw_map("vocabulary words", 30, "", None, "PCA", "2-D", "part of speech",
                                             Session())
    # the browser names points by trace and position: map them back (the last group's; the points' names follow)
    trace = max(i for i, t in enumerate(figure.data) if t.mode == "markers")
    pairs = [[trace, p] for p in range(len(figure.data[trace].x))] + [[trace + 5, 0]]  # a search's trace: not a point
    rows, note, path = studio.map.select_map(json.dumps(pairs), session)
    names = [html.unescape(t) for t in figure.data[trace].text]  # hover texts: escaped words
    assert note.startswith(f"{len(names)} point(s) selected") and sorted(r[0] for r in rows) == sorted(names)
    assert {r[1] for r in rows} == {figure.data[trace].name}
    with open(path, encoding="utf-8") as f:
        assert list(csv.reader(f))[1:] == [[str(v) for v in r] for r in rows]
    assert studio.map.select_map("[]", session)[2] is None
    word, group = rows[0][0], rows[0][1]
    clicked = studio.map.map_point(json.dumps([[trace, names.index(word)]]), session)  # a click: the word, defined
    assert clicked.startswith(f"**{_plain(word)}** ({_plain(group)})") and "\n- *" in clicked
    assert _plain("*x* [y](z) <b>") == "\\*x\\* \\[y\\]\\(z\\) &lt;b&gt;"  # a user's text shows as itself
    assert studio.map.map_point(json.dumps([[trace + 5, 0]]), session) == ""  # not a point: nothing to show
    for bad in ("not json", "[[0]]", "[[-1, 0]]", '[["a", 0]]', json.dumps([[0, 0]] * 61), " " * 10_000):
        with pytest.raises(ValueError, match="could not be read"):
            studio.map.select_map(bad, session)


def test_map_of_an_uploaded_file_reuses_its_embeddings(studio, tmp_path):
    corpus = tmp_path / "lines.txt"
    corpus.write_text("".join(f"sentence number {i}\n" for i in range(12)), encoding="utf-8")
    session = Session()
    studio.similarity.search("number", "uploaded file", str(corpus), 2, session)
    embedded = session.corpus
    _, status, session = studio.map.draw_map("uploaded file", 0, "", str(corpus), "PCA", "2-D", "part of speech",
                                             session)
    assert session.map.corpus is embedded and status.startswith("12 points, PCA")


def test_a_map_goes_out_as_projector_files_and_projector_files_come_in(studio, tmp_path, monkeypatch):
    import zipfile

    from core.explore.projector import read_projector

    monkeypatch.setenv("DEFSENT_CACHE_DIR", str(tmp_path / "cache"))
    _, _, session = studio.map.draw_map("my sentences", 0, "a dog\na cat\nthe king\nwine", None, "PCA", "2-D",
                                    "cluster", Session())
    with pytest.raises(ValueError, match="Draw a map first"):
        studio.map.export_map(Session())
    with zipfile.ZipFile(studio.map.export_map(session)) as archive:
        archive.extractall(tmp_path / "out")
    folder = tmp_path / "out" / "defsent-map"
    exported = read_projector(folder / "vectors.tsv", folder / "metadata.tsv")
    np.testing.assert_allclose(exported.vectors, session.map.corpus.vectors, atol=1e-5)
    assert exported.columns["text"] == ["a dog", "a cat", "the king", "wine"] and set(exported.columns) == set("xy") | {
        "text", "group"}
    files = [str(folder / "vectors.tsv"), str(folder / "metadata.tsv")]
    _, status, again = studio.map.draw_map("uploaded file", 0, "", files, "PCA", "2-D", "part of speech", Session())
    assert status.startswith("4 points") and again.map.corpus.texts == ["a dog", "a cat", "the king", "wine"]
    _, _, rows = studio.map.search_map("king", 2, again)  # this model's width: the query is embedded among them
    assert rows[0][2] == "the king"
    foreign = tmp_path / "vectors.tsv"  # another model's 3-d vectors, without metadata
    foreign.write_text("1\t0\t0\n0.9\t0.1\t0\n0\t0\t1\n", encoding="utf-8")
    _, _, other = studio.map.draw_map("uploaded file", 0, "", [str(foreign)], "PCA", "2-D", "part of speech", Session())
    _, note, rows = studio.map.search_map("point 1", 2, other)  # placed by its match: the label's own vector
    assert "nearest neighbours of 'point 1'" in note and [r[2] for r in rows] == ["point 1", "point 2"]
    with pytest.raises(ValueError, match="another model"):
        studio.map.search_map("a dog", 2, other)
    foreign.write_text("1\t0\n0\tnan\n", encoding="utf-8")
    with pytest.raises(ValueError, match="vectors.tsv line 2: NaN"):
        studio.map.draw_map("uploaded file", 0, "", [str(foreign)], "PCA", "2-D", "cluster", Session())


def test_a_projector_files_third_metadata_column_colours_the_map_and_goes_out_with_it(studio, tmp_path, monkeypatch):
    import zipfile

    from app.handlers import FILE_COLUMN
    from core.explore.projector import read_projector

    monkeypatch.setenv("DEFSENT_CACHE_DIR", str(tmp_path / "cache"))
    rng = np.random.default_rng(0)
    (tmp_path / "vectors.tsv").write_text("".join("\t".join(f"{x:.4f}" for x in row) + "\n"
                                                  for row in rng.normal(size=(6, 4))), encoding="utf-8")
    sources = ["news", "novel", "news", "", "novel", "news"]
    (tmp_path / "metadata.tsv").write_text("word\tpos\tsource\n" + "".join(
        f"w{i}\tnoun\t{s}\n" for i, s in enumerate(sources)), encoding="utf-8")
    files = [str(tmp_path / "vectors.tsv"), str(tmp_path / "metadata.tsv")]
    figure, status, session = studio.map.draw_map("uploaded file", 0, "", files, "PCA", "2-D", FILE_COLUMN,
                                                  Session(), "source")
    assert session.map.groups == ["news", "novel", "news", "(empty)", "novel", "news"]
    assert [t.name for t in figure.data if t.mode == "markers"] == ["news", "novel", "(empty)"]
    assert "column 'source'" in status
    assert studio.map.map_columns(session) == ["pos", "source"]  # the Column dropdown's: the labels are the texts
    _, status, first = studio.map.draw_map("uploaded file", 0, "", files, "PCA", "2-D", FILE_COLUMN, Session())
    assert first.map.groups == ["noun"] * 6 and "column 'pos'" in status  # none chosen: the first after the labels
    with zipfile.ZipFile(studio.map.export_map(session)) as archive:
        archive.extractall(tmp_path / "out")
    folder = tmp_path / "out" / "defsent-map"
    exported = read_projector(folder / "vectors.tsv", folder / "metadata.tsv").columns
    assert list(exported) == ["text", "group", "x", "y", "pos", "source"] and exported["source"] == sources
    assert exported["text"] == [f"w{i}" for i in range(6)]  # the labels, as the texts


def test_a_table_of_texts_colours_the_map_by_its_columns(studio, tmp_path):
    from app.handlers import FILE_COLUMN

    rows = [(f"sentence number {i}", "odd" if i % 2 else "even", f"{i * 5 % 12 * 1.5}") for i in range(12)]
    table = tmp_path / "sentences.tsv"  # a .tsv of texts, not the Projector's vectors: its first cell is a name
    table.write_text("sentence\ttopic\tscore\n" + "".join("\t".join(r) + "\n" for r in rows) + "\t\t\n",
                     encoding="utf-8")  # the last row has no text: skipped, as a blank line
    session = Session()
    _, status, session = studio.map.draw_map("uploaded file", 0, "", [str(table)], "PCA", "2-D", FILE_COLUMN,
                                             session, "topic")
    assert session.map.corpus.texts == [r[0] for r in rows] and status.startswith("12 points")
    assert session.map.groups == [r[1] for r in rows] and studio.map.map_columns(session) == ["topic", "score"]
    embedded = session.map.corpus
    figure, _, session = studio.map.draw_map("uploaded file", 0, "", [str(table)], "PCA", "2-D", FILE_COLUMN,
                                             session, "score")  # 12 numbers (0 to 16.5): in 5 bins by quantile
    by_score = dict(zip((float(r[2]) for r in rows), session.map.groups))
    assert [by_score[x] for x in (0, 1.5, 3.0)] == ["0 to 3.3"] * 3 and by_score[16.5] == "13.2 to 16.5"
    assert len(set(session.map.groups)) == 5 and session.map.corpus is embedded
    groups = [t for t in figure.data if t.mode == "markers"]  # the points' names are a trace of text after them
    legend = [t.name for t in sorted(groups, key=lambda t: t.legendrank)]
    assert legend[0] == "0 to 3.3" and legend[-1] == "13.2 to 16.5" and legend != [t.name for t in groups]
    searched = studio.map.search_map("sentence number 3", 2, session)[0]
    ranks = [1000 if t.legendrank is None else t.legendrank for t in searched.data]  # plotly's default: 1000
    legend = [searched.data[i].name for i in sorted(range(len(ranks)), key=lambda i: (ranks[i], i))]
    assert legend[0] == "0 to 3.3" and legend[-1] == "search hits"
    table.write_text("sentence\ttopic\n" + "".join(f"{r[0]}\tt{i}\n" for i, r in enumerate(rows)), encoding="utf-8")
    _, _, session = studio.map.draw_map("uploaded file", 0, "", [str(table)], "PCA", "2-D", FILE_COLUMN,
                                        session, "topic")  # the same texts, other columns: not embedded again
    assert session.map.corpus.vectors is embedded.vectors and session.map.corpus.columns == {
        "topic": [f"t{i}" for i in range(12)]}
    assert session.map.groups == [f"t{i}" for i in range(9)] + ["(other)"] * 3  # the 9 most common, then the rest
    assert sv.read_text_file(table)[0] == [r[0] for r in rows]  # the Similarity tab searches its texts alone


def test_colouring_by_a_column_refuses_points_and_columns_that_are_not_there(studio, tmp_path):
    from app.handlers import EVERY_WORD_MAP, FILE_COLUMN

    figure, _, session = studio.map.draw_map("my sentences", 0, "a dog\na cat\nthe king", None, "PCA", "2-D",
                                             "cluster", Session())
    kept = session.map
    for source in ("my sentences", "vocabulary words", EVERY_WORD_MAP):
        with pytest.raises(ValueError, match="These points have no columns of a file of yours"):
            studio.map.draw_map(source, 20, "a dog\na cat", None, "PCA", "2-D", FILE_COLUMN, session, "pos")
    table = tmp_path / "table.txt"
    table.write_text("text\ttopic\tnote\na dog\tanimal\t\na king\tperson\t \n", encoding="utf-8")
    with pytest.raises(ValueError, match="no column 'colour'; its columns: topic, note"):
        studio.map.draw_map("uploaded file", 0, "", str(table), "PCA", "2-D", FILE_COLUMN, session, "colour")
    with pytest.raises(ValueError, match="The column 'note' is empty"):
        studio.map.draw_map("uploaded file", 0, "", str(table), "PCA", "2-D", FILE_COLUMN, session, "note")
    assert session.map is kept and studio.map.map_columns(session) == []  # each refusal changed nothing
    table.write_text("text\ttopic\na dog\tanimal\na king\n", encoding="utf-8")
    with pytest.raises(ValueError, match="table.txt line 3: 1 columns, where the header has 2"):
        studio.map.draw_map("uploaded file", 0, "", str(table), "PCA", "2-D", FILE_COLUMN, session, "topic")
    table.write_text("\ntext\ttopic\n\na dog\tanimal\na king\tperson\tx\n", encoding="utf-8")
    with pytest.raises(ValueError, match="table.txt line 5: 3 columns, where the header has 2"):  # blank lines count
        sv.read_text_file(table)
    table.write_text("text\ttopic\n\na dog\tanimal\n\n", encoding="utf-8")
    assert sv.read_text_file(table) == (["a dog"], {"topic": ["animal"]})  # blank lines: no rows


def test_map_errors(studio):
    with pytest.raises(ValueError, match="Draw a map first"):
        studio.map.search_map("dog", 3, Session())
    with pytest.raises(ValueError, match="Unknown point set"):
        studio.map.draw_map("nothing", 10, "", None, "PCA", "2-D", "cluster", Session())
    with pytest.raises(ValueError, match="Unknown projection"):
        Projector().project(np.zeros((5, 3)), "tSNE")


def test_candidates_map(studio):
    figure, table = studio.map.candidates_map("an animal", 4, "PCA")
    assert len(table) == 4 and figure.data[0].name == "your description"
    assert table[0][1] == 100 and all(0 <= row[1] <= 100 for row in table)  # scores relative to the first word
    # a map is tall, its legend below it: beside it, the legend took half a phone's width (issue 54, item 6)
    assert figure.layout.height >= 600 and figure.layout.legend.orientation == "h"


def test_candidates_map_leaves_out_the_descriptions_words_as_the_reverse_dictionary_does(studio):
    text = " ".join(TINY_WORDS[:40])  # most of the head's words: unexcluded, some would be candidates
    _, table = studio.map.candidates_map(text, 10, "PCA")
    query = sv.WordQuery(text, 10, exclude_query_words=True)  # the Reverse dictionary tab's default
    assert [row[0] for row in table] == [r.word for r in sv.reverse_dictionary(studio.models.active().engine, query)]
    assert table and not {row[0] for row in table} & set(text.split())


def test_pca_of_few_wide_points_decomposes_the_small_matrix(monkeypatch):
    """Session 49's review: PCA of a few hundred 4,096-d points decomposed the 4,096 x 4,096 scatter matrix (10-20 s,
    uncancellable, in the one heavy slot); it now decomposes the n x n Gram matrix, to the same components."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(30, 500)) * np.linspace(5, 0.1, 500)
    wide = pca(x, 3)
    tall = pca(np.vstack([x, x]), 3)[:30]  # 60 rows of 500: the d x d path, the same centred points
    assert np.allclose(np.abs(wide), np.abs(tall), atol=1e-4)
    sizes = []
    eigh = np.linalg.eigh
    monkeypatch.setattr(np.linalg, "eigh", lambda m: sizes.append(m.shape) or eigh(m))
    pca(x, 2)
    assert sizes == [(30, 30)]


def test_pca_and_projection_cache():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(200, 16)) * np.linspace(5, 0.1, 16)
    coords = pca(x, 3)
    assert coords.shape == (200, 3) and np.var(coords[:, 0]) >= np.var(coords[:, 1]) >= np.var(coords[:, 2])
    projector = Projector()
    first = projector.project(x, "PCA", 2)
    assert projector.project(x, "PCA", 2).note == CACHED
    assert np.array_equal(first.coords, projector.project(x, "PCA", 2).coords)
    assert pca(x[:2, :1], 2).shape == (2, 2)
    cold = projector.project(x, "UMAP", 2)  # UMAP not warmed up: PCA now, and the note says so
    assert cold.method == "PCA" and "showing PCA meanwhile" in cold.note and "PCA (instant)." in projector.status()
    assert not projector.umap_pending  # nothing to poll for
    projector.expect_warm_up()
    assert projector.umap_pending and "PCA (instant) until it is ready" in projector.status()


@pytest.mark.parametrize("works", [True, False])
def test_umap_warm_up_ends_the_polling_whether_it_works_or_not(works, monkeypatch):
    import app.views.projection

    def fit(vectors, dims=2, seed=0):
        if not works:
            raise ImportError("no umap here")
        return vectors[:, :dims]
    monkeypatch.setattr(app.views.projection, "umap_fit", fit)
    projector = Projector()
    projector.expect_warm_up()
    projector.warm_up(sizes=(20,))
    assert not projector.umap_pending and projector.umap_ready == works
    assert ("UMAP is ready" if works else "UMAP is unavailable (ImportError: no umap here)") in projector.status()


def test_a_page_load_shows_the_umap_status_of_that_moment(studio, monkeypatch):
    pytest.importorskip("gradio")
    import app.views.projection
    from app.ui import build_app

    studio.projector.expect_warm_up()
    demo = build_app(studio)  # built while UMAP waits to warm up: the status it was built with says so
    monkeypatch.setattr(app.views.projection, "umap_fit", lambda vectors, dims=2, seed=0: vectors[:, :dims])
    studio.projector.warm_up(sizes=(20,))
    status_id = next(i for i, b in demo.blocks.items() if getattr(b, "elem_id", None) == "umap-status")
    on_load = [f for f in demo.fns.values() if ("load" in [name for _, name in f.targets])
               and status_id in [o._id for o in f.outputs]]
    assert len(on_load) == 1
    status, timer = on_load[0].fn()
    assert "UMAP is ready" in status and timer.active is False  # at once, not after the first 3 s poll


def test_a_tab_inside_a_sentence_makes_no_table_and_number_bins_read_plainly(tmp_path):
    from app.handlers.map import _column_groups

    plain = tmp_path / "plain.txt"
    plain.write_text("a dog\tbarks\nthe king rules\nbread is food\n\n", encoding="utf-8")
    assert sv.read_text_file(plain) == (["a dog\tbarks", "the king rules", "bread is food"], {})
    years = _column_groups([str(y) for y in range(1990, 2021)], "year")  # 31 numbers: 5 bins by quantile
    assert len(set(years)) == 5 and years[0] == "1990 to 1996" and not any("e+" in g for g in years)
    close = _column_groups([f"{1000 + i / 100:.2f}" for i in range(50)], "price")
    assert len(set(close)) == 5  # bins whose edges differ in the second decimal keep apart names


def test_the_projector_export_escapes_formulas_like_the_selection_csv(tmp_path):
    """metadata.tsv kept "=cmd|' /C calc'!A0" and cells starting with + - @ as they were (issue 55)."""
    import zipfile

    import numpy as np

    from app.shared.export import csv_download, projector_download
    from core.spreadsheet import FORMULA_STARTS

    texts = ["=cmd|' /C calc'!A0", '=HYPERLINK("http://x","y")', "+1+1", "-2", "@SUM(A1)", "a plain line"]
    archive = projector_download(np.zeros((len(texts), 4), dtype=np.float32), {"text": texts, "=group": texts},
                                 root=tmp_path)
    with zipfile.ZipFile(archive) as zipped:
        metadata = zipped.read(next(n for n in zipped.namelist() if n.endswith("metadata.tsv"))).decode()
    selection = csv_download(["text", "=group"], [[t, t] for t in texts], "selection", root=tmp_path)
    for written in (metadata.splitlines(), selection.read_text(encoding="utf-8").splitlines()):
        cells = [cell.strip('"') for line in written for cell in re.split("[\t,]", line)]
        assert not [cell for cell in cells if cell.startswith(FORMULA_STARTS)], written
        assert any("'=cmd|" in line for line in written) and any("a plain line" in line for line in written)
