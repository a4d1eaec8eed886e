"""Evaluation suite end to end with a tiny deterministic stand-in encoder (hashed bag of words)
over tests/fixtures/senteval; slow tests check the real all-MiniLM-L6-v2 (STS-B, pooling)."""
from __future__ import annotations

import json
import shutil
import zlib
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import spearmanr
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from core.evaluation import (ENCODERS, TASKS, EvaluationConfig, SentenceEmbeddings, TaskResult, evaluate,
                             evaluate_sts, evaluate_transfer, load_encoder, paired_cosine, register_task)
from core.cli import main as cli


def main(argv: list[str]) -> int:
    return cli(["eval", *argv])
from core.evaluation.senteval import (C_GRID, MAX_ITER, heldout_accuracy, load_binary, load_mrpc, load_sst2,
                                      nested_cv_accuracy, pair_features, select_c_by_cv)
from core.evaluation.sts import load_sts_year

FIXTURES = Path(__file__).parent / "fixtures" / "senteval"
TRANSFER_COLUMNS = ["MR", "CR", "SUBJ", "MPQA", "SST-2", "TREC", "MRPC"]


class HashedBagOfWords:
    """Sum of fixed pseudo-random vectors, one per lowercased word: deterministic, no model."""

    def __init__(self, dim: int = 16) -> None:
        self.dim = dim
        self.calls: Counter[str] = Counter()

    def encode(self, texts: list[str]) -> np.ndarray:
        self.calls.update(texts)
        return np.stack([sum((self._word(w) for w in text.lower().split()), np.zeros(self.dim))
                         for text in texts]).astype(np.float32)

    def _word(self, word: str) -> np.ndarray:
        return np.random.default_rng(zlib.crc32(word.encode())).normal(size=self.dim)


