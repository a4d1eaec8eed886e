"""A fine-tune on a glossary like the ones users bring, as the app runs it (issue 42).

    python bench/bench_finetune.py                      # the shipped model, default Fine-tune settings
    python bench/bench_finetune.py --objectives head own --threads 2

The glossary (written to data/cache/finetune-bench.tsv) is drawn from GCIDE (scripts/fetch_gcide.sh),
a dictionary the model never trained on, with a fixed seed: 156 words in 203 rows, of them 40 invented
(a GCIDE word's definitions under a made-up name, 16 of the names with non-ASCII letters: their
spelling says nothing, as with jargon), 25 phrases (from the held-out test split of WordNet's
lemmas, which neither the encoder nor its word tower trained on: GCIDE has none), 76 words of several pieces and 15 single tokens.
It runs the Fine-tune tab's job body (app/shared/finetune.py `run_finetune`) with the default settings and
prints, per objective ("head": the DefSent head alone; "own": every word of the dictionary,
`TrainConfig.own_words`): how many training words are classes of the objective, the held-out words'
MRR and top-10 among the dictionary's own words before and after (all, and those of several pieces),
and the seconds each stage took.
"""
from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path


COUNTS = {"invented": 40, "phrases": 25, "pieces": 76, "single": 15}  # 156 words
NON_ASCII = 16  # of the invented names
SECOND_DEFINITION = 47  # words given a second definition: 203 rows
SYLLABLES = ["bra", "clo", "dre", "fli", "gor", "hux", "jan", "kel", "lum", "mip", "nob", "pra", "quo", "rud",
             "sil", "tov", "ulk", "vex", "wim", "yar", "zed", "och", "arn", "isk"]
ACCENTED = str.maketrans({"a": "á", "o": "ö", "u": "ü", "e": "é", "n": "ñ"})


def glossary(gcide, phrases, vocab, seed: int = 42):
    """The benchmark's entries (core.lexicon.dictionary.Entry) and each word's kind: words from GCIDE entries
    (`gcide`), phrases from `phrases` (GCIDE has none); SECOND_DEFINITION of the words that have two definitions keep both."""
    from core.lexicon.dictionary import Entry

    rng = random.Random(seed)
    by_word: dict[str, list] = {}
    for entry in [*gcide, *phrases]:
        if 15 <= len(entry.definition) <= 200:
            by_word.setdefault(entry.word, []).append(entry)
    words = sorted(by_word)
    rng.shuffle(words)
    single = [w for w in words if w.isalpha() and vocab.token_id(w) is not None]
    pieces = [w for w in words if w.isalpha() and vocab.token_id(w) is None and len(w) >= 6]
    multi_word = [w for w in words if " " in w and all(p.isalpha() for p in w.split())]
    chosen = {"single": single[:COUNTS["single"]], "phrases": multi_word[:COUNTS["phrases"]],
              "pieces": pieces[:COUNTS["pieces"]], "invented": pieces[COUNTS["pieces"]:][:COUNTS["invented"]]}
    names = {w: invented_name(rng, i < NON_ASCII) for i, w in enumerate(chosen["invented"])}
    order = [w for kept in chosen.values() for w in kept]
    rng.shuffle(order)
    two = set([w for w in order if len(by_word[w]) >= 2][:SECOND_DEFINITION])
    entries = [Entry(names.get(w, w), e.definition, e.pos) for w in order for e in by_word[w][:2 if w in two else 1]]
    return entries, {names.get(w, w): kind for kind, kept in chosen.items() for w in kept}


def invented_name(rng: random.Random, accented: bool) -> str:
    name = "".join(rng.choice(SYLLABLES) for _ in range(rng.choice((2, 3))))
    return name.translate(ACCENTED) if accented else name


def run(engine_path: Path, entries, kinds, objective: str, out: Path, seed: int = 0) -> dict:
    from app.shared.finetune import FinetuneSettings, UploadData, run_finetune
    from core import Engine
    from core.lexicon.dictionary import split_by_word
    from core.words.open_vocab import evaluate_among

    class Printer:
        def report(self, **progress):
            if "stage" in progress and progress["stage"] != getattr(self, "stage", None):
                self.stage = progress["stage"]
                print(f"  [{time.strftime('%H:%M:%S')}] {self.stage}", flush=True)

        def record(self, **point):
            pass

    split = split_by_word(entries, seed=seed)
    upload = UploadData.pack("bench.tsv", "", seed, entries, len(split.train))
    settings = FinetuneSettings(own_words=objective == "own")  # the Fine-tune tab's defaults otherwise
    load = lambda: Engine.load(engine_path, open_vocabulary=False)  # noqa: E731
    started = time.perf_counter()
    result = run_finetune(Printer(), load, upload, settings, engine_path.name, out)
    seconds = time.perf_counter() - started
    tuned, base = Engine.load(out, open_vocabulary=False), load()
    several = [e for e in split.test if kinds[e.word] != "single"]
    return {"objective": objective, "seconds": round(seconds), "stages": result.training["stage_seconds"],
            "train_words": len({e.word for e in split.train}),
            "single_token_train_words": len({e.word for e in split.train if kinds[e.word] == "single"}),
            "test_words": len({e.word for e in split.test}), "test_definitions": len(split.test),
            "before": result.before, "after": result.after,
            "several_pieces_before": evaluate_among(base, several, entries)[0],
            "several_pieces_after": evaluate_among(tuned, several, entries)[0]}


