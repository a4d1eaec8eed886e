"""Memory bounds of uploads and requests: the dictionary reader caps the columns it builds and the
report it writes; a validated upload is kept packed, for a bounded time and within a byte budget
shared by all sessions (a session holds only a ticket); HTTP request bodies are bounded."""
from __future__ import annotations

import json
import os
import pickle
import time
import tracemalloc

import pytest

from app.shared import finetune
from app.shared.finetune import UPLOADS, UploadData, UploadStore, validate_upload
from app.handlers import Session
from core.lexicon.dictionary import split_by_word
from core.lexicon.user_files import MAX_REPORT_CHARS, ValidationReport, read_user_dictionary
from tests.conftest import DEFINITIONS

pytestmark = pytest.mark.usefixtures("cache_in_tmp")  # the cache in tmp_path: tests/conftest.py

GOOD_ROWS = "".join(f"{w},{d}\n" for w, d in DEFINITIONS.items())


def write(folder, name: str, text: str):
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


# ---- the reader -------------------------------------------------------------------------------------

def test_a_header_of_a_million_columns_is_refused_without_building_them(tmp_path):
    # 7 MB of header; before the bound the csv module made a million strings and the report listed
    # them all (the 19 MB, 6.4-million-column file of issue 27 took 1.45 GB and gave a 51 MB report).
    path = write(tmp_path, "wide.csv", ",".join(f"c{i}" for i in range(1_000_000)) + "\n" + GOOD_ROWS)
    tracemalloc.start()
    try:
        entries, report = read_user_dictionary(path)
        summary = report.summary()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert entries == [] and "line 1 holds more than 10,000 ',' delimiters" in report.error
    assert len(summary) < 500
    assert peak < 100_000_000  # the bytes and the text, a few times over (47 MB), not a list per column (245 MB)


def test_a_data_line_of_many_fields_refuses_the_file_with_its_line(tmp_path):
    path = write(tmp_path, "row.tsv", "word\tdefinition\ndog\ta pet\n" + "\t" * 20_000 + "\n")
    entries, report = read_user_dictionary(path)
    assert entries == [] and report.error.startswith("line 3 holds more than 10,000 tab delimiters")


def test_headers_are_capped_at_100_columns_and_the_found_list_at_10(tmp_path):
    header = ",".join(["word", "definition"] + [f"extra{i}" for i in range(99)])
    entries, report = read_user_dictionary(write(tmp_path, "many.csv", header + "\n" + GOOD_ROWS))
    assert entries == [] and report.error.startswith("the header has 101 columns, over the limit of 100")
    entries, report = read_user_dictionary(write(tmp_path, "few.csv", header + "\n" + GOOD_ROWS), max_columns=101)
    assert len(entries) == len(DEFINITIONS)  # other columns are ignored, as before
    header = ",".join(f"col{i}" for i in range(50))
    _, report = read_user_dictionary(write(tmp_path, "nameless.csv", header + "\n1,2\n"))
    assert report.error.endswith('(found: "col0", "col1", "col2", "col3", "col4", "col5", "col6", "col7", "col8", '
                                 '"col9", ... and 40 more)')


def test_jsonl_lines_that_are_too_long_or_have_too_many_keys_are_rejected_unparsed(tmp_path):
    rows = [json.dumps({"word": w, "definition": d}) for w, d in DEFINITIONS.items()]
    rows.append(json.dumps({"word": "dog", "definition": "x", "junk": "y" * 100_000}))
    rows.append(json.dumps({"word": "cat", "definition": "x", **{f"k{i}": i for i in range(100)}}))
    entries, report = read_user_dictionary(write(tmp_path, "rows.jsonl", "\n".join(rows) + "\n"))
    assert len(entries) == len(DEFINITIONS)
    assert [(r.row, r.reason) for r in report.rejected] == [
        (len(DEFINITIONS) + 1, "line longer than 100,000 characters"), (len(DEFINITIONS) + 2, "102 keys, over the limit of 100")]


def test_a_summary_is_cut_at_its_bound():
    summary = ValidationReport(file="f.tsv", error="x" * 50_000).summary()
    assert len(summary) == MAX_REPORT_CHARS and summary.endswith("\n... (cut at 10,000 characters)")
    assert len(ValidationReport(file="f.tsv", error="short").summary()) < 100  # short ones unchanged


# ---- validated uploads --------------------------------------------------------------------------------

def test_a_session_keeps_a_ticket_and_the_server_the_rows_packed(studio, tmp_path):
    rows = "".join(f"{w},{d} number {i} of a rather long definition of this word\n"
                   for i in range(500) for w, d in DEFINITIONS.items())  # 10,000 rows, 800 kB
    path = write(tmp_path, "big.csv", "word,definition\n" + rows)
    size = path.stat().st_size
    report, session = studio.finetune.validate_upload(str(path), 0, Session())
    assert "Ready" in report
    assert len(pickle.dumps(session)) < 3_000  # before: every row, as objects, in the session
    data = UPLOADS.get(session.upload)
    assert len(data.packed) < size / 5
    entries, _ = read_user_dictionary(path)
    assert data.entries == entries and data.split == split_by_word(entries, seed=0)
    assert data.train_size == len(data.split.train)


def test_a_new_upload_replaces_the_sessions_previous_one(studio, tmp_path):
    path = write(tmp_path, "mine.csv", "word,definition\n" + GOOD_ROWS)
    _, session = studio.finetune.validate_upload(str(path), 0, Session())
    first = session.upload
    mine = write(tmp_path, "mine.csv", "word,definition\n" + GOOD_ROWS)
    _, session = studio.finetune.validate_upload(str(mine), 0, session)
    with pytest.raises(ValueError, match="no longer kept on the server"):
        UPLOADS.get(first)
    UPLOADS.get(session.upload)
    studio.finetune.validate_upload(None, 0, session)  # the file was cleared: nothing kept
    assert session.upload is None


