"""A user's corpus embedded on a real Ray cluster (two worker nodes of one CPU each, on this machine) into
a LanceDB table (core/collection/): the vectors are the model's, every row is stored exactly once, with a
worker node killed mid-run too; a rerun resumes; another model's table is refused; bad input is one line
and writes nothing."""
from __future__ import annotations

import json
import random
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import core.collection.embed as embed
from core.collection import Collection, embed_corpus, read_corpus
from core.collection.sources import MAX_ROWS
from core.collection.store import TABLE, connect, stored_row_ids

from tests.conftest import TINY_WORDS

ROWS = 2_000
REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def sentences() -> list[str]:
    rng = random.Random(0)
    return [" ".join(rng.choices(TINY_WORDS, k=7)) + f" {i}" for i in range(ROWS)]


@pytest.fixture(scope="module")
def corpus_file(sentences, tmp_path_factory):
    path = tmp_path_factory.mktemp("corpus") / "posts.jsonl"
    path.write_text("".join(json.dumps({"body": s, "forum": f"f{i % 3}", "likes": i}) + "\n"
                            for i, s in enumerate(sentences)), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def tiny_engine(tiny_mlm_dir):
    from core import Engine

    return Engine.load(str(tiny_mlm_dir), decoder=None, open_vocabulary=False, device="cpu")


@pytest.fixture(scope="module")
def cluster():
    """A Ray cluster on this machine: a head that runs no work and two worker nodes of one CPU each."""
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0})
    cluster.add_node(num_cpus=1)
    cluster.add_node(num_cpus=1)
    cluster.wait_for_nodes()
    yield cluster
    cluster.shutdown()


def stored(uri: str) -> pa.Table:
    return connect(uri).open_table(TABLE).to_arrow().sort_by("row_id")


def check_every_row_once_with_the_models_vectors(uri: str, engine, sentences: list[str]) -> None:
    table = stored(uri)
    assert table.column("row_id").to_pylist() == list(range(ROWS))  # every row, exactly once
    assert table.column("text").to_pylist() == sentences
    assert table.column("forum").to_pylist()[:4] == ["f0", "f1", "f2", "f0"] and table.column("likes")[5].as_py() == 5
    vectors = np.stack(table.column("vector").to_numpy(zero_copy_only=False))
    cosines = (vectors * engine.encode(sentences, normalize=True)).sum(axis=1)
    assert cosines.min() >= 0.999


def test_a_two_node_cluster_embeds_every_row_once_with_the_models_vectors(cluster, corpus_file, sentences,
                                                                          tiny_engine, tiny_mlm_dir, tmp_path):
    uri = str(tmp_path / "posts")
    reports: list[tuple[str, int, int]] = []
    collection, index = embed_corpus(read_corpus(corpus_file, "body"), uri, tiny_engine, str(tiny_mlm_dir),
                                     cluster.address, batch_size=64, progress=lambda *r: reports.append(r))
    check_every_row_once_with_the_models_vectors(uri, tiny_engine, sentences)
    assert reports[0] == ("embedding", 0, ROWS) and reports[-1] == ("embedding", ROWS, ROWS)
    assert len(reports) > 2 and reports.count(("embedding", ROWS, ROWS)) == 1  # a report a batch, not a write
    assert index.startswith("exact search") and collection.columns == ["forum", "likes"]
    query = tiny_engine.encode(sentences[7:8], normalize=True)
    hit = collection.search(query, 3, ["forum"])[0][0]
    assert (hit["row_id"], hit["text"], hit["forum"]) == (7, sentences[7], "f1") and hit["cosine"] > 0.999
    assert collection.texts[7] == sentences[7] and collection.nearest_texts(query, 1)[0][0][0] == sentences[7]
    np.testing.assert_allclose(collection.rows([7, 3]), tiny_engine.encode([sentences[7], sentences[3]],
                                                                            normalize=True), atol=1e-4)


