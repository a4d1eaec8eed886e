"""The evaluation tasks that need an Engine (words: the word head; vec2sent: a decoder trained on
its encoder) and the CLI's --precision, on a tiny encoder checkpoint and a tiny random decoder."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from core import Engine
from core.lexicon.dictionary import load_wordnet, split_by_word
from core.evaluation import ENCODERS, EvaluationConfig, evaluate
from core.cli import main as cli
from core.evaluation.decoding import DEFAULT_TEST
from core.paths import MODERN_CORPUS_DIR
from core.vec2sent.diagnostics import round_trip_agreement, score_reconstructions
from core.corpus.modern import build_modern_corpus, load_source, write_modern_corpus
from core.words.word_eval import evaluate_words
from tests.test_engine_decode import SENTENCES, write_decoder
from tests.test_evaluation_run import FIXTURES, HashedBagOfWords
from tests.test_vec2sent_corpus_modern import _docs

WORD_COLUMNS = ["MRR", "top-1", "top-3", "top-10"]


def main(argv: list[str]) -> int:
    return cli(["eval", *argv])


@pytest.fixture(scope="module")
def encoder_dir(tiny_mlm_dir, tmp_path_factory) -> Path:
    """checkpoints/encoder, a tiny encoder checkpoint, with checkpoints/vec2sent-tiny decoding it."""
    encoder_dir = Engine.from_base(str(tiny_mlm_dir)).save(tmp_path_factory.mktemp("checkpoints") / "encoder")
    write_decoder(encoder_dir.parent / "vec2sent-tiny", Engine.load(encoder_dir, decoder=None))
    return encoder_dir


@pytest.fixture(scope="module")
def decoder_test(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("corpus") / "test.txt"
    path.write_text("\n".join(SENTENCES) + "\n", encoding="utf-8")
    return path


def config(**overrides) -> EvaluationConfig:
    return EvaluationConfig(FIXTURES, show_progress=False, **overrides)


def test_words_task_reports_word_eval_metrics_on_the_test_split(encoder_dir):
    engine = Engine.load(encoder_dir, decoder=None)
    result = evaluate(engine, config(), ["words"])["words"]
    expected = evaluate_words(engine, split_by_word(load_wordnet(), seed=0).test)
    assert list(result.rows) == ["test"] and list(result.rows["test"]) == WORD_COLUMNS
    assert result.rows["test"]["MRR"] == pytest.approx(100 * expected["mrr"])
    assert result.rows["test"]["top-10"] == pytest.approx(100 * expected["top10"])
    assert result.details["WordNet test"]["definitions"] == expected["n"] > 0 and not result.averaged


def test_vec2sent_task_scores_the_decoder_found_beside_the_checkpoint(encoder_dir, decoder_test):
    engine = Engine.load(encoder_dir)
    result = evaluate(engine, config(decoder_test=decoder_test, decoder_sentences=4), ["vec2sent"])["vec2sent"]
    references = SENTENCES[:4]
    greedy = engine.decoder.decode(engine.encode(references), beam_width=1)
    scores = score_reconstructions(references, greedy)
    assert list(result.rows) == ["greedy", "beam 5", "beam 5, reranked"] and not result.missing
    assert result.rows["greedy"]["BLEU"] == pytest.approx(scores.bleu)
    assert result.rows["greedy"]["Id"] == pytest.approx(scores.identity)
    top_word = lambda texts: [r[0][0] for r in engine.predict_words_batch(texts, k=1, exclude_query_words=False)]
    assert result.rows["greedy"]["top word"] == pytest.approx(round_trip_agreement(references, greedy, top_word))
    assert result.details["Vec2Sent"]["sentences"] == 4


def test_vec2sent_task_defaults_to_the_heldout_set_the_modern_corpus_writes(encoder_dir, tmp_path, monkeypatch):
    import core.evaluation.decoding as decoding

    docs = {"beta": load_source("beta", "technical", _docs("Beta", 100), 0.1, 13, prose=False, leave_out=None)}
    write_modern_corpus(build_modern_corpus(docs, {}, heldout_size=20, seed=13), tmp_path)
    written = tmp_path / DEFAULT_TEST.relative_to(MODERN_CORPUS_DIR)  # the default names a file the corpus writes
    held_out = [json.loads(line)["text"] for line in written.read_text().splitlines()][:4]
    plain = tmp_path / "plain.txt"
    plain.write_text("\n".join(f"  {text} " for text in held_out) + "\n", encoding="utf-8")
    monkeypatch.setattr(decoding, "DEFAULT_TEST", written)
    engine = Engine.load(encoder_dir)
    by_default, from_plain = (evaluate(engine, config(decoder_test=path, decoder_sentences=4), ["vec2sent"])["vec2sent"]
                              for path in (None, plain))
    assert by_default.details["Vec2Sent"] == {"sentences": 4, "file": str(written)}
    assert by_default.rows == from_plain.rows  # JSON lines read by their text; plain lines stripped


def test_engine_tasks_are_skipped_with_a_reason(encoder_dir, decoder_test, tmp_path):
    no_decoder = evaluate(Engine.load(encoder_dir, decoder=None), config(decoder_test=decoder_test), ["vec2sent"])
    assert "no decoder trained on this encoder (fingerprint" in no_decoder["vec2sent"].missing["Vec2Sent"]
    no_file = evaluate(Engine.load(encoder_dir), config(decoder_test=tmp_path / "none.txt"), ["vec2sent"])
    assert f"missing {tmp_path / 'none.txt'}" in no_file["vec2sent"].missing["Vec2Sent"]
    plain = evaluate(HashedBagOfWords(), config(), ["words", "vec2sent"])
    assert "no word head" in plain["words"].missing["WordNet test"]
    assert "not an Engine" in plain["vec2sent"].missing["Vec2Sent"]
    assert not plain["words"].rows and not plain["vec2sent"].rows


def test_cli_reports_words_and_vec2sent_without_an_average_column(encoder_dir, decoder_test, tmp_path, capsys):
    out = tmp_path / "tiny.json"
    argv = ["--model", str(encoder_dir), "--data", str(FIXTURES), "--tasks", "words,vec2sent", "--out", str(out),
            "--decoder-test", str(decoder_test), "--decoder-sentences", "3", "--precision", "bfloat16"]
    assert main(argv) == 0
    record = json.loads(out.read_text(encoding="utf-8"))
    assert list(record["tasks"]) == ["words", "vec2sent"]
    assert list(record["tasks"]["words"]["rows"]["test"]) == WORD_COLUMNS
    assert record["tasks"]["vec2sent"]["details"]["Vec2Sent"]["sentences"] == 3
    markdown = out.with_suffix(".md").read_text(encoding="utf-8")
    assert "| Model | MRR | top-1 | top-3 | top-10 |" in capsys.readouterr().out
    assert "| Model | MRR | top-1 | top-3 | top-10 |" in markdown and "| DefSent-BERT-base (CLS) | 32.00 |" in markdown
    assert "| **encoder** (greedy) |" in markdown and "Avg." not in markdown.split("## vec2sent")[1]


def test_cli_refuses_a_precision_for_a_baseline(monkeypatch, capsys):
    monkeypatch.setitem(ENCODERS, "hashed", HashedBagOfWords)
    with pytest.raises(SystemExit) as exit_info:
        main(["--model", "hashed", "--data", str(FIXTURES), "--precision", "int8"])
    assert exit_info.value.code == 2
    assert "precision 'int8' applies to this project's encoders, not to 'hashed'" in capsys.readouterr().err
