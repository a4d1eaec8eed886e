"""`python -m core`: one entry point dispatching to the commands of core/cli/."""
import subprocess
import sys
from pathlib import Path

import numpy as np
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
    assert set(COMMANDS) == {"words", "encode", "similarity", "search", "decode", "analogy", "interpolate", "train", "eval", "eval-reverse", "word-vectors", "hubness", "dictionary",
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
    assert main(["words", "a small animal", "-k", "2", "--threads", "1", "--model", str(checkpoint)]) == 0
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


@pytest.mark.parametrize("command", ["hubness", "word-vectors", "everyday-adapter"])
def test_writing_commands_refuse_to_write_without_a_model_before_any_work(command, capsys):
    with pytest.raises(SystemExit):
        main([command, "--write"])
    assert "--write needs an explicit --model" in capsys.readouterr().err


def test_the_everyday_adapter_never_writes_into_the_shipped_checkpoint_by_default(capsys):
    with pytest.raises(SystemExit):
        main(["everyday-adapter", "--steps", "3"])  # --write is its default: the model must be named
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


# ---- the commands on texts and vectors (core/cli/vectors.py) ----------------------------------------

def test_encode_writes_float32_rows_from_arguments_a_file_or_standard_input(checkpoint, tmp_path, capsys, monkeypatch):
    import io
    import json

    import numpy as np

    texts = ["a small dog", "the king of the city", "red wine"]
    expected = Engine.load(checkpoint, decoder=None).encode(texts)
    out = tmp_path / "v.npy"
    assert main(["encode", *texts, "--out", str(out), "--model", str(checkpoint)]) == 0
    written = np.load(out)
    assert written.dtype == np.float32 and written.shape == expected.shape
    np.testing.assert_allclose(written, expected, atol=1e-5)
    lines = tmp_path / "texts.txt"
    lines.write_text("a small dog\n\nthe king of the city\n", encoding="utf-8")
    monkeypatch.setattr("sys.stdin", io.StringIO("red wine\n"))
    jsonl = tmp_path / "v.jsonl"
    assert main(["encode", "--file", str(lines), "--out", str(jsonl), "--model", str(checkpoint), "--json"]) == 0
    assert json.loads(capsys.readouterr().out.splitlines()[-1])["rows"] == 2  # the file's two texts; stdin unread
    rows = [json.loads(line) for line in jsonl.read_text().splitlines()]
    assert [r["text"] for r in rows] == texts[:2]
    np.testing.assert_allclose(np.array([r["vector"] for r in rows]), expected[:2], atol=1e-5)
    piped = tmp_path / "piped.npy"
    assert main(["encode", "--out", str(piped), "--model", str(checkpoint)]) == 0  # stdin, as `... < file` does
    np.testing.assert_allclose(np.load(piped), expected[2:], atol=1e-5)


def test_similarity_and_search_answer_as_the_engine_does(checkpoint, tmp_path, capsys):
    import json

    engine = Engine.load(checkpoint, decoder=None)
    assert main(["similarity", "a small dog", "a small cat", "red wine", "--json", "--model", str(checkpoint)]) == 0
    cosines = [r["cosine"] for r in json.loads(capsys.readouterr().out)["similar"]]
    np.testing.assert_allclose(cosines, engine.similarity(["a small dog"], ["a small cat", "red wine"])[0], atol=1e-5)
    collection = ["a dog and a cat", "the king and the queen", "red wine", "a large city", "music and song"]
    (tmp_path / "c.txt").write_text("\n".join(collection), encoding="utf-8")
    vectors = tmp_path / "c.jsonl"
    assert main(["encode", "--file", str(tmp_path / "c.txt"), "--out", str(vectors), "--model", str(checkpoint)]) == 0
    capsys.readouterr()
    expected = engine.semantic_search(engine.encode(["the queen"]), engine.encode(collection), top_k=3)[0]
    for source in ("c.txt", "c.jsonl"):  # texts encoded now, or the vectors `encode` wrote
        assert main(["search", "the queen", "--in", str(tmp_path / source), "-k", "3", "--json",
                     "--model", str(checkpoint)]) == 0
        hits = json.loads(capsys.readouterr().out)[0]["hits"]
        assert [h["text"] for h in hits] == [collection[h["corpus_id"]] for h in expected]


def test_decode_analogy_and_interpolate_read_vectors_back(checkpoint, tmp_path, capsys):
    import json
    import shutil

    from tests.test_engine_decode import write_decoder

    folder = tmp_path / "checkpoints"
    model = Path(shutil.copytree(checkpoint, folder / "encoder"))
    engine = Engine.load(model, decoder=None)
    write_decoder(folder / "vec2sent-tiny", engine)
    vectors = tmp_path / "v.npy"
    assert main(["encode", "the dog is happy", "a red car", "--out", str(vectors), "--model", str(model)]) == 0
    capsys.readouterr()
    assert main(["decode", str(vectors), "--json", "--model", str(model)]) == 0
    decoded = [r["sentence"] for r in json.loads(capsys.readouterr().out)]
    assert decoded == Engine.load(model).decode(np.load(vectors), beam=5)
    reference = tmp_path / "reference.txt"
    reference.write_text("a dog and a cat\nthe king and the queen\nred wine\n", encoding="utf-8")
    assert main(["analogy", "a man", "a king", "a woman", "--in", str(reference), "-k", "2", "--json",
                 "--model", str(model)]) == 0
    reading = json.loads(capsys.readouterr().out)
    assert reading["expression"] == "b - a + c" and isinstance(reading["sentence"], str)
    assert 0 < reading["sentence_fit"] <= 1 + 1e-6
    assert main(["analogy", "a red car", "--expression", "a", "--model", str(model)]) == 0  # decodes one text
    assert "(its sentence fits it " in capsys.readouterr().out
    assert len(reading["words"]) == 2 and {n["text"] for n in reading["nearest"]} <= set(reference.read_text().split("\n"))
    assert main(["interpolate", "a happy child", "a sad man", "--steps", "3", "--in", str(reference),
                 "--model", str(model), "--json"]) == 0
    assert [p["alpha"] for p in json.loads(capsys.readouterr().out)] == [0.0, 0.5, 1.0]


@pytest.mark.parametrize("argv, message", [
    (["encode", "a text", "--out", "v.txt"], "--out must end in .npy or .jsonl"),
    (["encode", "--out", "v.npy", "--file", "/no/such/file"], "cannot read /no/such/file"),
    (["similarity", "only one"], "at least 2 texts"),
    (["search", "q", "--in", "c.txt", "-k", "0"], "-k must be from 1 to 100"),
    (["interpolate", "a", "b", "--steps", "500"], "--steps must be from 2 to 50"),
    (["decode", "v.csv"], "vectors are read from .npy or .jsonl"),
    (["words", "a dog", "-k", "1000"], "-k must be from 1 to 100"),
    (["words", "a dog", "--threads", "-1"], "--threads must be from 0 to 1024"),
    (["encod", "a sentence to embed"], "did you mean `python -m core encode`"),
    (["simlarity", "a", "b"], "did you mean `python -m core similarity`"),
    # every command, not only those on texts: a missing file, a bad value, a number out of bounds
    (["dictionary", "/no/such.jsonl.gz"], "/no/such.jsonl.gz: No such file or directory"),
    (["gcide", "--dictd-dir", "/no/such", "--out", "g.jsonl.gz"], "/no/such/gcide.dict.dz: No such file"),
    (["wordnet", "--wordnet-dir", "/no/such", "--out", "w.jsonl.gz"], "/no/such/data.noun: No such file"),
    (["word-vectors", "--model", "/no/such"], "no checkpoint at /no/such"),
    (["train", "--out", "t", "--no-open-vocab", "--precision", "fp16"], "precision must be one of"),
    (["train", "--out", "t", "--no-open-vocab", "--batch-size", "0"], "batch_size must be at least 1, not 0"),
    (["vec2sent-train", "--encoder", "e", "--out", "o", "--minutes", "0"], "minutes must be above 0"),
    (["vec2sent-corpus", "--styles-from", "/no/such", "--out", "s"], "--styles-from: no corpus folder at /no/such"),
    (["vec2sent-corpus", "--modern", "--heldout-size", "0", "--out", "m"], "--heldout-size must be from 1 to"),
    (["vec2sent-diagnostics", "--encoder", "e", "--decoder", "d", "--test", "t.txt", "--limit", "0"],
     "--limit must be from 1 to"),
    (["vec2sent-diagnostics", "--encoder", "e", "--decoder", "d", "--test", "t.txt", "--beams", "5", "500"],
     "--beams must be from 1 to 20, not 500"),
    (["vec2sent-diagnostics", "--encoder", "e", "--decoder", "d", "--test", "t.txt", "--correct", "50"],
     "correction rounds must be 0-8"),
    (["vec2sent-diagnostics", "--encoder", "e", "--decoder", "d", "--test", "t.txt"], "--test: no file t.txt"),
    (["corpus-index", "--batch-size", "5000"], "--batch-size must be from 0 to 4096, not 5000"),
])
def test_bad_input_is_one_clear_line_and_nothing_is_written(argv, message, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []


def test_decode_refuses_vectors_of_another_width_and_a_model_without_a_decoder(checkpoint, tmp_path, capsys):
    np.save(tmp_path / "wide.npy", np.zeros((2, 7), dtype=np.float32))
    assert main(["decode", str(tmp_path / "wide.npy"), "--model", str(checkpoint)]) == 2
    assert "this model's are (n, 32)" in capsys.readouterr().err
    np.save(tmp_path / "v.npy", np.ones((1, 32), dtype=np.float32))
    assert main(["decode", str(tmp_path / "v.npy"), "--model", str(checkpoint)]) == 2
    assert "no Vec2Sent decoder" in capsys.readouterr().err


def test_a_one_word_description_or_a_sentence_is_still_looked_up(checkpoint, capsys):
    assert main(["dog", "--model", str(checkpoint), "-k", "2"]) == 0  # one word alone: a description
    assert capsys.readouterr().out.splitlines()[0] == "dog"
    assert main(["encoding a sentence", "--model", str(checkpoint), "-k", "2"]) == 0  # not one word
    assert capsys.readouterr().out.splitlines()[0] == "encoding a sentence"


def test_words_leaves_the_descriptions_words_out_by_default_as_the_app_and_the_api_do(checkpoint, capsys):
    import json

    from app.shared.services import WordQuery

    engine = Engine.load(checkpoint, decoder=None)
    engine.words.set_precision("float32")  # as the command scores (int8 ranks alike, but a random model's near-ties flip)
    text = "dog king cat"
    api = engine.predict_words(text, k=20)
    assert WordQuery(text).exclude_query_words and not {"dog", "king", "cat"} & {w for w, _ in api}
    assert main(["words", text, "-k", "20", "--json", "--model", str(checkpoint)]) == 0
    cli = json.loads(capsys.readouterr().out)[0]["words"]
    assert [w["word"] for w in cli] == [w for w, _ in api]
    assert cli[0]["score"] == 100 and all(0 <= w["score"] <= 100 for w in cli)  # readable: the first = 100
    assert main(["words", text, "-k", "20", "--no-exclude-query-words", "--model", str(checkpoint)]) == 0
    kept = [line.split()[1] for line in capsys.readouterr().out.splitlines()[1:]]
    assert kept == [w for w, _ in engine.predict_words(text, k=20, exclude_query_words=False)]


def test_help_imports_no_torch():
    done = subprocess.run([sys.executable, "-c", "import sys; from core.cli import main; main(['--help']); "
                           "print('torch' in sys.modules)"], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip().endswith("False")


def test_input_files_are_checked_before_a_model_loads(monkeypatch, tmp_path, capsys):
    import core.cli.vectors as vectors

    monkeypatch.setattr(vectors, "_load", lambda *a, **k: pytest.fail("the model loaded before the input was checked"))
    assert main(["decode", str(tmp_path / "absent.npy")]) == 2
    assert f"no file {tmp_path / 'absent.npy'}" in capsys.readouterr().err
    assert main(["search", "a query", "--in", str(tmp_path / "absent.txt")]) == 2
    assert "--in: no file" in capsys.readouterr().err


def test_eval_reverse_refuses_an_unknown_set_before_loading_anything(monkeypatch, capsys):
    import core.engine

    monkeypatch.setattr(core.engine.Engine, "load", lambda *a, **k: pytest.fail("loaded before --sets was checked"))
    with pytest.raises(SystemExit):
        main(["eval-reverse", "--sets", "human-dve"])
    assert "invalid choice: 'human-dve'" in capsys.readouterr().err


def test_eval_reverse_set_names_are_the_ones_its_sets_carry(checkpoint):
    from core.evaluation.reverse import SET_NAMES, reverse_query_sets

    assert set(reverse_query_sets(Engine.load(checkpoint, decoder=None), norms=None)) <= set(SET_NAMES)


class _Terminal:
    def isatty(self) -> bool:
        return True


def test_no_arguments_at_a_terminal_lists_the_commands_and_version_answers(capsys):
    assert main([], stdin=_Terminal()) == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: python -m core COMMAND") and all(name in err for name in COMMANDS)
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.startswith("defsent-studio ")


def test_every_command_is_summed_up_in_one_whole_line():
    for name, function in COMMANDS.items():
        first = (function.__doc__ or "").strip().splitlines()[0]
        assert first.endswith("."), (name, first)


def test_help_shows_defaults_and_field_comments_and_no_path_of_this_machine(capsys):
    for name in COMMANDS:
        with pytest.raises(SystemExit):
            main([name, "--help"])
        out = capsys.readouterr().out
        assert str(REPO) not in out and str(REPO.parent) + "/" not in out, name
    with pytest.raises(SystemExit):
        main(["train", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "--lr LR AdamW's learning rate (default: 5e-05)" in out
    assert "--data" not in out and "(default: ../shared/data/senteval)" in out  # --senteval's, relative


def test_every_argument_of_every_command_says_what_it_is(monkeypatch):
    import argparse

    parsers = []

    def keep(parser, args=None, namespace=None):
        parsers.append(parser)
        raise SystemExit(0)

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", keep)
    for name, function in COMMANDS.items():
        with pytest.raises(SystemExit):
            function(["--help"])
        unexplained = [a.option_strings[0] if a.option_strings else a.dest for a in parsers[-1]._actions if not a.help]
        assert not unexplained, (name, unexplained)


def test_field_comments_are_the_comments_beside_each_field():
    from dataclasses import dataclass

    from core.cli.flags import field_comments

    @dataclass
    class Settings:
        width: int = 3  # columns of the grid
        depth: int = 2  # rows of it,
                        # and this line goes on
        # a block comment above a field is not its help
        plain: bool = False

    assert field_comments(Settings) == {"width": "columns of the grid", "depth": "rows of it, and this line goes on"}


def test_the_installed_script_calls_itself_by_its_name(monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["/usr/local/bin/defsent", "encod", "a text"])
    assert main(["encod", "a text"]) == 2
    assert "did you mean `defsent encode`" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["encode", "--help"])
    assert capsys.readouterr().out.startswith("usage: defsent encode")
