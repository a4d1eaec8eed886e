"""Fine-tune settings have bounds (app.shared.finetune.setting_bounds): a value out of range is refused with
the setting's name and range before any job is queued; values at the bounds are accepted."""
from __future__ import annotations

import math
from pathlib import Path

import pytest

from app.shared.finetune import MAX_TOTAL_STEPS, FinetuneSettings, model_layers, setting_bounds
from app.handlers import Session, Studio
from tests.conftest import DEFINITIONS, make_studio

pytestmark = pytest.mark.usefixtures("cache_in_tmp")  # the cache in tmp_path: tests/conftest.py

# epochs, lr, batch size, trainable layers, max steps, evaluations, seed: a valid form
GOOD = {"epochs": 1, "lr": 1e-3, "batch_size": 4, "trainable_layers": 0, "max_steps": 4, "evaluations": 2, "seed": 0}


@pytest.fixture
def session(studio, tmp_path) -> Session:
    return validated_session(studio, tmp_path)


def validated_session(studio, folder: Path) -> Session:
    path = folder / "mine.tsv"
    path.write_text("word\tdefinition\n" + "".join(f"{w}\t{d}\n" for w, d in DEFINITIONS.items()), encoding="utf-8")
    report, session = studio.finetune.validate_upload(str(path), 0, Session())
    assert "Ready" in report, report
    return session


@pytest.fixture(scope="module")
def refusing(engine, tiny_mlm_dir, tmp_path_factory) -> tuple[Studio, Session]:
    """One studio and validated upload shared by the refusals below, which start nothing: validating an upload
    runs a full garbage collection (return_freed_memory), over a second each late in a test run."""
    folder = tmp_path_factory.mktemp("refusing")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DEFSENT_CACHE_DIR", str(folder / "cache"))
        studio = make_studio(engine, tiny_mlm_dir, folder)
        return studio, validated_session(studio, folder)


@pytest.mark.parametrize("field, value, message", [
    # the values observed starting jobs on the running app (issue 27)
    ("max_steps", 10**12, "Max steps must be a whole number from 0 to 100,000 (got 1,000,000,000,000)"),
    ("epochs", 1e9, "Epochs must be a number above 0 and at most 50 (got 1,000,000,000)"),
    ("batch_size", 10**9, "Batch size must be a whole number from 1 to 256 (got 1,000,000,000)"),
    ("lr", 1e10, "Learning rate must be a number above 0 and at most 0.01 (got 10,000,000,000)"),
    # just past each bound
    ("epochs", 0, "Epochs must be a number above 0 and at most 50 (got 0)"),
    ("epochs", 50.5, "Epochs must be a number above 0 and at most 50 (got 50.5)"),
    ("lr", 0, "Learning rate must be a number above 0 and at most 0.01 (got 0)"),
    ("lr", 0.0101, "Learning rate must be a number above 0 and at most 0.01 (got 0.0101)"),
    ("batch_size", 0, "Batch size must be a whole number from 1 to 256 (got 0)"),
    ("batch_size", 257, "Batch size must be a whole number from 1 to 256 (got 257)"),
    ("batch_size", 2.5, "Batch size must be a whole number from 1 to 256 (got 2.5)"),
    ("trainable_layers", -1, "Train top layers must be a whole number from 0 to 2 (got -1)"),
    ("trainable_layers", 3, "Train top layers must be a whole number from 0 to 2 (got 3)"),  # the tiny model has 2
    ("max_steps", -1, "Max steps must be a whole number from 0 to 100,000"),
    ("max_steps", 100_001, "Max steps must be a whole number from 0 to 100,000"),
    ("evaluations", 0, "Dev evaluations must be a whole number from 1 to 100"),
    ("evaluations", 101, "Dev evaluations must be a whole number from 1 to 100"),
    ("seed", -1, "Seed must be a whole number from 0 to 2,147,483,647"),
    ("seed", 2**31, "Seed must be a whole number from 0 to 2,147,483,647"),
    # not numbers at all
    ("lr", math.nan, "Learning rate must be a number above 0 and at most 0.01 (got nan)"),
    ("epochs", math.inf, "Epochs must be a number above 0 and at most 50 (got inf)"),
    ("batch_size", None, "Batch size is empty: enter a whole number from 1 to 256."),
    ("seed", "abc", "Seed must be a whole number from 0 to 2,147,483,647 (got 'abc')"),
])
def test_a_setting_out_of_range_is_refused_by_name_and_nothing_starts(refusing, field, value, message):
    studio, session = refusing
    with pytest.raises(ValueError) as error:
        studio.finetune.start_finetune(session, **{**GOOD, field: value})
    assert str(error.value).startswith(message)
    assert studio.jobs.unfinished() == []  # no job queued, no training process started


def test_a_run_longer_than_the_step_limit_is_refused():
    settings = FinetuneSettings(epochs=50, batch_size=1)
    assert settings.total_steps(10_000) == 500_000
    with pytest.raises(ValueError, match="make 500,000 training steps, over the limit of 100,000: lower Epochs"):
        settings.check(10_000, layers=6)
    FinetuneSettings(epochs=50, batch_size=1, max_steps=MAX_TOTAL_STEPS).check(10_000, layers=6)  # max steps rule
    with pytest.raises(ValueError, match="over the limit"):
        FinetuneSettings(epochs=50, batch_size=1).train_config(10_000)  # the training process checks too


def test_a_small_dictionary_rehearses_wordnet_and_a_large_one_does_not():
    from app.shared.finetune import REHEARSAL, REHEARSE_BELOW

    settings = FinetuneSettings()
    assert settings.train_config(32).rehearsal == REHEARSAL > 0
    assert settings.train_config(REHEARSE_BELOW).rehearsal == 0
    assert FinetuneSettings(rehearsal=4).train_config(REHEARSE_BELOW).rehearsal == 4  # as set


def test_values_at_the_bounds_are_accepted_as_numbers_of_the_right_kind(engine):
    layers = model_layers(engine)
    top = {"epochs": 50, "lr": 1e-2, "batch_size": 256.0, "trainable_layers": layers, "max_steps": 100_000,
           "evaluations": 100, "seed": 2**31 - 1}
    settings = FinetuneSettings.from_form(layers, **top)
    settings.check(100, layers)
    assert settings.batch_size == 256 and isinstance(settings.batch_size, int)
    low = FinetuneSettings.from_form(layers, epochs=0.01, lr=1e-9, batch_size=1, trainable_layers=0, max_steps=0,
                                     evaluations=1, seed=0)
    low.check(100, layers)
    assert settings.train_config(100, layers).max_steps == 100_000


def test_the_bounds_are_one_table_and_name_every_form_field(engine):
    bounds = setting_bounds(model_layers(engine))
    assert set(bounds) == set(GOOD)
    assert bounds["trainable_layers"].high == 2 == len(engine.encoder.backbone.encoder.layer)
    assert setting_bounds(None)["trainable_layers"].high == math.inf  # without a model: no top


def test_the_split_seed_of_an_upload_is_bounded_too(studio, tmp_path):
    path = Path(tmp_path / "mine.tsv")
    path.write_text("word\tdefinition\n" + "".join(f"{w}\t{d}\n" for w, d in DEFINITIONS.items()), encoding="utf-8")
    report, session = studio.finetune.validate_upload(str(path), -5, Session())
    assert report.startswith("Not usable:\nSeed must be a whole number from 0 to 2,147,483,647 (got -5)")
    assert session.upload is None