def two_classes(n: int = 40, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Two overlapping Gaussian classes, 2 standard deviations apart along the first axis."""
    rng = np.random.default_rng(seed)
    y = np.arange(n) % 2
    X = rng.normal(size=(n, 3))
    X[:, 0] += 2 * y
    return X, y


# ---- encoding once ---------------------------------------------------------------------------

def test_sentence_embeddings_encode_each_unique_sentence_once_and_keep_order():
    encoder = HashedBagOfWords()
    embeddings = SentenceEmbeddings(encoder, ["b a", "a", "b a", "c", "a"], chunk_size=2, show_progress=False)
    assert set(encoder.calls.values()) == {1} and set(encoder.calls) == {"a", "b a", "c"}
    np.testing.assert_array_equal(embeddings[["c", "a", "c"]], HashedBagOfWords().encode(["c", "a", "c"]))


def test_sentence_embeddings_reject_a_wrongly_shaped_output():
    class Broken:
        def encode(self, texts):
            return np.zeros((len(texts) + 1, 3))

    with pytest.raises(ValueError, match="shape"):
        SentenceEmbeddings(Broken(), ["x"], show_progress=False)


# ---- STS -------------------------------------------------------------------------------------

def test_evaluate_sts_matches_a_direct_computation():
    subsets = load_sts_year(FIXTURES / "STS/STS12-en-test")
    encoder = HashedBagOfWords()
    score = evaluate_sts(encoder, subsets, show_progress=False)

    def cosines(pairs):
        u, v = HashedBagOfWords().encode(pairs.first), HashedBagOfWords().encode(pairs.second)
        return (u * v).sum(1) / np.linalg.norm(u, axis=1) / np.linalg.norm(v, axis=1)

    per_subset = {name: 100 * spearmanr(cosines(p), p.labels).statistic for name, p in subsets.items()}
    pooled = 100 * spearmanr(np.concatenate([cosines(p) for p in subsets.values()]),
                             np.concatenate([p.labels for p in subsets.values()])).statistic
    assert score.subsets == pytest.approx(per_subset, abs=1e-6)
    assert score.all == pytest.approx(pooled, abs=1e-6)
    assert score.mean == pytest.approx(np.mean(list(per_subset.values())), abs=1e-6)
    assert score.pairs == 6 and max(encoder.calls.values()) == 1


# ---- transfer classifiers --------------------------------------------------------------------

def test_heldout_accuracy_equals_a_plain_sklearn_pipeline():
    X, y = two_classes(60)
    train, test = (X[:40], y[:40]), (X[40:], y[40:])
    expected = make_pipeline(StandardScaler(), LogisticRegression(C=0.25, max_iter=MAX_ITER)).fit(*train)
    assert heldout_accuracy(train, test, 0.25) == pytest.approx(100 * expected.score(*test))


def test_cv_protocols_learn_two_overlapping_classes():
    data = two_classes()
    assert select_c_by_cv(data, kfold=3, seed=0) in C_GRID
    accuracy, chosen = nested_cv_accuracy(data, kfold=3, seed=0)
    assert 70.0 <= accuracy < 100.0 and len(chosen) == 3


def test_pair_features_are_absolute_difference_and_product():
    u, v = np.array([[1.0, -2.0]]), np.array([[3.0, 4.0]])
    np.testing.assert_array_equal(pair_features(u, v), [[2.0, 6.0, 3.0, -8.0]])


@pytest.mark.parametrize("loader, files, chosen", [
    (load_binary, ["MR/rt-polarity.pos", "MR/rt-polarity.neg"], 3),  # nested CV: one C per outer fold
    (load_sst2, [f"SST/binary/sentiment-{s}" for s in ("train", "dev", "test")], 1),  # C on dev
    (load_mrpc, ["MRPC/msr_paraphrase_train.txt", "MRPC/msr_paraphrase_test.txt"], 1),  # C by CV on train
])
def test_evaluate_transfer_follows_the_protocol_of_the_splits(loader, files, chosen):
    encoder = HashedBagOfWords()
    score = evaluate_transfer(encoder, loader(*(FIXTURES / f for f in files)), kfold=3, seed=0,
                              show_progress=False)
    assert 0.0 <= score.accuracy <= 100.0 and len(score.chosen_c) == chosen
    assert set(score.chosen_c) <= set(C_GRID) and max(encoder.calls.values()) == 1


# ---- runner and CLI --------------------------------------------------------------------------

@pytest.fixture
def hashed_model(monkeypatch) -> str:
    monkeypatch.setitem(ENCODERS, "hashed", HashedBagOfWords)
    return "hashed"


def test_cli_end_to_end_on_fixtures(hashed_model, tmp_path, capsys):
    out = tmp_path / "results" / "hashed.json"
    assert main(["--model", hashed_model, "--data", str(FIXTURES), "--out", str(out), "--kfold", "3"]) == 0

    record = json.loads(out.read_text(encoding="utf-8"))
    sts, senteval = record["tasks"]["sts"], record["tasks"]["senteval"]
    assert list(sts["rows"]) == ["all", "mean"]
    assert list(sts["rows"]["all"]) == ["STS12", "STS-B", "SICK-R"]
    assert sts["rows"]["all"]["STS-B"] == sts["rows"]["mean"]["STS-B"]
    assert set(sts["missing"]) == {"STS13", "STS14", "STS15", "STS16"}
    assert str(FIXTURES / "STS" / "STS16-en-test") in sts["missing"]["STS16"]
    assert list(senteval["rows"]["accuracy"]) == TRANSFER_COLUMNS and not senteval["missing"]
    assert record["config"]["kfold"] == 3 and record["total_seconds"] > 0

    markdown = out.with_suffix(".md").read_text(encoding="utf-8")
    printed = capsys.readouterr().out
    for text in (markdown, printed):
        assert "| Model | STS12 | STS-B | SICK-R | Avg. |" in text
        assert "| **hashed** (all) |" in text and "| DefSent-BERT-base (CLS) |" in text
        assert "| Model | MR | CR | SUBJ | MPQA | SST-2 | TREC | MRPC | Avg. |" in text


def test_missing_files_are_named_and_skipped_while_the_rest_runs(hashed_model, tmp_path, capsys):
    data = tmp_path / "senteval"
    shutil.copytree(FIXTURES, data)
    for relative in ("MR/rt-polarity.neg", "SST/binary/sentiment-dev", "SST/binary/sentiment-test"):
        (data / relative).unlink()
    assert main(["--model", hashed_model, "--data", str(data), "--tasks", "senteval", "--kfold", "3"]) == 0

    captured = capsys.readouterr()
    assert f"skipping MR: missing {data / 'MR/rt-polarity.neg'}\n" in captured.err
    expected_sst = (f"skipping SST-2: missing {data / 'SST/binary/sentiment-dev'}, "
                    f"{data / 'SST/binary/sentiment-test'}\n")
    assert expected_sst in captured.err
    assert "| Model | CR | SUBJ | MPQA | TREC | MRPC | Avg. |" in captured.out
    assert f"- Skipped MR: missing {data / 'MR/rt-polarity.neg'}" in captured.out


def test_cli_rejects_a_missing_data_folder_and_an_unknown_model_or_task(tmp_path, capsys):
    for argv in (["--model", "glove", "--data", str(tmp_path / "nowhere")],
                 ["--model", "no-such-model", "--data", str(FIXTURES)],
                 ["--model", "glove", "--data", str(FIXTURES), "--tasks", "sts,nope"]):
        with pytest.raises(SystemExit) as exit_info:
            main(argv)
        assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "data folder not found" in err and "unknown model 'no-such-model'" in err and "'sts,nope'" in err


def test_registered_task_runs_through_evaluate(monkeypatch):
    monkeypatch.setitem(TASKS, "constant", TASKS["sts"])  # restore the registry afterwards
    register_task("constant", lambda encoder, config: TaskResult(rows={"score": {"X": 1.0}}))
    results = evaluate(HashedBagOfWords(), EvaluationConfig(FIXTURES, show_progress=False), ["constant"])
    assert results["constant"].rows == {"score": {"X": 1.0}} and results["constant"].seconds >= 0
    with pytest.raises(ValueError, match="unknown task"):
        evaluate(HashedBagOfWords(), EvaluationConfig(FIXTURES), ["nope"])


def test_project_encoders_are_wired_to_the_encoder_and_engine(monkeypatch, tmp_path):
    import core.encoder
    import core.engine

    calls = []

    def fake_from_pretrained(cls, path, pooling):
        calls.append((Path(path).name, pooling))
        return "encoder", None

    def fake_load(cls, path=None, untrained=False, device="auto"):
        calls.append(("engine", path) + (("untrained",) if untrained else ()))
        assert device == "cpu"  # evaluation computes where it is told (--device), the CPU by default
        return "engine"

    monkeypatch.setattr(core.encoder.SentenceEncoder, "from_pretrained", classmethod(fake_from_pretrained))
    monkeypatch.setattr(core.engine.Engine, "load", classmethod(fake_load))
    loaded = [load_encoder(name) for name in ("minilm", "minilm-cls", "minilm-max", "defsent", str(tmp_path))]
    assert loaded + [load_encoder(str(tmp_path), untrained=True)] == ["encoder"] * 3 + ["engine"] * 3
    assert calls == [("model", "mean"), ("model", "cls"), ("model", "max"), ("engine", None),
                     ("engine", str(tmp_path)), ("engine", str(tmp_path), "untrained")]
    with pytest.raises(ValueError, match="untrained applies to Engine checkpoint folders"):
        load_encoder("minilm", untrained=True)


def test_a_plain_hugging_face_folder_is_evaluated_with_the_chosen_pooling(tiny_base_dir, tmp_path, capsys):
    from core.checkpoint import CheckpointError
    from core.encoder import SentenceEncoder

    texts = ["a dog barks", "the cat sleeps on the warm bed"]
    encoders = {pooling: load_encoder(str(tiny_base_dir), pooling=pooling) for pooling in ("mean", "cls")}
    assert all(isinstance(e, SentenceEncoder) for e in encoders.values())
    assert [e.pooling for e in encoders.values()] == ["mean", "cls"]
    mean, cls = (e.encode(texts) for e in encoders.values())
    assert mean.shape == cls.shape == (2, 32) and not np.allclose(mean, cls)
    # the same folder with a manifest is one of this project's checkpoints, not a plain model
    checkpoint = tmp_path / "checkpoint"
    shutil.copytree(tiny_base_dir, checkpoint)
    (checkpoint / "manifest.json").write_text("{}")
    with pytest.raises(CheckpointError, match="unsupported checkpoint format"):
        load_encoder(str(checkpoint))


# ---- real model ------------------------------------------------------------------------------

@pytest.mark.slow
def test_minilm_sts_benchmark_matches_its_published_score(shared_dir):
    from core.evaluation.baselines import load_minilm_sentence_transformer
    from core.evaluation.sts import STS_BENCHMARK_TEST, load_sts_benchmark

    pairs = load_sts_benchmark(shared_dir / "data" / "senteval" / STS_BENCHMARK_TEST)
    score = evaluate_sts(load_minilm_sentence_transformer(), {"test": pairs}, show_progress=False)
    assert score.all == pytest.approx(82.03, abs=0.5)  # the published STS-B test score; measured: 82.03


@pytest.mark.slow
def test_our_mean_pooled_minilm_matches_sentence_transformers():
    texts = ["A man is playing a guitar.", "The cat sleeps on the warm bed.", "Stocks fell sharply today."]
    ours, reference = (load_encoder(name).encode(texts) for name in ("minilm", "minilm-st"))
    np.testing.assert_allclose(paired_cosine(ours, reference), 1.0, atol=1e-5)
