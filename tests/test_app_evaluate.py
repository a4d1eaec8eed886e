"""The Evaluate tab's SentEval transfer tasks against a tiny engine and the tiny SentEval fixtures."""
from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from app.shared import evaluation
from app.handlers import Studio
from app.shared.jobs import JobManager
from app.shared.models import Models, ModelSpec
from app.views.projection import Projector
from core import Engine
from core.evaluation.files import LabeledTexts, SentencePairs
from core.evaluation.senteval import TRANSFER_TASKS, sample_splits

SENTEVAL = Path(__file__).parent / "fixtures" / "senteval"
WHOLE, SAMPLED = "whole fixtures, 3 folds", "5 examples per split, 3 folds"


@pytest.fixture(autouse=True)
def tiny_sizes(monkeypatch):
    """The fixtures have a handful of examples per class: fewer folds than SentEval's 10. The
    fixtures' folder is one the Evaluate tab may read, as an operator would allow it."""
    monkeypatch.setattr(evaluation, "TRANSFER_SIZES", {WHOLE: (0, 3), SAMPLED: (5, 3)})
    monkeypatch.setenv(evaluation.DATA_FOLDERS_ENV, str(SENTEVAL))


@pytest.fixture(scope="module")
def studio(tiny_mlm_dir, tmp_path_factory) -> Studio:
    models = Models.from_engine(Engine.from_base(str(tiny_mlm_dir)), ModelSpec("tiny", base=str(tiny_mlm_dir)),
                                tmp_path_factory.mktemp("checkpoints"))
    return Studio(models, Projector(), JobManager())


def test_senteval_runs_the_chosen_tasks_beside_the_papers_rows(studio):
    calls = []
    markdown = studio.evaluate.evaluate_senteval(str(SENTEVAL), ["SST-2", "TREC", "MRPC"], WHOLE,
                                        progress=lambda fraction, desc: calls.append((fraction, desc)))
    assert "| Model | SST-2 | TREC | MRPC | Avg. |" in markdown
    assert "| SBERT-NLI-base | 88.96 | 89.60 | 76.00 | 84.85 |" in markdown  # avg over the columns shown
    assert "| Avg. GloVe embeddings |" in markdown and "| BERT CLS-vector |" in markdown
    ours = next(line for line in markdown.splitlines() if line.startswith("| **tiny** |"))
    scores = [float(cell) for cell in ours.strip("|").split("|")[1:]]
    assert len(scores) == 4 and all(0 <= score <= 100 for score in scores)  # SST-2, TREC, MRPC and their average
    assert scores[-1] == pytest.approx(sum(scores[:3]) / 3, abs=0.01)
    assert calls == [(0.0, "SST-2 (1 of 3)"), (1 / 3, "TREC (2 of 3)"), (2 / 3, "MRPC (3 of 3)")]
    assert "Quick run" not in markdown


def test_a_sampled_run_says_its_scores_are_indicative(studio):
    markdown = studio.evaluate.evaluate_senteval(str(SENTEVAL), ["SST-2"], SAMPLED)
    assert "| Model | SST-2 | Avg. |" in markdown
    assert "Quick run: at most 5 examples per split and 3-fold cross-validation" in markdown


def test_missing_task_files_are_named(studio, tmp_path, monkeypatch):
    data = Path(shutil.copytree(SENTEVAL, tmp_path / "senteval"))
    monkeypatch.setenv(evaluation.DATA_FOLDERS_ENV, str(data))
    (data / "TREC" / "TREC_10.label").unlink()
    markdown = studio.evaluate.evaluate_senteval(str(data), ["SST-2", "TREC"], WHOLE)
    assert "| Model | SST-2 | Avg. |" in markdown
    assert "Skipped TREC: missing TREC/TREC_10.label" in markdown  # relative to the data folder
    assert str(tmp_path) not in markdown and "get_transfer_data.bash" in markdown


@pytest.mark.parametrize("data_dir, tasks, size, message", [
    ("/nonexistent", ["MR"], WHOLE, "No SentEval data folder"),
    (str(SENTEVAL), [], WHOLE, "Choose tasks among MR, CR"),
    (str(SENTEVAL), ["MR", "STS-B"], WHOLE, "Choose tasks among"),
    (str(SENTEVAL), ["MR"], "huge", "Choose a run size"),
])
def test_bad_input_is_refused_with_a_message(studio, data_dir, tasks, size, message):
    with pytest.raises(ValueError, match=message):
        studio.evaluate.evaluate_senteval(data_dir, tasks, size)


def test_task_names_and_sizes_match_core():
    assert evaluation.TRANSFER_TASKS == tuple(TRANSFER_TASKS)


def test_sample_splits_keeps_pairs_aligned_and_is_fixed():
    pairs = SentencePairs([f"a{i}" for i in range(20)], [f"b{i}" for i in range(20)], np.arange(20))
    texts = LabeledTexts([f"t{i}" for i in range(3)], np.arange(3))
    sampled = sample_splits({"train": pairs, "test": texts}, 6, seed=1)
    train = sampled["train"]
    assert len(train.first) == len(train.second) == len(train.labels) == 6
    assert [f"a{i}" for i in train.labels] == train.first and [f"b{i}" for i in train.labels] == train.second
    assert list(train.labels) == sorted(train.labels)  # original order kept
    assert sampled["test"] is texts  # already small enough
    assert sample_splits({"train": pairs}, 6, seed=1)["train"].first == train.first
    with pytest.raises(ValueError, match="sample size"):
        sample_splits({"train": pairs}, 0)