def activation(out: Path, test) -> dict:
    """Seconds to activate the fine-tuned model at `out` reusing its parent's cached open-vocabulary
    vectors, against embedding all of them again; with each, the held-out `test` words ranked among
    the whole vocabulary (their own texts left out of the index) and the human dev descriptions."""
    from core import Engine
    from core.evaluation.reverse import Query, ranks, read_human_descriptions, scored_with, summary
    from core.paths import user_cache_dir

    result = {}
    for name, folder in (("reusing the parent's vectors", user_cache_dir("open-vocab")), ("embedding all again", None)):
        engine = Engine.load(out, open_vocabulary=False, decoder=None)
        engine.set_precision("auto")  # as the app encodes
        engine.words.set_precision("float32")  # to leave texts out of the index below
        with tempfile.TemporaryDirectory() as cache:
            started = time.perf_counter()
            if folder is None:
                engine.vocabulary.enable()
            else:
                engine.vocabulary.enable(cache_dir=cache)  # the parent's vectors: found in the user cache
            seconds = time.perf_counter() - started
        with scored_with(engine, engine.words.open_vocab.without_definitions(e.definition for e in test)):
            held_out = summary(ranks(engine, [Query(e.definition, e.word) for e in test]))
        result[name] = {"seconds": round(seconds, 1), "held_out_in_whole_vocabulary": held_out,
                        "human_dev": summary(ranks(engine, read_human_descriptions()))}
    return result


def main(argv: list[str] | None = None) -> int:
    from app.shared.jobs import usable_cores
    from core.checkpoint import DEFAULT_CHECKPOINT
    from core.words.open_vocab_fit import GCIDE_DICTD, missing_gcide, read_gcide_dictd
    from core.paths import CACHE_DIR

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", type=Path, default=DEFAULT_CHECKPOINT)
    parser.add_argument("--gcide", type=Path, default=GCIDE_DICTD)
    parser.add_argument("--objectives", nargs="+", default=["own"], choices=["head", "own"])
    parser.add_argument("--threads", type=int, default=usable_cores(),
                        help="torch threads (default: every usable core, as a private server's fine-tunes train)")
    parser.add_argument("--activation", action="store_true",
                        help="then activate the last 'own' model as the app does, reusing the cached vectors of the "
                             "model it started from, and once more embedding everything, and compare the two")
    parser.add_argument("--seeds", type=int, default=1, help="split seeds 0..N-1, each a run; the held-out "
                        "metrics are pooled over them (each split holds out a tenth of the words)")
    args = parser.parse_args(argv)
    if missing_gcide(args.gcide):
        parser.error(missing_gcide(args.gcide))
    import torch

    from core import Engine
    from core.lexicon.dictionary import lemma_split, split_by_word, write_entries

    torch.set_num_threads(args.threads)
    vocab = Engine.load(args.model, open_vocabulary=False, decoder=None).words.vocab
    held_out = lemma_split().test  # as the tower's
    test_phrases = [e for e in held_out if " " in e.word]
    entries, kinds = glossary(read_gcide_dictd(args.gcide), test_phrases, vocab)
    write_entries(entries, CACHE_DIR / "finetune-bench.jsonl.gz")
    print(f"glossary: {len(entries)} rows, {len(kinds)} words: "
          + ", ".join(f"{sum(k == kind for k in kinds.values())} {kind}" for kind in COUNTS))
    with tempfile.TemporaryDirectory() as tmp:
        for objective in args.objectives:
            print(f"objective {objective}:", flush=True)
            runs = [run(args.model, entries, kinds, objective, Path(tmp) / f"{objective}-{seed}", seed)
                    for seed in range(args.seeds)]
            for result in runs:
                print(f"  seed {runs.index(result)}: {result['train_words']} training words "
                      f"({result['single_token_train_words']} single tokens, all a class of the head objective; "
                      f"with 'own' every one is), {result['test_words']} held-out words "
                      f"({result['test_definitions']} definitions); {result['seconds']} s: "
                      + ", ".join(f"{stage} {s:.0f} s" for stage, s in result["stages"].items()), flush=True)
            if args.activation and objective == "own":
                from core.lexicon.dictionary import split_by_word
                test = split_by_word(entries, seed=args.seeds - 1).test
                for name, measured in activation(Path(tmp) / f"own-{args.seeds - 1}", test).items():
                    print(f"  activation, {name}: {measured}", flush=True)
            for key in ("before", "after", "several_pieces_before", "several_pieces_after"):
                n = sum(r[key]["n"] for r in runs)
                pooled = {m: sum(r[key][m] * r[key]["n"] for r in runs) / n for m in ("mrr", "top1", "top10")}
                print(f"  {key:22} MRR {pooled['mrr']:.3f}  top-1 {pooled['top1']:.3f}  top-10 {pooled['top10']:.3f}"
                      f"  (n {n}, pooled over {len(runs)} split(s))")
    return 0


if __name__ == "__main__":
    sys.exit(main())
