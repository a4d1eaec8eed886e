"""Build core/data/word-forms.tsv.gz: the inflected forms of WordNet's words that are attested, the only ones
the app writes (a reverse-dictionary answer in the form its description asks for, an analogy's edit).

    bash scripts/fetch_wordnet.sh && pip install wordfreq==3.1.1 && python -m scripts.build_word_forms

One `lemma<TAB>form<TAB>written` line per attested form of a one-word WordNet lemma, `form` one of FORMS
(core/lexicon/forms.py: plural of a noun, third person of a verb, past, past participle, -ing, comparative,
superlative). A form is attested when
- the lexicon knows it: WordNet 3.0's exception lists (noun.exc, verb.exc, adj.exc, adv.exc: mice, took,
  taken, better), "-man" plurals in "-men" where more frequent (women, not humen), a few forms the lists
  leave out (people; pasts and plurals the same as their lemma: put, sheep); of an irregular form and the regular
  spelling (fishes, fished) the more frequent is kept, and an irregular form is kept however rare;
- or its regular spelling (forms.py's rules) is known to wordfreq at Zipf >= MIN_ZIPF and within MAX_DROP of
  its lemma ("candles" 3.8 beside "candle" 3.9 is kept; "offsprings" 1.9, "youngs" 2.6 beside "young" 5.4 not);
- a comparison written with "more" / "most" is kept for an adjective or adverb whose most frequent WordNet
  sense (index.adj / index.adv) is not a relational one (lexicographer file adj.pert: "monetary", "economic").

wordfreq's data (Speer, 2022) is licensed CC BY-SA 4.0 and WordNet's under the WordNet 3.0 licence; the table
is derived from both (core/data/README.md). Only this script needs wordfreq and the unpacked WordNet.
"""
from __future__ import annotations

import argparse
import gzip
import re
from collections import defaultdict
from pathlib import Path

from core.lexicon.dictionary import load_wordnet_lemmas
from core.lexicon.forms import ALL_FORMS, FORMS_FILE, rule_form

ROOT = Path(__file__).resolve().parents[1]
WORDNET_DIR = ROOT / "data" / "cache" / "wordnet-deb" / "usr" / "share" / "wordnet"
MIN_ZIPF = 2.5   # a regular form rarer than this (about 300 uses a billion words) is not written
MAX_DROP = 2.5   # nor one this much rarer than its lemma (on the Zipf scale: 300 times)
ZERO_PLURALS = ("sheep deer fish moose series species aircraft offspring swine bison salmon trout means "
                "headquarters cod").split()
IRREGULAR = {("person", "plural"): "people", ("little", "comparative"): "less", ("little", "superlative"): "least",
             ("much", "comparative"): "more", ("much", "superlative"): "most", ("many", "comparative"): "more",
             ("many", "superlative"): "most", ("badly", "comparative"): "worse", ("badly", "superlative"): "worst", ("far", "superlative"): "furthest"}
PRESENT = {"am", "are", "is", "has", "does"}  # verb.exc's present forms of be, have, do
SAME_PAST = "put cut hit let set shut hurt cost quit spread read bet burst beat cast fit split thrust upset shed".split()
SAME_PARTICIPLE = "come become overcome run outrun rerun".split()  # the participle is the lemma itself
# The forms a part of speech takes: a verb's "plural" is its third person (a noun's plural first)
TAKES = {"n": ("plural",), "v": ("plural", "third", "past", "participle", "ing"),
         "a": ("comparative", "superlative"), "s": ("comparative", "superlative"), "r": ("comparative", "superlative")}
ADJ_PERT = "01"  # lexicographer file number of relational adjectives


