"""Dictionary API: the shipped WordNet file, user dictionary files, and the leak-free split."""
from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.lexicon.dictionary import (
    Entry, definition_key, is_predictable, largest_shared_definition_group, load_wordnet, read_vocab, split_by_word,
)
from core.lexicon.user_files import MAX_REPORT_CHARS, RejectedRow, read_user_dictionary
from core.lexicon.wordnet import default_vocab_path, write_entries

USER = Path(__file__).parent / "fixtures" / "user"
VOCAB = {"dog", "cat", "eat", "run", "tree", "house", "##s", "[CLS]"}


def write(directory: Path, name: str, content: bytes | str) -> Path:
    path = directory / name
    path.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)
    return path


def reasons(report) -> dict[int, str]:
    return {row.row: row.reason for row in report.rejected}


# ------------------------------------------------------------------------------------------- WordNet file


def test_load_wordnet_round_trips_and_is_cached(tmp_path):
    entries = [Entry("dog", "a domestic animal", "n", ("the dog barked",), "02084071-n"), Entry("cat", "a feline")]
    write_entries(entries, tmp_path / "small.jsonl.gz")
    loaded = load_wordnet(tmp_path / "small.jsonl.gz")
    assert loaded == entries
    assert load_wordnet(tmp_path / "small.jsonl.gz")[0] is loaded[0]


def test_shipped_wordnet_words_are_single_vocabulary_tokens():
    entries = load_wordnet()
    vocab = read_vocab(default_vocab_path())
    assert 40_000 < len(entries) < 55_000
    assert all(is_predictable(entry.word, vocab) for entry in entries)
    assert {entry.pos for entry in entries} == {"n", "v", "a", "r"}
    assert len({(entry.word, entry.definition) for entry in entries}) == len(entries)
    split = split_by_word(entries)
    train_texts = {definition_key(entry.definition) for entry in split.train}
    assert not any(definition_key(entry.definition) in train_texts for entry in split.dev + split.test)


def test_is_predictable_wants_one_whole_alphabetic_token():
    assert is_predictable("dog", VOCAB)
    assert not any(is_predictable(word, VOCAB) for word in ("##s", "[CLS]", "hot dog", "cow"))


# ------------------------------------------------------------------------------------------- user files


def test_tsv_rows_are_normalised_validated_and_set_aside():
    entries, report = read_user_dictionary(USER / "words.tsv", vocab=VOCAB)
    assert entries == [
        Entry("dog", "a domesticated member of the genus Canis", "n"),
        Entry("cat", 'feline mammal with "soft" fur', "n"),  # TSV has no quoting: quotes stay
        Entry("eat", "take in solid food", "v"),
    ]
    assert reasons(report) == {
        4: "empty definition",
        5: "duplicate (word, definition) pair of row 2",
        7: "5 fields but the header has 4 (quote fields that contain the delimiter)",
        8: "not a word or phrase (letters and digits, with spaces, hyphens, apostrophes or periods inside)",
    }
    assert report.unpredictable_words() == {"hot dog": 1}
    assert (report.ok, report.format, report.rows_read, report.rows_accepted) == (True, "tsv", 8, 3)


def test_formula_text_is_rejected_as_a_word_and_echoed_safely():
    entries, report = read_user_dictionary(USER / "words.tsv")
    assert "=cmd|' /c calc'!a0" not in {e.word for e in entries} and "hot dog" in {e.word for e in entries}
    _, report = read_user_dictionary(USER / "words.tsv", vocab=VOCAB)
    summary = report.summary()
    assert "\"'=cmd|' /c calc'!a0\"" in summary
    assert not re.search(r"(^|[\s,(])[=+@-]", summary, re.MULTILINE)


def test_vocab_may_be_a_predicate():
    entries, report = read_user_dictionary(USER / "words.tsv", vocab=lambda word: word.startswith("d"))
    assert [entry.word for entry in entries] == ["dog"]
    assert report.unpredictable_words() == {"cat": 1, "hot dog": 1, "eat": 1}


def test_csv_with_bom_quotes_and_a_multiline_field():
    entries, report = read_user_dictionary(USER / "words_bom.csv", vocab=VOCAB)
    assert entries == [
        Entry("dog", "a member of the genus Canis, domesticated by man", "n"),
        Entry("cat", "feline mammal", "n"),
        Entry("run", "move fast on foot", "v"),
    ]
    assert reasons(report) == {4: "empty definition"}


def test_short_rows_lack_columns_and_long_rows_are_rejected(tmp_path):
    rows = "word,definition,pos,\ndog,a pet\ncat\nrun,move,v,,extra\n"
    entries, report = read_user_dictionary(write(tmp_path, "w.csv", rows))
    assert entries == [Entry("dog", "a pet")]
    assert reasons(report) == {
        3: "missing column 'definition'",
        4: "5 fields but the header has 4 (quote fields that contain the delimiter)",
    }


