"""Public mode (issue 27, item 5: `python app.py --public`, or $SPACE_ID set): one visitor's model choice,
saves and fine-tunes do not change what another sees; training has a per-session quota and one slot;
saves and downloads share a disk budget and are deleted with their session; Evaluate reads only the
bundled data. Also the optional login (--auth / $DEFSENT_AUTH). Tiny models, no training process."""
from __future__ import annotations

import importlib.util
import os
import threading
import time
from pathlib import Path

import pytest

from app.shared.finetune import FinetuneResult
from app.handlers import QUOTA_USED, Session, Studio
from app.shared.jobs import DONE, JobManager
from app.shared.models import Models, ModelSpec
from app.views.projection import Projector
from app.server.public import YOURS, PublicLimits, public_mode, public_saves_dir, use_disk_budget
from core import Engine

REPO = Path(__file__).resolve().parents[1]
WORDS = {"dog": "an animal that barks", "cat": "a small animal that says meow", "king": "a man who rules",
         "queen": "a woman who rules", "river": "water that runs to the sea", "bread": "food made of flour",
         "car": "a thing to drive on a road", "teacher": "a person who helps a child learn",
         "song": "music with words", "tree": "a large plant with wood", "house": "a place to live",
         "fire": "it is hot and burns"}


@pytest.fixture(autouse=True)
def cache_in_tmp(tmp_path, monkeypatch):
    monkeypatch.setenv("DEFSENT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))  # download zips: app.settings.download_dir()
    (tmp_path / "tmp").mkdir()
    import tempfile
    monkeypatch.setattr(tempfile, "tempdir", None)


@pytest.fixture(scope="module")
def other_checkpoint(tiny_mlm_dir, tmp_path_factory) -> Path:
    """A second model, different from the served one (another seed's weights)."""
    from tests.conftest import build_tiny_bert
    base = build_tiny_bert(tmp_path_factory.mktemp("other_base"), seed=1)
    return Engine.from_base(str(base)).save(tmp_path_factory.mktemp("ckpts") / "other", name="other")


def make_studio(tiny_mlm_dir, checkpoints: Path, public: PublicLimits | None = PublicLimits(),
                jobs: JobManager | None = None) -> Studio:
    """A server's handlers, started (its clean-ups done, its disk budget in force until the test ends)."""
    models = Models.from_engine(Engine.from_base(str(tiny_mlm_dir)), ModelSpec("tiny", base=str(tiny_mlm_dir)),
                                checkpoints)
    studio = Studio(models, Projector(), jobs, public=public)
    studio.start()
    return studio


@pytest.fixture(autouse=True)
def no_budget_after():
    """A started server's disk budget is the process's: none is left for the tests after this one."""
    yield
    use_disk_budget(None)


@pytest.fixture
def checkpoints(other_checkpoint, tmp_path) -> Path:
    folder = tmp_path / "checkpoints"
    folder.mkdir()
    (folder / "other").symlink_to(other_checkpoint, target_is_directory=True)
    return folder


def finished_job(studio: Studio, staged: Path) -> str:
    """A finished fine-tuning job whose trained model is `staged` (no training process)."""
    job = studio.jobs.submit(lambda job: FinetuneResult(staged, {}, {}, [], {}), "fake fine-tune")
    for _ in range(500):
        if job.status == DONE:
            return job.id
        threading.Event().wait(0.01)
    raise AssertionError(job.status)


# ---- model choice -----------------------------------------------------------------------------------------

def test_a_visitor_choosing_a_model_changes_nothing_for_another(tiny_mlm_dir, checkpoints):
    studio = make_studio(tiny_mlm_dir, checkpoints)
    alice, bob = Session(), Session()
    before = studio.reverse.reverse_dictionary("an animal that barks", 5, session=bob)
    status, alice = studio.choose_model("other", alice)
    assert "Your model: **other**" in status and "other visitors are not affected" in status
    assert studio.models.active().spec.name == "tiny"  # the server's model is unchanged
    assert studio.model_choices(alice)[1] == "other" and studio.model_choices(bob)[1] == "tiny"
    assert "other" not in studio.model_status(bob)
    assert studio.reverse.reverse_dictionary("an animal that barks", 5, session=bob) == before
    # alice's model answers
    assert studio.reverse.reverse_dictionary("an animal that barks", 5, session=alice) != before
    assert "**Active model:** other" in studio.about(alice)[0] and "**Active model:** tiny" in studio.about(bob)[0]


def test_on_a_private_server_choosing_a_model_switches_it_for_everyone(tiny_mlm_dir, checkpoints):
    studio = make_studio(tiny_mlm_dir, checkpoints, public=None)
    studio.choose_model("other", Session())
    assert studio.models.active().spec.name == "other"
    assert studio.model_choices(Session())[1] == "other"


def test_a_switched_to_model_answers_only_once_prepared(tiny_mlm_dir, checkpoints):
    studio = make_studio(tiny_mlm_dir, checkpoints, public=None)
    before, answering_while_prepared = studio.models.active(), []
    studio.models.prepare = lambda model, progress: answering_while_prepared.append(studio.models.active() is model)
    studio.switch_model("other")
    # before, the new model answered everyone while its open vocabulary was still being built
    assert answering_while_prepared == [False] and studio.models.active().spec.name == "other"
    studio.switch_model("other")  # already active: nothing to load
    assert len(answering_while_prepared) == 1 and studio.models.active().spec.name == "other"
    assert before.spec.name == "tiny"


def test_switching_back_is_instant_the_model_switched_from_stays_loaded(tiny_mlm_dir, checkpoints):
    studio = make_studio(tiny_mlm_dir, checkpoints, public=None)
    prepared = []
    studio.models.prepare = lambda model, progress: prepared.append(model.spec.name)
    first = studio.models.active()
    studio.switch_model("other")
    other = studio.models.active()
    studio.switch_model("tiny")
    assert studio.models.active() is first
    studio.switch_model("other")
    assert studio.models.active() is other and prepared == ["other"]  # loaded and prepared once


def test_while_a_visitors_model_loads_only_its_own_requests_wait(tiny_mlm_dir, checkpoints, other_checkpoint):
    (checkpoints / "again").symlink_to(other_checkpoint, target_is_directory=True)
    studio = make_studio(tiny_mlm_dir, checkpoints)
    loading, release = threading.Event(), threading.Event()

    def prepare(model, progress):
        if model.spec.name == "other":
            loading.set()
            release.wait(30)  # a first open vocabulary takes minutes
    studio.models.prepare = prepare
    alice, bob = Session(), Session()
    studio.choose_model("again", bob)  # bob's model is loaded and kept
    chooser = threading.Thread(target=studio.choose_model, args=("other", alice))
    chooser.start()
    try:
        assert loading.wait(30)
        assert alice.model == ""  # alice's requests are answered by her previous model meanwhile
        answered = threading.Event()
        threading.Thread(target=lambda: (studio.reverse.reverse_dictionary("a dog", 3, session=bob), answered.set()),
                         daemon=True).start()
        assert answered.wait(30)  # bob is not held up by alice's load (before: one lock for all loads)
    finally:
        release.set()
        chooser.join(30)
    assert alice.model == "other"


def test_models_loaded_for_sessions_are_shared_and_bounded(tiny_mlm_dir, checkpoints, other_checkpoint):
    models = Models.from_engine(Engine.from_base(str(tiny_mlm_dir)), ModelSpec("tiny", base=str(tiny_mlm_dir)),
                                checkpoints)
    prepared = []
    models.prepare, models.keep_loaded = (lambda model, progress: prepared.append(model)), 1
    spec = ModelSpec("other", checkpoints / "other")
    first = models.shared(spec)
    assert prepared == [first]  # prepared before any session is answered by it
    assert models.shared(spec) is first and len(prepared) == 1  # one load for every session choosing it
    assert models.shared(models.active().spec) is models.active()
    models.shared(ModelSpec("again", other_checkpoint))  # a third model: the least recently used goes
    assert models.shared(spec) is not first and len(prepared) == 3


# ---- saving ----------------------------------------------------------------------------------------------

def test_a_visitors_save_is_theirs_alone_and_deleted_with_their_session(tiny_mlm_dir, checkpoints, other_checkpoint):
    studio = make_studio(tiny_mlm_dir, checkpoints)
    alice, bob = Session(), Session()
    job = finished_job(studio, other_checkpoint)
    message = studio.finetune.save_finetuned(job, "DEFSENT-MINILM", alice)
    assert f"`{YOURS}DEFSENT-MINILM`" in message and "for this session only" in message
    assert sorted(p.name for p in checkpoints.iterdir()) == ["other"]  # nothing in the shared checkpoints
    assert f"{YOURS}DEFSENT-MINILM" in [name for _, name in studio.model_choices(alice)[0]]
    assert not any(name.startswith(YOURS) for _, name in studio.model_choices(bob)[0])
    with pytest.raises(ValueError, match="Save the model under a name first"):
        studio.finetune.activate_finetuned(job, bob)  # bob knows the job id but saved nothing
    assert "Your model: **yours/DEFSENT-MINILM**" in studio.finetune.activate_finetuned(job, alice)
    assert alice.model == f"{YOURS}DEFSENT-MINILM" and studio.models.active().spec.name == "tiny"
    assert studio.model_choices(bob)[1] == "tiny"
    folder = public_saves_dir() / alice.key
    assert (folder / "DEFSENT-MINILM").is_dir()
    studio.end_session(alice)
    assert not folder.exists()
    with pytest.raises(ValueError, match="no longer kept on this server"):
        studio.reverse.reverse_dictionary("a dog", 3, session=alice)


def test_saves_and_downloads_share_a_disk_budget(tiny_mlm_dir, checkpoints, other_checkpoint):
    from app.settings import folder_bytes
    size = folder_bytes(other_checkpoint)
    studio = make_studio(tiny_mlm_dir, checkpoints, PublicLimits(disk_bytes=int(size * 1.5)))
    job = finished_job(studio, other_checkpoint)
    alice, bob = Session(), Session()
    studio.finetune.save_finetuned(job, "mine", alice)
    with pytest.raises(ValueError, match="storage for visitors' files is full .* nothing was written"):
        studio.finetune.save_finetuned(job, "mine", bob)
    assert not (public_saves_dir() / bob.folder_key()).exists()
    with pytest.raises(ValueError, match="downloads"):  # the zips do not fit beside alice's save either
        studio.finetune.download_finetuned(job, alice)
    os.utime(public_saves_dir() / alice.key, (0, 0))  # alice's session expired long ago
    assert "for this session only" in studio.finetune.save_finetuned(job, "mine", bob)
    assert not (public_saves_dir() / alice.key).exists()


def test_a_chosen_models_vocabulary_cache_is_written_only_within_the_disk_budget(tiny_mlm_dir, checkpoints,
                                                                                 other_checkpoint, monkeypatch):
    """"Use this model" on a saved model wrote its ~101 MB vocabulary cache unchecked (issue 55)."""
    from app.handlers.studio import prepare_model
    from app.shared.models import ActiveModel
    from app.settings import folder_bytes
    size = folder_bytes(other_checkpoint)
    engine = Engine.load(other_checkpoint, open_vocabulary=False)
    budget = size + engine.vocabulary.cache_bytes() // 2  # the save fits, its vocabulary cache does not
    studio = make_studio(tiny_mlm_dir, checkpoints, PublicLimits(disk_bytes=budget))
    alice = Session()
    studio.finetune.save_finetuned(finished_job(studio, other_checkpoint), "mine", alice)  # fits
    mine = public_saves_dir() / alice.key / "mine"
    active = ActiveModel(ModelSpec(f"{YOURS}mine", mine), Engine.load(mine, open_vocabulary=False))
    writes = []
    monkeypatch.setattr(active.engine.vocabulary, "enable", lambda **kwargs: writes.append(kwargs))
    with pytest.raises(ValueError, match="storage for visitors' files is full .* vocabulary cache needs"):
        prepare_model(active)
    assert writes == []


def test_gradios_temp_files_count_in_the_disk_budget_and_old_ones_go_first(tiny_mlm_dir, checkpoints):
    """Gradio's copies of download zips and raw uploads (its temp folder) were not counted (issue 55)."""
    from app.shared.export import projector_download
    from app.server.public import disk_used, guard_write
    from app.settings import upload_dir
    import numpy as np
    make_studio(tiny_mlm_dir, checkpoints, PublicLimits(disk_bytes=3_000_000))
    copy = upload_dir() / "abc" / "defsent-map.zip"  # as Gradio keeps a served zip
    copy.parent.mkdir(parents=True)
    copy.write_bytes(b"0" * 2_000_000)
    assert disk_used() == 2_000_000
    with pytest.raises(ValueError, match="storage for visitors' files is full .* this download needs"):
        projector_download(np.zeros((2_000, 64), dtype=np.float32), {"text": [f"row {i}" for i in range(2_000)]})
    with pytest.raises(ValueError, match="storage for visitors' files is full"):
        guard_write(1_500_000, "this upload")
    os.utime(copy.parent, (0, 0))  # an hour old: its request ended long ago
    guard_write(1_500_000, "this upload")
    assert not copy.exists()


def test_uploads_past_the_disk_budget_are_refused_before_they_are_written(tiny_mlm_dir, checkpoints):
    import gradio as gr
    import httpx

    from app.server.public import disk_used
    from app.server.gate import middleware
    from bench.bench_app import free_port
    budget = 5_000_000
    make_studio(tiny_mlm_dir, checkpoints, PublicLimits(disk_bytes=budget, address_share=1.0))
    with gr.Blocks() as demo:
        gr.File()
    demo.launch(server_name="127.0.0.1", server_port=free_port(), prevent_thread_lock=True, quiet=True,
                app_kwargs={"middleware": middleware(demo)})
    try:
        answers = [httpx.post(demo.local_url + "gradio_api/upload", timeout=30,
                              files={"files": (f"f{i}.txt", b"x" * 1_000_000)}) for i in range(6)]
    finally:
        demo.close()
    codes = [a.status_code for a in answers]
    assert codes.count(200) >= 3 and codes[-1] == 507, codes
    assert "storage for visitors' files is full" in answers[-1].text and "this upload needs" in answers[-1].text
    assert disk_used() <= budget


@pytest.fixture
def upload_server(tiny_mlm_dir, checkpoints):
    """A Gradio server with the app's middleware; returns a function making a studio's budget its own and
    giving the server's upload URL."""
    import gradio as gr

    from app.server.gate import middleware
    from bench.bench_app import free_port
    with gr.Blocks() as demo:
        gr.File()
    demo.launch(server_name="127.0.0.1", server_port=free_port(), prevent_thread_lock=True, quiet=True,
                app_kwargs={"middleware": middleware(demo)})

    def serve(limits: PublicLimits) -> str:
        make_studio(tiny_mlm_dir, checkpoints, limits)
        return demo.local_url + "gradio_api/upload"
    try:
        yield serve
    finally:
        demo.close()


def upload(url: str, content: bytes, name: str = "f.txt", source: str = "127.0.0.1"):
    from bench.disk_budget import send_upload
    return send_upload(url.removesuffix("gradio_api/upload"), content, name, source)


def test_concurrent_uploads_never_take_the_disk_past_the_budget(upload_server):
    """Issue 61: the check read the disk before anything was written and reserved nothing, so 20 parallel uploads
    all passed it (30 x 19.4 MB took 1,135 MB to 1,717 MB of 1,500). Now each reserves its room under one lock."""
    from app.server.public import disk_used
    from bench.disk_budget import at_once
    budget = 8_000_000
    url = upload_server(PublicLimits(disk_bytes=budget, address_share=1.0))
    codes = []
    peak = at_once([lambda i=i: codes.append(upload(url, bytes([i]) * 1_000_000, f"f{i}.txt").status_code)
                    for i in range(16)])
    assert sorted(set(codes)) == [200, 507], codes  # before: all 16 accepted, 16 MB written
    assert disk_used() <= budget and peak <= budget  # (each reserves twice its size while written: at most 4 at once)


def test_a_downloads_room_is_held_while_written_and_its_copys_a_while_after(tiny_mlm_dir, checkpoints, monkeypatch):
    """Gradio copies a returned file into its temp folder after the handler: room for that copy stays reserved."""
    import numpy as np

    import app.server.public as public
    from app.shared.export import projector_download
    make_studio(tiny_mlm_dir, checkpoints, PublicLimits(disk_bytes=50_000_000))
    seen = []
    monkeypatch.setattr(public, "COPY_LINGER_S", 0.5)
    monkeypatch.setattr("app.shared.export.zip_projector", lambda archive, points, folder: (
        seen.append(public.disk_budget().reserved()), archive.write_bytes(b"a zip"), archive)[-1])
    archive = projector_download(np.zeros((10, 4), dtype=np.float32), {"text": [f"row {i}" for i in range(10)]})
    assert seen[0] > 0  # while it was written
    assert public.disk_budget().reserved() == archive.stat().st_size  # its copy's room, after
    time.sleep(0.6)
    budget = public.disk_budget()
    budget.release(budget.reserve(0, "nothing"))  # expired holds go at the next reservation
    assert budget.reserved() == 0


def test_one_address_may_use_at_most_its_share_of_the_disk(upload_server):
    """Issue 61: one anonymous client took the whole budget in 3 s; everyone else's uploads were refused."""
    url = upload_server(PublicLimits(disk_bytes=6_200_000, address_share=0.5))  # 3.1 MB an address
    mine = [upload(url, bytes([i]) * 1_000_000, f"f{i}.txt").status_code for i in range(3)]
    assert mine == [200, 200, 507], mine  # the third would make 1 + 1 + 2 (its file and a copy) MB
    refused = upload(url, b"z" * 1_000_000)
    assert "Your network address already uses 2 MB" in refused.text and "each address may use 3 MB" in refused.text
    assert upload(url, b"y" * 1_000_000, source="127.0.0.2").status_code == 200  # another visitor's fits


def test_the_same_file_uploaded_by_two_visitors_is_two_uploads(upload_server):
    """Issue 61: Gradio stores an upload by its content's hash, so a second visitor's identical upload had the
    first one's path, and its validation (which deletes the file once read) deleted the first one's upload."""
    from app.shared.services import discard_upload
    url = upload_server(PublicLimits())
    first, second = (upload(url, b"word\tdefinition\ncat\ta pet\n", "mine.tsv").json()[0] for _ in range(2))
    assert first != second and Path(first).name == Path(second).name == "mine.tsv"
    assert discard_upload(second) and Path(first).read_bytes().startswith(b"word")


def test_saved_models_of_an_earlier_run_are_removed_at_start(tiny_mlm_dir, checkpoints):
    left = public_saves_dir() / "abc123" / "mine"
    left.mkdir(parents=True)
    make_studio(tiny_mlm_dir, checkpoints)
    assert not left.parent.exists()


def test_making_a_server_changes_nothing_outside_it_until_it_starts(tiny_mlm_dir, checkpoints):
    """Before: making a Backend replaced the process's disk budget and deleted every session's saved models (a
    test's Studio did it to whatever ran beside it)."""
    from app.server.public import disk_budget
    left = public_saves_dir() / "abc123" / "mine"
    left.mkdir(parents=True)
    models = Models.from_engine(Engine.from_base(str(tiny_mlm_dir)), ModelSpec("tiny", base=str(tiny_mlm_dir)),
                                checkpoints)
    studio = Studio(models, Projector(), None, public=PublicLimits(disk_bytes=1_000))
    assert disk_budget() is None and left.is_dir()
    studio.start()
    assert disk_budget() is studio.disk_budget and studio.disk_budget.limits.disk_bytes == 1_000
    assert not left.parent.exists()


# ---- fine-tuning --------------------------------------------------------------------------------------------

@pytest.fixture
def validated(tmp_path):
    """A function giving a session with a validated dictionary upload, for a studio."""
    path = tmp_path / "mine.tsv"
    path.write_text("word\tdefinition\n" + "".join(f"{w}\t{d}\n" for w, d in WORDS.items()), encoding="utf-8")

    def session_for(studio: Studio) -> Session:
        report, session = studio.finetune.validate_upload(str(path), 0, Session())
        assert "Ready" in report, report
        return session
    return session_for


def test_fine_tunes_per_session_are_limited(tiny_mlm_dir, checkpoints, validated, monkeypatch):
    studio = make_studio(tiny_mlm_dir, checkpoints, PublicLimits(finetunes_per_session=1))
    monkeypatch.setattr("app.shared.finetune.FinetuneJob.__call__", lambda self, job: None)  # no training process
    session = validated(studio)
    studio.finetune.start_finetune(session, 1, 5e-5, 4, 0, 1, 1, 0)
    while studio.jobs.unfinished():
        threading.Event().wait(0.01)
    with pytest.raises(ValueError, match="started its 1 fine-tunes, the limit per visitor"):
        studio.finetune.start_finetune(session, 1, 5e-5, 4, 0, 1, 1, 0)
    assert QUOTA_USED.format(n=1).startswith("This session has started its 1")


def test_a_public_fine_tune_has_a_step_limit(tiny_mlm_dir, checkpoints, validated):
    from app.shared.finetune import MIN_STEPS

    studio = make_studio(tiny_mlm_dir, checkpoints, PublicLimits(max_training_steps=MIN_STEPS))  # the default's least
    session = validated(studio)
    with pytest.raises(ValueError, match=f"make {MIN_STEPS + 1} training steps; this public server trains at most "
                                         f"{MIN_STEPS} a job"):
        studio.finetune.start_finetune(session, 1, 5e-5, 4, 0, MIN_STEPS + 1, 1, 0)
    assert not studio.jobs.unfinished() and session.jobs == []


def test_the_upload_report_says_ready_only_when_the_default_settings_would_start(tiny_mlm_dir, checkpoints, tmp_path):
    studio = make_studio(tiny_mlm_dir, checkpoints, PublicLimits(max_training_steps=2))  # the default makes 3 or more
    path = tmp_path / "mine.tsv"
    path.write_text("word\tdefinition\n" + "".join(f"{w}\t{d}\n" for w, d in WORDS.items()), encoding="utf-8")
    report, session = studio.finetune.validate_upload(str(path), 0, Session())
    assert "Ready" not in report and "With the default settings it would not start" in report
    assert "this public server trains at most 2 a job" in report and session.upload is not None  # usable all the same


def test_the_training_slot_is_one_at_a_time_with_no_waiting_line(tiny_mlm_dir, checkpoints, validated):
    studio = make_studio(tiny_mlm_dir, checkpoints)
    assert (studio.jobs.max_running, studio.jobs.max_waiting) == (1, 0)
    release = threading.Event()
    studio.jobs.submit(lambda job: release.wait(60), "another visitor's fine-tune")
    session = validated(studio)
    try:
        with pytest.raises(ValueError, match="The training slot is busy"):
            studio.finetune.start_finetune(session, 1, 5e-5, 4, 0, 1, 1, 0)
        assert session.jobs == [] and session.job == ""  # refused: it does not count
    finally:
        release.set()


def test_fine_tunes_waiting_to_be_saved_count_in_the_disk_budget(tiny_mlm_dir, checkpoints, validated):
    from app.shared.finetune import expected_staged_bytes, staging_dir
    need = expected_staged_bytes(None, Engine.from_base(str(tiny_mlm_dir)))
    studio = make_studio(tiny_mlm_dir, checkpoints, PublicLimits(disk_bytes=int(need * 1.5)))
    (staging_dir() / "another-visitors-job").mkdir()
    (staging_dir() / "another-visitors-job" / "model.safetensors").write_bytes(b"0" * need)
    session = validated(studio)
    with pytest.raises(ValueError, match="storage for visitors' files is full .* the fine-tuned model needs"):
        studio.finetune.start_finetune(session, 1, 5e-5, 4, 0, 1, 1, 0)
    assert not studio.jobs.unfinished() and session.jobs == []  # refused: nothing queued, nothing counted


def test_a_fine_tunes_room_stays_reserved_until_its_job_ends(tiny_mlm_dir, checkpoints, validated, monkeypatch):
    """Issue 61: a Start only checked the disk, and the training process wrote its model minutes later, whatever
    had been written meanwhile. Its room is now reserved from the Start until the job has ended."""
    import app.handlers.finetune as handlers
    from app.shared.finetune import expected_staged_bytes
    from app.server.public import disk_budget, reservation
    need = expected_staged_bytes(None, Engine.from_base(str(tiny_mlm_dir)))
    studio = make_studio(tiny_mlm_dir, checkpoints, PublicLimits(disk_bytes=int(need * 1.5), address_share=1.0))
    training = threading.Event()
    monkeypatch.setattr(handlers, "FinetuneJob", lambda *args: lambda job: training.wait(60))
    job_id = studio.finetune.start_finetune(validated(studio), 1, 5e-5, 4, 0, 1, 1, 0)
    assert disk_budget().reserved() == need
    with pytest.raises(ValueError, match="storage for visitors' files is full"):
        reservation(need, "another visitor's upload")
    training.set()
    deadline = time.monotonic() + 30
    while studio.jobs.get(job_id).status in ("queued", "running") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert studio.jobs.get(job_id).status == "done" and disk_budget().reserved() == 0


def test_a_visitors_saved_model_keeps_its_caches_in_its_session_folder_and_goes_with_it(tiny_mlm_dir, checkpoints,
                                                                                        other_checkpoint):
    from app.server.public import model_cache_dir
    from app.settings import cache_dir
    studio = make_studio(tiny_mlm_dir, checkpoints)
    alice = Session()
    studio.finetune.save_finetuned(finished_job(studio, other_checkpoint), "mine", alice)
    mine = public_saves_dir() / alice.key / "mine"
    cache = model_cache_dir(mine, "open-vocab")  # its open vocabulary: ~100 MB for all of WordNet
    assert cache == public_saves_dir() / alice.key / ".caches" / "open-vocab"  # in the disk budget
    assert public_saves_dir() not in model_cache_dir(checkpoints / "other", "open-vocab").parents
    assert f"{YOURS}mine" in [name for _, name in studio.model_choices(alice)[0]]  # the cache is no model
    studio.choose_model(f"{YOURS}mine", alice)
    assert [spec.name for spec in studio.models.kept()] == [f"{YOURS}mine"]
    shared = cache_dir("embeddings")
    before = sorted(shared.iterdir())
    studio.models.shared(studio.models.kept()[0]).reference(size=50)  # its reference sentences, embedded
    references = public_saves_dir() / alice.key / ".caches" / "embeddings"
    assert any(references.iterdir()) and sorted(shared.iterdir()) == before  # issue 61: it went to the shared cache
    studio.end_session(alice)
    assert not cache.exists() and not references.exists() and studio.models.kept() == []


def test_a_sessions_fine_tune_goes_with_the_session(tiny_mlm_dir, checkpoints, validated, monkeypatch):
    from app.shared.finetune import staged_folder
    finish = threading.Event()

    def stage(self, job):
        staged_folder(job).mkdir(parents=True)
        (staged_folder(job) / "model.safetensors").write_bytes(b"0" * 100)
        while not (finish.is_set() or job.cancel_requested.is_set()):  # a long run
            threading.Event().wait(0.01)
    monkeypatch.setattr("app.shared.finetune.FinetuneJob.__call__", stage)
    studio = make_studio(tiny_mlm_dir, checkpoints)
    session = validated(studio)
    first = studio.jobs.get(studio.finetune.start_finetune(session, 1, 5e-5, 4, 0, 1, 1, 0))
    finish.set()
    while studio.jobs.unfinished():
        threading.Event().wait(0.01)
    finish.clear()
    assert staged_folder(first).is_dir()
    second = studio.jobs.get(studio.finetune.start_finetune(session, 1, 5e-5, 4, 0, 1, 1, 0))  # the session's quota: 2
    studio.end_session(session)
    assert not staged_folder(first).exists()  # nobody can save it any more
    assert second.cancel_requested.is_set()  # a cancelled FinetuneJob deletes what it staged (test_faults.py)


# ---- evaluate ---------------------------------------------------------------------------------------------

def test_a_refined_interpolation_has_a_step_limit(tiny_mlm_dir, checkpoints, monkeypatch):
    studio = make_studio(tiny_mlm_dir, checkpoints, PublicLimits(refined_interpolation_steps=4))
    decoded = []
    engine = studio.models.active().engine
    monkeypatch.setattr(engine, "interpolate", lambda x, y, steps, **kw: decoded.append(steps) or [])
    with pytest.raises(ValueError, match="refines at most 4 steps of an interpolation, not 5"):
        studio.analogy.interpolation("a dog", "a king", 5, refine=True, session=Session())
    studio.analogy.interpolation("a dog", "a king", 4, refine=True, session=Session())
    studio.analogy.interpolation("a dog", "a king", 20, session=Session())  # unrefined: the usual bound
    assert decoded == [4, 20]


def test_evaluate_reads_no_senteval_folder_in_public_mode(tiny_mlm_dir, checkpoints):
    studio = make_studio(tiny_mlm_dir, checkpoints)
    assert "| tiny |" in studio.evaluate.evaluate_smoke(False, Session())  # the bundled smoke set works
    for run in (lambda: studio.evaluate.evaluate_sts("data/senteval", ["STS-B"]),
                lambda: studio.evaluate.evaluate_senteval("data/senteval", ["MR"], "quick")):
        with pytest.raises(ValueError, match="reads only the bundled smoke set"):
            run()


# ---- switching it on, and the UI ------------------------------------------------------------------------

def test_public_mode_is_on_for_a_space_or_with_the_flag(monkeypatch):
    monkeypatch.delenv("SPACE_ID", raising=False)
    assert not public_mode() and public_mode(True)
    monkeypatch.setenv("SPACE_ID", "someone/defsent-studio")
    assert public_mode()
    assert app_main().parse_args(["--public"]).public


def test_the_ui_keeps_the_model_choice_and_saves_in_the_session(tiny_mlm_dir, checkpoints):
    gr = pytest.importorskip("gradio")
    from app.ui import build_app

    studio = make_studio(tiny_mlm_dir, checkpoints, PublicLimits(session_lifetime=600))
    demo = build_app(studio)
    state = next(b for b in demo.blocks.values() if isinstance(b, gr.State))
    assert state.time_to_live == 600
    ended = []
    studio.end_session = ended.append  # the callback ends the session through the studio
    state.delete_callback(alice := Session())
    assert ended == [alice]
    chooser = next(b for b in demo.blocks.values() if getattr(b, "elem_id", None) == "model-choice")
    assert "this session only" in chooser.label
    for name in ("switch_model", "save_finetuned", "activate_finetuned"):
        event = next(f for f in demo.fns.values() if f.api_name == name)
        assert state in event.inputs and state in event.outputs, name
    for name in ("reverse_dictionary", "similarity", "analogy", "draw_map", "candidates_map", "evaluate_words"):
        assert state in next(f for f in demo.fns.values() if f.api_name == name).inputs, name


# ---- login -------------------------------------------------------------------------------------------------

def app_main():
    spec = importlib.util.spec_from_file_location("app_main", REPO / "app.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_auth_from_the_flag_or_the_environment(monkeypatch):
    monkeypatch.delenv("DEFSENT_AUTH", raising=False)
    main = app_main()
    assert main.parse_args([]).auth is None
    assert main.parse_args(["--auth", "alice:pass:with:colons"]).auth == ("alice", "pass:with:colons")
    monkeypatch.setenv("DEFSENT_AUTH", "bob:secret")
    assert main.parse_args([]).auth == ("bob", "secret")


@pytest.mark.parametrize("value", ["alice", "alice:", ":secret", "  :  ", "alice:   "])
def test_a_malformed_auth_is_refused_with_its_form(value, capsys, monkeypatch):
    monkeypatch.delenv("DEFSENT_AUTH", raising=False)
    with pytest.raises(SystemExit):
        app_main().parse_args(["--auth", value])
    assert "expected USER:PASSWORD, both non-empty" in capsys.readouterr().err


def test_a_public_server_names_a_broken_model_and_a_corrupt_decoder_never_its_folders(tiny_mlm_dir, checkpoints):
    """Its visitors read a checkpoint's name, not the server's absolute paths (a private server says the folder)."""
    from core.checkpoint import ENCODER_FILES, CheckpointError
    from core.readout import DECODER_MANIFEST, DECODER_WEIGHTS

    (checkpoints / "broken").mkdir()
    (checkpoints / "broken" / sorted(ENCODER_FILES)[0]).write_bytes(b"")  # an encoder's file, no manifest: broken
    corrupt = checkpoints / "vec2sent-corrupt"
    corrupt.mkdir()
    (corrupt / DECODER_MANIFEST).write_text("{not json", encoding="utf-8")
    (corrupt / DECODER_WEIGHTS).write_bytes(b"")  # beside weights: a decoder's manifest, maybe this encoder's
    studio = make_studio(tiny_mlm_dir, checkpoints)
    with pytest.raises(CheckpointError, match='The model "broken" cannot be loaded') as refused:
        studio.choose_model("broken", Session())
    assert str(checkpoints) not in str(refused.value)
    _, alice = studio.choose_model("other", Session())
    about = studio.about(alice)[0]
    assert "**Vec2Sent decoder:** unknown:" in about and f"{checkpoints.name}/vec2sent-corrupt" in about
    assert str(checkpoints) not in about
    private = make_studio(tiny_mlm_dir, checkpoints, public=None)
    with pytest.raises(CheckpointError, match=f"in {checkpoints}"):  # a server of one's own: where it is
        private.choose_model("broken", Session())


def test_a_file_removed_while_the_disk_is_counted_counts_nothing(tmp_path, monkeypatch):
    """The clean-clone CI saw an upload answered 500: `folder_bytes` listed a temporary upload file that another
    request removed before its size was read (FileNotFoundError)."""
    import os

    from app.settings import folder_bytes

    (tmp_path / "kept.bin").write_bytes(b"x" * 10)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "going.bin").write_bytes(b"y" * 5)
    real_stat, seen = os.stat, []

    def removed_after_its_first_look(path, *args, **kwargs):
        if str(path).endswith("going.bin"):
            seen.append(path)
            if len(seen) > 1:
                raise FileNotFoundError(path)
        return real_stat(path, *args, **kwargs)

    monkeypatch.setattr(os, "stat", removed_after_its_first_look)
    assert folder_bytes(tmp_path) in (10, 15)  # counted or not, never an error
    assert folder_bytes(tmp_path / "nowhere") == 0


def test_fine_tunes_per_address_are_limited_across_sessions(tiny_mlm_dir, checkpoints, validated, monkeypatch):
    """Session 49's review: the quota was a session's, and a reload is a new session, so one visitor could hold the
    one training slot for good; an address now starts at most `finetunes_per_address_hour` an hour."""
    from app.handlers.finetune import ADDRESS_QUOTA_USED
    from app.server.public import VISITOR
    from app.shared.jobs import JobQueueFull

    studio = make_studio(tiny_mlm_dir, checkpoints, PublicLimits(finetunes_per_session=1, finetunes_per_address_hour=2))
    monkeypatch.setattr("app.shared.finetune.FinetuneJob.__call__", lambda self, job: None)  # no training process

    def start(address: str) -> None:
        token = VISITOR.set(address)
        try:
            studio.finetune.start_finetune(validated(studio), 1, 5e-5, 4, 0, 1, 1, 0)  # a new session each time
        finally:
            VISITOR.reset(token)
        while studio.jobs.unfinished():
            threading.Event().wait(0.01)

    start("203.0.113.7")
    submit = studio.jobs.submit
    monkeypatch.setattr(studio.jobs, "submit", lambda *args, **kwargs: (_ for _ in ()).throw(JobQueueFull()))
    with pytest.raises(ValueError, match="The training slot is busy"):
        start("203.0.113.7")  # refused: not counted
    monkeypatch.setattr(studio.jobs, "submit", submit)
    start("203.0.113.7")
    with pytest.raises(ValueError, match="Your network address has started 2 fine-tunes within the hour"):
        start("203.0.113.7")
    start("198.51.100.9")  # another visitor's
    assert ADDRESS_QUOTA_USED.format(n=2, minutes=60).count("60 minutes") == 1


def test_recent_starts_forget_what_is_older_than_their_window():
    from app.server.public import RecentStarts

    starts = RecentStarts(most=2, window=100.0)
    starts.record("a", now=0.0)
    starts.record("a", now=10.0)
    assert starts.wait("a", now=20.0) == pytest.approx(80.0)  # its first start leaves the window at 100
    assert starts.wait("b", now=20.0) == 0
    assert starts.wait("a", now=100.5) == 0  # the first has left
    starts.record("b", now=100.5)
    assert set(starts.starts) == {"a", "b"}
    starts.record("c", now=500.0)
    assert set(starts.starts) == {"c"}  # the others' starts forgotten
