"""Inputs refused before a handler runs say why (issue 55, item 5). Gradio checks an event's inputs first
(a file must be an upload of this server, a file input takes a file, a number input a number) and answered
a failed check with `{"error": null}`: no message at all. The app's Blocks (`app.wiring.StudioBlocks`) now
refuses each with one short line naming the input. Asked here as a hostile script would: the HTTP API of a
real server on 127.0.0.1, serving the tiny model; each refusal changes nothing (no file copied into
Gradio's folder, no job queued)."""
from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from app.handlers import Studio
from app.shared.models import Models, ModelSpec
from bench.bench_app import free_port
from core import Engine

NEVER_UPLOADED = [{"path": "/etc/passwd", "meta": {"_type": "gradio.FileData"}},
                  {"path": "app.py", "meta": {"_type": "gradio.FileData"}}]
NAN, INF = float("nan"), float("inf")  # sent as JSON's NaN and Infinity, which Python's server reads
# The API's inputs of each event, the session left out (Gradio fills in a state).
SEARCH = {"query": "a musical instrument", "source": "uploaded file", "file": None, "k": 3,
          "collection": ""}  # a raw call sends every input the API page lists, the collection's path too (issue 72)
START = {"epochs": 1, "lr": 5e-5, "batch": 16, "layers": 0, "max_steps": 0, "evaluations": 1, "seed": 0,
         "measure_decoder": False}


@pytest.fixture(scope="module")
def server(tiny_mlm_dir, tmp_path_factory):
    from app.server.gate import middleware
    from app.ui import build_app
    from app.wiring import enable_queue

    uploads = tmp_path_factory.mktemp("gradio")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("GRADIO_TEMP_DIR", str(uploads))  # Gradio's upload folder: watched for copies
        engine = Engine.from_base(str(tiny_mlm_dir))
        studio = Studio(Models.from_engine(engine, ModelSpec("tiny-model", base=str(tiny_mlm_dir)),
                                           tmp_path_factory.mktemp("checkpoints")))
        demo = enable_queue(build_app(studio))
        demo.launch(server_name="127.0.0.1", server_port=free_port(), prevent_thread_lock=True, quiet=True,
                    app_kwargs={"middleware": middleware(demo)})
        try:
            yield demo, studio, uploads
        finally:
            demo.close()


def call(demo, api_name: str, data: list) -> tuple[str, object]:
    """POST /gradio_api/call/<api_name>, then read its event stream: (the last event's name, its data)."""
    api = demo.local_url.rstrip("/") + "/gradio_api/call/" + api_name
    with httpx.Client(timeout=60) as client:
        answer = client.post(api, content=json.dumps({"data": data}), headers={"content-type": "application/json"})
        assert answer.status_code == 200, answer.text
        event_id = answer.json()["event_id"]
        event = None
        with client.stream("GET", f"{api}/{event_id}") as stream:
            for line in stream.iter_lines():
                if line.startswith("event:"):
                    event = line.split(":", 1)[1].strip()
                elif line.startswith("data:") and event in ("complete", "error"):
                    return event, json.loads(line[5:])
    raise AssertionError(f"{api_name}: the stream ended without an answer")


def refusal(server, api_name: str, data: list) -> str:
    """The message of the error `api_name` answers `data` with, checked to be one short line; nothing changed."""
    demo, studio, uploads = server
    before = sorted(p for p in Path(uploads).rglob("*") if p.is_file())
    event, payload = call(demo, api_name, data)
    assert event == "error", (event, payload)
    message = payload.get("error")
    assert isinstance(message, str) and message.strip(), f"{api_name} refused {data!r} without a message: {payload}"
    assert len(message) < 200 and "\n" not in message and "Traceback" not in message, message
    assert sorted(p for p in Path(uploads).rglob("*") if p.is_file()) == before  # nothing copied or written
    assert not studio.jobs._jobs  # no fine-tuning job queued
    return message


def search(**changes) -> list:
    return list({**SEARCH, **changes}.values())


def start(**changes) -> list:
    return list({**START, **changes}.values())


@pytest.mark.parametrize("path", NEVER_UPLOADED, ids=["etc-passwd", "app.py"])
def test_a_server_path_never_uploaded_is_refused_with_a_message(server, path):
    validate = refusal(server, "validate", [path, 0])
    found = refusal(server, "search", search(file=path))
    for message in (validate, found):
        assert "not uploaded" in message, message
        assert str(Path.cwd()) not in message and "passwd" not in message  # no server path, not even the sent one
    assert validate.startswith("Dictionary file:") and found.startswith("Text file, one sentence per line:")


