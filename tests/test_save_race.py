"""Saving a fine-tuned model claims its name once, case-insensitively, with no window between the
check and the claim: of two saves of one name at the same moment, one saves and the other is told
the name is taken; nothing is replaced."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from app.shared.finetune import FinetuneResult, save_finetuned
from app.handlers import Studio
from app.shared.jobs import JobManager
from app.shared.models import Models, ModelSpec
from app.views.projection import Projector
from core import Engine
from core.checkpoint import NameTaken, claimed_name, remove_stale_temporaries


@pytest.fixture(scope="module")
def staged(tiny_mlm_dir, tmp_path_factory) -> tuple[FinetuneResult, FinetuneResult]:
    """Two finished fine-tunes (two users' jobs), each a staged model with its own marker file."""
    results = []
    for user in ("first", "second"):
        folder = Engine.from_base(str(tiny_mlm_dir)).save(tmp_path_factory.mktemp(user) / "model", name=user)
        (folder / "user.txt").write_text(user)
        results.append(FinetuneResult(folder, {}, {}, [], {}))
    return results[0], results[1]


@pytest.fixture
def slow_copies(monkeypatch):
    """Each file copy of a save takes a while, so that two saves overlap for certain."""
    copy = shutil.copyfile

    def slow(source, destination, *args, **kwargs):
        time.sleep(0.05)
        return copy(source, destination, *args, **kwargs)
    monkeypatch.setattr(shutil, "copyfile", slow)


def race(staged, names: tuple[str, str], directory: Path) -> list[Path | str]:
    """Both results saved at once, under `names`: each thread's saved path or refusal message."""
    start = threading.Barrier(2)
    outcomes: list[Path | str] = [None, None]

    def save(i: int) -> None:
        start.wait()
        try:
            outcomes[i] = save_finetuned(staged[i], names[i], directory)
        except ValueError as err:
            outcomes[i] = str(err)
    threads = [threading.Thread(target=save, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return outcomes


@pytest.mark.parametrize("names", [("mine", "mine"), ("defsent-minilm", "DEFSENT-MINILM")])
def test_two_saves_of_one_name_at_once_save_one_and_refuse_the_other(staged, slow_copies, tmp_path, names):
    outcomes = race(staged, names, tmp_path)
    saved = [o for o in outcomes if isinstance(o, Path)]
    refused = [o for o in outcomes if isinstance(o, str)]
    assert len(saved) == 1 and len(refused) == 1, outcomes
    assert "already taken" in refused[0] or "already exists" in refused[0]
    assert "choose another name" in refused[0]
    winner = outcomes.index(saved[0])
    assert [p.name for p in tmp_path.iterdir()] == [names[winner]]  # no claim or temporary left behind
    assert (saved[0] / "user.txt").read_text() == ("first", "second")[winner]  # not replaced by the loser
    assert json.loads((saved[0] / "manifest.json").read_text())["name"] == names[winner]


def test_a_name_that_differs_only_in_case_is_refused(staged, tmp_path):
    save_finetuned(staged[0], "defsent-minilm", tmp_path)
    with pytest.raises(NameTaken, match="The name 'DEFSENT-MINILM' is already taken by the checkpoint "
                                        "'defsent-minilm' \\(names that differ only in case are the same name\\)"):
        save_finetuned(staged[1], "DEFSENT-MINILM", tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["defsent-minilm"]


def test_the_studio_tells_the_second_saver_the_name_is_taken(staged, tiny_mlm_dir, tmp_path, monkeypatch):
    models = Models.from_engine(Engine.from_base(str(tiny_mlm_dir)), ModelSpec("tiny", base=str(tiny_mlm_dir)),
                                tmp_path / "checkpoints")
    studio = Studio(models, Projector(), JobManager())
    monkeypatch.setattr(studio.finetune, "_finished", lambda job_id: staged[int(job_id)])
    assert studio.finetune.save_finetuned("0", "Mine").startswith("Saved as checkpoint `Mine`")
    with pytest.raises(ValueError, match="The name 'mine' is already taken by the checkpoint 'Mine'"):
        studio.finetune.save_finetuned("1", "mine")
    assert staged[1].saved is None


def test_a_held_claim_refuses_the_name_and_a_dead_writers_claim_is_removed(staged, tmp_path):
    with claimed_name(tmp_path, "Mine"):
        with pytest.raises(NameTaken, match="The name 'mine' is already taken: a checkpoint is being saved under it"):
            save_finetuned(staged[1], "mine", tmp_path)
        claim = tmp_path / ".mine.claim"
        assert claim.read_text() == str(os.getpid())
        assert remove_stale_temporaries(tmp_path) == []  # this process is alive: its claim stays
    assert not claim.exists()
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    claim.write_text(str(dead.pid))  # a writer killed while saving
    (tmp_path / ".other.claim").write_text("")  # one killed between creating its claim and writing it
    assert sorted(p.name for p in remove_stale_temporaries(tmp_path)) == [".mine.claim", ".other.claim"]
    assert save_finetuned(staged[1], "mine", tmp_path) == tmp_path / "mine"
