"""Failures named where the user sees them (issue 73): a broken checkpoint stays in the model list with why, a
corrupt decoder manifest is not taken for "no decoder was trained for this encoder"."""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from app.shared.models import BASE_LABEL, available_specs
from core import CheckpointError, Engine
from core.checkpoint import HEAD_WEIGHTS, MANIFEST
from core.readout import find_decoder_dir
from core.vec2sent.checkpoint import FORMAT as DECODER_FORMAT
from core.vec2sent.checkpoint import WEIGHTS as DECODER_WEIGHTS
from tests.conftest import make_studio


@pytest.fixture(scope="module")
def whole(engine, tmp_path_factory) -> Path:
    """A checkpoint that loads."""
    return engine.save(tmp_path_factory.mktemp("saved") / "whole", name="whole")


def broken_copies(whole: Path, folder: Path) -> None:
    """`folder` holding `whole`, a copy with an unreadable manifest, one without its head's weights, a decoder's
    folder and a folder of notes."""
    shutil.copytree(whole, folder / "whole")
    (Path(shutil.copytree(whole, folder / "bad-json")) / MANIFEST).write_text("{not json", encoding="utf-8")
    (Path(shutil.copytree(whole, folder / "no-head")) / HEAD_WEIGHTS).unlink()
    (folder / "vec2sent-whole").mkdir()
    (folder / "vec2sent-whole" / MANIFEST).write_text(json.dumps({"format": DECODER_FORMAT}), encoding="utf-8")
    (folder / "notes").mkdir()


def test_a_broken_checkpoint_is_listed_with_why_and_refused(whole, tmp_path):
    """Before: the two broken checkpoints silently left the model list."""
    broken_copies(whole, tmp_path)
    specs = {spec.name: spec for spec in available_specs(tmp_path)}
    assert list(specs) == ["bad-json", "no-head", "whole", BASE_LABEL]  # a decoder's folder and notes are no models
    assert specs["whole"].broken == "" and specs["whole"].label == "whole"
    assert specs["bad-json"].label.startswith("bad-json (broken: manifest.json is not valid JSON (Expecting")
    assert specs["no-head"].label == "no-head (broken: head.safetensors missing)"
    with pytest.raises(CheckpointError, match='The model "no-head" cannot be loaded: head.safetensors missing'):
        specs["no-head"].load()
    assert specs["whole"].load().fingerprint == Engine.load(whole).fingerprint


def test_the_model_bar_shows_a_broken_checkpoint_and_a_switch_to_it_says_why(engine, tiny_mlm_dir, tmp_path):
    studio = make_studio(engine, tiny_mlm_dir, tmp_path)
    broken_copies(Path(engine.save(tmp_path / "saved" / "whole")), studio.models.checkpoints)
    choices, active = studio.model_choices()
    assert ("no-head (broken: head.safetensors missing)", "no-head") in choices and ("whole", "whole") in choices
    with pytest.raises(CheckpointError, match="cannot be loaded: head.safetensors missing"):
        studio.switch_model("no-head")
    assert studio.models.active().spec.name == active == "tiny"  # the model that answered still does


def corrupt_decoder(folder: Path) -> Path:
    """A decoder's folder (its weights) whose manifest cannot be read."""
    folder.mkdir(parents=True)
    (folder / DECODER_WEIGHTS).write_bytes(b"weights")
    (folder / MANIFEST).write_text('{"format": "vec2sent/1", "enc', encoding="utf-8")
    return folder / MANIFEST


def test_a_corrupt_decoder_manifest_is_said_with_its_path_not_taken_for_no_decoder(whole, tmp_path):
    """Before: find_decoder_dir skipped it, and the About tab said 'none trained for this encoder'."""
    checkpoints = tmp_path / "checkpoints"
    shutil.copytree(whole, checkpoints / "whole")
    (Path(shutil.copytree(whole, checkpoints / "bad-json")) / MANIFEST).write_text("{not json", encoding="utf-8")
    assert find_decoder_dir("0123456789abcdef", checkpoints) is None  # an encoder's manifest is no decoder's
    manifest = corrupt_decoder(checkpoints / "vec2sent-whole")
    with pytest.raises(CheckpointError, match=re.escape(f"corrupt and may be its decoder's: {manifest} (")):
        find_decoder_dir("0123456789abcdef", checkpoints)
    engine = Engine.load(checkpoints / "whole")  # decoder "auto": looked up on first use
    with pytest.raises(CheckpointError, match="is corrupt"):
        _ = engine.decoder


def test_the_about_tab_says_a_decoder_manifest_is_corrupt(engine, tiny_mlm_dir, tmp_path):
    studio = make_studio(engine, tiny_mlm_dir, tmp_path)
    manifest = corrupt_decoder(studio.models.checkpoints / "vec2sent-tiny")
    engine = Engine.from_base(str(tiny_mlm_dir))
    engine.set_decoder("auto", studio.models.checkpoints)
    studio.models.use(engine, studio.models.active().spec)
    about, _ = studio.about()
    assert f"**Vec2Sent decoder:** unknown: No decoder manifest in {studio.models.checkpoints}" in about
    assert f"{manifest} (JSONDecodeError" in about and "none trained" not in about