# ---- offline: the bundled smoke set, and fetching SentEval's data ------------------------------------------

def test_the_bundled_smoke_set_is_a_few_hundred_pairs_of_every_kind():
    pairs = evaluation.smoke_pairs()
    assert 250 <= len(pairs) <= 400
    assert {kind: score for _, _, score, kind in pairs} == evaluation.SMOKE_SCORES
    assert all(a.strip() and b.strip() and a != b for a, b, _, _ in pairs)


def test_the_smoke_set_runs_offline_and_says_it_is_no_benchmark(studio):
    markdown = studio.evaluate.evaluate_smoke(True)
    assert "| tiny |" in markdown and "mean cosine: paraphrase" in markdown
    assert "hand-written" in markdown and "not a benchmark" in markdown
    assert "nothing to compare" not in markdown  # the tiny model is a base: one row, no untrained twin
    assert markdown.count("| tiny |") == 1


def test_the_evaluate_tab_says_how_to_fetch_senteval_when_there_is_none(studio, monkeypatch):
    pytest.importorskip("gradio")
    from app.ui import build_app

    monkeypatch.setattr(evaluation, "DATA_FOLDERS", {"data/senteval": Path("/nonexistent/senteval")})
    monkeypatch.delenv(evaluation.DATA_FOLDERS_ENV)
    demo = build_app(studio)
    note = next(b for b in demo.blocks.values() if getattr(b, "elem_id", None) == "eval-get-data")
    assert "bash scripts/fetch_senteval.sh" in note.value and "data/senteval" in note.value
    assert any(f.api_name == "evaluate_smoke" for f in demo.fns.values())


FAKE_GET_DATA = """data_path=.
mkdir -p STS/STSBenchmark SICK MR
echo x > STS/STSBenchmark/sts-test.csv; echo x > SICK/SICK_test_annotated.txt; echo x > MR/rt-polarity.pos
### download SNLI
touch "$MARKS/SNLI_RAN"
### Get COCO captions
touch "$MARKS/COCO_RAN"
### download MRPC
mkdir -p MRPC; echo x > MRPC/msr_paraphrase_test.txt
"""


def test_the_fetch_script_runs_sentevals_script_without_snli_and_coco(tmp_path):
    """Offline: a fake SentEval archive (a file:// URL) whose script makes some task folders."""
    import subprocess
    import zipfile

    script = Path(__file__).parents[1] / "scripts" / "fetch_senteval.sh"
    archive = tmp_path / "senteval.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("SentEval-main/data/downstream/get_transfer_data.bash", FAKE_GET_DATA)
    dry = subprocess.run(["bash", str(script), "--dry-run"], capture_output=True, text=True, timeout=30)
    assert dry.returncode == 0 and "without its SNLI and COCO parts" in dry.stdout
    dest = tmp_path / "senteval"
    run = subprocess.run(["bash", str(script), str(dest)], capture_output=True, text=True, timeout=60,
                         env={"PATH": "/usr/bin:/bin", "SENTEVAL_ARCHIVE": archive.as_uri(), "MARKS": str(tmp_path)})
    assert run.returncode == 1 and "not fetched" in run.stderr and "CR SUBJ MPQA SST TREC" in run.stderr
    assert sorted(p.name for p in dest.iterdir()) == ["MR", "MRPC", "SICK", "STS"]
    assert (dest / "STS" / "STSBenchmark" / "sts-test.csv").is_file()
    assert not (tmp_path / "SNLI_RAN").exists() and not (tmp_path / "COCO_RAN").exists()


def test_the_average_note_counts_its_columns_in_words():
    """"Avg. over the 1 columns shown." (a new user's walk, session 51): one column is said so."""
    from core.evaluation.base import TaskResult
    from core.evaluation.report import task_markdown

    one = task_markdown("sts", TaskResult(rows={"all": {"STS12": 0.5}}), "m")
    two = task_markdown("sts", TaskResult(rows={"all": {"STS12": 0.5, "STS13": 0.6}}), "m")
    assert "Avg. over the one column shown." in one and "Avg. over the 2 columns shown." in two



def test_a_report_is_headed_by_its_tasks_title_not_its_key():
    """"sts: Unsupervised STS: ..." showed the task's key in the app's Evaluate tab (a new user's walk)."""
    from core.evaluation.base import TaskResult
    from core.evaluation.report import task_markdown

    heading = task_markdown("sts", TaskResult(rows={"all": {"STS12": 0.5}}), "m").splitlines()[0]
    assert heading.startswith("## Unsupervised STS") and "sts:" not in heading
    assert task_markdown("vec2sent", TaskResult(rows={"all": {"BLEU": 1.0}}), "m").startswith("## vec2sent")