@pytest.mark.parametrize("value", ["/etc/passwd", "<b>app.py</b>" * 20, 7, {"path": "/etc/passwd"}],
                         ids=["path-string", "long-html", "number", "dict-without-meta"])
def test_something_else_where_a_file_is_expected_is_refused_with_a_message(server, value):
    for message in (refusal(server, "validate", [value, 0]), refusal(server, "search", search(file=value))):
        assert "expected a file" in message, message
        assert "<b>" not in message  # quoted escaped, and short


@pytest.mark.parametrize("k", ["NaN", NAN, INF, "ten", [3]], ids=["NaN-string", "NaN", "inf", "word", "list"])
def test_a_top_k_that_is_not_a_number_is_refused_with_a_message(server, k):
    message = refusal(server, "search", search(source="largest ready", k=k))
    assert message.startswith("Top k:"), message


@pytest.mark.parametrize("lr", ["NaN", NAN, -INF, "fast"], ids=["NaN-string", "NaN", "minus-inf", "word"])
def test_a_learning_rate_that_is_not_a_number_is_refused_with_a_message(server, lr):
    message = refusal(server, "start_finetune", start(lr=lr))
    assert message.startswith("Learning rate:"), message


def test_a_whole_number_setting_that_is_not_a_number_is_refused_with_a_message(server):
    """gr.Number(precision=0) rounds with int(): int(nan) raised inside Gradio's preprocessing."""
    assert refusal(server, "start_finetune", start(batch=NAN)).startswith("Batch size:")
    assert refusal(server, "validate", [None, "NaN"]).startswith("Seed:")


def test_an_out_of_range_number_is_refused_with_a_short_message(server):
    """Gradio's own refusal (a gr.Error) names the input too, and quotes a huge number short."""
    message = refusal(server, "search", search(source="largest ready", k=10 ** 1000))
    assert message.startswith("Top k: must be at least 1 and at most 50, got \"1000") and len(message) < 80, message


def test_a_choice_not_offered_is_refused_short(server):
    """Gradio's refusal quoted the whole value, its HTML as it was, and listed every choice."""
    message = refusal(server, "search", search(source="<script>alert(1)</script>" * 500))
    assert message == 'Search in: "&lt;script&gt;alert(1)&lt;/scr..." is not one of its choices.'


def test_good_inputs_still_answer(server):
    demo, _, _ = server
    event, data = call(demo, "similarity", ["a dog", "a cat"])
    assert event == "complete", data


@pytest.mark.parametrize("setting,value,label", [("epochs", -1, "Epochs"), ("lr", 0, "Learning rate"),
                                                 ("batch", 0, "Batch size"), ("layers", -3, "Train top layers")])
def test_a_number_below_its_minimum_on_an_input_without_a_maximum_is_refused_with_a_message(server, setting, value,
                                                                                          label):
    """Issue 61: with no maximum the refusal formatted "at most None" and raised inside the error handler, so the
    client read `{"error": null}`."""
    message = refusal(server, "start_finetune", start(**{setting: value}))
    assert message.startswith(f"{label}: must be at least ") and f'got "{value}"' in message, message
    assert "at most" not in message


def map_inputs(**changes) -> list:
    from app.tabs.map import COLOUR_BY, MAP_SOURCES

    inputs = {"source": MAP_SOURCES[0], "size": 500, "sentences": "", "file": None, "method": "PCA", "dims": "2-D",
              "colour": COLOUR_BY[0], "column": None, "collection": ""}
    return list({**inputs, **changes}.values())


@pytest.mark.parametrize("api_name,data,label", [
    ("switch_model", [7], "Model"), ("switch_model", [["tiny-model"]], "Model"),
    ("job_active", [{"job": "x"}], "job_id"), ("job_active", [3], "job_id"),
    ("draw_map", map_inputs(size=None), "Sample size"), ("evaluate_words", [None, False], "Definitions")],
    ids=["model-number", "model-list", "job-dict", "job-number", "map-size-none", "words-size-none"])
def test_a_wrongly_typed_input_is_refused_before_its_handler(server, api_name, data, label, caplog):
    """Issue 61: these reached their handlers, which answered "Something went wrong (AttributeError)" and logged a
    traceback. Now each is one line naming the input, and the handler never runs."""
    with caplog.at_level("ERROR"):
        message = refusal(server, api_name, data)
    assert message.startswith(f"{label}: expected "), message
    assert "went wrong" not in message and not [r for r in caplog.records if r.exc_info], caplog.text


def test_inputs_that_may_be_empty_still_answer(server):
    """A parameter that takes None (the map's column, a file not given) is not refused for it."""
    demo, _, _ = server
    event, data = call(demo, "draw_map", map_inputs(column=None, file=None, size=500))
    assert event == "complete" or "expected" not in str(data), data
