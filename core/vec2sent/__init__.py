"""Vec2Sent: decode sentence embeddings back into sentences (Kerscher & Eger, 2020).

    from core.vec2sent import load_checkpoint, evaluate_expression
    decoder = load_checkpoint("checkpoints/vec2sent-NAME", encoder_fingerprint=engine.fingerprint)
    vector = evaluate_expression("b - a + c", {"a": va, "b": vb, "c": vc})
    decoder.decode(vector[None], beam_width=4)          # ["she drinks wine ."]

Modules: model and transformer (the decoders), decode (greedy / beam search), refine and truecase
(the decoding's corrections), reading (`DecodeSettings` and the one way from vectors to the sentences shown,
which the engine and the diagnostics share), fit (a text's cosine to a vector), checkpoint (save / load, encoder
check), train, diagnostics (Id, PERM, BLEU), expression. Its training sentences are built by core/corpus/. The commands are `python -m core
vec2sent-corpus`, `vec2sent-train` and `vec2sent-diagnostics` (core/cli/vec2sent.py); train and diagnostics
are not imported here, which keeps this import light.
"""
from core.vec2sent.checkpoint import EncoderMismatchError, Vec2Sent, load_checkpoint, save_checkpoint
from core.vec2sent.decode import beam_search, greedy_decode
from core.vec2sent.expression import ExpressionError, evaluate_expression, sentence_names
from core.vec2sent.model import Vec2SentConfig, Vec2SentDecoder
from core.vec2sent.examples import ANALOGY_EXAMPLES
from core.vec2sent.reading import API_DEFAULT, APP, APP_BEAM, MOST_EXACT, PATH_DEFAULT, DecodeSettings

__all__ = [
    "ANALOGY_EXAMPLES",
    "API_DEFAULT",
    "APP",
    "APP_BEAM",
    "beam_search",
    "DecodeSettings",
    "EncoderMismatchError",
    "evaluate_expression",
    "ExpressionError",
    "greedy_decode",
    "load_checkpoint",
    "MOST_EXACT",
    "PATH_DEFAULT",
    "save_checkpoint",
    "sentence_names",
    "Vec2Sent",
    "Vec2SentConfig",
    "Vec2SentDecoder",
]
