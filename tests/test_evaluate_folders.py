"""The Evaluate tab reads SentEval data only from its fixed folders, named relative to the repository:
any other path is refused with the same message whether it exists or not, no message shows an absolute
server path, and a missing data set says how to get SentEval's data and where to put it."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from app.shared import evaluation
from app.handlers import Studio
from app.shared.jobs import JobManager
from app.shared.models import Models, ModelSpec
from app.views.projection import Projector
from core import Engine

SENTEVAL = Path(__file__).parent / "fixtures" / "senteval"


@pytest.fixture(scope="module")
def studio(tiny_mlm_dir, tmp_path_factory) -> Studio:
    models = Models.from_engine(Engine.from_base(str(tiny_mlm_dir)), ModelSpec("tiny", base=str(tiny_mlm_dir)),
                                tmp_path_factory.mktemp("checkpoints"))
    return Studio(models, Projector(), JobManager())


@pytest.fixture
def folders(tmp_path, monkeypatch) -> dict[str, Path]:
    """The allowed folders, in a temporary place: data/senteval holds a copy of the fixtures; the
    other does not exist."""
    data = {"data/senteval": Path(shutil.copytree(SENTEVAL, tmp_path / "repo" / "data" / "senteval")),
            "../shared/data/senteval": tmp_path / "shared" / "data" / "senteval"}
    monkeypatch.setattr(evaluation, "DATA_FOLDERS", data)
    monkeypatch.delenv(evaluation.DATA_FOLDERS_ENV, raising=False)
    return data


@pytest.mark.parametrize("data_dir", ["/etc", "/nonexistent", "../../etc", "data/../../etc", str(SENTEVAL),
                                      "data/senteval/STS"])
def test_any_other_folder_is_refused_alike_without_reading_it(studio, folders, data_dir):
    with pytest.raises(ValueError) as error:
        studio.evaluate.evaluate_sts(data_dir, ["STS-B"])
    message = str(error.value)
    assert message == ("No SentEval data folder of that name: this server reads SentEval data only from "
                       "data/senteval or ../shared/data/senteval (or a folder its operator lists in "
                       "$DEFSENT_EVALUATION_DATA).")
    with pytest.raises(ValueError, match="No SentEval data folder of that name"):
        studio.evaluate.evaluate_senteval(data_dir, ["MR"], next(iter(evaluation.TRANSFER_SIZES)))


def test_the_allowed_folders_are_read_by_name(studio, folders):
    assert evaluation.default_data_dir() == "data/senteval"  # a name, not the server's path
    markdown = studio.evaluate.evaluate_sts("data/senteval", ["STS-B"])
    assert "| **tiny** |" in markdown and str(folders["data/senteval"]) not in markdown
    assert "| **tiny** |" in studio.evaluate.evaluate_sts("", ["STS-B"])  # empty: the first folder that exists


def test_a_missing_folder_says_how_to_get_the_data_without_a_server_path(studio, folders, tmp_path):
    with pytest.raises(ValueError) as error:
        studio.evaluate.evaluate_sts("../shared/data/senteval", ["STS-B"])
    message = str(error.value)
    assert message.startswith("No SentEval data folder at ../shared/data/senteval on this server yet.")
    assert "data/downstream" in message and "get_transfer_data.bash" in message and "data/senteval" in message
    assert str(tmp_path) not in message
    shutil.rmtree(folders["data/senteval"])
    with pytest.raises(ValueError, match="^No SentEval data folder on this server yet. To get SentEval's data"):
        studio.evaluate.evaluate_sts("", ["STS-B"])


def test_missing_files_are_named_relative_to_the_data_folder_with_the_download_script(studio, folders, tmp_path):
    shutil.rmtree(folders["data/senteval"] / "STS" / "STSBenchmark")
    markdown = studio.evaluate.evaluate_sts("data/senteval", ["STS-B", "SICK-R"])
    assert "Skipped STS-B: missing STS/STSBenchmark/sts-test.csv" in markdown
    assert "./get_transfer_data.bash" in markdown and "github.com/facebookresearch/SentEval" in markdown
    assert str(tmp_path) not in markdown


def test_an_operator_can_add_folders_by_absolute_path(studio, folders, monkeypatch, tmp_path):
    extra = Path(shutil.copytree(SENTEVAL, tmp_path / "elsewhere"))
    monkeypatch.setenv(evaluation.DATA_FOLDERS_ENV, f"relative/ignored{':'}{extra}")
    assert list(evaluation.data_folders()) == ["data/senteval", "../shared/data/senteval", str(extra)]
    assert "| **tiny** |" in studio.evaluate.evaluate_sts(str(extra), ["STS-B"])
