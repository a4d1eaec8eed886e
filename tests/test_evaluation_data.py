"""Evaluation suite, no encoder needed: score helpers, file loaders, reference numbers, GloVe averaging.

Loaders run on tests/fixtures/senteval: tiny hand-made files in SentEval's layout and encodings.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import spearmanr
from sklearn.metrics import accuracy_score
from sklearn.metrics.pairwise import cosine_similarity

from core.evaluation import MissingDataError, accuracy_percent, paired_cosine, spearman_x100
from core.evaluation.baselines import GloveAverageEncoder, glove_tokens
from core.evaluation.files import load_files, read_lines, read_tsv
from core.evaluation.reference import REFERENCE_TABLES, ReferenceTable
from core.evaluation.senteval import load_binary, load_mrpc, load_sst2, load_trec
from core.evaluation.sts import load_sick_relatedness, load_sts_benchmark, load_sts_year

FIXTURES = Path(__file__).parent / "fixtures" / "senteval"


# ---- score helpers ---------------------------------------------------------------------------

def test_paired_cosine_matches_sklearn_and_is_zero_for_zero_vectors():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(6, 5)), rng.normal(size=(6, 5))
    np.testing.assert_allclose(paired_cosine(a, b), np.diag(cosine_similarity(a, b)), rtol=1e-12)
    a[2] = 0.0
    assert paired_cosine(a, b)[2] == 0.0


def test_spearman_x100_matches_scipy_with_ties():
    predicted = np.array([0.1, 0.4, 0.4, 0.9, -0.2, 0.3])
    gold = np.array([1.0, 3.0, 2.5, 5.0, 0.0, 3.0])
    assert spearman_x100(predicted, gold) == pytest.approx(100 * spearmanr(predicted, gold).statistic)


def test_accuracy_percent_matches_sklearn():
    gold, predicted = np.array(["a", "b", "b", "c", "a"]), np.array(["a", "b", "c", "c", "b"])
    assert accuracy_percent(gold, predicted) == pytest.approx(100 * accuracy_score(gold, predicted))
    with pytest.raises(ValueError):
        accuracy_percent(gold, predicted[:3])


# ---- file reading ----------------------------------------------------------------------------

def test_read_lines_handles_bom_crlf_latin1_and_keeps_byte_0x85_inside_a_line(tmp_path):
    path = tmp_path / "mixed.txt"
    path.write_bytes("caf\xe9 \x85 ok\r\nsecond\r\n".encode("latin-1"))
    assert read_lines(path) == ["caf\xe9 \x85 ok", "second"]
    path.write_bytes("\ufeffh\u00e9llo\n\nlast".encode("utf-8"))
    assert read_lines(path) == ["h\u00e9llo", "", "last"]


def test_read_tsv_names_file_and_line_of_a_short_row(tmp_path):
    path = tmp_path / "short.tsv"
    path.write_text("a\tb\tc\nonly\tb\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"short\.tsv:2"):
        read_tsv(path, columns=3)


def test_load_files_names_every_missing_file(tmp_path):
    with pytest.raises(MissingDataError) as error:
        load_files("X", tmp_path, ["a.txt", "sub/b.txt"], lambda *paths: paths)
    assert error.value.paths == [tmp_path / "a.txt", tmp_path / "sub" / "b.txt"]
    assert str(error.value) == f"X: missing {tmp_path / 'a.txt'}, {tmp_path / 'sub' / 'b.txt'}"


# ---- STS loaders -----------------------------------------------------------------------------

def test_sts_benchmark_reads_seven_columns_without_csv_quoting():
    pairs = load_sts_benchmark(FIXTURES / "STS/STSBenchmark/sts-test.csv")
    assert len(pairs.first) == len(pairs.second) == 5
    assert pairs.first[2] == 'The "new" law takes effect.'
    assert (pairs.first[3], pairs.second[3]) == ("It depends on the school.", "The weather is nice.")
    np.testing.assert_allclose(pairs.labels, [5.0, 0.5, 3.2, 1.0, 4.2])


def test_sick_relatedness_skips_header_and_crlf():
    pairs = load_sick_relatedness(FIXTURES / "SICK/SICK_test_annotated.txt")
    assert pairs.first[0] == "A boy is playing outdoors" and pairs.second[3] == "Nobody is singing"
    np.testing.assert_allclose(pairs.labels, [4.5, 1.2, 4.1, 2.8])


def test_sts_year_skips_empty_gold_lines_and_reads_latin1():
    subsets = load_sts_year(FIXTURES / "STS/STS12-en-test")
    assert set(subsets) == {"MSRvid", "headlines"}
    msrvid = subsets["MSRvid"]
    assert msrvid.first == ["A man is playing a flute.", "A woman is dancing.", "A boy rides a bike."]
    np.testing.assert_allclose(msrvid.labels, [4.8, 0.2, 4.0])
    assert subsets["headlines"].first[0] == "Pel\u00e9 visits Rio."


def test_sts_year_names_a_missing_gold_file_and_a_missing_folder(tmp_path):
    folder = tmp_path / "STS13-en-test"
    shutil.copytree(FIXTURES / "STS/STS12-en-test", folder)
    (folder / "STS.gs.headlines.txt").unlink()
    with pytest.raises(MissingDataError, match="STS13: missing .*STS.gs.headlines.txt"):
        load_sts_year(folder, "STS13")
    with pytest.raises(MissingDataError, match="STS14: missing .*STS14-en-test$"):
        load_sts_year(tmp_path / "STS14-en-test", "STS14")


# ---- transfer-task loaders -------------------------------------------------------------------

def test_binary_loader_reads_latin1_mr_with_byte_0x85():
    data = load_binary(FIXTURES / "MR/rt-polarity.pos", FIXTURES / "MR/rt-polarity.neg")["all"]
    assert len(data.texts) == 12 and data.labels.tolist() == [1] * 6 + [0] * 6
    assert data.texts[2] == "an intelligent caf\u00e9 comedy \x85 with heart ."


def test_sst2_loader_has_three_labelled_splits():
    splits = load_sst2(*(FIXTURES / f"SST/binary/sentiment-{name}" for name in ("train", "dev", "test")))
    assert {name: len(split.texts) for name, split in splits.items()} == {"train": 8, "dev": 4, "test": 4}
    assert splits["train"].texts[0] == "a stirring , funny and moving film"
    assert splits["test"].labels.tolist() == [1, 1, 0, 0]


def test_trec_loader_keeps_coarse_labels_of_latin1_file():
    splits = load_trec(FIXTURES / "TREC/train_5500.label", FIXTURES / "TREC/TREC_10.label")
    assert sorted(set(splits["train"].labels)) == ["HUM", "LOC", "NUM"]
    assert splits["train"].texts[2] == "Who is Pel\u00e9 ?"
    assert splits["test"].texts[0] == "Who painted the Mona Lisa ?"


def test_mrpc_loader_handles_bom_header_and_crlf():
    splits = load_mrpc(FIXTURES / "MRPC/msr_paraphrase_train.txt", FIXTURES / "MRPC/msr_paraphrase_test.txt")
    train = splits["train"]
    assert train.labels.tolist() == [1, 1, 1, 0, 0, 0]
    assert train.first[2] == 'The "big" storm hit the coast.' and train.second[0] == "Profits rose, the company said."
    assert splits["test"].second[1] == "The bank raised rates."


# ---- reference numbers -----------------------------------------------------------------------

# The averages as printed in the papers: a typo in a typed-in score shows up here. One exception:
# both papers print 74.89 for SBERT-NLI-base on STS, but its printed scores average to 74.86.
PRINTED_AVERAGES = {
    "sts": {"Avg. GloVe embeddings": 61.32, "Avg. BERT embeddings": 54.81, "BERT CLS-vector": 29.19,
            "InferSent - GloVe": 65.01, "Universal Sentence Encoder": 71.22, "SBERT-NLI-base": 74.86,
            "SBERT-NLI-large": 76.55, "SRoBERTa-NLI-base": 74.21, "SRoBERTa-NLI-large": 76.68,
            "DefSent-BERT-base (CLS)": 74.14, "DefSent-BERT-large (CLS)": 74.61,
            "DefSent-RoBERTa-base (CLS)": 75.62, "DefSent-RoBERTa-large (Mean)": 72.36},
    "senteval": {"Avg. GloVe embeddings": 81.52, "Avg. fastText embeddings": 82.42,
                 "Avg. BERT embeddings": 84.94, "BERT CLS-vector": 84.66, "InferSent - GloVe": 85.59,
                 "Universal Sentence Encoder": 85.10, "SBERT-NLI-base": 87.41, "SBERT-NLI-large": 87.69,
                 "DefSent-BERT-base (CLS)": 86.06, "DefSent-BERT-large (CLS)": 88.20,
                 "DefSent-RoBERTa-base (CLS)": 87.80, "DefSent-RoBERTa-large (Mean)": 88.74},
}


@pytest.mark.parametrize("task", sorted(PRINTED_AVERAGES))
def test_reference_rows_average_to_the_printed_averages(task):
    table = REFERENCE_TABLES[task]
    assert set(table.rows) == set(PRINTED_AVERAGES[task])
    for name, scores in table.rows.items():
        assert np.mean(scores) == pytest.approx(PRINTED_AVERAGES[task][name], abs=0.011), name


def test_reference_table_rejects_a_row_of_the_wrong_length():
    with pytest.raises(ValueError, match="row 'x'"):
        ReferenceTable("t", "s", ("A", "B"), {"x": (1.0,)})


# ---- GloVe averaging -------------------------------------------------------------------------

def test_glove_tokens_follow_ptb_style():
    assert glove_tokens("Don't you think it's 3.5% \"GOOD\"?") == [
        "do", "n't", "you", "think", "it", "'s", "3.5", "%", '"', "good", '"', "?"]


def test_glove_average_skips_oov_and_gives_zero_for_all_oov():
    vectors = np.array([[1.0, 0.0], [0.0, 2.0], [4.0, 4.0]], dtype=np.float32)
    encoder = GloveAverageEncoder(vectors, ["the", "cat", "sat"])
    out = encoder.encode(["The cat zzz", "qqq xxx", "sat"])
    assert out.dtype == np.float32 and out.shape == (3, 2)
    np.testing.assert_allclose(out, [[0.5, 1.0], [0.0, 0.0], [4.0, 4.0]])
