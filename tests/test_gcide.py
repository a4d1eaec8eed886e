"""GCIDE extra training definitions: the dictd reader on hand-written articles, and how they join a split."""
from __future__ import annotations

import gzip
from pathlib import Path

from core.lexicon.dictionary import Entry, add_training_entries, split_by_word
from core.lexicon.gcide import entries_of_article, parse_index, read_gcide

DOG = """\
Dog \\Dog\\ (d[add]g or d[o^]g), n. [AS. docga; akin to D. dog
   mastiff, Dan. dogge, Sw. dogg.]
   1. (Zool.) A quadruped of the genus {Canis}, esp. the
      domestic dog ({Canis familiaris}).

   Note: The dog is distinguished above all others of the
         inferior animals for intelligence.
         [1913 Webster]

   2. A mean, worthless fellow; a wretch.
      [1913 Webster]

            What is thy servant, which is but a dog, that he
            should do this great thing?           -- 2 Kings
      [1913 Webster]

   3. (Mech.)
      (a) A grappling iron, with a claw or claws, for fastening
          into wood or other heavy articles.
      (b) See {Andiron}.
          [1913 Webster]

   {A dog in the manger}, an ugly-natured person who prevents
      others from enjoying what would be an advantage to them.

Dog \\Dog\\, v. t. [imp. & p. p. {Dogged}; p. pr. & vb. n.
   {Dogging}.]
   To hunt or track like a hound; to follow insidiously or
   indefatigably; to chase. [Colloq.]
   [1913 Webster]
"""

SUNDOG = """\
Sundog \\Sun"dog`\\, n. (Meteorol.)
   1. A luminous spot occasionally seen a few degrees from the
      sun; -- called also {dog}.
      [1913 Webster]
"""


def test_article_senses_are_whole_clean_and_only_real_definitions():
    entries = entries_of_article("dog", DOG)
    assert entries == [
        Entry("dog", "A mean, worthless fellow; a wretch.", "n"),
        Entry("dog", "A grappling iron, with a claw or claws, for fastening into wood or other heavy articles.", "n"),
        Entry("dog", "To hunt or track like a hound; to follow insidiously or indefatigably; to chase.", "v"),
    ]  # sense 1 names the dog, (b) is a cross-reference, the note, quotation and phrase are no senses
    assert entries_of_article("dog", DOG.replace("to chase", "to worry, as if by dogs"))[-1].pos == "n"


def test_senses_under_another_headword_are_not_the_words():
    assert entries_of_article("dog", SUNDOG) == []  # only "called also {dog}" here
    assert entries_of_article("sun", SUNDOG) == []
    assert entries_of_article("sundog", SUNDOG) == [
        Entry("sundog", "A luminous spot occasionally seen a few degrees from the sun", "n")]


ABDUCENS = """\
abducens \\abducens\\ n.
   1. a small motor nerve supplying the lateral rectus muscle of
      the eye.

   Syn: abducent, abducent nerve, sixth cranial nerve
        [WordNet 1.5]

   2. A nerve that draws a part away from the axis of the body.
      [1913 Webster]
"""


def test_senses_taken_from_wordnet_are_left_out():
    # GCIDE is the cross-dictionary test of a WordNet-trained model: WordNet's own wording would leak.
    # The source tag may follow a Syn: block, after a blank line.
    assert entries_of_article("abducens", ABDUCENS) == [
        Entry("abducens", "A nerve that draws a part away from the axis of the body.", "")]  # no ", n." in this header
    inline = ABDUCENS.replace("      the eye.\n", "      the eye. [WordNet 1.5]\n").replace("        [WordNet 1.5]\n", "")
    assert [e.definition for e in entries_of_article("abducens", inline)] == [
        "A nerve that draws a part away from the axis of the body."]

def _base64(number: int) -> str:
    digits = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    text = ""
    while True:
        number, digit = divmod(number, 64)
        text = digits[digit] + text
        if not number:
            return text


def write_dictd(folder: Path, articles: dict[str, str]) -> None:
    data, index = b"", []
    for headword, article in articles.items():
        raw = article.encode("utf-8")
        index.append(f"{headword}\t{_base64(len(data))}\t{_base64(len(raw))}")
        data += raw
    (folder / "gcide.index").write_text("\n".join(index) + "\n", encoding="utf-8")
    with gzip.open(folder / "gcide.dict.dz", "wb") as stream:
        stream.write(data)


def test_read_gcide_keeps_vocabulary_words_sorted_and_unique(tmp_path):
    write_dictd(tmp_path, {"dog": SUNDOG, "Dog": DOG, "Sundog": SUNDOG, "Dogs": DOG})
    assert [(w, o, n) for w, o, n in parse_index(tmp_path / "gcide.index")][1][1] == len(SUNDOG)
    entries = read_gcide(tmp_path, vocab={"dog", "sundog"})  # "dogs" is no vocabulary word
    expected = entries_of_article("dog", DOG) + entries_of_article("sundog", SUNDOG)
    assert entries == sorted(expected, key=lambda e: (e.word, e.definition, e.pos))
    assert read_gcide(tmp_path, vocab={"dog"}) == entries[:-1]  # without sundog's sense
    assert read_gcide(tmp_path, vocab=None) == entries  # any one-word headword


def test_extra_pairs_join_train_only_and_never_leak():
    split = split_by_word([Entry(f"w{i}", f"gloss number {i}") for i in range(100)])
    dev_word, test_text = split.dev[0].word, split.test[0].definition
    extra = [Entry(dev_word, "a fresh text"),                    # a dev word
             Entry("new", test_text.upper() + "!"),              # a test text, other case and punctuation
             Entry(split.train[0].word, split.train[0].definition),  # already there
             Entry("new", "a fresh text"), Entry("new", "A fresh text.")]  # added once
    grown, counts = add_training_entries(split, extra)
    assert counts == {"dropped: dev/test word": 1, "dropped: dev/test definition": 1,
                      "dropped: already in train": 2, "added": 1}
    assert grown.train == split.train + [Entry("new", "a fresh text")]
    assert (grown.dev, grown.test) == (split.dev, split.test)
    assert len(split.train) == 80  # the split given is left as it was
