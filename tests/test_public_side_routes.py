"""A reading-first review of what a stranger reaches on the public server (session 49, 2026-12-05). Each test here
showed a defect found by reading, and failed on the code it was written against for that reason (a defect not fixed
yet is marked xfail, strict: the mark goes with the fix). No server is started:
Gradio's app is spoken to in-process (httpx's ASGI transport), handlers and readers are called directly, on tiny
inputs."""
from __future__ import annotations

import asyncio
import contextlib
import json
import re
import socket
import tempfile
import time
import types
from pathlib import Path

import pytest

from app.server.public import DiskBudget, PublicLimits, disk_used, use_disk_budget


@pytest.fixture(autouse=True)
def files_in_tmp(tmp_path, monkeypatch):
    """The cache, the download folder and Gradio's temp folder under tmp_path; no disk budget left behind."""
    monkeypatch.setenv("DEFSENT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(tmp_path / "gradio"))
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", None)
    yield
    use_disk_budget(None)


def test_the_deep_link_route_writes_a_sessions_whole_state_outside_the_disk_budget(tmp_path):
    """GET /gradio_api/deep_link?session_hash=S (Gradio 6.31, open in public mode: RouteGuard closes only the screen
    recording) writes S's state (every input's and output's last value, app.server.sessions) as
    GRADIO_TEMP_DIR/deep_links/HASH/state.json: no reservation, no address share, never deleted by Gradio. A new
    state (any small request) gives a new file: one address fills the budget, then the disk."""
    import gradio as gr
    import httpx
    from gradio.routes import App

    from app.server.gate import middleware
    from app.server.sessions import handling

    budget = 200_000
    use_disk_budget(DiskBudget(PublicLimits(disk_bytes=budget)))
    with gr.Blocks() as demo:
        box = gr.Textbox()
    demo.queue()
    app = App.create_app(demo, app_kwargs={"middleware": middleware(demo, public=PublicLimits())})

    async def visit() -> int:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://space") as page:
            await page.get("/gradio_api/deep_link", params={"session_hash": "none"})  # installs the bounded sessions
            with handling("203.0.113.7"):  # the visitor's own session, holding a long text (as after a request)
                state = app.state_holder["visitor"]
            state[box._id] = box
            state._update_value_in_config(box._id, "x" * 1_000_000)
            return (await page.get("/gradio_api/deep_link", params={"session_hash": "visitor"})).status_code

    asyncio.run(visit())
    assert disk_used() <= budget, f"{disk_used():,} bytes on disk, over the budget of {budget:,}"


def test_a_refused_description_is_not_kept_whole_in_the_visitors_session(tiny_mlm_dir, tmp_path):
    """Sessions are bounded by count (app.server.sessions: 32 an address, 1,000 in all, "about 0.4 MB each"), but Gradio
    keeps every input's last value in the session (SessionState.config_values, stored before the handler runs): a
    2 MB description, refused (the limit is 1,000 characters), stays in the session whole. Each of the ~20 text
    inputs keeps up to ~21 MB (the body limit), so 32 sessions of one address hold gigabytes. Those copies are for
    Gradio's deep links (closed in public mode, unused by the app): StudioBlocks drops them. (The app's own Session
    keeps a drawn map's or searched corpus's vectors, tens of MB: bounded apart, PublicLimits.session_vectors_bytes.)"""
    import gradio as gr
    from gradio.state_holder import SessionState

    from app.handlers import Studio
    from app.shared.models import Models, ModelSpec
    from app.ui import build_app
    from core import Engine

    engine = Engine.from_base(str(tiny_mlm_dir))
    studio = Studio(Models.from_engine(engine, ModelSpec("tiny", base=str(tiny_mlm_dir)), tmp_path / "checkpoints"),
                    public=PublicLimits())
    studio.start()
    demo = build_app(studio)
    fn = next(f for f in demo.fns.values() if f.api_name == "reverse_dictionary")
    long_text = "word " * 400_000  # 2 MB
    inputs = [long_text if i == 0 else getattr(block, "value", None) for i, block in enumerate(fn.inputs)]
    state = SessionState(demo)
    with pytest.raises(gr.Error, match="limit is 1,000"):
        asyncio.run(demo.process_api(block_fn=fn, inputs=inputs, state=state))
    kept = max(len(json.dumps(config, default=str)) for config in state.config_values.values())
    assert kept < 100_000, f"the session keeps a component config of {kept:,} characters after the refusal"


def test_a_table_header_of_many_columns_is_refused_before_it_is_checked(tmp_path):
    """An uploaded text file whose first line holds tabs is read as a table (app.shared.services.read_text_file ->
    core.explore.table_columns), whose check for a column named twice is quadratic (`column in names[:j]` for every
    j): 40,000 columns (a 270 kB file) took 9 s, a 10 MB upload of ~1.5M columns would take hours, in the heavy
    pool's one slot, uncancellable (no cancel point in that loop). Similarity search and Draw map read such files.
    Now a table has at most MAX_COLUMNS (100) columns, and names used twice are found in one pass."""
    from app.shared.services import read_text_file

    path = tmp_path / "wide.tsv"
    path.write_text("\t".join(f"c{i}" for i in range(30_000)) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match="30,000 columns; at most 100 can be read"):
        read_text_file(path)


def test_projector_vectors_over_the_point_limit_are_refused_before_every_row_is_parsed(tmp_path, monkeypatch):
    """core.explore.read_projector parses every line into a list of floats, then checks `max_points`: a 20 MB
    upload of "0\\n" lines (10M rows) is parsed whole (~1.4 GB of Python lists, ~14 s; 4 MB measured +272 MB, 2.8 s)
    before "at most 20,000 can be loaded"."""
    from core.explore import projector

    path = tmp_path / "vectors.tsv"
    path.write_text("0.5\t0.25\n" * 1_000, encoding="utf-8")
    parsed = []
    real = projector._vector_row
    monkeypatch.setattr(projector, "_vector_row", lambda *args: parsed.append(1) or real(*args))
    with pytest.raises(ValueError, match="at most 10"):
        projector.read_projector(path, None, max_points=10)
    assert len(parsed) <= 11, f"{len(parsed):,} rows parsed to refuse a file over a limit of 10"


def test_an_upload_leaves_no_folders_once_gradio_has_deleted_its_file(tmp_path):
    """UploadRoom moves each uploaded file from Gradio's folder (named by its content's hash) into a new folder of its
    own; Gradio's scheduled deletion (delete_files_created_by_app) removes files, not folders, and the budget's own
    clean-up (make_room) ran only when the budget was full, which empty folders never make it. So every upload left
    two empty folders for the server's life (a request may carry 1,000 files: 2,000 folders), each walked by every
    reservation (disk_used, under the budget's lock). Now Gradio's folder goes with the move, and the next
    reservation sweeps an empty folder once it is EMPTY_FOLDER_AGE_S old (a younger one may be about to get its file)."""
    import os

    from gradio.route_utils import delete_files_created_by_app

    from app.server.public import EMPTY_FOLDER_AGE_S
    from app.server.request_limits import UploadRoom
    from app.settings import upload_dir

    uploads = upload_dir()
    written = uploads / ("ab" * 32) / "f.txt"  # where Gradio's /upload puts a file
    written.parent.mkdir(parents=True)
    written.write_text("x")
    blocks = types.SimpleNamespace(upload_file_set={str(written)}, blocks={})
    blocks.temp_file_sets = [blocks.upload_file_set]
    room = UploadRoom(app=None, blocks=blocks, budget=lambda: None, address=lambda scope: "203.0.113.7")
    answer = [{"type": "http.response.start", "status": 200, "headers": []},
              {"type": "http.response.body", "body": json.dumps([str(written)]).encode()}]
    (own,) = room._own_folders(answer)
    assert sorted(p.name for p in uploads.iterdir()) == [own.name]  # Gradio's folder went with the move
    delete_files_created_by_app(blocks, age=None)  # as Gradio's delete_cache does, once the files are old
    budget = DiskBudget(PublicLimits(disk_bytes=10_000_000))
    budget.release(budget.reserve(10, "a young folder's neighbour"))
    assert own.is_dir()  # empty but young: kept
    old = time.time() - EMPTY_FOLDER_AGE_S - 1
    os.utime(own, (old, old))
    budget.release(budget.reserve(10, "the next upload"))
    left = sorted(str(p.relative_to(uploads)) for p in uploads.rglob("*"))
    assert left == [], f"left behind: {left}"


def test_progress_polls_for_made_up_uploads_leave_nothing_behind():
    """GET /gradio_api/upload_progress?upload_id=ANY (Gradio 6.31, open in public mode, outside the queue and its
    shares) waits 3 s for the upload, answers 404, and keeps an asyncio.Event for that id for good
    (FileUploadProgress._signals, a defaultdict); POST /gradio_api/upload?upload_id=NEW keeps a tracker too unless
    its progress is read. A stranger's loop of made-up ids grows the server's memory without bound."""
    import gradio as gr
    import httpx
    from gradio.routes import App, file_upload_statuses

    from app.server.gate import middleware

    with gr.Blocks() as demo:
        gr.File()
    demo.queue()
    app = App.create_app(demo, app_kwargs={"middleware": middleware(demo, public=PublicLimits())})
    before = len(file_upload_statuses._signals) + len(file_upload_statuses._statuses)

    async def poll() -> None:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://space") as page:
            await asyncio.gather(*[page.get("/gradio_api/upload_progress", params={"upload_id": f"made-up-{i}"})
                                   for i in range(50)])

    asyncio.run(poll())
    kept = len(file_upload_statuses._signals) + len(file_upload_statuses._statuses) - before
    assert kept == 0, f"{kept} entries kept after 50 polls for uploads that never were"


def test_a_quick_request_never_loads_a_model(tiny_mlm_dir, tmp_path, monkeypatch):
    """Public mode keeps at most `loaded_models` (2) chosen models besides the server's; a session whose model was
    dropped gets it loaded and prepared again inside its next request (Models.shared, uncancellable), whatever its
    pool: a reverse dictionary or a similarity (the quick pool, 2 slots, the light requests' reserve) then holds a
    slot for a whole load and preparation (tens of seconds for the shipped model: its vocabulary, decoder, untrained
    twin). Three sessions choosing three models in turn (a visitor's own fine-tunes count) keep both quick slots
    loading models, and every visitor's light requests wait (before: each of the three reloaded its model). Now only the
    model chooser loads (the model pool): a request of a session whose model was dropped says so, and the vocabulary's
    progress poll (outside the queue) shows nothing for it."""
    from app.handlers import Session, Studio
    from app.shared.models import Models, ModelSpec
    from core import Engine
    from tests.conftest import build_tiny_bert

    checkpoints = tmp_path / "checkpoints"
    for seed in (1, 2, 3):
        Engine.from_base(str(build_tiny_bert(tmp_path / f"base{seed}", seed=seed))).save(
            checkpoints / f"other{seed}", name=f"other{seed}")
    models = Models.from_engine(Engine.from_base(str(tiny_mlm_dir)), ModelSpec("tiny", base=str(tiny_mlm_dir)),
                                checkpoints)
    studio = Studio(models, public=PublicLimits())
    studio.start()
    sessions = [Session() for _ in range(3)]
    for session, seed in zip(sessions, (1, 2, 3)):
        try:
            studio.choose_model(f"other{seed}", session)  # the model pool's work: a load here is its job
        except ValueError:
            pass
    loads = []
    real_load = ModelSpec.load
    monkeypatch.setattr(ModelSpec, "load", lambda spec, *args, **kwargs: loads.append(spec.name) or
                        real_load(spec, *args, **kwargs))
    answers = []
    for session in sessions:  # each visitor's next light request
        try:
            answers.append(studio.similarity.pair_similarity("a dog", "a cat", session))
        except ValueError as err:
            answers.append(str(err))
    assert loads == [], f"quick requests loaded {loads}"
    assert answers[0] == ("Your model \"other1\" was unloaded to make room for other visitors' models (this public "
                          "server keeps 2 loaded besides its own): press Use this model to load it again, then ask "
                          "again.")
    assert all(answer.startswith("**cosine similarity") for answer in answers[1:])  # theirs are still loaded
    assert studio.reverse.vocabulary_progress(sessions[0]) == ("", False) and loads == []
    studio.choose_model("other1", sessions[0])  # the model pool's work: it loads again
    assert loads == ["other1"] and "cosine" in studio.similarity.pair_similarity("a dog", "a cat", sessions[0])


def test_a_map_of_ten_thousand_points_can_be_exported_within_one_addresss_share():
    """Export (app.shared.export.projector_download) reserves 4 x 12 bytes a value (its estimate doubled, then doubled
    again for Gradio's copy): 184 MB for 10,000 points of 384-d, over one address's share (150 MB), though the tsv
    and its zip take ~60 MB at their peak. So on the public server any map above ~8,100 points (the map of every
    word, whose button offers a sample of 20,000: 369 MB) is refused, whatever the visitor has stored. Now the files
    are written into the zip line by line, and 2 x 6 bytes a value are reserved (the zip takes ~3.9)."""
    import numpy as np

    from app.server.public import VISITOR
    from app.shared.export import projector_download

    use_disk_budget(DiskBudget(PublicLimits()))  # 1.5 GB, 150 MB an address, nothing stored yet
    vectors = np.random.default_rng(0).normal(scale=0.05, size=(10_000, 384)).astype(np.float32)
    token = VISITOR.set("203.0.113.7")
    try:
        archive = projector_download(vectors, {"text": [f"sentence {i}" for i in range(10_000)]})
    finally:
        VISITOR.reset(token)
    assert archive.stat().st_size < 150_000_000


def test_the_dev_reload_stream_is_not_open_on_a_public_server():
    """GET /gradio_api/dev/reload (Gradio's reload-mode notifier, registered on every server, open in public mode) is
    an endless stream that wakes every 50 ms to ask whether its client left: measured in-process through the public
    middleware, 300 open streams cost the event loop 0.17 CPU-seconds a second (0.6 ms each), so ~2,000 idle
    connections from one stranger (no queue, no session, no share) take the whole loop and every visitor's request
    waits. A public server does not reload: the route should answer at once."""
    import gradio as gr
    from gradio.routes import App

    from app.server.gate import middleware

    with gr.Blocks() as demo:
        gr.Textbox()
    demo.queue()
    app = App.create_app(demo, app_kwargs={"middleware": middleware(demo, public=PublicLimits())})
    scope = {"type": "http", "method": "GET", "path": "/gradio_api/dev/reload", "raw_path": b"/gradio_api/dev/reload",
             "query_string": b"", "headers": [(b"host", b"space")], "client": ("203.0.113.7", 1234),
             "server": ("space", 80), "scheme": "http", "http_version": "1.1", "root_path": "", "app": app}
    sent = []

    async def visit() -> None:
        stays = asyncio.Event()  # the client never leaves

        async def receive():
            await stays.wait()

        async def send(message):
            sent.append(message)
        await asyncio.wait_for(app(scope, receive, send), timeout=1.0)

    try:
        asyncio.run(visit())
    except (asyncio.TimeoutError, TimeoutError):
        pytest.fail(f"the stream was still open after 1 s (status {sent[0].get('status') if sent else None})")


@pytest.mark.parametrize("query", ["upload_id=made-up-1", "upload%5Fid=made-up-2", "a=1&upload_id=made-up-3"])
def test_an_upload_on_a_public_server_is_not_tracked_for_progress(query):
    """With its progress route closed, nobody reads an upload's progress: an upload naming an id would keep a tracker
    (FileUploadProgress._statuses) for good. The id is dropped, however it is escaped."""
    import gradio as gr
    import httpx
    from gradio.routes import App, file_upload_statuses

    from app.server.gate import middleware

    with gr.Blocks() as demo:
        gr.File()
    demo.queue()
    demo.max_file_size = None  # as launch() sets it
    app = App.create_app(demo, app_kwargs={"middleware": middleware(demo, public=PublicLimits())})
    before = len(file_upload_statuses._signals) + len(file_upload_statuses._statuses)

    async def upload() -> int:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://space") as page:
            answer = await page.post(f"/gradio_api/upload?{query}", files={"files": ("a.txt", b"hello")})
            return answer.status_code

    assert asyncio.run(upload()) == 200
    assert len(file_upload_statuses._signals) + len(file_upload_statuses._statuses) == before


def test_the_addresses_of_one_ipv6_network_share_one_visitors_limits():
    """Session 49's review: limits and shares went by the exact address, and an IPv6 subscriber has a whole /64 (2^64
    addresses), so one stranger could take every session slot and disk share. A /64 is one visitor now."""
    from app.server.gate import TrustedProxies, forwarded_client

    def visitor(peer: str) -> str:
        return forwarded_client(peer, {}, TrustedProxies())

    assert visitor("2001:db8:1:2::1") == visitor("2001:db8:1:2:ffff:ffff:ffff:9") == "2001:db8:1:2::/64"
    assert visitor("2001:db8:1:3::1") != visitor("2001:db8:1:2::1")
    assert visitor("203.0.113.7") == visitor("::ffff:203.0.113.7") == "203.0.113.7"
    assert visitor("203.0.113.8") != visitor("203.0.113.7")


def _peak_bytes(run) -> int:
    """tracemalloc's peak while `run()` runs."""
    import tracemalloc

    tracemalloc.start()
    try:
        run()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_pasted_lines_past_the_bound_are_refused_without_splitting_the_whole_text(tmp_path):
    """app.shared.services.text_lines split the whole text, then counted its lines against the bound: 10 MB of short
    lines ("ab\\n", 3.3M) took a ~500 MB transient (tracemalloc's peak; read_text_file ~740 MB, splitting it twice)
    and ~8 s, in the heavy pool's one slot, to refuse them. Now both stop at the bound; what they return for valid
    input is what splitting gave (every line break str.splitlines knows)."""
    from app.shared.services import read_text_file, text_lines

    text = "ab\n" * 1_000_000
    path = tmp_path / "short.txt"
    path.write_text(text, encoding="utf-8")
    def refuse_both():
        with pytest.raises(ValueError, match="sentences given; the limit is 100"):
            text_lines(text, 100)
        with pytest.raises(ValueError, match="lines in the file given; the limit is 100"):
            read_text_file(path, 100)

    peak = _peak_bytes(refuse_both)
    assert peak < 12_000_000, f"refusing 1,000,000 lines over a bound of 100 took {peak:,} bytes"  # the text: 3 MB
    breaks = "one\r\ntwo\rthree\vfour\x0cfive\x1csix\x1dseven\x1eeight\x85nine\u2028ten\u2029eleven"
    valid = f"  a dog \n\n \t\n{breaks}\n  last  \r\n"
    assert text_lines(valid, 100) == [line.strip() for line in valid.splitlines() if line.strip()]
    path.write_text(valid, encoding="utf-8", newline="")
    assert read_text_file(path, 100) == (text_lines(valid, 100, "lines in the file"), {})


def test_addresses_holding_heartbeats_cannot_lock_a_newcomer_out_of_the_sessions():
    """app.server.sessions dropped only idle sessions, and a page's open heartbeat keeps its session live for good:
    32 addresses holding 32 heartbeats each (one stranger's few IPv4 addresses) filled the 1,000 places and every
    newcomer was refused. Now, at the total, past the idle ones, the least recently used session of the address that
    holds the most goes, heartbeat or not, when that address holds at least two more than the newcomer's; one with a
    request waiting or running never goes."""
    import datetime

    from app.server.sessions import BoundedSessions, SessionLimits, SessionRefused, handling

    dropped = []
    holder = types.SimpleNamespace(time_last_used={}, delete_state=dropped.append)
    busy = set()
    table = BoundedSessions(holder, SessionLimits(per_address=4, total=8), busy=lambda key: key in busy)

    def make(key: str, address: str) -> None:
        with handling(address):
            table[key] = key
        holder.time_last_used[key] = datetime.datetime.now()
        table.heartbeat(key, True)  # its page is open, for good

    for key in ("a1", "b1", "a2", "b2", "a3", "b3", "a4", "b4"):
        make(key, "198.51.100.1" if key[0] == "a" else "198.51.100.2")
    busy.add("a1")  # a request of a1 runs: never dropped
    make("c1", "203.0.113.7")
    assert dropped == ["b1"]  # the largest holders hold 4; a1, the least recently used, is busy
    make("c2", "203.0.113.7")
    assert dropped == ["b1", "a2"]
    with pytest.raises(SessionRefused, match="as many visitors' sessions as it keeps"):
        make("c3", "203.0.113.7")  # 3, 3 and 2: no address holds two more than the newcomer would
    make("d1", "2001:db8::1")  # another network: 3 > 0 + 1
    assert dropped == ["b1", "a2", "b2"] and sorted(table) == ["a1", "a3", "a4", "b3", "b4", "c1", "c2", "d1"]


def test_the_vectors_sessions_keep_are_bounded_on_the_whole_server(tiny_mlm_dir, tmp_path):
    """A session keeps its last map's points and coordinates and its searched file's vectors (app.handlers.session:
    up to ~60 MB for 20,000 lines of the shipped model), and nothing bounded their sum over 1,000 sessions (~60 GB).
    Now `PublicLimits.session_vectors_bytes` bounds it: past it the least recently used session's go first, and that
    session's next request that needs them says to draw the map (or search the file) again."""
    import numpy as np

    from app.handlers import Session, Studio
    from app.shared.models import Models, ModelSpec
    from app.shared.services import UPLOADED_FILE
    from core import Engine

    sentences = "\n".join(f"a dog number {i} eats good bread" for i in range(200))
    one = Session()  # what one session's map of these keeps: its points' vectors and coordinates
    engine = Engine.from_base(str(tiny_mlm_dir))
    models = Models.from_engine(engine, ModelSpec("tiny", base=str(tiny_mlm_dir)), tmp_path / "checkpoints")
    Studio(models).map.draw_map("my sentences", 0, sentences, None, "PCA", "2-D", "part of speech", one)
    each = one.map.corpus.vectors.nbytes + one.map.coords.nbytes
    studio = Studio(models, public=PublicLimits(session_vectors_bytes=int(2.5 * each)))
    studio.start()
    sessions = [Session() for _ in range(3)]
    for session in sessions:
        studio.map.draw_map("my sentences", 0, sentences, None, "PCA", "2-D", "part of speech", session)
    studio.map.map_point("[[0, 1]]", sessions[1])  # sessions[1] used its map since: sessions[0]'s goes first

    def kept(session: Session) -> int:
        arrays = {id(a): a for a in ([session.map.corpus.vectors, session.map.coords] if session.map else [])}
        return sum(a.nbytes for a in arrays.values() if isinstance(a, np.ndarray))
    assert sum(map(kept, sessions)) <= 2.5 * each, f"{sum(map(kept, sessions)):,} bytes kept, over {2.5 * each:,.0f}"
    with pytest.raises(ValueError, match="Your map was dropped to make room .*: draw it again"):
        studio.map.map_point("[[0, 1]]", sessions[0])
    assert studio.map.map_point("[[0, 1]]", sessions[1]) and studio.map.map_point("[[0, 1]]", sessions[2])
    searched = Session(corpus=sessions[1].map.corpus, corpus_key=engine.fingerprint + "a file")  # as after a search
    searched.drop_vectors()
    with pytest.raises(ValueError, match="The vectors of your uploaded file were dropped .*, again"):
        searched.reference(models.active(), UPLOADED_FILE)


def test_a_map_of_the_models_reference_sentences_counts_only_its_own_coordinates(tiny_mlm_dir, tmp_path):
    """The Map tab's first choice, "dictionary definitions", draws the model's reference sentences, whose vectors the
    model keeps once for every session (ActiveModel.reference). HeldVectors counted them again for each session that
    drew it (1.5 MB a session for the default 1,000 of the shipped model): ~270 visitors on the default map made every
    visitor's own file and map go, while dropping theirs freed only their coordinates. Only what a session alone
    keeps counts."""
    from app.handlers import Session, Studio
    from app.shared.models import Models, ModelSpec
    from core import Engine

    sentences = "\n".join(f"a dog number {i} eats good bread" for i in range(200))
    engine = Engine.from_base(str(tiny_mlm_dir))
    models = Models.from_engine(engine, ModelSpec("tiny", base=str(tiny_mlm_dir)), tmp_path / "checkpoints")
    own = Session()  # a visitor's map of their own sentences: the vectors only it keeps
    Studio(models).map.draw_map("my sentences", 0, sentences, None, "PCA", "2-D", "part of speech", own)
    each = own.map.corpus.vectors.nbytes + own.map.coords.nbytes
    studio = Studio(models, public=PublicLimits(session_vectors_bytes=2 * each))
    studio.start()
    own = Session()
    studio.map.draw_map("my sentences", 0, sentences, None, "PCA", "2-D", "part of speech", own)
    others = [Session() for _ in range(3)]
    for session in others:
        studio.map.draw_map("dictionary definitions", 500, "", None, "PCA", "2-D", "part of speech", session)
    assert others[0].map.corpus is others[1].map.corpus  # the model's, shared
    assert others[0].vector_bytes() == others[0].map.coords.nbytes
    assert own.map is not None, "a visitor's own map went for maps whose vectors the model keeps anyway"


def test_an_analogy_among_the_uploaded_file_counts_as_its_use(tiny_mlm_dir, tmp_path):
    """An analogy or an interpolation whose nearest texts come from the visitor's uploaded file (Session.reference)
    uses that file's vectors, but HeldVectors was told only of searches and maps: a visitor working in the Analogy
    tab on their file had it dropped first, as if they had left."""
    from app.handlers import Session, Studio
    from app.shared.models import Models, ModelSpec
    from app.shared.services import UPLOADED_FILE
    from core import Engine

    path = tmp_path / "mine.txt"
    path.write_text("\n".join(f"a dog number {i} eats good bread" for i in range(100)), encoding="utf-8")
    engine = Engine.from_base(str(tiny_mlm_dir))
    models = Models.from_engine(engine, ModelSpec("tiny", base=str(tiny_mlm_dir)), tmp_path / "checkpoints")
    probe = Session()
    probe.uploaded_corpus(models.active(), str(path), lambda *a, **k: None)
    studio = Studio(models, public=PublicLimits(session_vectors_bytes=int(2.5 * probe.vector_bytes())))
    studio.start()
    a, b, c = Session(), Session(), Session()
    for session in (a, b):
        studio.similarity.search("a dog", UPLOADED_FILE, str(path), 3, session)
    studio.analogy.analogy("a dog", "a cat", "a cow", "b - a + c", reference=UPLOADED_FILE, session=a)
    studio.analogy.interpolation("a dog", "a cat", 2, reference=UPLOADED_FILE, session=a)
    studio.similarity.search("a dog", UPLOADED_FILE, str(path), 3, c)  # one file too many: b's, used least lately
    assert a.corpus is not None and b.corpus is None


def test_a_table_past_the_line_bound_is_refused_without_splitting_it(tmp_path):
    """read_text_file split and parsed a whole table (a file whose first line holds a tab, as most lines do) before
    counting its rows against the bound: 1,000,000 rows "a\\tb" over a bound of 100 took a transient of tens of MB
    (tracemalloc's peak). Now the rows with a text are counted first, line by line, up to the bound; a table within
    it reads as before."""
    from app.shared.services import read_text_file

    path = tmp_path / "table.tsv"
    path.write_text("text\tlabel\n" + "a\tb\n" * 1_000_000, encoding="utf-8")
    def refuse():
        with pytest.raises(ValueError, match="More than 100 lines in the file given; the limit is 100"):
            read_text_file(path, 100)

    peak = _peak_bytes(refuse)
    assert peak < 12_000_000, f"refusing 1,000,000 rows over a bound of 100 took {peak:,} bytes"  # the text: 4 MB
    path.write_text("text\tlabel\n" + "a\tb\n" * 100 + "\tno text\n" * 50, encoding="utf-8")  # rows without text skipped
    texts, columns = read_text_file(path, 100)
    assert texts == ["a"] * 100 and columns == {"label": ["b"] * 100}


# ---- a hostile visitor's probe of the served app (session 51) ---------------------------------------------------

def _queued_app(public: bool = True):
    """A one-textbox app with a queued event, behind the public middleware (`public`) or a private server's."""
    import gradio as gr
    from gradio.routes import App

    from app.server.gate import middleware

    with gr.Blocks() as demo:
        box = gr.Textbox()
        box.submit(lambda text: text, box, box, api_name="echo")
    demo.queue()
    return demo, App.create_app(demo, app_kwargs={"middleware": middleware(demo, public=PublicLimits() if public
                                                                           else None)})


@pytest.mark.parametrize("public", [True, False])
def test_a_request_of_millions_of_json_values_is_refused_before_it_is_parsed(public):
    """A stranger's probe: within the 21 MB body bound, /gradio_api/queue/join with 20 MB of `[],` (6.9 million empty
    lists) was parsed on the event loop: the join took 10.4 s, and another address's /gradio_api/queue/status waited
    10.3 s meanwhile; four such joins took the server from 0.75 to 3 GB. A body of more JSON values than any input
    needs is refused before it is parsed; a long text (commas, brackets and quotes in it) still passes."""
    import httpx

    demo, app = _queued_app(public)
    fn_index = next(iter(demo.fns))

    async def join(data: str) -> httpx.Response:
        body = '{"data": [%s], "fn_index": %d, "session_hash": "s%d"}' % (data, fn_index, len(data))
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app, client=("203.0.113.7", 1)),
                                     base_url="http://space") as page:
            return await page.post("/gradio_api/queue/join", content=body,
                                   headers={"content-type": "application/json"})

    many = asyncio.run(join('"x", ' + "[]," * 200_000 + "[]"))
    assert many.status_code == 413, many.text
    from app.server.request_limits import MAX_JSON_VALUES
    assert f"more than {MAX_JSON_VALUES:,} JSON values" in many.json()["detail"]
    # strings count too: 12,000 of them, with 6,000 commas and brackets (under the bound alone)
    pairs = "{" + ",".join(f'"k{i}":"v"' for i in range(6_000)) + "}"
    assert asyncio.run(join(pairs)).status_code == 413
    text = json.dumps('A line, with [brackets], {braces} and "quotes".\n' * 40_000)
    assert asyncio.run(join(text)).status_code == 200


