"""Vec2Sent: decode sentence embeddings back into sentences (Kerscher & Eger, 2020).

    from core.vec2sent import load_checkpoint, evaluate_expression
    decoder = load_checkpoint("checkpoints/vec2sent-NAME", encoder_fingerprint=engine.fingerprint)
    vector = evaluate_expression("b - a + c", {"a": va, "b": vb, "c": vc})
    decoder.decode(vector[None], beam_width=4)          # ["she drinks wine ."]

Modules: model and transformer (the decoders), decode (greedy / beam search), refine and truecase
(the decoding's corrections), checkpoint (save / load, encoder check), train, diagnostics (Id, PERM,
BLEU), expression. Its training sentences are built by core/corpus/. The commands are `python -m core
vec2sent-corpus`, `vec2sent-train` and `vec2sent-diagnostics` (core/cli.py); train and diagnostics
are not imported here, which keeps this import light.
"""
from core.vec2sent.checkpoint import EncoderMismatchError, Vec2Sent, load_checkpoint, save_checkpoint
from core.vec2sent.decode import beam_search, greedy_decode
from core.vec2sent.expression import ExpressionError, evaluate_expression
from core.vec2sent.model import Vec2SentConfig, Vec2SentDecoder

__all__ = [
    "EncoderMismatchError", "ExpressionError", "Vec2Sent", "Vec2SentConfig", "Vec2SentDecoder",
    "beam_search", "evaluate_expression", "greedy_decode", "load_checkpoint", "save_checkpoint",
]