def test_undecodable_bytes_reject_only_their_row(tmp_path):
    entries, report = read_user_dictionary(USER / "latin1.tsv")
    assert [entry.word for entry in entries] == ["dog", "cat"]
    assert reasons(report) == {3: "undecodable bytes (not UTF-8) in 'word'"}
    assert report.rejected[0].value == "caf\ufffd"
    _, report = read_user_dictionary(write(tmp_path, "w.jsonl", '{"word": "a\\ud800", "definition": "x"}\n'))
    assert report.rejected == [RejectedRow(1, "undecodable bytes (not UTF-8) in 'word'", "a\ufffd")]
    assert all(line.isprintable() for line in report.summary().splitlines())


def test_jsonl_rows():
    entries, report = read_user_dictionary(USER / "words.jsonl", vocab=VOCAB)
    assert entries == [Entry("dog", "a member of the genus Canis", "n"), Entry("cat", "feline mammal"),
                       Entry("house", "a dwelling")]
    found = reasons(report)
    assert found[3].startswith("invalid JSON")
    assert {row: found[row] for row in (4, 5, 6, 7)} == {
        4: "not a JSON object", 5: "missing column 'definition'", 6: "'word' is not text", 7: "empty definition"}


@pytest.mark.parametrize(("name", "content", "expected"), [
    ("words.txt", "word\tdefinition\ndog\ta pet\n", "tsv"),
    ("words.txt", "word,definition\ndog,a pet\n", "csv"),
    ("words", '{"word": "dog", "definition": "a pet"}\n', "jsonl"),
])
def test_unknown_extension_is_sniffed(tmp_path, name, content, expected):
    entries, report = read_user_dictionary(write(tmp_path, name, content))
    assert (report.format, entries) == (expected, [Entry("dog", "a pet")])


@pytest.mark.parametrize(("name", "content", "message"), [
    ("empty.tsv", b"", "the file is empty"),
    ("blank.csv", b" \n\n", "the file is empty"),
    ("binary.tsv", bytes(range(256)), "binary file"),
    ("utf16.tsv", "word\tdefinition\n".encode("utf-16"), "UTF-16"),
    ("columns.csv", b"word,meaning\ndog,a pet\n", "missing column definition"),
    ("noheader.tsv", b"dog\ta pet\n", "missing column word and definition"),
    ("twice.csv", b"word,definition,Word\ndog,a pet,cat\n", "'word' more than once"),
    ("header.csv", b"word,definition\n", "no data rows after the header"),
    ("quotes.csv", b'""\n', "no header row"),
    ("rejected.csv", b"word,definition\ndog,\n", "no usable rows: 1 of 1 rows rejected"),
    ("words.dat", b"dog a pet\n", "cannot tell the format"),
])
def test_unusable_files_say_why(tmp_path, name, content, message):
    entries, report = read_user_dictionary(write(tmp_path, name, content))
    assert (entries, report.ok) == ([], False)
    assert message in report.error
    assert message in report.summary()


def test_all_words_unpredictable_is_not_ok(tmp_path):
    entries, report = read_user_dictionary(write(tmp_path, "w.csv", "word,definition\ncow,a farm animal\n"), VOCAB)
    assert (entries, report.ok, report.unpredictable_words()) == ([], False, {"cow": 1})
    assert "1 set aside because their word is not a single vocabulary token" in report.error


def test_size_limit_is_checked_before_reading(tmp_path, monkeypatch):
    path = write(tmp_path, "big.tsv", "word\tdefinition\n" + "dog\ta pet\n" * 20)
    monkeypatch.setattr(Path, "open", lambda *args, **kwargs: pytest.fail("the file was opened"))
    _, report = read_user_dictionary(path, max_bytes=100)
    assert report.error == "the file has 216 bytes, over the limit of 100 bytes"


def test_row_and_length_limits(tmp_path):
    rows = "word,definition\ndog,a pet\ncat,a small feline\nhippopotamus,a river horse\n"
    _, report = read_user_dictionary(write(tmp_path, "w.csv", rows), max_rows=2)
    assert (report.ok, report.error) == (False, "more than 2 rows, over the limit; split the file")
    entries, report = read_user_dictionary(tmp_path / "w.csv", max_word_chars=5, max_definition_chars=12)
    assert entries == [Entry("dog", "a pet")]
    assert reasons(report) == {3: "definition longer than 12 characters", 4: "word longer than 5 characters"}