def test_an_unclosed_string_among_escaped_quotes_is_counted_in_one_pass():
    """A review of the count (session 51): the pattern that takes strings out backtracked at a quote that never
    closes, so `","` x 10,001, one quote, then N escaped quotes cost ~N^2 on the event loop (16,000: 2.8 s; a 50 KB
    body held another address's join 8.6 s). 400,000 of them are counted in a fresh process within 60 s (with
    backtracking: hours)."""
    import subprocess
    import sys

    code = ("from app.server.request_limits import json_values as count\n"
            "print(count(b'\",' * 10_001 + b'\"' + b'\\\\\"' * 400_000, 10_000))")
    try:
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=Path(__file__).resolve().parents[1])
    except subprocess.TimeoutExpired:
        pytest.fail("the count of an unclosed string among escaped quotes ran past 60 s")
    assert done.returncode == 0 and int(done.stdout) >= 1, done.stderr[-2000:]  # counted, whatever the count


def test_a_json_body_named_a_form_is_still_counted():
    """A review of the count (session 51): a body was not counted when its content type, lowered, began like a form's;
    but Starlette reads the first of two content-type headers (JSON, then a form's: parsed as JSON uncounted), and
    Gradio's component server reads as JSON any body whose type is not "multipart/form-data" as written. Only a body
    whose one content type is that, an upload, goes uncounted."""
    import httpx

    demo, app = _queued_app()
    body = "[" + "[]," * 20_000 + "[]]"

    async def post(path: str, headers: list[tuple[str, str]]) -> httpx.Response:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app, client=("203.0.113.7", 1)),
                                     base_url="http://space") as page:
            return await page.post(path, content=body, headers=headers)

    for path, headers in [
            ("/gradio_api/queue/join", [("content-type", "application/json"), ("content-type", "multipart/form-data")]),
            ("/gradio_api/component_server", [("content-type", "Multipart/Form-Data")]),
            ("/gradio_api/component_server", [("content-type", "application/x-www-form-urlencoded")])]:
        answer = asyncio.run(post(path, headers))
        assert answer.status_code == 413 and "JSON values" in answer.text, (path, headers, answer.text[:200])


