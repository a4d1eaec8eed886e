"""Issue 60, 2: what the form-asked rules find in people's descriptions, and what counting a lemma written in the
asked form changes, on the vectors a fresh start answers from (the checkpoint's compact ones, not re-scored:
seconds, where the exact ones take 20+ minutes to embed once).

    python -m research.forms_probe
"""
from __future__ import annotations

from collections import Counter
from unittest import mock

import core.evaluation.reverse as reverse
from core.engine import Engine
from core.evaluation.reverse import read_human_descriptions, summary, table6
from core.lexicon.forms import asked_form
from core.lexicon.norms import read_norms
from core.paths import FEATURE_NORMS


def main() -> int:
    human = read_human_descriptions()
    found = Counter(asked_form(q.text) for q in human)
    print("forms asked, human dev:", dict(found), "; Table 6:", dict(Counter(asked_form(q.text) for q in table6())))
    engine = Engine.load(decoder=None, open_vocabulary=False)
    engine.words.set_precision("float32")
    engine.enable_open_vocabulary()  # compact
    engine.words.open_vocab.rescorer = None
    norms = {d.word for d in read_norms(FEATURE_NORMS)} if FEATURE_NORMS.is_file() else set()
    sets = {"human dev": human, "in the norms": [q for q in human if q.word in norms],
            "not in the norms": [q for q in human if q.word not in norms], "Table 6": table6()}
    for name, queries in sets.items():
        with mock.patch.object(reverse, "asked_form", lambda text: None):
            before = summary(reverse.ranks(engine, queries))
        after = summary(reverse.ranks(engine, queries))
        print(f"{name} ({len(queries)}): lemmas only {before}; a lemma written in the form asked counts {after}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
