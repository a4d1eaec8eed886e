"""`python -m core`: one entry point dispatching to the commands of core/cli/."""
import subprocess
import sys
from pathlib import Path

import pytest

from core import Engine
from core.cli import COMMANDS, main
from core.cli.flags import add_config_flags, config_from_flags
from core.lexicon.dictionary import load_wordnet, split_by_word
from core.train import TrainConfig
from core.words.word_eval import evaluate_words

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def checkpoint(tiny_mlm_dir, tmp_path_factory) -> Path:
    return Engine.from_base(str(tiny_mlm_dir)).save(tmp_path_factory.mktemp("cli") / "ckpt")


def test_every_documented_command_is_registered():
    assert set(COMMANDS) == {"words", "train", "eval", "eval-reverse", "word-vectors", "hubness", "dictionary",
                             "wordnet", "gcide", "vec2sent-corpus", "vec2sent-train", "vec2sent-diagnostics",
                             "corpus-index", "vocabulary-map", "everyday-adapter"}


def test_eval_reverse_scores_the_paper_definitions_with_each_filter(checkpoint, tmp_path, capsys):
    import json

    out = tmp_path / "reverse.json"
    assert main(["eval-reverse", "--model", str(checkpoint), "--single-token-words", "--sets", "defsent-table6",
                 "--out", str(out)]) == 0
    results = json.loads(out.read_text())["results"]["defsent-table6"]
    assert set(results) == {"none", "initial", "initial+length"}
    assert all(r["n"] == 12 for r in results.values())
    assert results["initial+length"]["mrr"] >= results["none"]["mrr"]  # a filter can only lift the word
    assert "defsent-table6" in capsys.readouterr().out