def test_a_session_hash_of_megabytes_is_refused_and_kept_nowhere():
    """A stranger's probe: a session hash is the client's own text, and Gradio kept any length: 32 joins from one
    address, each naming a new session of 5 MB, took the server from 594 to 1,340 MB (~23 MB a session: the hash in
    the event, the session table and the message queues), held while the sessions lived. A hash past the bound is
    refused with one line, by the queue and by every other route that would make a session."""
    import httpx

    demo, app = _queued_app()
    fn_index = next(iter(demo.fns))
    long_hash = "h" * 200_000

    async def visit() -> tuple[httpx.Response, httpx.Response]:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app, client=("203.0.113.7", 1)),
                                     base_url="http://space") as page:
            joined = await page.post("/gradio_api/queue/join", json={"data": ["x"], "fn_index": fn_index,
                                                                     "session_hash": long_hash})
            other = await page.post("/gradio_api/component_server", json={
                "component_id": next(iter(demo.blocks)), "fn_name": "x", "data": None, "session_hash": long_hash})
            return joined, other

    joined, other = asyncio.run(visit())
    assert joined.status_code == 400, joined.text
    assert "session hash is at most" in joined.json()["detail"]
    assert other.status_code in (400, 503) and "session hash is at most" in other.json()["detail"], other.text
    assert long_hash not in app.state_holder.session_data
    assert long_hash not in demo._queue.pending_messages_per_session