def test_uploads_expire_and_starting_then_asks_for_the_file_again(studio, tmp_path, monkeypatch):
    monkeypatch.setattr(finetune.UPLOADS, "lifetime", 0.05)
    _, session = studio.finetune.validate_upload(str(write(tmp_path, "mine.csv", "word,definition\n" + GOOD_ROWS)), 0,
                                        Session())
    time.sleep(0.1)
    with pytest.raises(ValueError, match="The validated dictionary 'mine.csv' is no longer kept on the server "
                                         r"\(uploads are kept for 0 minutes, fewer when many are waiting\); upload"):
        studio.finetune.start_finetune(session, 1, 1e-3, 4, 0, 4, 2, 0)
    assert studio.jobs.unfinished() == []


def test_the_store_keeps_at_most_its_byte_budget_oldest_out_first(engine, tmp_path):
    data = validate_upload(engine, write(tmp_path, "mine.csv", "word,definition\n" + GOOD_ROWS))
    store = UploadStore(max_bytes=2 * len(data.packed))
    tickets = [store.keep(data) for _ in range(3)]
    assert store.kept_bytes() == 2 * len(data.packed)
    with pytest.raises(ValueError, match="no longer kept"):
        store.get(tickets[0])
    assert store.get(tickets[1]) is data and store.get(tickets[2]) is data


def test_past_the_budget_the_largest_holders_uploads_go_first(engine, tmp_path):
    """Session 49's review: uploads were dropped oldest first, anyone's, so a few visitors validating many evicted
    every other visitor's dictionary; now the oldest of whoever keeps the most bytes goes."""
    data = validate_upload(engine, write(tmp_path, "mine.csv", "word,definition\n" + GOOD_ROWS))
    store = UploadStore(max_bytes=3 * len(data.packed))
    victim = store.keep(data, owner="203.0.113.7")
    flood = [store.keep(data, owner="198.51.100.9") for _ in range(4)]
    assert store.get(victim) is data
    with pytest.raises(ValueError, match="no longer kept"):
        store.get(flood[0])
    assert all(store.get(t) is data for t in flood[2:]) and store.kept_bytes() == 3 * len(data.packed)


def test_packed_uploads_travel_to_the_training_process_whole(engine, tmp_path):
    data = validate_upload(engine, write(tmp_path, "mine.csv", "word,definition\n" + GOOD_ROWS), seed=3)
    copy = pickle.loads(pickle.dumps(data))  # what run_in_process sends the child
    assert isinstance(copy, UploadData) and copy.split == split_by_word(data.entries, seed=3)


# ---- request bodies ------------------------------------------------------------------------------------

def test_request_bodies_over_the_bound_are_refused(tmp_path):
    gr = pytest.importorskip("gradio")
    import httpx
    from starlette.middleware import Middleware

    from app.server.request_limits import MAX_REQUEST_BYTES, RequestBodyLimit
    from app.settings import MAX_UPLOAD_BYTES
    from bench.bench_app import free_port

    assert MAX_UPLOAD_BYTES < MAX_REQUEST_BYTES <= MAX_UPLOAD_BYTES + 1_000_000
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    with gr.Blocks() as demo:
        text, out = gr.Textbox(), gr.Textbox()
        text.submit(lambda x: str(len(x)), text, out, api_name="length")
    demo.queue().launch(server_name="127.0.0.1", server_port=free_port(), prevent_thread_lock=True, quiet=True,
                        app_kwargs={"middleware": [Middleware(RequestBodyLimit, max_bytes=1_000_000)]})
    try:
        url = demo.local_url.rstrip("/") + "/gradio_api/call/length"
        assert httpx.post(url, json={"data": ["a dog"]}, timeout=60).status_code == 200
        declared = httpx.post(url, content=json.dumps({"data": ["x" * 2_000_000]}).encode(),
                              headers={"content-type": "application/json"}, timeout=60)
        assert (declared.status_code, declared.text) == (413, "Request body too large: at most 1000000 bytes.")
        chunked = httpx.post(url, content=(b"x" * 100_000 for _ in range(40)),  # no Content-Length
                             headers={"content-type": "application/json"}, timeout=60)
        assert chunked.status_code == 413
        assert httpx.get(demo.local_url, timeout=60).status_code == 200
    finally:
        demo.close()


def test_the_app_launches_with_the_request_body_limit(tiny_mlm_dir, tmp_path, monkeypatch):
    """app.py passes RequestBodyLimit to Gradio's launch, outermost (without it JSON bodies are unbounded)."""
    import importlib.util
    from pathlib import Path

    import gradio as gr

    from app.server.request_limits import RequestBodyLimit

    launched = {}
    monkeypatch.setattr(gr.Blocks, "launch", lambda self, **kwargs: launched.update(kwargs))
    monkeypatch.setattr(gr.Blocks, "block_thread", lambda self: None)
    monkeypatch.setenv("DEFSENT_CACHE_DIR", str(tmp_path / "cache"))
    spec = importlib.util.spec_from_file_location("app_main", Path(__file__).resolve().parents[1] / "app.py")
    app_main = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(app_main)
    assert app_main.main(["--model", str(tiny_mlm_dir), "--checkpoints", str(tmp_path), "--no-umap-warmup",
                          "--single-token-words", "--port", "7999"]) == 0
    layers = [m.cls for m in launched["app_kwargs"]["middleware"]]
    assert layers[0] is RequestBodyLimit  # outermost: no other layer reads an unbounded body
