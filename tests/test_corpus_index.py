"""The corpus index (core/explore/corpus_index.py): resumable embedding, the FAISS index, the texts on disk."""
from __future__ import annotations

import re

import numpy as np
import pytest

import core.explore.corpus_index as corpus_index
from core.explore.corpus_index import CorpusIndex, build_corpus_index, build_steps, index_folder, read_sentences
from core.readout import EmbeddedTexts

SENTENCES = [f"sentence {i} about topic {i % 7}" for i in range(600)]


def fake_encoder(calls: list[int] | None = None):
    """Unit rows of random but fixed vectors per text; appends each call's size to `calls`."""
    rng = np.random.default_rng(0)
    table = {s: v / np.linalg.norm(v) for s, v in zip(SENTENCES, rng.standard_normal((len(SENTENCES), 24)))}

    def encode(texts: list[str]) -> np.ndarray:
        if calls is not None:
            calls.append(len(texts))
        return np.stack([table[t] for t in texts]).astype(np.float32)
    return encode


@pytest.fixture(autouse=True)
def small_chunks(monkeypatch):
    monkeypatch.setattr(corpus_index, "CHUNK_ROWS", 100)


def test_the_index_finds_what_exact_search_finds_and_reads_texts_and_rows_back(tmp_path):
    index = build_corpus_index(fake_encoder(), "model-a", SENTENCES, tmp_path / "idx", name="test")
    exact = EmbeddedTexts(SENTENCES, fake_encoder()(SENTENCES))
    queries = fake_encoder()(SENTENCES[:20]) + 0.05 * np.random.default_rng(1).standard_normal((20, 24))
    found = [{i for i, _ in row} for row in index.nearest(queries.astype(np.float32), 5)]
    truth = [{i for i, _ in row} for row in exact.nearest(queries, 5)]
    recall = np.mean([len(f & t) / 5 for f, t in zip(found, truth)])
    assert recall >= 0.9  # 600 rows, 128 candidates a search: nearly exhaustive
    assert index.nearest(queries[:1], 1)[0][0][0] == 0 and index.texts[0] == SENTENCES[0]
    assert len(index.texts) == 600 and index.texts[598:] == SENTENCES[598:] and index.name == "600 test sentences"
    np.testing.assert_allclose(index.rows([3, 450]), exact.vectors[[3, 450]], atol=0.02)
    reloaded = CorpusIndex(tmp_path / "idx")
    assert reloaded.nearest(queries[:3], 4) == index.nearest(queries[:3], 4)


def test_a_killed_build_resumes_from_its_saved_chunks(tmp_path):
    folder = tmp_path / "idx"

    def killed_after_two_chunks(texts):
        if len(calls) == 2:
            raise KeyboardInterrupt
        return fake_encoder(calls)(texts)
    calls: list[int] = []
    with pytest.raises(KeyboardInterrupt):
        build_corpus_index(killed_after_two_chunks, "model-a", SENTENCES, folder)
    assert sorted(p.name for p in folder.glob("vectors-*.npy")) == ["vectors-00000.npy", "vectors-00001.npy"]
    assert not (folder / corpus_index.INDEX).exists()
    with pytest.raises(FileNotFoundError, match="no finished corpus index"):
        CorpusIndex(folder)
    resumed: list[int] = []
    reports: list[tuple[str, int, int]] = []
    build_corpus_index(fake_encoder(resumed), "model-a", SENTENCES, folder, lambda *report: reports.append(report))
    assert resumed == [100] * 4  # only the four missing chunks
    embedding = [done for stage, done, _ in reports if stage == "embedding"]
    assert embedding == [200, 300, 400, 500, 600] and reports[-1] == ("indexing", 600, 600)
    with pytest.raises(ValueError, match="begun with another model "):
        build_corpus_index(fake_encoder(), "model-b", SENTENCES, folder)


def test_sentences_are_read_with_bounds(tmp_path, monkeypatch):
    path = tmp_path / "corpus.txt"
    path.write_text("one\n\n  two  \nthree\n", encoding="utf-8")
    assert read_sentences(path) == ["one", "two", "three"] and read_sentences(path, 2) == ["one", "two"]
    with pytest.raises(ValueError, match="between 0"):
        read_sentences(path, -1)
    monkeypatch.setattr(corpus_index, "MAX_ROWS", 2)
    with pytest.raises(ValueError, match="more than 2 sentences"):
        read_sentences(path)
    (tmp_path / "empty.txt").write_text("\n", encoding="utf-8")
    with pytest.raises(ValueError, match="holds no sentences"):
        read_sentences(tmp_path / "empty.txt")
    with pytest.raises(ValueError, match="letters, digits"):
        index_folder("abc", "../x")


def test_the_command_builds_an_index_the_app_then_searches(tiny_mlm_dir, tmp_path, monkeypatch, capsys):
    from app.shared import services as sv
    from app.handlers import Session, Studio
    from app.shared.jobs import JobManager
    from app.shared.models import Models, ModelSpec
    from app.views.projection import Projector
    from core import Engine
    from core.cli import main

    monkeypatch.setenv("DEFSENT_CACHE_DIR", str(tmp_path / "cache"))
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("".join(f"{s}\n" for s in SENTENCES[:150]), encoding="utf-8")
    engine = Engine.from_base(str(tiny_mlm_dir))
    studio = Studio(Models.from_engine(engine, ModelSpec("tiny", base=str(tiny_mlm_dir)), tmp_path), Projector(),
                    JobManager())
    with pytest.raises(ValueError) as missing:
        studio.similarity.search("topic 3", sv.CORPUS_SENTENCES, None, 3, Session())
    # both steps, in order, with their times (issue 54, item 7); the command says the same
    assert re.search(f"vec2sent-corpus --modern .*8-24 min.*corpus-index --model {re.escape(str(tiny_mlm_dir))}`"
                     ".*3.5 h", str(missing.value))
    assert main(["corpus-index", "--corpus", str(corpus), "--model", str(tiny_mlm_dir), "--threads", "1"]) == 0
    assert "150 modern sentences in" in capsys.readouterr().out
    # the largest ready: the corpus
    rows, _, _ = studio.similarity.search(SENTENCES[7], sv.LARGEST_READY, None, 3, Session())
    assert {text for *_, text in rows} <= set(SENTENCES[:150]) and rows[0][1] > 0.95  # near-twins: any of them
    assert main(["corpus-index", "--corpus", str(tmp_path / "missing.txt"), "--model", str(tiny_mlm_dir)]) == 2
    assert build_steps(f" --model {tiny_mlm_dir}") in capsys.readouterr().err


def test_leftovers_of_a_killed_run_are_cleared_and_texts_index_like_a_list(tmp_path):
    folder = tmp_path / "idx"
    folder.mkdir()
    (folder / "index.faiss.partial-123").write_bytes(b"half an index")
    (folder / "vectors-00000.partial-123.npy").write_bytes(b"half a chunk")
    index = build_corpus_index(fake_encoder(), "model-a", SENTENCES, folder)
    assert not list(folder.glob("*.partial-*"))
    assert index.texts[-1] == SENTENCES[-1] and index.texts[-600] == SENTENCES[0]
    with pytest.raises(IndexError):
        index.texts[600]
    with pytest.raises(ValueError, match="another rows, texts_sha1"):
        build_corpus_index(fake_encoder(), "model-a", SENTENCES[:300], folder)
