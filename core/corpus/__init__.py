"""The corpus builders: data preparation for the Vec2Sent decoder and the corpus index, apart from decoding.

`classic` builds the first, lower-case corpus (Brown, Austen, WordNet; `python -m core vec2sent-corpus`),
`modern` the cased corpus of modern packaged English the shipped decoder trained on (`--modern`), from
the sources of `sources`, read by `readers`, split and judged by the rules of `sentences`.
"""
from .classic import TRAIN_ONLY_SOURCES, build_corpus, make_corpus
from .modern import build_modern_corpus, make_modern_corpus

__all__ = ["TRAIN_ONLY_SOURCES", "build_corpus", "build_modern_corpus", "make_corpus", "make_modern_corpus"]
