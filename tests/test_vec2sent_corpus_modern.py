"""The modern (cased) Vec2Sent corpus: normalisation, document hold-out, benchmark exclusion and the
held-out sampler, on small in-memory fixtures (no downloads)."""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from core.corpus.modern import (
    build_modern_corpus,
    held_out,
    load_source,
    sample_heldout,
    write_modern_corpus,
)
from core.corpus.readers import (
    Doc,
    html_paragraphs,
    pod_paragraphs,
    roff_paragraphs,
    rst_paragraphs,
)
from core.corpus.sentences import (
    dedup_key,
    is_prose,
    normalize_cased,
    split_sentences,
    untokenize_lowercased,
)
from core.corpus.sources import read_benchmark_tests


def test_normalize_cased_keeps_case_digits_and_names():
    text = "\u201cObama  visited the U.S. in 2013,\u201d she said \u2019twice\u2019 ."
    assert normalize_cased(text) == '"Obama visited the U.S. in 2013," she said \'twice\'.'
    assert normalize_cased("\uff21\uff22\uff23 x") == "ABC x"  # NFKC
    assert normalize_cased('He said "no. It is over.') == "He said no. It is over."  # an unpaired quote goes


def test_dedup_key_is_case_insensitive():
    assert dedup_key("Obama visited the U.S. in 2013.") == dedup_key("obama visited the u.s. in 2013")
    assert dedup_key("Obama visited Paris.") != dedup_key("Obama visited Rome.")


def test_untokenize_lowercased_benchmark_sentences():
    assert untokenize_lowercased("it 's a film , i think .") == "It's a film, I think."
    assert untokenize_lowercased("-lrb- sic -rrb- it does n't work") == "(sic) it doesn't work"
    assert untokenize_lowercased("peter\\/spider-man is fun .") == "Peter/spider-man is fun."


def test_split_sentences_respects_abbreviations():
    assert split_sentences("Use a tool, e.g. Vim or Emacs. Then save it! Is 2013 over? Yes.") == [
        "Use a tool, e.g. Vim or Emacs.", "Then save it!", "Is 2013 over?", "Yes."]


def test_is_prose_rejects_code():
    assert is_prose("The kernel frees the page when the last reference is dropped.")
    assert not is_prose("Call foo_bar() to free it.")
    assert not is_prose("See https://example.org for more.")
    assert not is_prose("the sentence starts in lower case.")
    assert not is_prose("No final stop here")
    assert not is_prose("THIS IS SHOUTED TEXT HERE.")


def test_markup_paragraphs():
    page = "<html><head><title>t</title></head><body><p>One &amp; two.</p><pre>x = 1</pre><p>Three.</p></body>"
    assert html_paragraphs(page) == ["One & two.", "Three."]
    rst = "Title\n=====\n\nSome :func:`open` text with ``code``.\n\n    literal block\n\n.. note:: x\n"
    assert rst_paragraphs(rst) == ["Some open text with code."]
    assert pod_paragraphs("=head1 NAME\n\nUse B<C<open>> and L<perlfunc|x>.\n\n  code\n") == ["Use open and perlfunc."]
    roff = ".TH X 1\n.SH NAME\nThe\n.B open\ncall opens \\fIfiles\\fP.\n.nf\ncode\n.fi\n"
    assert "The open call opens files." in roff_paragraphs(roff)
    assert all("code" not in p for p in roff_paragraphs(roff))


def _docs(prefix: str, n: int, per_doc: int = 3) -> list[Doc]:
    return [Doc(f"d{i}", [f"{prefix} document {i} has sentence number {j} in it." for j in range(per_doc)])
            for i in range(n)]


def test_held_out_is_stable_and_by_fraction():
    picks = [held_out("src", f"d{i}", 0.1, 13) for i in range(2000)]
    assert picks == [held_out("src", f"d{i}", 0.1, 13) for i in range(2000)]
    assert 120 < sum(picks) < 280
    assert not any(held_out("src", f"d{i}", 0.0, 13) for i in range(100))
    assert picks != [held_out("src", f"d{i}", 0.1, 14) for i in range(2000)]  # the seed matters


def test_held_out_documents_never_reach_train():
    docs = _docs("Alpha", 200)
    # a sentence of a held-out document also appears in a training document: it must not be trained on
    held = [d for d in docs if held_out("alpha", d.id, 0.2, 13)]
    assert held
    docs.append(Doc("extra", [held[0].sentences[0].upper().replace("ALPHA", "Alpha")]))
    loaded = {"alpha": load_source("alpha", "technical", docs, 0.2, 13, prose=False, leave_out=None)}
    corpus = build_modern_corpus(loaded, {}, heldout_size=50, seed=13)
    train_keys = {dedup_key(s) for s in corpus.train}
    for doc in held:
        assert not train_keys & {dedup_key(s) for s in doc.sentences}
    kept = [d for d in docs if not held_out("alpha", d.id, 0.2, 13) and d.id != "extra"]
    assert train_keys == {dedup_key(s) for d in kept for s in d.sentences}
    assert corpus.stats["sources"]["alpha"]["in_heldout_document"] == 1
    assert {h["source"] for h in corpus.heldout} == {"alpha"}
    assert {dedup_key(h["text"]) for h in corpus.heldout} <= {dedup_key(s) for d in held for s in d.sentences}