def test_a_description_is_the_reverse_dictionary_and_a_command_name_runs_the_command(checkpoint, capsys):
    assert main(["a small animal", "-k", "3", "--model", str(checkpoint)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "a small animal" and [line.split()[0] for line in out[1:]] == ["1.", "2.", "3."]
    assert main(["words", "a small animal", "-k", "2", "--model", str(checkpoint)]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 3
    assert main(["--help"]) == 0 and "vec2sent-diagnostics" in capsys.readouterr().out


def test_python_dash_m_core_runs_in_a_fresh_process():
    done = subprocess.run([sys.executable, "-m", "core", "dictionary", "--help"], cwd=REPO, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0 and "python -m core dictionary" in done.stdout


def test_config_flags_come_from_the_dataclass():
    import argparse
    parser = argparse.ArgumentParser()
    add_config_flags(parser, TrainConfig)
    config = config_from_flags(TrainConfig, parser.parse_args(["--lr", "1e-3", "--word-vector-objective"]))
    assert (config.lr, config.word_vector_objective, config.batch_size) == (1e-3, True, TrainConfig.batch_size)


def test_eval_words_scores_the_model_or_its_untrained_base_on_the_split_asked(checkpoint, capsys):
    dev = split_by_word(load_wordnet(), seed=0).dev
    for extra, engine in (([], Engine.load(checkpoint, decoder=None, precision="bfloat16")),
                          (["--untrained"], Engine.load(checkpoint, decoder=None, untrained=True, precision="bfloat16"))):
        assert main(["eval", "--model", str(checkpoint), "--tasks", "words", "--words-split", "dev",
                     "--precision", "bfloat16", *extra]) == 0
        out = capsys.readouterr().out
        expected = evaluate_words(engine, dev)
        assert f"| {100 * expected['mrr']:.2f} | {100 * expected['top1']:.2f} |" in out
        assert f"{expected['n']:,} dev definitions" in out
    assert "(untrained base)" in out


@pytest.mark.parametrize("command", ["hubness", "word-vectors"])
def test_writing_commands_refuse_to_write_without_a_model_before_any_work(command, capsys):
    with pytest.raises(SystemExit):
        main([command, "--write"])
    assert "--write needs an explicit --model" in capsys.readouterr().err


# ---- train: the open vocabulary's fit at the end ---------------------------------------------------

OPEN_WORDS = {"dog": "a small animal that people keep", "cat": "a small animal that eats mice",
              "king": "the man in charge of the city", "queen": "the woman in charge of the city",
              "river": "water that runs to the sea", "bread": "food made of flour", "wine": "a red drink",
              "car": "a thing to drive on a road", "teacher": "a person who helps a child learn",
              "song": "music with words", "tree": "a large plant with wood", "house": "a place to live in",
              "doctor": "a person who helps the sick", "book": "a thing to read", "city": "a large town",
              "mountain": "a very high hill", "pizza": "food from italy", "boy": "a young man",
              "girl": "a young woman", "road": "a way for cars", "fire": "the heat and light of burning"}
OPEN_PHRASES = {"ice cream": "a cold sweet food", "red tape": "rules that delay things",
                "give up": "to stop trying", "fire truck": "a car that carries water to a fire"}


@pytest.fixture(scope="module")
def open_vocab_data(tmp_path_factory) -> dict[str, Path]:
    """A user dictionary, its candidates as a synsets file (words and phrases) and a tiny GCIDE."""
    import gzip
    import json

    from tests.test_gcide import write_dictd

    folder = tmp_path_factory.mktemp("open_vocab")
    dictionary = folder / "dict.tsv"
    dictionary.write_text("\n".join(["word\tdefinition"] + [f"{w}\t{d}" for w, d in OPEN_WORDS.items()]
                                    + [f"{w}\t{d}, again" for w, d in OPEN_WORDS.items()]) + "\n", encoding="utf-8")
    lemmas = folder / "synsets.jsonl.gz"
    with gzip.open(lemmas, "wt", encoding="utf-8") as out:
        for i, (word, definition) in enumerate({**OPEN_WORDS, **OPEN_PHRASES}.items()):
            out.write(json.dumps({"synset": f"{i:08d}-n", "pos": "n", "lemmas": [word], "definition": definition}) + "\n")
    gcide = folder / "dictd"
    gcide.mkdir()
    write_dictd(gcide, {w.capitalize(): f"{w.capitalize()} \\{w.capitalize()}\\, n.\n   Something like {d}.\n"
                                          f"   [1913 Webster]\n" for w, d in OPEN_WORDS.items()})
    return {"dictionary": dictionary, "lemmas": lemmas, "gcide": gcide}


def _train_args(tiny_base_dir, data, out: Path, *extra: str) -> list[str]:
    return ["train", "--out", str(out), "--base", str(tiny_base_dir), "--dictionary", str(data["dictionary"]),
            "--max-steps", "2", "--batch-size", "4", "--eval-every", "2", "--head-epochs", "1",
            "--senteval", str(out.parent / "absent"), "--open-vocab-lemmas", str(data["lemmas"]),
            "--open-vocab-gcide", str(data["gcide"]), *extra]


def test_train_ends_with_the_open_vocabulary_fit_and_stores_it(tiny_base_dir, open_vocab_data, tmp_path, capsys):
    import json

    out = tmp_path / "ckpt"
    assert main(_train_args(tiny_base_dir, open_vocab_data, out, "--open-vocab-word-scales", "1", "30",
                            "--open-vocab-head-weights", "0.5", "--open-vocab-biases", "0", "2",
                            "--open-vocab-definition-weights", "0", "5")) == 0
    printed = capsys.readouterr().out
    assert "word tower step 1/1" in printed and "gcide-dev definition weight 5.0" in printed  # progress
    manifest = json.loads((out / "manifest.json").read_text())
    chosen = manifest["open_vocab"]
    assert chosen["word_tower"] == "open_vocab_tower.safetensors" and (out / chosen["word_tower"]).is_file()
    assert "word_map" not in chosen
    assert chosen["word_scale"] in (1, 30) and chosen["head_weight"] == 0.5
    assert chosen["multi_bias"] in (0, 2) and chosen["definition_weight"] in (0, 5)
    assert set(manifest["metrics"]["open_vocab"]) == {"wordnet-dev", "wordnet-test", "gcide-dev", "gcide-test",
                                                      "wordnet-dev, definition channel off",
                                                      "wordnet-test, definition channel off"}
    assert manifest["training"]["open_vocab"]["grid"]["word_scales"] == [1, 30]
    engine = Engine.load(out, decoder=None)
    assert engine.words.tower and engine.words.config.word_scale == chosen["word_scale"]


def test_training_from_a_checkpoint_without_the_fit_drops_its_word_tower_and_weights(
        tiny_base_dir, open_vocab_data, tmp_path):
    import json

    first = tmp_path / "first"
    assert main(_train_args(tiny_base_dir, open_vocab_data, first)) == 0
    assert "word_tower" in json.loads((first / "manifest.json").read_text())["open_vocab"]
    again = tmp_path / "again"  # the encoder trains on: the tower fitted to the old one must not follow
    assert main(_train_args(tiny_base_dir, open_vocab_data, again, "--init", str(first), "--no-open-vocab")) == 0
    assert "word_tower" not in json.loads((again / "manifest.json").read_text())["open_vocab"]
    assert not Engine.load(again, decoder=None).words.tower


def test_train_no_open_vocab_skips_the_fit_and_a_missing_gcide_fails_before_training(
        tiny_base_dir, open_vocab_data, tmp_path, capsys):
    import json

    out = tmp_path / "ckpt"
    assert main(_train_args(tiny_base_dir, open_vocab_data, out, "--no-open-vocab")) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert "word_tower" not in manifest["open_vocab"] and not (out / "open_vocab_tower.safetensors").exists()
    assert "open_vocab" not in manifest["metrics"] and manifest["training"]["open_vocab"] is None
    assert "word tower step" not in capsys.readouterr().out
    never = tmp_path / "never"
    with pytest.raises(SystemExit):
        main(_train_args(tiny_base_dir, open_vocab_data, never, "--open-vocab-gcide", str(tmp_path / "no-gcide")))
    assert "scripts/fetch_gcide.sh" in capsys.readouterr().err and not never.exists()