def test_missing_file_raises_and_a_folder_is_reported(tmp_path):
    with pytest.raises(FileNotFoundError):
        read_user_dictionary(tmp_path / "nope.tsv")
    assert read_user_dictionary(tmp_path)[1].error == "not a regular file"


def test_report_to_dict_and_long_listings(tmp_path):
    rows = "word,definition\n" + "".join(f"w{i},\n" for i in range(25)) + "dog,a pet\n"
    _, report = read_user_dictionary(write(tmp_path, "w.csv", rows))
    data = json.loads(json.dumps(report.to_dict()))
    assert (data["ok"], data["rows_read"], data["rows_accepted"], data["rows_rejected"]) == (True, 26, 1, 25)
    assert data["rejected"][0] == {"row": 2, "reason": "empty definition", "value": "w0"}
    assert "... and 5 more" in report.summary()


FILE_HEADS = st.sampled_from([b"", b"word\tdefinition\n", b"Word,Definition,pos\n", b'{"word": "dog", '])
FILE_BODIES = st.one_of(
    st.binary(max_size=300),
    st.text(alphabet='abud80\t,;"{}[]:\n\r =+\\\x00\u00e9\ufeff', max_size=300).map(lambda text: text.encode("utf-8")),
)


@settings(max_examples=150, deadline=None)
@given(head=FILE_HEADS, body=FILE_BODIES, suffix=st.sampled_from([".tsv", ".csv", ".jsonl", ".txt", ""]))
def test_any_bytes_give_a_report_never_an_exception(tmp_path_factory, head, body, suffix):
    path = tmp_path_factory.getbasetemp() / f"fuzz{suffix}"
    path.write_bytes(head + body)
    entries, report = read_user_dictionary(path, vocab=VOCAB)
    assert len(entries) == report.rows_accepted
    assert report.ok == bool(entries)
    summary = report.summary()
    assert f"{report.rows_read} rows read, {report.rows_accepted} accepted, {len(report.rejected)} rejected" in summary
    assert ("Not usable:" in summary) == bool(report.error) and len(summary) <= MAX_REPORT_CHARS
    json.dumps(report.to_dict())


# ------------------------------------------------------------------------------------------- split


def synonym_entries(n_words: int, group: int) -> list[Entry]:
    """Words w0..wN; each run of `group` consecutive words shares one definition, and every word has its own one."""
    shared = [Entry(f"w{i}", f"shared gloss {i // group}") for i in range(n_words)]
    return shared + [Entry(f"w{i}", f"own gloss {i}") for i in range(n_words)]


def test_split_words_are_disjoint_and_no_held_out_definition_is_in_train():
    split = split_by_word(synonym_entries(600, group=3))
    words = [{entry.word for entry in part} for part in (split.train, split.dev, split.test)]
    assert not (words[0] & words[1] or words[0] & words[2] or words[1] & words[2])
    texts = [{definition_key(entry.definition) for entry in part} for part in (split.train, split.dev, split.test)]
    assert not (texts[0] & (texts[1] | texts[2]) or texts[1] & texts[2])
    assert split.dropped_from_train > 0 and 0 < split.leak_rate_before < 1


def test_split_is_deterministic_whatever_the_input_order():
    entries = synonym_entries(300, group=2)
    shuffled = random.Random(5).sample(entries, len(entries))
    assert split_by_word(entries, seed=3) == split_by_word(shuffled, seed=3)
    assert split_by_word(entries, seed=3).test != split_by_word(entries, seed=4).test


def test_split_ratios():
    split = split_by_word([Entry(f"w{i}", f"gloss {i}") for i in range(1000)], ratios=(0.7, 0.2, 0.1))
    assert split.stats()["words"] == {"train": 700, "dev": 200, "test": 100}
    assert split.stats()["dropped_by_leak_rule"] == {"train": 0, "dev": 0}
    with pytest.raises(ValueError):
        split_by_word([], ratios=(0.5, 0.5, 0.5))


def test_leak_rule_when_every_word_shares_one_definition():
    split = split_by_word([Entry(f"w{i}", "The  same gloss") for i in range(10)] + [Entry("w0", "the same GLOSS")])
    assert (split.train, split.dev, len(split.test)) == ([], [], 1)
    assert split.leak_rate_before == 1.0
    assert split.dropped_from_train + split.dropped_from_dev == 10
    assert "100.0% of test definitions" in split.report()


def test_largest_shared_definition_group_is_transitive():
    entries = [Entry("a", "one"), Entry("b", "One"), Entry("b", "two"), Entry("c", "two"), Entry("d", "three")]
    assert largest_shared_definition_group(entries) == 3
    assert largest_shared_definition_group([]) == 0
