"""The headline and post rewrites that teach the decoder the styles the corpus lacks (issue 59)."""
import random

import pytest

from core.corpus.styles import headline, post, styled_corpus, third_person, write_styled_corpus


@pytest.mark.parametrize("sentence, expected", [
    ("The president has signed a new law on Tuesday.", "President signs new law"),
    ("A man was arrested after a robbery in the city.", "Man arrested after robbery in city"),
    ("Two people were killed in an attack on a bus.", "Two people killed in attack on bus"),
    ("The bill has been passed by the Senate.", "Bill passed by Senate"),
    ("The team won the championship for the third time.", "Team wins championship for third time"),
    ("The tired children went home early.", "Tired children go home early"),
    ("Obama visited Japan last week.", "Obama visits Japan"),
    ("However, the government announced a plan to cut taxes.", "Government announces plan to cut taxes"),
])
def test_headline_is_telegraphic_and_present(sentence, expected):
    rng = random.Random(0)
    rng.random = lambda: 0.5  # articles always dropped, the "said" form always taken
    assert headline(sentence, rng) == expected


def test_headline_moves_the_speaker_first_and_will_becomes_to():
    rng = random.Random(0)
    rng.random = lambda: 0.5
    assert headline("Prices will rise next year, officials said.", rng) == "Officials: Prices to rise next year"


@pytest.mark.parametrize("sentence", ["Is this the way to the station?", 'He said "no" and left.',
                                      "Short one.", "A list, of, far, too, many, commas here."])
def test_headline_refuses_what_is_no_headline(sentence):
    assert headline(sentence, random.Random(0)) is None


def test_third_person():
    assert [third_person(v) for v in ("say", "go", "try", "watch", "have", "sign")] == \
        ["says", "goes", "tries", "watches", "has", "signs"]


def test_post_keeps_the_words_and_adds_the_style():
    sentence = "We finally went to the beach with the whole family today."
    posts = [post(sentence, random.Random(seed)) for seed in range(200)]
    assert all(p.replace("#", "").replace("RT @", "").lower().find("finally went to the beach") >= 0 for p in posts)
    assert sum("#" in p for p in posts) > 40 and sum(not p.endswith(".") for p in posts) > 100
    assert any(p.startswith("RT @") for p in posts)
    assert post("Too long " * 20, random.Random(0)) is None


def test_styled_corpus_rewrites_only_its_genres_and_replays_the_rest():
    train = [f"The minister of region {i} has opened a new bridge." for i in range(50)] + \
            [f"The function number {i} returns a list of values." for i in range(50)]
    genres = ["news"] * 50 + ["technical"] * 50
    mix, stats = styled_corpus(train, genres, replay=10, headlines=20, posts=5, seed=1)
    assert stats["headlines"] + stats["posts"] == 25 and stats["replay"] == 10
    rewritten = set(mix) - set(train[:10])
    assert len(rewritten) == 25 and not any("function" in s for s in rewritten)
    assert any(s.startswith("Minister of region") and "opens new bridge" in s for s in rewritten)
    assert styled_corpus(train, genres, 10, 20, 5, seed=1)[0] == mix


def test_write_styled_corpus_needs_the_genres_and_writes_a_corpus_folder(tmp_path):
    source, out = tmp_path / "modern", tmp_path / "styles"
    source.mkdir()
    train = [f"The mayor of town {i} has opened a new school." for i in range(30)]
    (source / "train.txt").write_text("".join(s + "\n" for s in train))
    (source / "heldout.jsonl").write_text('{"text": "A held-out sentence.", "genre": "news"}\n')
    with pytest.raises(FileNotFoundError, match="train-genres.txt is missing"):
        write_styled_corpus(source, out, replay=5, headlines=10, posts=0)
    (source / "train-genres.txt").write_text("news\n" * 29)
    with pytest.raises(ValueError, match="29 lines for 30"):
        write_styled_corpus(source, out, replay=5, headlines=10, posts=0)
    assert not out.exists()
    (source / "train-genres.txt").write_text("news\n" * 30)
    stats = write_styled_corpus(source, out, replay=5, headlines=10, posts=0)
    lines = (out / "train.txt").read_text().splitlines()
    assert stats["headlines"] == 10 and len(lines) == stats["train"] == 15
    assert (out / "heldout.jsonl").read_text() == (source / "heldout.jsonl").read_text()
    assert sorted(p.name for p in out.iterdir()) == ["corpus.json", "heldout.jsonl", "train.txt"]  # no temporary left
