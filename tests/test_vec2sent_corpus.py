"""Corpus assembly on tiny fixtures: normalisation, detokenisation, dedup, STS/SICK exclusion, split."""
from __future__ import annotations

import json

import pytest

from core.corpus.classic import (build_corpus, dated_terms, length_distribution, offensive_text,
                                  read_benchmark_sentences, read_brown, read_nlp_corpus, read_sotu, split_sentences)
from core.text import detokenize, match_key, normalize


def test_normalize_folds_unicode_case_quotes_and_spaces():
    assert normalize("  The \ufb01sh\u00a0said:\t\u201cHello\u201d  ") == 'the fish said: "hello"'
    assert normalize('\u201cNo, no, she cried.') == "no, no, she cried."  # unbalanced quote dropped
    assert normalize('my soul ".') == "my soul."


def test_detokenize_brown_tokens():
    tokens = ["``", "Only", "a", "handful", "''", ",", "the", "jury", "said", "(", "twice", ")", "."]
    assert detokenize(tokens) == '"Only a handful", the jury said (twice).'
    assert detokenize(['"', "yes", '"', "he", "said", '"', "no", '"']) == '"yes" he said "no"'
    assert detokenize(["it", "is", "n't", "john", "'s", "."]) == "it isn't john's."


def test_read_brown_layout(tmp_path):
    (tmp_path / "ca01").write_text("\n\n\tThe/at jury/nn said/vbd ``/`` no/at ''/'' ./.\n\n\n\tAn/at end/nn ./.\n")
    (tmp_path / "README").write_text("not a corpus file")
    assert list(read_brown(tmp_path)) == ['The jury said "no".', "An end."]


def test_split_sentences_respects_titles():
    text = 'Mr. Bennet replied that he had not. "But it is," returned she. Is it? Yes!'
    assert split_sentences(text) == ['Mr. Bennet replied that he had not.', '"But it is," returned she.',
                                     "Is it?", "Yes!"]


def test_match_key_ignores_punctuation_and_spacing():
    assert match_key("A man is playing a flute.") == match_key("a man is playing a flute") == \
        "a man is playing a flute"
    assert match_key("Atlanta's jury") == match_key("atlanta ' s jury")


def write_senteval(root):
    sts = root / "STS" / "STSBenchmark"
    sts.mkdir(parents=True)
    (sts / "sts-train.csv").write_text(
        "main-captions\tMSRvid\t2012test\t0001\t5.000\tA man is playing a flute.\tA man plays the flute.\n"
        "main-news\theadlines\t2013\t0002\t1.0\tThe cat sat down.\tDogs bark\textra\tcolumns\n")
    sick = root / "SICK"
    sick.mkdir()
    (sick / "SICK_train.txt").write_text(
        "pair_ID\tsentence_A\tsentence_B\trelatedness_score\tentailment_judgment\n"
        "1\tA boy is running outside\tThe kid runs\t4.5\tENTAILMENT\n")


def test_benchmark_sentences_are_read(tmp_path):
    write_senteval(tmp_path)
    assert read_benchmark_sentences(tmp_path) == {
        "a man is playing a flute", "a man plays the flute", "the cat sat down", "dogs bark",
        "a boy is running outside", "the kid runs"}


def test_missing_benchmark_files_fail_loudly(tmp_path):
    (tmp_path / "STS").mkdir()
    with pytest.raises(FileNotFoundError, match="SICK"):
        read_benchmark_sentences(tmp_path)


SOURCES = {
    "one": ["The cat sat down.", "A man is playing a flute!", "Too short", "the dog runs home.",
            "This sentence has far too many words to be kept because the limit is fifteen words."],
    "two": ["The dog runs home", "A boy is running outside.", "birds sing in the morning.",
            "rivers flow to the sea.", "the sun rises in the east."],
}