@contextlib.contextmanager
def _served_as_launch_serves(limits: PublicLimits):
    """A Gradio app served by uvicorn as launch serves it (uvicorn loads its config, the public middleware made
    first, with `limits`); yields its port. Afterwards a private server's middleware: no bound on later servers."""
    import threading

    import uvicorn
    from gradio.routes import App

    from app.server.gate import middleware
    from bench.bench_app import free_port

    import gradio as gr
    with gr.Blocks() as demo:
        gr.Textbox()
    demo.queue()
    app = App.create_app(demo, app_kwargs={"middleware": middleware(demo, public=limits)})
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        for _ in range(100):
            if server.started:
                break
            time.sleep(0.05)
        yield port
    finally:
        server.should_exit = True
        thread.join(10)
        middleware(demo)


def _half_sent(port: int, source: str) -> socket.socket:
    """A connection from `source` whose request headers never end."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=3, source_address=(source, 0))
    sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")
    return sock


def test_one_address_cannot_hold_every_connection_of_the_server():
    """A stranger's probe: uvicorn keeps a connection whose request headers never end for good, so 19,990 of them
    from 127.0.0.2 took every file descriptor of the server (its limit, 20,000): every other visitor's request timed
    out, and asyncio logged a traceback a failed accept (520 MB of log in 30 s). With the public bound (128): one more
    connection of an address is answered 503 at once, another address is served, and a closed connection frees its
    place."""
    import httpx

    bound = PublicLimits().connections_per_address
    held: list[socket.socket] = []
    with _served_as_launch_serves(PublicLimits()) as port:
        try:
            held = [_half_sent(port, "127.0.0.2") for _ in range(bound)]
            one_more = _half_sent(port, "127.0.0.2")
            held.append(one_more)
            try:
                answer = one_more.recv(4096)
            except socket.timeout:
                pytest.fail(f"connection {bound + 1} of 127.0.0.2 was kept open, unanswered")
            assert answer.startswith(b"HTTP/1.1 503") and b"connections open" in answer, answer[:200]
            with httpx.Client(transport=httpx.HTTPTransport(local_address="127.0.0.3"), timeout=5) as other:
                assert other.get(f"http://127.0.0.1:{port}/gradio_api/queue/status").status_code == 200
            held.pop(0).close()
            time.sleep(0.3)
            with httpx.Client(transport=httpx.HTTPTransport(local_address="127.0.0.2"), timeout=5) as again:
                assert again.get(f"http://127.0.0.1:{port}/gradio_api/queue/status").status_code == 200
        finally:
            for sock in held:
                sock.close()


def _whole_answer(sock: socket.socket) -> bytes:
    """One HTTP answer read whole from `sock`: its head, then as many bytes as its content-length says."""
    answer = b""
    while b"\r\n\r\n" not in answer:
        answer += sock.recv(4096)
    head, body = answer.split(b"\r\n\r\n", 1)
    length = int(re.search(rb"content-length: *(\d+)", head, re.I).group(1))
    while len(body) < length:
        body += sock.recv(4096)
    return head + b"\r\n\r\n" + body


def test_a_connection_that_never_ends_its_headers_is_closed_and_a_kept_alive_one_is_not():
    """The bound of 128 an address left each address's half-sent connections open for good (~155 addresses fill
    20,000 descriptors): one that has not sent its first request's headers whole within
    `PublicLimits.headers_seconds` is closed now, and its place freed; a connection whose request was answered serves
    the next, and is closed when the next one's headers do not end in that time either (uvicorn's keep-alive timer
    stops at their first byte)."""
    request = b"GET /gradio_api/queue/status HTTP/1.1\r\nHost: x\r\n\r\n"
    with _served_as_launch_serves(PublicLimits(headers_seconds=0.5)) as port:
        slow = _half_sent(port, "127.0.0.2")
        kept = socket.create_connection(("127.0.0.1", port), timeout=3, source_address=("127.0.0.3", 0))
        try:
            for _ in range(2):  # an answered connection serves the next request
                kept.sendall(request)
                assert _whole_answer(kept).startswith(b"HTTP/1.1 200")
            kept.sendall(b"GET / HTTP/1.1\r\n")  # a third whose headers never end: uvicorn's keep-alive stops here
            for sock, what in ((slow, "never ended its first headers"), (kept, "never ended its next headers")):
                started = time.monotonic()
                try:
                    closed = sock.recv(4096)
                except socket.timeout:
                    pytest.fail(f"a connection that {what} was still open after 3 s")
                assert closed == b"" and time.monotonic() - started < 2.5, what
        finally:
            slow.close()
            kept.close()


def test_a_connection_handed_to_a_websocket_protocol_gives_its_place_back():
    """uvicorn hands an upgraded connection to its WebSocket protocol (where `websockets` or `wsproto` is installed),
    and tells that one of the connection's end: the HTTP protocol's place in its address's bound is given back at the
    hand-over, else every upgrade took one for good."""
    from app.server import connections

    class Transport:
        def get_extra_info(self, name):
            return ("127.0.0.9", 4242) if name == "peername" else None

    class Protocol:  # what the cap wraps of uvicorn's HTTP protocol
        upgraded = 0

        def connection_made(self, transport):
            self.transport = transport

        def handle_websocket_upgrade(self, *event):
            Protocol.upgraded += 1

    saved = connections._CAP[0]
    connections.limit_connections(1)
    try:
        first = connections.capped(Protocol)()
        first.connection_made(Transport())
        assert connections._CAP[0].open["127.0.0.9"] == 1
        first.handle_websocket_upgrade(object())
        assert Protocol.upgraded == 1 and "127.0.0.9" not in connections._CAP[0].open
        second = connections.capped(Protocol)()
        second.connection_made(Transport())  # the address's one place is free again
        assert not second._refused and connections._CAP[0].open["127.0.0.9"] == 1
    finally:
        connections._CAP[0] = saved
