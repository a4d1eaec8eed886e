"""The words wing: everything that turns a sentence vector into ranked words.

`vocabulary` (whole-word candidates and their filters), `word_head` (the frozen MLM head over
single-token words), `word_vectors` and `hubness` (the head's word scoring), `open_vocab` (every
WordNet word and phrase as an answer: the experts and their mixture) with `open_vocab_fit` (its
weights) and `word_tower` (the words' own encoder delta), `word_prior` (how common a word is),
`product_quantizer` (the compact vectors a checkpoint ships) with `exact_rescoring` (a fresh start's first
candidates scored with exact vectors embedded on demand), `word_eval` (word prediction scores), and
`query_adapter` with `adapter_fit` (how the everyday expert reads people's descriptions, trained on them).
`scorer` holds them as one object, `WordScorer`, which the engine holds as `engine.words`; `open_vocabulary`
owns the open vocabulary's life (`OpenVocabulary`, `engine.vocabulary`: its state, caches and transitions). The
app reaches them through the engine's public face (`engine.vocabulary`, never `engine.words`).
"""
from .open_vocab import APPROXIMATE_ANSWERS, COMPACT_VECTORS, Candidates, OpenScorer, OpenVocabConfig, evaluate_among
from .open_vocabulary import EmbeddingProgress, OpenVocabulary, VocabularyState
from .scorer import WordScorer
from .vocabulary import WordFilter, WordVocabulary
from .word_eval import definition_pairs, evaluate_words, format_table
from .word_prior import FREQUENCY_BANDS, frequency_bands, zipf_frequencies

__all__ = [
    "APPROXIMATE_ANSWERS",
    "COMPACT_VECTORS",
    "Candidates",
    "EmbeddingProgress",
    "definition_pairs",
    "evaluate_among",
    "evaluate_words",
    "format_table",
    "frequency_bands",
    "FREQUENCY_BANDS",
    "OpenScorer",
    "OpenVocabulary",
    "OpenVocabConfig",
    "WordFilter",
    "WordScorer",
    "VocabularyState",
    "WordVocabulary",
    "zipf_frequencies",
]