def test_a_worker_node_killed_mid_run_loses_no_row_and_stores_none_twice(cluster, corpus_file, sentences,
                                                                         tiny_engine, tiny_mlm_dir, tmp_path,
                                                                         monkeypatch):
    monkeypatch.setattr(embed, "WRITE_ROWS", 100)  # a write every 100 rows: the kill falls between writes
    monkeypatch.setattr(embed, "BLOCK_ROWS", 32)  # 63 blocks: many in flight on the node when it goes
    victim = list(cluster.worker_nodes)[-1]
    killed: list[int] = []

    def kill_a_node_early(stage: str, done: int, total: int) -> None:
        if 0 < done and not killed:
            cluster.remove_node(victim)  # its actor, and the batches it was embedding, die with it
            killed.append(done)
    uri = str(tmp_path / "posts")
    try:
        embed_corpus(read_corpus(corpus_file, "body"), uri, tiny_engine, str(tiny_mlm_dir), cluster.address,
                     batch_size=16, progress=kill_a_node_early)
    finally:
        cluster.add_node(num_cpus=1)  # the next test's cluster has two workers again
    assert killed and killed[0] < ROWS // 2
    check_every_row_once_with_the_models_vectors(uri, tiny_engine, sentences)


def test_rows_go_to_the_workers_longest_first_so_that_a_batch_pads_little():
    # A batch is padded to its longest text: blocks of mixed lengths cost the feature norms' 100k descriptions
    # 4x the work (154 against 627 rows/s in one process, docs/results.md)
    rows = pa.table({"row_id": pa.array(range(5), pa.int64()), "text": ["ab", "a much longer one", "abc", "xy", ""]})
    ordered = embed.longest_first(rows)
    assert ordered.column("text").to_pylist() == ["a much longer one", "abc", "ab", "xy", ""]
    assert ordered.column("row_id").to_pylist() == [1, 2, 0, 3, 4]  # ties keep their order


def test_a_rerun_embeds_only_the_missing_rows_and_another_models_table_is_refused(
        cluster, corpus_file, sentences, tiny_engine, tiny_mlm_dir, tiny_base_dir, tmp_path, monkeypatch):
    from core import Engine

    monkeypatch.setattr(embed, "WRITE_ROWS", 500)
    uri = str(tmp_path / "posts")
    corpus = read_corpus(corpus_file, "body")

    def interrupted(stage: str, done: int, total: int) -> None:
        if done >= 500:
            raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        embed_corpus(corpus, uri, tiny_engine, str(tiny_mlm_dir), cluster.address, 64, interrupted)
    before = len(stored_row_ids(connect(uri).open_table(TABLE)))
    assert 500 <= before < ROWS
    reports: list[tuple[str, int, int]] = []
    embed_corpus(corpus, uri, tiny_engine, str(tiny_mlm_dir), cluster.address, 64, lambda *r: reports.append(r))
    assert reports[0] == ("embedding", before, ROWS)  # only the rest embedded
    check_every_row_once_with_the_models_vectors(uri, tiny_engine, sentences)
    version = connect(uri).open_table(TABLE).version
    assert embed_corpus(corpus, uri, tiny_engine, str(tiny_mlm_dir), cluster.address)[1] == "already complete"
    assert connect(uri).open_table(TABLE).version == version  # a finished collection's indexes are not rebuilt
    other = Engine.load(str(tiny_base_dir), decoder=None, open_vocabulary=False, device="cpu")
    with pytest.raises(ValueError, match="holds another model's vectors"):
        embed_corpus(corpus, uri, other, str(tiny_base_dir), cluster.address)
    with pytest.raises(ValueError, match="holds another model's vectors"):
        Collection(uri, other.fingerprint)
    with pytest.raises(ValueError, match="another corpus"):
        embed_corpus(corpus.slice(0, 100), uri, tiny_engine, str(tiny_mlm_dir), cluster.address)
    assert stored(uri).num_rows == ROWS


def _free_ports(count: int) -> list[int]:
    """`count` ports free on this machine now (each bound once by the OS, then released)."""
    import socket

    sockets = [socket.socket() for _ in range(count)]
    for each in sockets:
        each.bind(("127.0.0.1", 0))
    ports = [each.getsockname()[1] for each in sockets]
    for each in sockets:
        each.close()
    return ports


