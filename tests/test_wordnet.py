"""The WordNet builder, on tiny hand-written data.* files (tests/fixtures/wordnet)."""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from core.cli import main
from core.lexicon.wordnet import license_text, parse_data_line, split_gloss

FIXTURES = Path(__file__).parent / "fixtures" / "wordnet"


def build(out_dir: Path) -> list[dict]:
    out = out_dir / "wordnet.jsonl.gz"
    main(["wordnet", "--wordnet-dir", str(FIXTURES), "--vocab", str(FIXTURES / "vocab.txt"),
          "--copyright", str(FIXTURES / "copyright"), "--out", str(out)])
    with gzip.open(out, "rt", encoding="utf-8") as lines:
        return [json.loads(line) for line in lines]


def test_licence_header_lines_are_not_synsets():
    assert parse_data_line("  1 This software and database is being provided to you, the LICENSEE, by  \n") is None
    assert parse_data_line("\n") is None


def test_word_count_is_hexadecimal():
    words = " ".join(f"w{i} 0" for i in range(11))
    synset = parse_data_line(f"00001740 03 n 0b {words} 000 | eleven lemmas  \n")
    assert synset.lemmas == tuple(f"w{i}" for i in range(11))
    assert synset.definition == "eleven lemmas"


def test_satellite_adjective_becomes_a_and_loses_markers():
    synset = parse_data_line("00003553 00 s 02 emergent 0 galore(ip) 0 001 & 00003356 a 0000 | coming into being\n")
    assert (synset.synset, synset.pos, synset.lemmas) == ("00003553-a", "a", ("emergent", "galore"))


@pytest.mark.parametrize(("gloss", "definition", "examples"), [
    ('take in solid food; "She was eating a banana"; "What did you eat?"  ',
     "take in solid food", ("She was eating a banana", "What did you eat?")),
    ('the act of assembling for war: "mobilization of the troops"', "the act of assembling for war",
     ("mobilization of the troops",)),
    ('progress (in the phrase "make strides"); "big strides"', 'progress (in the phrase "make strides")',
     ("big strides",)),
    ('the conflict; "the harder the conflict the more glorious"--Thomas Paine; "a battle"', "the conflict",
     ("the harder the conflict the more glorious", "a battle")),
    ('an announcement; "a notice of sale', "an announcement", ("a notice of sale",)),
    ("only a very short time before;", "only a very short time before", ()),
])
def test_gloss_splits_into_definition_and_examples(gloss, definition, examples):
    assert split_gloss(gloss) == (definition, examples)


def test_builder_keeps_single_token_words_only(tmp_path):
    rows = build(tmp_path)
    assert [(row["word"], row["pos"], row["synset"]) for row in rows] == [
        ("dog", "n", "02084071-n"),  # domestic_dog and Canis_familiaris are multiword: dropped
        ("cat", "n", "02121620-n"),
        # Paris (08932568-n) is a capitalised lemma (a name): left out
        ("stride", "n", "00296186-n"),
        ("pace", "n", "00296186-n"),  # the same (pace, definition) in 00296999-n is a duplicate
        ("eat", "v", "01168468-v"),
        ("nascent", "a", "00003356-a"),
        ("emergent", "a", "00003553-a"),
        ("galore", "a", "00003553-a"),
        ("barely", "r", "00001740-r"),
    ]
    assert rows[1] == {
        "word": "cat", "definition": "feline mammal usually having thick soft fur and no ability to roar",
        "pos": "n", "examples": ["domestic cats", "wildcats"], "synset": "02121620-n",
    }


def test_builder_output_is_reproducible_and_written_atomically(tmp_path):
    first, second = tmp_path / "a", tmp_path / "b"
    for out_dir in (first, second):
        build(out_dir)
    for name in ("wordnet.jsonl.gz", "wordnet-synsets.jsonl.gz"):
        assert (first / name).read_bytes() == (second / name).read_bytes()
    assert sorted(path.name for path in first.iterdir()) == ["WORDNET_LICENSE", "wordnet-synsets.jsonl.gz",
                                                             "wordnet.jsonl.gz"]


def test_licence_is_the_wordnet_paragraph_only():
    assert license_text(FIXTURES / "copyright") == (
        "Permission to use, copy, modify and distribute this software.\n\n"
        "WordNet 3.0 Copyright 2006 by Princeton University.  All rights reserved.\n"
    )


def test_build_writes_every_lemma_beside_out_and_nothing_in_the_repository(tmp_path):
    shipped = (Path(__file__).resolve().parents[1] / "core" / "data" / "wordnet-synsets.jsonl.gz").read_bytes()
    build(tmp_path)
    with gzip.open(tmp_path / "wordnet-synsets.jsonl.gz", "rt", encoding="utf-8") as lines:
        synsets = [json.loads(line) for line in lines]
    assert synsets and all(s["lemmas"] and s["definition"] and s["pos"] in "nvar" for s in synsets)
    assert (Path(__file__).resolve().parents[1] / "core" / "data" / "wordnet-synsets.jsonl.gz").read_bytes() == shipped