def exceptions(wordnet: Path) -> dict[tuple[str, str], list[str]]:
    """(lemma, form) -> its irregular forms in WordNet's exception lists. verb.exc mixes pasts and past
    participles: of a lemma's two or more, those in -n/-ne (taken, done) or with u where another has a (sung)
    are participles (sung beside sang, though "began" ends in -n); a lemma's only one is both."""
    found: dict[tuple[str, str], list[str]] = defaultdict(list)
    verbs: dict[str, list[str]] = defaultdict(list)
    for name in ("noun", "verb", "adj", "adv"):
        for line in (wordnet / f"{name}.exc").read_text(encoding="utf-8").splitlines():
            written, *lemmas = line.split()
            if not written.isalpha() or written in PRESENT:
                continue
            for lemma in (lemma for lemma in lemmas if lemma != written):  # "feed" is fee's past, not feed's
                if name == "noun":
                    found[lemma, "plural"].append(written)
                elif name == "verb" and written.endswith("ing"):
                    found[lemma, "ing"].append(written)
                elif name == "verb":
                    verbs[lemma].append(written)
                else:
                    found[lemma, "superlative" if written.endswith("st") else "comparative"].append(written)
    for lemma, forms in verbs.items():
        if len(forms) == 1:
            participles = forms if re.search(r"(en|wn|rn)$", forms[0]) else []
        else:
            participles = ([f for f in forms if _u_for_a(f, forms)]
                           or [f for f in forms if re.search(r"(n|ne)$", f)])
        found[lemma, "participle"] += participles or forms
        found[lemma, "past"] += [f for f in forms if f not in participles] if participles != forms else []
    for (lemma, form), written in IRREGULAR.items():
        found[lemma, form].append(written)
    for form, lemmas in (("plural", ZERO_PLURALS), ("past", SAME_PAST), ("participle", SAME_PAST + SAME_PARTICIPLE)):
        for lemma in lemmas:
            found[lemma, form].insert(0, lemma)
    return found


def _u_for_a(form: str, forms: list[str]) -> bool:
    """sung beside sang, swum beside swam: the u form is the participle."""
    return any(len(o) == len(form) and [(x, y) for x, y in zip(form, o) if x != y] == [("u", "a")] for o in forms)


def relational(wordnet: Path) -> set[str]:
    """Adjectives and adverbs whose first (most frequent) sense is in adj.pert ("of or relating to ...")."""
    files = {}
    for line in (wordnet / "data.adj").read_text(encoding="latin-1").splitlines():
        if not line.startswith(" "):
            offset, lexfile = line.split()[:2]
            files[offset] = lexfile
    out = set()
    for line in (wordnet / "index.adj").read_text(encoding="latin-1").splitlines():
        if not line.startswith(" "):
            fields = line.split()
            pointers = int(fields[3])
            first_offset = fields[4 + pointers + 2]
            if files.get(first_offset) == ADJ_PERT:
                out.add(fields[0])
    return out


def attested_forms(wordnet: Path, zipf) -> list[tuple[str, str, str]]:
    """(lemma, form, written) for every attested form of a one-word WordNet lemma."""
    irregular, pert = exceptions(wordnet), relational(wordnet)
    pos: dict[str, set[str]] = defaultdict(set)
    for entry in load_wordnet_lemmas():
        if entry.word.isalpha():
            pos[entry.word].add(entry.pos)
    rows = []
    for lemma in sorted(pos):
        for form in dict.fromkeys(f for p in sorted(pos[lemma]) for f in TAKES[p]):
            as_form = "third" if form == "plural" and "n" not in pos[lemma] else form  # a verb's "plural"
            written = _attested(lemma, as_form, irregular.get((lemma, as_form), []), lemma in pert, zipf)
            if written is not None:
                rows.append((lemma, form, written))
    return rows


def _attested(lemma: str, form: str, irregular: list[str], relational_adjective: bool, zipf) -> str | None:
    regular = rule_form(lemma, form)
    if form == "plural" and lemma.endswith("man") and zipf(lemma[:-2] + "en") > zipf(regular):
        irregular = [*irregular, lemma[:-2] + "en"]  # woman -> women (Morphy's rule, not in noun.exc); human
    if irregular:
        return max([*irregular, regular], key=lambda w: (zipf(w), w in irregular))
    if " " in regular:  # more / most
        return None if relational_adjective else regular
    known = zipf(regular)
    return regular if known >= MIN_ZIPF and known >= zipf(lemma) - MAX_DROP else None


def main() -> None:
    from wordfreq import zipf_frequency

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--wordnet-dir", type=Path, default=WORDNET_DIR)
    p.add_argument("--out", type=Path, default=FORMS_FILE)
    args = p.parse_args()
    rows = attested_forms(args.wordnet_dir, lambda w: zipf_frequency(w, "en"))
    assert {form for _, form, _ in rows} <= set(ALL_FORMS)
    with gzip.GzipFile(args.out, "wb", mtime=0) as out:  # mtime=0: the same inputs give the same bytes
        out.write("".join(f"{lemma}\t{form}\t{written}\n" for lemma, form, written in rows).encode("utf-8"))
    print(f"{len(rows):,} attested forms of {len({r[0] for r in rows}):,} lemmas; wrote {args.out}")


if __name__ == "__main__":
    main()
