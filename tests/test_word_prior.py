"""The word prior (core/words/word_prior.py) and the reverse-dictionary evaluation (core/evaluation/reverse.py)
on a tiny model and a small dictionary (issue 38)."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch

from core import Engine
from core.lexicon.dictionary import Entry
from core.evaluation.reverse import (DEFSENT_TABLE6, MAX_RANK, Query, ranks, read_human_descriptions, summary,
                                     table6)
from core.words.open_vocab import Candidates, OpenScorer, OpenVocabConfig
from core.words.word_prior import USER_WORD_ZIPF, load_frequencies, zipf_frequencies

DICTIONARY = [
    Entry("bird", "a warm-blooded egg-laying vertebrate with wings", "n", (), "1-n"),
    Entry("ovenbird", "a warbler that builds a domed nest on the ground", "n", (), "2-n"),
    Entry("ice cream", "a frozen sweet food made of cream", "n", (), "3-n"),
    Entry("dog", "a domestic animal that barks", "n", (), "4-n"),
    Entry("king", "a man who rules a country", "n", (), "5-n"),
]


@pytest.fixture()
def engine(tiny_mlm_dir) -> Engine:
    return Engine.from_base(str(tiny_mlm_dir))


def test_the_shipped_table_knows_common_words_and_not_rare_ones():
    table = load_frequencies()
    assert len(table) > 100_000
    assert table["bird"] > 4 and table["water"] > 5 and "ovenbird" not in table
    np.testing.assert_allclose(zipf_frequencies(["bird", "ovenbird"]), [table["bird"], 0.0], rtol=1e-6)


def test_a_users_own_word_is_as_likely_as_a_common_one():
    np.testing.assert_allclose(zipf_frequencies(["ovenbird", "bird"], user_words=["ovenbird", "bird"]),
                               [USER_WORD_ZIPF, max(USER_WORD_ZIPF, load_frequencies()["bird"])], rtol=1e-6)


def test_the_everyday_expert_is_mixed_in_as_documented(engine):
    """p = (1 - share) softmax(dictionary / T) + share softmax(everyday / T), everyday with the prior."""
    c = Candidates(DICTIONARY, engine.words.vocab)
    W, D = torch.randn(len(c), 32), torch.randn(len(c.definitions), 32)
    u = torch.randn(2, 32)
    logits = engine.words.logits(u)
    dictionary = OpenVocabConfig(word_scale=10.0, head_weight=0.5, definition_weight=5.0, temperature=4.0)
    everyday = OpenVocabConfig(word_scale=3.0, head_weight=2.0, multi_bias=-1.0, definition_weight=1.0,
                               temperature=4.0)
    mixed = replace(dictionary, everyday_share=0.25, mixture_temperature=4.0, everyday_word_scale=3.0,
                    everyday_head_weight=2.0,
                    everyday_multi_bias=-1.0, everyday_definition_weight=1.0, frequency_weight=0.5, phrase_bias=2.0)
    expert = OpenScorer(c, W, D, dictionary).scores(u, logits)
    assert OpenScorer(c, W, D, dictionary).temperature == 4.0  # the dictionary expert alone: as before
    plain = OpenScorer(c, W, D, everyday).scores(u, logits)
    phrase = torch.tensor([" " in w for w in c.words], dtype=torch.float32)
    everyday_scores = plain + 0.5 * torch.from_numpy(c.zipf) + 2.0 * phrase
    expected = 0.75 * (expert / 4).softmax(-1) + 0.25 * (everyday_scores / 4).softmax(-1)
    scorer = OpenScorer(c, W, D, mixed)
    torch.testing.assert_close(scorer.scores(u, logits).exp(), expected)
    assert scorer.temperature == 1.0  # the scores are log-probabilities already
    assert c.zipf[c.words.index("bird")] > c.zipf[c.words.index("ovenbird")] == 0


def test_user_dictionary_words_get_the_user_prior(engine):
    engine.words.user_dictionary = [Entry("glorbix", "an invented word for a tool", "n", (), "")]
    candidates = engine.words.candidates(dictionary=DICTIONARY)
    assert candidates.zipf[candidates.words.index("glorbix")] == USER_WORD_ZIPF


def test_ranks_follow_the_app_and_filters_narrow_them(engine):
    engine.vocabulary.enable(dictionary=DICTIONARY)
    queries = [Query("a frozen sweet food made of cream", "ice cream"), Query("a thing", "unknownword"),
               Query("animals with wings", "birds")]  # a plural counts through its singular
    none, initial, length = (ranks(engine, queries, mode) for mode in ("none", "initial", "initial+length"))
    assert none[1] == initial[1] == MAX_RANK  # not a candidate
    assert 1 <= none[0] <= len(DICTIONARY) and 1 <= none[2] <= len(DICTIONARY)
    assert (initial <= none).all() and (length <= initial).all()
    assert length[0] == 1  # "i", 8 letters: only ice cream
    with pytest.raises(ValueError, match="unknown filter mode"):
        ranks(engine, queries, "first letter")


def test_a_word_of_the_description_is_left_out_as_in_the_app(engine):
    engine.vocabulary.enable(dictionary=DICTIONARY)
    assert ranks(engine, [Query("a dog", "dog")])[0] == MAX_RANK


def test_summary_and_the_fixed_sets(tmp_path):
    s = summary(np.array([1, 2, 10, 1000]))
    assert (s["acc@1"], s["acc@3"], s["acc@10"], s["acc@100"], s["median"]) == (0.25, 0.5, 0.75, 0.75, 6.0)
    assert summary(np.array([])) == {"n": 0}
    assert len(table6()) == len(DEFSENT_TABLE6) == 12 and table6()[-2] == Query("a person who is in charge", "chief")
    path = tmp_path / "dev.tsv"
    path.write_text("a place where books are kept\tLibrary\n\n", encoding="utf-8")
    assert read_human_descriptions(path) == [Query("a place where books are kept", "library")]
    with pytest.raises(FileNotFoundError, match="shared/data"):
        read_human_descriptions(tmp_path / "absent.tsv")


def test_frequency_bands_put_each_word_in_the_first_band_it_reaches():
    from core.words.word_prior import FREQUENCY_BANDS, frequency_bands

    assert frequency_bands(["bird", "ovenbird"]) == [FREQUENCY_BANDS[0][1], FREQUENCY_BANDS[-1][1]]
