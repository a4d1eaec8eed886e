"""`python -m core`: one entry point dispatching to the commands of core/cli.py."""
import subprocess
import sys
from pathlib import Path

import pytest

from core import Engine
from core.cli import COMMANDS, add_config_flags, config_from_flags, main
from core.dictionary import load_wordnet, split_by_word
from core.train import TrainConfig
from core.word_eval import evaluate_words

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def checkpoint(tiny_mlm_dir, tmp_path_factory) -> Path:
    return Engine.from_base(str(tiny_mlm_dir)).save(tmp_path_factory.mktemp("cli") / "ckpt")


def test_every_documented_command_is_registered():
    assert set(COMMANDS) == {"words", "train", "eval", "word-vectors", "hubness", "dictionary", "wordnet", "gcide",
                             "vec2sent-corpus", "vec2sent-train", "vec2sent-diagnostics"}


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