def test_build_corpus_filters_dedups_excludes_and_splits(tmp_path):
    write_senteval(tmp_path)
    corpus = build_corpus(SOURCES, read_benchmark_sentences(tmp_path), test_size=2, seed=1)
    assert corpus.stats["sources"] == {
        "one": {"raw": 5, "in_sts_or_sick": 2, "wrong_length": 2, "kept": 1},
        "two": {"raw": 5, "duplicate": 1, "in_sts_or_sick": 1, "kept": 3}}
    everything = corpus.train + corpus.test
    assert sorted(everything) == ["birds sing in the morning.", "rivers flow to the sea.",
                                  "the dog runs home.", "the sun rises in the east."]
    assert len(corpus.test) == 2 and not set(corpus.train) & set(corpus.test)
    again = build_corpus(SOURCES, read_benchmark_sentences(tmp_path), test_size=2, seed=1)
    assert (again.train, again.test) == (corpus.train, corpus.test)


def test_build_corpus_needs_enough_sentences():
    with pytest.raises(ValueError, match="test set"):
        build_corpus(SOURCES, set(), test_size=50)


def test_length_distribution():
    stats = length_distribution(["a b c", "a b", "a b c d"], lambda s: [len(x.split()) for x in s])
    assert stats["min"] == 2 and stats["max"] == 4 and stats["p50"] == 3
    assert stats["histogram"] == {"2": 1, "3": 1, "4": 1}


def test_train_only_sources_add_to_train_and_leave_the_test_set_alone(tmp_path):
    write_senteval(tmp_path)
    excluded = read_benchmark_sentences(tmp_path)
    plain = build_corpus(SOURCES, excluded, test_size=2, seed=1)
    extra = {"more": ["Birds sing in the morning!", "A cat sleeps on the mat.", "too short", "A cat sleeps on the mat",
                      "A wench of the village."]}
    grown = build_corpus(SOURCES, excluded, test_size=2, seed=1, train_only={"more": (extra["more"], dated_terms)})
    assert grown.test == plain.test
    assert grown.train == plain.train + ["a cat sleeps on the mat."]  # the rest: a duplicate, too short, again
    assert grown.stats["sources"]["more (train only)"] == {"raw": 5, "duplicate": 2, "wrong_length": 1,
                                                           "dated_terms": 1, "kept": 1}


def test_read_sotu_splits_each_address_into_sentences(tmp_path):
    (tmp_path / "1790_george_washington_n.txt").write_text(
        "Fellow-Citizens of the Senate:\n\nI embrace with great satisfaction the opportunity. Mr. Smith agrees.\n",
        encoding="utf-8")
    assert list(read_sotu(tmp_path)) == ["Fellow-Citizens of the Senate:", "I embrace with great satisfaction "
                                         "the opportunity.", "Mr. Smith agrees."]


def test_offensive_text_flags_listed_words_phrases_and_high_scores():
    leave_out = offensive_text(["Darn", "heck", "gosh darn it", " "], score=lambda s: [0.9 if "awful" in x else 0.1
                                                                                  for x in s])
    sentences = ["darn, the bus left.", "what the HECK is this", "oh gosh darn it all", "an awful thing to say",
                 "the darning needle broke.", "a wench of the village.", "a quiet morning by the sea."]
    assert leave_out(sentences) == ["offensive", "offensive", "offensive", "offensive", None, "dated_terms", None]
    assert offensive_text(["darn"])(["darn it", "fine"]) == ["offensive", None]  # no classifier: the list alone


def test_train_only_filter_counts_what_it_leaves_out():
    leave_out = offensive_text(["darn"])
    corpus = build_corpus(SOURCES, set(), test_size=2, seed=1,
                          train_only={"chat": (["Darn this rain today!", "The rain stopped at noon."], leave_out)})
    assert corpus.stats["sources"]["chat (train only)"] == {"raw": 2, "offensive": 1, "kept": 1}
    assert "the rain stopped at noon." in corpus.train and "darn this rain today!" not in corpus.train


def test_read_nlp_corpus_reads_the_json_lists_in_file_order(tmp_path):
    for n, sentences in ((10, ["Last one."]), (2, ["First one.", "Second one."])):
        (tmp_path / f"doc-{n}.json").write_text(json.dumps(sentences), encoding="utf-8")
    assert list(read_nlp_corpus(tmp_path)) == ["First one.", "Second one.", "Last one."]
