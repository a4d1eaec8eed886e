"""Exploring the space at scale: `reference` (WordNet's definitions and words as searchable collections),
`corpus_index` (a large sentence file embedded and indexed), `vocabulary_map` (one 2-D map of every word)
and `projector` (the Embedding Projector's TSV files in and out)."""
