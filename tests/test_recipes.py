"""recipes/*.json: one recipe per shipped checkpoint, which the checkpoint's manifest must match."""
from __future__ import annotations

import argparse
import dataclasses
import json
import subprocess
from pathlib import Path

import pytest

from core.cli.flags import config_from_flags, parse_with_recipe
from core.cli.vec2sent import vec2sent_train_parser
from core.cli.words import train_parser
from core.train import TrainConfig
from core.vec2sent.checkpoint import read_config
from core.vec2sent.model import Vec2SentConfig
from core.vec2sent.train import TrainSettings

REPO = Path(__file__).resolve().parents[1]
RECIPES = REPO / "recipes"


def load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def test_every_shipped_checkpoint_has_a_recipe():
    tracked = subprocess.run(["git", "ls-files", "checkpoints/*/manifest.json"], cwd=REPO, capture_output=True,
                             text=True, check=True).stdout.split()  # shipped: in git (saved ones are ignored)
    assert {load(p)["checkpoint"] for p in RECIPES.glob("*.json")} == {str(Path(m).parent) for m in tracked}


def test_the_shipped_encoder_matches_its_recipe():
    recipe = load(RECIPES / "defsent-minilm.json")
    args = parse_with_recipe(train_parser(), ["--recipe", str(RECIPES / "defsent-minilm.json"), "--out", "x"])
    config = dataclasses.asdict(config_from_flags(TrainConfig, args))
    folder = REPO / recipe["checkpoint"]
    manifest = load(folder / "manifest.json")
    recorded = manifest["training"]["result"]["config"]
    defaults = {f.name: f.default for f in dataclasses.fields(TrainConfig)}
    assert {name: recorded.get(name, defaults[name]) for name in config} == config  # fields added since: defaults
    assert not any(value for name, value in recorded.items() if name not in config)  # removed experiments were off
    assert (manifest["hub_penalty"]["k"], manifest["hub_penalty"]["weight"]) == (config["hub_k"], config["hub_weight"])
    assert manifest["word_vectors"]["scale"] == config["word_vector_scale"]
    assert manifest["training"]["head_stage"] == args.head_stage and manifest["training"]["split_seed"] == args.split_seed
    assert f"({args.head_epochs} epochs, weight decay {args.head_weight_decay}," in manifest["head"]["origin"]
    assert load(folder / "head_config.json")["unit_rows"] is args.unit_rows
    # the open vocabulary, fitted at the end of the run: each shipped weight is one the recipe's grids try
    shipped = manifest["open_vocab"]
    assert shipped["word_tower"] == "open_vocab_tower.safetensors" and (folder / shipped["word_tower"]).is_file()
    assert not args.no_open_vocab
    for weight, grid in (("word_scale", args.open_vocab_word_scales), ("head_weight", args.open_vocab_head_weights),
                         ("multi_bias", args.open_vocab_biases),
                         ("definition_weight", args.open_vocab_definition_weights),
                         ("temperature", args.open_vocab_temperatures)):
        assert shipped[weight] in grid, (weight, shipped[weight], grid)


def test_the_shipped_decoder_matches_its_recipe():
    recipe = load(RECIPES / "vec2sent-defsent-minilm.json")
    args = parse_with_recipe(vec2sent_train_parser(),
                             ["--recipe", str(RECIPES / "vec2sent-defsent-minilm.json"), "--out", "x"])
    folder = REPO / recipe["checkpoint"]
    manifest = load(folder / "manifest.json")
    training = manifest["training"]
    settings, recorded = dataclasses.asdict(config_from_flags(TrainSettings, args)), training["settings"]
    defaults = {f.name: f.default for f in dataclasses.fields(TrainSettings)}
    # how long one resumed part ran, and where: not part of the recipe (a GPU run computes the same steps)
    per_invocation = {"session_minutes", "device"}
    assert ({name: recorded.get(name, defaults[name]) for name in settings if name not in per_invocation}
            == {name: value for name, value in settings.items() if name not in per_invocation})
    shipped = read_config(folder / "config.json")
    assert shipped.architecture == args.architecture
    if args.architecture == "transformer":  # its size comes from the base it was warm-started from
        assert (shipped.prefix_length, shipped.dropout) == (args.prefix_length, args.dropout)
        assert training["warm_start"] == args.base
    else:
        assert {f.name: getattr(args, f.name) for f in dataclasses.fields(Vec2SentConfig)
                if f.name not in ("vocab_size", "sent_dim", "architecture")} == {
                    k: v for k, v in dataclasses.asdict(shipped).items()
                    if k not in ("vocab_size", "sent_dim", "architecture")}  # fields added since: defaults
    if "corpus" in training:  # recorded since the modern corpus (issue 26); the LSTM's manifest predates it
        assert training["corpus"]["path"] == str(args.corpus)
        assert training["corpus"].get("first_sentences", 0) == args.corpus_sentences
    assert str(args.encoder) == "checkpoints/" + manifest["encoder"]["name"]


def test_a_decoder_recipe_that_goes_on_from_another_names_a_stage_recipe_that_builds_its_init():
    for path in RECIPES.glob("vec2sent-*.json"):
        recipe = load(path)
        if "init_recipe" not in recipe:
            continue
        stage_path = REPO / recipe["init_recipe"]
        stage = load(stage_path)
        assert stage_path.parent == RECIPES / "stages" and stage["checkpoint"] == recipe["flags"]["init"]
        args = parse_with_recipe(vec2sent_train_parser(), ["--recipe", str(stage_path), "--out", "x"])
        assert args.init is None and args.encoder == Path(recipe["flags"]["encoder"])  # built from its base


def test_a_recipe_gives_defaults_that_flags_override_and_refuses_unknown_flags(tmp_path, capsys):
    def parser() -> argparse.ArgumentParser:
        p = argparse.ArgumentParser()
        p.add_argument("--out", required=True)
        p.add_argument("--lr", type=float, default=1.0)
        p.add_argument("--path", type=Path)
        return p

    recipe = tmp_path / "r.json"
    recipe.write_text(json.dumps({"flags": {"out": "o", "lr": 0.5, "path": "a/b"}}))
    args = parse_with_recipe(parser(), ["--recipe", str(recipe)])
    assert (args.out, args.lr, args.path) == ("o", 0.5, Path("a/b"))  # a string default goes through the type
    assert parse_with_recipe(parser(), ["--recipe", str(recipe), "--lr", "2"]).lr == 2.0
    recipe.write_text(json.dumps({"flags": {"out": "o", "momentum": 0.9}}))
    with pytest.raises(SystemExit):
        parse_with_recipe(parser(), ["--recipe", str(recipe)])
    assert "does not have: momentum" in capsys.readouterr().err
