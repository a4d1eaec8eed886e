"""The corpus builders: data preparation for the Vec2Sent decoder and the corpus index, apart from decoding.

`classic` builds the first, lower-case corpus (Brown, Austen, WordNet; `python -m core vec2sent-corpus`),
`modern` the cased corpus of modern packaged English the shipped decoder trained on (`--modern`).
"""