def test_benchmark_test_sentences_are_excluded_from_train():
    docs = [Doc("a", ["A man is playing a guitar on the stage.", "The cat sat on the warm mat today."]),
            Doc("b", ["a man is playing a GUITAR on the stage", "Nothing here is from a benchmark at all."])]
    tests = {"sick-test": [("captions", "A man is playing a guitar on the stage.")],
             "trec-test": [("questions", "What is the capital city of France?")]}
    loaded = {"src": load_source("src", "web", docs, 0.0, 13, prose=False, leave_out=None)}
    corpus = build_modern_corpus(loaded, tests, heldout_size=10, seed=13)
    assert sorted(corpus.train) == ["Nothing here is from a benchmark at all.", "The cat sat on the warm mat today."]
    assert corpus.stats["sources"]["src"]["benchmark_test_overlap"] == 2
    assert {h["source"] for h in corpus.heldout} == {"sick-test", "trec-test"}


def test_length_limits_and_filters():
    docs = [Doc("a", ["Too short.", " ".join(["word"] * 31) + ".", "This one has exactly the right length.",
                      "This one is rude and flagged by the filter."])]
    flag = lambda sentences: ["offensive" if "rude" in s else None for s in sentences]
    loaded = load_source("src", "web", docs, 0.0, 13, prose=False, leave_out=flag)
    assert [s for s, _ in loaded.train] == ["This one has exactly the right length."]
    assert loaded.counts["wrong_length"] == 2 and loaded.counts["offensive"] == 1


def test_sample_heldout_balances_genres():
    pools = {"news": [(f"News sentence number {i} is here.", "mrpc-test") for i in range(500)],
             "captions": [(f"A dog runs in field {i} today.", "sick-test") for i in range(500)],
             "questions": [(f"What is question number {i} about?", "trec-test") for i in range(40)],
             "technical": [(f"The kernel handles case {i} well.", "linux-doc") for i in range(300)]}
    pools["news"].append(("See http://example.org for the news.", "stsb-test"))
    sample = sample_heldout(pools, 400, seed=5)
    assert not any("http" in h["text"] for h in sample)
    assert len(sample) == 400
    counts = Counter(h["genre"] for h in sample)
    assert counts["questions"] == 40  # a short genre gives all it has; the others share the rest
    assert counts["news"] == counts["captions"] == counts["technical"] == 120
    assert sample == sample_heldout(pools, 400, seed=5)
    assert sample != sample_heldout(pools, 400, seed=6)


def test_write_modern_corpus(tmp_path: Path):
    docs = _docs("Beta", 100)
    loaded = {"beta": load_source("beta", "technical", docs, 0.1, 13, prose=False, leave_out=None)}
    corpus = build_modern_corpus(loaded, {"mrpc-test": [("news", "The company said its profit rose sharply.")]},
                                 heldout_size=20, seed=13)
    write_modern_corpus(corpus, tmp_path)
    lines = (tmp_path / "heldout.jsonl").read_text().splitlines()
    assert [json.loads(l)["text"] for l in lines] == (tmp_path / "heldout.txt").read_text().splitlines()
    assert set(json.loads(lines[0])) == {"text", "genre", "source"}
    assert (tmp_path / "train.txt").read_text().splitlines() == corpus.train


def test_train_genres_follow_the_shuffled_train_lines(tmp_path: Path):
    loaded = {"news": load_source("news", "news", _docs("Gamma", 60), 0.0, 13, prose=False, leave_out=None),
              "tech": load_source("tech", "technical", _docs("Delta", 60), 0.0, 13, prose=False, leave_out=None)}
    corpus = build_modern_corpus(loaded, {}, heldout_size=0, seed=13)
    write_modern_corpus(corpus, tmp_path)
    genres = (tmp_path / "train-genres.txt").read_text().splitlines()
    lines = (tmp_path / "train.txt").read_text().splitlines()
    assert len(genres) == len(lines) == 360
    assert set(genres[:20]) == {"news", "technical"}  # shuffled together
    assert all(g == ("news" if "Gamma" in s else "technical") for s, g in zip(lines, genres))
    assert json.loads((tmp_path / "corpus.json").read_text())["train"] == len(corpus.train)


def test_read_benchmark_tests_reads_every_test_split(tmp_path: Path):
    (tmp_path / "SICK").mkdir()
    header = "pair_ID\tsentence_A\tsentence_B\trelatedness_score\n"
    for name in ("SICK_test_annotated.txt", "SICK_trial.txt"):
        (tmp_path / "SICK" / name).write_text(header + f"1\tA {name} one.\tB {name} two.\t4.5\n")
    (tmp_path / "STS" / "STSBenchmark").mkdir(parents=True)
    for name in ("sts-test.csv", "sts-dev.csv"):
        (tmp_path / "STS/STSBenchmark" / name).write_text(f"main-news\tx\ty\t1\t3.0\tS {name} a.\tS {name} b.\n")
    (tmp_path / "MRPC").mkdir()
    (tmp_path / "MRPC/msr_paraphrase_test.txt").write_text("Quality\t#1\t#2\tS1\tS2\n1\t1\t2\tM one.\tM two.\n")
    (tmp_path / "TREC").mkdir()
    (tmp_path / "TREC/TREC_10.label").write_text("NUM:date When was it built ?\n")
    (tmp_path / "SST/binary").mkdir(parents=True)
    for name in ("sentiment-test", "sentiment-dev"):
        (tmp_path / "SST/binary" / name).write_text(f"a {name} film .\t1\n")
    tests = read_benchmark_tests(tmp_path)
    assert tests["trec-test"] == [("questions", "When was it built?")]
    assert tests["stsb-test"][0] == ("news", "S sts-test.csv a.")
    assert tests["sst-dev"] == [("reviews", "A sentiment-dev film.")]
    assert {k for k, v in tests.items() if v} == {"sick-test", "sick-trial", "stsb-test", "stsb-dev", "mrpc-test",
                                                  "trec-test", "sst-test", "sst-dev"}
