"""The "words" task: DefSent's word prediction (MRR, top-1/3/10) on WordNet words unseen in training.

Needs a model with a word head (an Engine); other encoders are skipped with a note. The split is
the one the checkpoint was trained with (its manifest's split seed, else 0, the shipped model's);
`EvaluationConfig.words_split` chooses its dev or test part.
"""
from __future__ import annotations

from tqdm.auto import tqdm

from ..words.scorer import WordScorer
from .base import EvaluationConfig, TaskResult, TextEncoder

COLUMNS = {"mrr": "MRR", "top1": "top-1", "top3": "top-3", "top10": "top-10"}


def has_word_head(encoder: TextEncoder) -> bool:
    """True for encoders that rank words (an Engine: its `words`, a WordScorer)."""
    return isinstance(getattr(encoder, "words", None), WordScorer)


def run_words(encoder: TextEncoder, config: EvaluationConfig) -> TaskResult:
    """Row "test" (or "dev"): MRR x100 and top-k accuracy % over that split's definitions."""
    from core.lexicon.dictionary import load_wordnet, split_by_word
    from core.words.word_eval import evaluate_words

    part = config.words_split
    dataset = f"WordNet {part}"
    if not has_word_head(encoder):
        return TaskResult(rows={}, averaged=False, missing={
            dataset: f"{dataset}: the model has no word head (only Engine checkpoints predict words)"})
    seed = int(getattr(encoder, "manifest", {}).get("training", {}).get("split_seed", 0))
    entries = getattr(split_by_word(load_wordnet(), seed=seed), part)
    with tqdm(desc="words", unit="def", disable=not config.show_progress) as bar:
        def progress(done: int, total: int) -> None:
            bar.total = total
            bar.update(done - bar.n)

        metrics = evaluate_words(encoder, entries, progress=progress)
    row = {column: 100 * metrics[key] for key, column in COLUMNS.items()}
    return TaskResult(rows={part: row}, details={dataset: {"definitions": metrics["n"], "split_seed": seed}},
                      notes=[(f"{metrics['n']:,} {part} definitions of words never seen in training "
                              f"(WordNet split seed {seed}); every vocabulary token is a candidate.")],
                      averaged=False)