def _ray_start(groups: list[int], *flags: str) -> None:
    """Run `ray start` (the command a user runs) with `flags` and one CPU, in a process group of its own, which the
    node's daemons (GCS, raylet, workers) inherit; the group's id, by which the node is stopped, goes in `groups`
    at once (a start that fails half-way is stopped too)."""
    import os
    import shutil

    ports = _free_ports(5)  # two nodes on one machine: every agent's port apart (the defaults are fixed numbers)
    command = [shutil.which("ray") or "ray", "start", *flags, "--num-cpus=1", "--disable-usage-stats",
               f"--node-manager-port={ports[0]}", f"--object-manager-port={ports[1]}",
               f"--dashboard-agent-listen-port={ports[2]}", f"--dashboard-agent-grpc-port={ports[3]}",
               f"--runtime-env-agent-port={ports[4]}"]
    started = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               start_new_session=True, env={**os.environ, "RAY_USAGE_STATS_ENABLED": "0"})
    groups.append(started.pid)  # its own session: the group's id is its pid, its daemons' too after it exits
    output, _ = started.communicate(timeout=120)
    assert started.returncode == 0, output[-2000:]


def _stop_group(group: int) -> bool:
    """Stop the processes of one node `ray start` started: SIGTERM to its group, SIGKILL to what is left after 15 s;
    whether none is left. Not `ray stop`, which stops every Ray process on the machine, other people's too."""
    import os
    import signal
    import time

    for sent, grace in ((signal.SIGTERM, 15.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(group, sent)
        except ProcessLookupError:
            return True
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            try:
                os.killpg(group, 0)
            except ProcessLookupError:
                return True
            time.sleep(0.2)
    return False


@pytest.mark.slow
def test_a_cluster_made_by_ray_start_twice_embeds_every_row_once(corpus_file, sentences, tiny_engine, tiny_mlm_dir,
                                                                 tmp_path, monkeypatch):
    """The cluster form a user makes by hand (issue 72, 5): `ray start --head` and `ray start --address` (one CPU
    each), the command given its address; both nodes are stopped, by their process groups, whatever happens."""
    import shutil
    import tempfile

    import ray

    # A home of its own: with a ~/.ray/auth_token on the machine (left by another Ray program) the second node's
    # start failed with "InvalidAuthToken ... RAY_AUTH_MODE is currently 'disabled'"
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    [gcs] = _free_ports(1)
    temp = tempfile.mkdtemp(prefix="ray-", dir="/tmp")  # short: Ray's socket paths under it must fit 107 bytes
    groups: list[int] = []
    try:
        _ray_start(groups, "--head", f"--port={gcs}", "--include-dashboard=false", f"--temp-dir={temp}")
        _ray_start(groups, f"--address=127.0.0.1:{gcs}")
        ray.init(address=f"127.0.0.1:{gcs}", log_to_driver=False)
        try:  # the worker node has joined: two nodes of one CPU
            assert sorted(n["Resources"].get("CPU") for n in ray.nodes() if n["Alive"]) == [1.0, 1.0]
        finally:
            ray.shutdown()
        uri = str(tmp_path / "posts")
        collection, index = embed_corpus(read_corpus(corpus_file, "body"), uri, tiny_engine, str(tiny_mlm_dir),
                                         f"127.0.0.1:{gcs}", batch_size=64)
        assert not ray.is_initialized()  # the command's own connection, closed
        check_every_row_once_with_the_models_vectors(uri, tiny_engine, sentences)
        assert collection.size == ROWS and index.startswith("exact search")
    finally:
        stopped = [_stop_group(group) for group in reversed(groups)]
        shutil.rmtree(temp, ignore_errors=True)
    assert stopped == [True, True]  # no process of either node left


# ---- reading a corpus: formats and bad input (no Ray) ---------------------------------------------------

def test_every_format_is_read_with_its_metadata(tmp_path):
    from pyarrow import parquet

    (tmp_path / "a.txt").write_text("one  sentence\n\n two \n", encoding="utf-8")
    (tmp_path / "a.csv").write_text('text,n\n"a, quoted one",1\n,2\nthird,3\n', encoding="utf-8")
    (tmp_path / "a.tsv").write_text("id\tbody\nx\tfirst\ny\tsecond\n", encoding="utf-8")
    (tmp_path / "a.jsonl").write_text('{"text": "j1", "tag": "t"}\n\n{"text": "j2", "tag": null}\n', encoding="utf-8")
    parquet.write_table(pa.table({"body": ["p1", "p2"], "score": [0.5, 1.5]}), tmp_path / "a.parquet")
    read = {name: read_corpus(tmp_path / name, column).to_pydict() for name, column in
            (("a.txt", None), ("a.csv", None), ("a.tsv", "body"), ("a.jsonl", None), ("a.parquet", "body"))}
    assert read["a.txt"] == {"row_id": [0, 1], "text": ["one sentence", "two"]}
    assert read["a.csv"] == {"row_id": [0, 2], "text": ["a, quoted one", "third"], "n": [1, 3]}  # the empty row skipped
    assert read["a.tsv"] == {"row_id": [0, 1], "text": ["first", "second"], "id": ["x", "y"]}
    assert read["a.jsonl"] == {"row_id": [0, 1], "text": ["j1", "j2"], "tag": ["t", None]}
    assert read["a.parquet"] == {"row_id": [0, 1], "text": ["p1", "p2"], "score": [0.5, 1.5]}
    assert read_corpus(tmp_path / "a.txt", limit=1).num_rows == 1


@pytest.mark.parametrize("name, content, column, message", [
    ("a.csv", "text,n\nx,1\n", "body", r"has no column 'body' \(its columns: text, n\)"),
    ("a.csv", "text,n\nx,1\n", "n", "column 'n' does not hold text"),
    ("a.csv", "a,b\nx,y\n", None, "which column holds the text"),
    ("a.csv", "text,vector\nx,1\n", None, "a column named 'vector' is the table's own"),
    ("a.txt", b"\x89PNG\r\n\x1a\n\0\0\0", None, "is a binary file, not text"),
    ("a.txt", b"caf\xe9\n", None, "is not UTF-8 text"),
    ("a.txt", "\n  \n", None, "holds no text"),
    ("a.jsonl", '{"text": "x"}\n[1]\n', None, "line 2: not a JSON object"),
    ("a.parquet", "not parquet", None, "is not a Parquet file"),
    ("a.docx", "x", None, "a corpus is a .txt, .csv"),
])
def test_bad_input_gets_one_line(tmp_path, name, content, column, message):
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(ValueError, match=message) as err:
        read_corpus(path, column)
    assert "\n" not in str(err.value)


def test_over_the_row_bound_is_refused_unless_limited(tmp_path, monkeypatch):
    import core.collection.sources as sources

    (tmp_path / "a.txt").write_text("a\nb\nc\n", encoding="utf-8")
    monkeypatch.setattr(sources, "MAX_ROWS", 2)
    with pytest.raises(ValueError, match="has more than 2 rows: pass --limit"):
        read_corpus(tmp_path / "a.txt")
    assert read_corpus(tmp_path / "a.txt", limit=2).num_rows == 2
    with pytest.raises(ValueError, match="--limit must be from 0"):
        read_corpus(tmp_path / "a.txt", limit=-1)


def test_the_commands_embed_then_search_and_the_app_finds_the_corpus(tiny_mlm_dir, tmp_path, monkeypatch, capfd):
    """`corpus-index` on a Ray of its own on this machine, into the user cache where the app looks (no --out);
    then `search --in` the table and the app's largest ready collection; bad input: one line, nothing written;
    the command prints its progress, not Ray Data's plans and log folders (capfd: Ray's handlers write to the
    stream they were made with)."""
    import re

    from app.handlers import Session
    from app.shared import services as sv
    from tests.conftest import make_studio
    from core import Engine
    from core.cli import main
    from core.collection.store import build_steps

    import core.cli.data

    monkeypatch.setenv("DEFSENT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(core.cli.data, "MODERN_CORPUS_DIR", tmp_path / "corpus-modern")  # not built, wherever this runs
    corpus = tmp_path / "posts.tsv"
    corpus.write_text("body\tforum\n" + "".join(f"{w} and {w}s\tf{i % 2}\n" for i, w in enumerate(TINY_WORDS[:40])),
                      encoding="utf-8")
    model = ["--model", str(tiny_mlm_dir)]
    studio = make_studio(Engine.from_base(str(tiny_mlm_dir)), tiny_mlm_dir, tmp_path)
    with pytest.raises(ValueError) as missing:
        studio.similarity.search("king", sv.CORPUS_SENTENCES, None, 3, Session())
    # both steps, in order, with their times (issue 54, item 7); the command says the same
    assert re.search(f"vec2sent-corpus --modern .*8-24 min.*corpus-index --model {re.escape(str(tiny_mlm_dir))}`",
                     str(missing.value))
    assert main(["corpus-index", *model]) == 2  # the modern corpus is not built here
    assert build_steps(f" --model {tiny_mlm_dir}") in capfd.readouterr().err
    assert main(["corpus-index", "--corpus", str(corpus), "--text-column", "nope", *model]) == 2
    assert "has no column 'nope' (its columns: body, forum)" in capfd.readouterr().err
    assert not list((tmp_path / "cache").rglob("*.lance"))  # nothing written
    assert main(["corpus-index", "--corpus", str(corpus), "--limit", str(MAX_ROWS + 1)]) == 2
    assert "--limit must be from 0 to" in capfd.readouterr().err
    assert main(["corpus-index", "--corpus", str(corpus), "--text-column", "body", *model]) == 0
    printed, chatter = capfd.readouterr()
    assert not re.search("streaming_executor|Starting execution|Progress bars|Token auth", chatter), chatter[-1000:]
    uri = re.search(r"40 rows in (\S+) \(exact search", printed).group(1)
    assert "embedding: 40/40" in printed and uri.startswith(str(tmp_path / "cache"))
    assert main(["search", "king and kings", "--in", uri, "-k", "2", "--json", *model]) == 0
    hits = json.loads(capfd.readouterr().out)[0]["hits"]
    assert hits[0]["text"] == "king and kings" and hits[0]["columns"]["forum"] in ("f0", "f1") and len(hits) == 2
    assert main(["search", "x", "--in", str(tmp_path / "nothing"), *model]) == 2
    assert "no file or collection" in capfd.readouterr().err
    rows, _, _ = studio.similarity.search("king and kings", sv.LARGEST_READY, None, 3, Session())  # the corpus
    assert rows[0][-1] == "king and kings" and rows[0][1] > 0.99


def test_the_app_and_the_engine_start_without_ray_or_lancedb(tiny_mlm_dir, tmp_path):
    """Importing the app and building its whole page (a collection's path box among it) imports neither: LanceDB
    comes when a collection is opened, Ray when one is embedded."""
    code = ("import sys, pathlib, app, core, core.cli, core.collection; import app.handlers\n"
            "from app.ui import build_app\nfrom core import Engine\nfrom tests.conftest import make_studio\n"
            f"tiny = pathlib.Path({str(tiny_mlm_dir)!r})\n"
            f"build_app(make_studio(Engine.from_base(str(tiny)), tiny, pathlib.Path({str(tmp_path)!r})))\n"
            "print(sorted({'ray', 'lancedb'} & set(sys.modules)))")
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=REPO)
    assert found.returncode == 0, found.stderr
    assert found.stdout.strip().splitlines()[-1] == "[]"


def test_writes_are_idempotent_by_row_id_and_a_large_table_is_searched_through_its_index(tmp_path, monkeypatch):
    """No Ray: the store alone. A batch written twice is stored once; from BRUTE_FORCE_ROWS rows the table
    gets its vector index (IVF-RaBitQ), whose re-ranked answers agree with exact search and carry exact cosines."""
    import core.collection.store as store
    from core.collection.sources import corpus_digest
    from core.collection.store import build_index, open_for_writing, table_schema, write_rows
    from core.collection.embed import _with_vectors

    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((3_000, 32)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    corpus = pa.table({"row_id": pa.array(range(3_000), pa.int64()), "text": [f"t{i}" for i in range(3_000)]})
    schema = table_schema(corpus.schema, 32, "model-a", corpus_digest(corpus))
    uri = str(tmp_path / "big")
    table, held = open_for_writing(uri, schema)
    assert len(held) == 0
    for ids in (np.arange(0, 1_000), np.arange(1_000, 2_000), np.arange(1_000, 2_000),  # twice: a retried worker's
                np.r_[np.arange(2_000, 3_000), 2_500]):  # a row twice within one batch (a block Ray ran twice)
        write_rows(table, _with_vectors(corpus, {"row_id": ids, "vector": vectors[ids]}, schema))
    assert sorted(stored(uri).column("row_id").to_pylist()) == list(range(3_000))
    monkeypatch.setattr(store, "BRUTE_FORCE_ROWS", 1_000)
    with pytest.raises(RuntimeError, match="no vector index"):  # killed while indexing: not read into memory whole
        Collection(uri, "model-a").search(vectors[:1], 10)
    assert build_index(table, 3_000).startswith("IVF55,RQ1")
    collection = Collection(uri, "model-a")
    assert collection.indexed
    queries = vectors[:20] + 0.1 * rng.standard_normal((20, 32)).astype(np.float32)
    found = collection.search(queries, 10)
    exact = np.argsort(-(queries / np.linalg.norm(queries, axis=1, keepdims=True)) @ vectors.T, axis=1)[:, :10]
    recall = np.mean([len({h["row_id"] for h in row} & set(e.tolist())) / 10 for row, e in zip(found, exact)])
    assert recall >= 0.8
    hit = found[0][0]
    assert abs(hit["cosine"] - float(vectors[hit["row_id"]] @ queries[0] / np.linalg.norm(queries[0]))) < 1e-4


# ---- a collection built in this process (no Ray): what reads it ------------------------------------------

def built_collection(uri: str, engine, texts: list[str], columns: dict[str, list] | None = None,
                     fingerprint: str | None = None, index: bool = True) -> str:
    """A finished collection of `texts` (with `columns` as metadata) embedded in this process by `engine`, written
    as `embed_corpus` writes (`fingerprint`: name another model's; `index` False: left unfinished)."""
    from core.collection.embed import _with_vectors
    from core.collection.sources import corpus_digest
    from core.collection.store import build_index, open_for_writing, table_schema, write_rows

    corpus = pa.table({"row_id": pa.array(range(len(texts)), pa.int64()), "text": texts, **(columns or {})})
    schema = table_schema(corpus.schema, engine.encoder.hidden_size, fingerprint or engine.fingerprint,
                          corpus_digest(corpus))
    table, _ = open_for_writing(uri, schema)
    vectors = engine.encode(texts, normalize=True)
    write_rows(table, _with_vectors(corpus, {"row_id": np.arange(len(texts)), "vector": vectors}, schema))
    if index:
        build_index(table, len(texts))
    return uri


def test_a_sample_draws_its_rows_without_listing_every_row(tiny_mlm_dir, tmp_path, monkeypatch):
    """A map's sample of a 100M-row collection must not build a range of every row (800 MB): only taking them all does."""
    import types

    import core.collection.store
    from core import Engine
    from core.collection.store import Collection

    texts = [f"the {word} sentence" for word in TINY_WORDS[:30]]
    collection = Collection(built_collection(str(tmp_path / "rows"), Engine.from_base(str(tiny_mlm_dir)), texts))
    listed = []
    ranges = types.SimpleNamespace(**{name: getattr(np, name) for name in dir(np) if not name.startswith("__")})
    ranges.arange = lambda *args, **kwargs: listed.append(args) or np.arange(*args, **kwargs)
    monkeypatch.setattr(core.collection.store, "np", ranges)
    drawn = collection.sample(12, seed=3)
    assert listed == [] and len(set(drawn.texts)) == 12 and set(drawn.texts) <= set(texts)
    assert drawn.texts == collection.sample(12, seed=3).texts  # the same rows for the same seed
    assert sorted(collection.sample(30).texts) == sorted(texts) and listed == [(30,)]  # all of them: listed


def test_a_rerun_indexes_again_a_collection_indexed_by_an_older_kind(tmp_path, monkeypatch):
    """A collection indexed by IVF-PQ (the first shipped kind) gets the current index from a rerun of corpus-index,
    nothing embedded (no Ray); once current, a rerun leaves it as it is."""
    from types import SimpleNamespace

    import core.collection.store as store

    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((3_000, 32)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    engine = SimpleNamespace(fingerprint="model-a", encoder=SimpleNamespace(hidden_size=32),
                             encode=lambda texts, normalize: vectors[:len(texts)])
    texts = [f"t{i}" for i in range(3_000)]
    monkeypatch.setattr(store, "BRUTE_FORCE_ROWS", 1_000)
    monkeypatch.setattr(store, "INDEX_KIND", "ivf_pq")
    uri = built_collection(str(tmp_path / "old"), engine, texts)
    monkeypatch.setattr(store, "INDEX_KIND", "ivf_rq")
    corpus = pa.table({"row_id": pa.array(range(3_000), pa.int64()), "text": texts})
    assert embed_corpus(corpus, uri, engine)[1].startswith("IVF55,RQ1")
    assert embed_corpus(corpus, uri, engine)[1] == "already complete"


def test_the_decoder_trains_on_a_collections_texts_and_vectors_without_embedding_them(tiny_mlm_dir, tmp_path,
                                                                                     monkeypatch, capsys):
    """`vec2sent-train --vectors-from URI` (issue 72, 3): the texts and vectors of a collection of this encoder, in
    the file's order, nothing embedded again; another model's collection, or an unfinished one, is refused."""
    import core.vec2sent.train as training
    from core import Engine
    from core.cli import main
    from core.collection import training_rows

    def never_embedded(*args, **kwargs):
        raise AssertionError("the collection's vectors were embedded again")
    monkeypatch.setattr(training, "cached_embeddings", never_embedded)
    monkeypatch.setattr(training, "RUNS_DIR", tmp_path / "runs")
    encoder = Engine.from_base(str(tiny_mlm_dir)).save(tmp_path / "encoder")
    engine = Engine.load(str(encoder), decoder=None, open_vocabulary=False, device="cpu")
    texts = [f"the {a} and the {b}" for a, b in zip(TINY_WORDS[:40], reversed(TINY_WORDS[:40]))]
    unfinished = built_collection(str(tmp_path / "unfinished"), engine, texts, index=False)
    with pytest.raises(ValueError, match="is not finished: run corpus-index on it again"):
        training_rows(unfinished, engine.fingerprint)
    uri = built_collection(str(tmp_path / "posts"), engine, texts)
    read, vectors = training_rows(uri, engine.fingerprint, first=30)
    assert read == texts[:30]
    np.testing.assert_allclose(vectors, engine.encode(texts[:30], normalize=True), atol=1e-5)
    argv = ["vec2sent-train", "--encoder", str(encoder), "--vectors-from", uri, "--out", str(tmp_path / "out"),
            "--emb-dim", "8", "--hidden", "16", "--layers", "1", "--batch-size", "4", "--max-steps", "2",
            "--eval-every", "1000", "--corpus-sentences", "30"]
    assert main(argv) == 0
    trained = json.loads((tmp_path / "out" / "manifest.json").read_text())["training"]
    assert trained["corpus"]["collection"] == uri and trained["corpus"]["sentences"] == 30 and trained["steps"] == 2
    assert trained["train_sentences"] + trained["validation_sentences"] == 30
    other = built_collection(str(tmp_path / "other"), engine, texts, fingerprint="another-model")
    for location, message in ((other, "holds another model's vectors"), (str(tmp_path / "none"), "no collection at")):
        argv[argv.index("--vectors-from") + 1] = location
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("--vectors-from: ") == 1 and location in err and message in err
    assert main([*argv[:-2], "--vectors-from", uri, "--no-normalize-input"]) == 2
    assert "a collection holds unit vectors" in capsys.readouterr().err


def test_the_app_opens_a_collection_by_its_path_to_search_map_and_read_nearest_sentences_from(tiny_mlm_dir, tmp_path):
    """Issue 72, 4, browser-free: semantic search answers with each row's metadata; the Map draws a sample with its
    columns as colours, every point searchable; an analogy's nearest sentences come from the collection opened last;
    bad paths, unfinished and other models' collections say why; public mode refuses any path."""
    from app.handlers import FILE_COLUMN, MAX_MAP_SAMPLE, MY_COLLECTION, Session
    from app.handlers.collection import PUBLIC_REFUSAL
    from app.server.public import PublicLimits
    from core import Engine
    from tests.conftest import make_studio

    engine = Engine.from_base(str(tiny_mlm_dir))
    studio = make_studio(engine, tiny_mlm_dir, tmp_path)
    texts = [f"the {a} and the {b}" for a, b in zip(TINY_WORDS[:40], reversed(TINY_WORDS[:40]))]
    forums = [f"f{i % 3}" for i in range(40)]
    uri = built_collection(str(tmp_path / "posts"), engine, texts, {"forum": forums, "likes": list(range(40))})
    session = Session()
    found, notice, session = studio.similarity.search(texts[5], MY_COLLECTION, None, 3, session, uri)
    assert found["headers"] == ["rank", "cosine", "text", "forum", "likes"] and notice == ""
    assert found["data"][0][2:] == [texts[5], "f2", 5] and found["data"][0][1] > 0.999 and len(found["data"]) == 3

    _, status, session = studio.map.draw_map(MY_COLLECTION, 25, "", None, "PCA", "2-D", FILE_COLUMN, session,
                                                  "forum", uri)
    drawn = session.map
    assert len(drawn.coords) == 25 and list(drawn.columns) == ["forum", "likes"] and len(set(drawn.corpus.texts)) == 25
    assert set(drawn.groups) <= {"f0", "f1", "f2"} and "Coloured by the column 'forum'" in status
    assert [forums[texts.index(t)] for t in drawn.corpus.texts] == drawn.groups  # each point's own metadata
    point = drawn.corpus.texts[17]
    _, _, neighbours = studio.map.search_map(point, 2, session)  # every point of the sample is searchable
    assert neighbours[0][2] == point and neighbours[0][1] > 0.999
    with pytest.raises(ValueError, match=f"from 1 to {MAX_MAP_SAMPLE:,} of its rows"):
        studio.map.draw_map(MY_COLLECTION, MAX_MAP_SAMPLE + 1, "", None, "PCA", "2-D", "cluster", session, None, uri)

    active = studio.model_for(session)
    nearest = session.reference(active, MY_COLLECTION).nearest_texts(engine.encode(texts[9:10], normalize=True), 1)
    assert nearest[0][0][0] == texts[9]  # an analogy's and an interpolation's nearest sentences
    with pytest.raises(ValueError, match="none opened yet"):
        Session().reference(active, MY_COLLECTION)

    unfinished = built_collection(str(tmp_path / "unfinished"), engine, texts, index=False)
    other = built_collection(str(tmp_path / "other"), engine, texts, fingerprint="another-model")
    for path, message in (("  ", "Enter the path of a collection"), (str(tmp_path / "none"), "No collection at"),
                          (unfinished, "is not finished"), (other, "holds another model's vectors")):
        with pytest.raises(ValueError, match=message):
            studio.similarity.search("king", MY_COLLECTION, None, 3, Session(), path)
    studio.public = PublicLimits()  # the handlers of a public server (its start's clean-ups not needed here)
    for ask in (lambda: studio.similarity.search("king", MY_COLLECTION, None, 3, Session(), uri),
                lambda: studio.map.draw_map(MY_COLLECTION, 25, "", None, "PCA", "2-D", "cluster", Session(), None, uri)):
        with pytest.raises(ValueError, match=re.escape(PUBLIC_REFUSAL)):
            ask()


def test_a_collection_search_is_bounded_as_the_reverse_dictionary_is(tiny_mlm_dir):
    """A raw API call's k is not the slider's: a collection is asked for at most MAX_K rows."""
    import types

    from app.handlers.collection import search_collection
    from app.shared.services import MAX_K
    from core import Engine

    asked = []
    collection = types.SimpleNamespace(columns=[], search=lambda vectors, k, columns: asked.append(k) or [[]])
    active = types.SimpleNamespace(engine=Engine.from_base(str(tiny_mlm_dir)))
    for k in (0, MAX_K + 1, 10**9):
        with pytest.raises(ValueError, match=f"The number of rows must be between 1 and {MAX_K}."):
            search_collection(active, collection, "the king", k)
    assert search_collection(active, collection, "the king", MAX_K)["data"] == [] and asked == [MAX_K]


def test_the_collection_path_box_is_offered_on_a_server_of_ones_own_only(tiny_mlm_dir, tmp_path):
    import gradio as gr

    from app.handlers import MY_COLLECTION
    from app.server.public import PublicLimits
    from app.ui import build_app
    from core import Engine
    from tests.conftest import make_studio

    studio = make_studio(Engine.from_base(str(tiny_mlm_dir)), tiny_mlm_dir, tmp_path)

    def offered(public: PublicLimits | None) -> tuple[list[bool], bool, list[bool]]:
        studio.public = public
        demo = build_app(studio)
        blocks = demo.blocks.values()
        boxes = [b.visible for b in blocks if isinstance(b, gr.Textbox) and (b.elem_id or "").endswith("-collection")]
        choices = any(MY_COLLECTION in [c[0] for c in b.choices] for b in blocks if isinstance(b, gr.Dropdown | gr.Radio))
        endpoints = demo.get_api_info()["named_endpoints"]  # an API client that names no collection still calls
        optional = [p["parameter_has_default"] for name in ("/search", "/draw_map")
                    for p in endpoints[name]["parameters"] if p["parameter_name"] == "collection"]
        return boxes, choices, optional
    assert offered(None) == ([True, True], True, [True, True])  # Similarity's and the Map's
    assert offered(PublicLimits()) == ([False, False], False, [True, True])
