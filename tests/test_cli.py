import pytest

from core import Engine
from core.dictionary import load_wordnet, split_by_word
from core.word_eval import evaluate_words, main


def test_cli_prints_the_model_and_the_untrained_base_at_the_precision_asked(tiny_mlm_dir, tmp_path, capsys):
    path = Engine.from_base(str(tiny_mlm_dir)).save(tmp_path / "ckpt")
    assert main(["--model", str(path), "--split", "dev", "--precision", "bfloat16"]) == 0
    lines = capsys.readouterr().out.splitlines()
    engine = Engine.load(path, decoder=None, precision="bfloat16")
    expected = evaluate_words(engine, split_by_word(load_wordnet(), seed=0).dev)
    model_row = next(line for line in lines if line.startswith(f"| {engine.manifest.get('name', 'model')} |"))
    assert f"| {expected['n']} | {expected['mrr']:.4f} | {expected['top1']:.4f} |" in model_row
    assert any(line.startswith("| untrained base (same head) |") for line in lines)


@pytest.mark.parametrize("module", ["core.hubness", "core.word_vectors"])
def test_writing_cli_refuses_to_write_without_a_model_before_any_work(module, capsys):
    import importlib
    with pytest.raises(SystemExit):
        importlib.import_module(module).main(["--write"])
    assert "--write needs an explicit --model" in capsys.readouterr().err
