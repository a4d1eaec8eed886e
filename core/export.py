"""What may be known of an engine's encoder from outside the engine (`encoder_facts`), and the encoder written as a
sentence-transformers folder (`save_sentence_transformers`): the app and the command line ask these instead of
reaching into `engine.encoder`, so that the encoder's insides can change behind them.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .checkpoint import write_json

if TYPE_CHECKING:
    from .engine import Engine

# The pooling of a DefSent encoder -> the sentence-transformers Pooling module's flag for it
ST_POOLING_MODES = {"cls": "pooling_mode_cls_token", "mean": "pooling_mode_mean_tokens",
                    "max": "pooling_mode_max_tokens"}


@dataclass(frozen=True)
class EncoderFacts:
    """An engine's encoder as a reader outside the engine needs it."""
    pooling: str  # "mean", "cls" or "max"
    max_length: int  # tokens a text is cut to
    hidden_size: int  # numbers in a token's vector, and in a text's
    layers: int  # transformer layers (a fine-tune may train the top few)
    parameters: int  # numbers in the transformer's weights (times 4: its bytes in float32)


def encoder_facts(engine: Engine) -> EncoderFacts:
    """The facts of `engine`'s encoder."""
    encoder = engine.encoder
    return EncoderFacts(encoder.pooling, encoder.max_length, encoder.hidden_size,
                        int(encoder.backbone.config.num_hidden_layers),
                        sum(p.numel() for p in encoder.backbone.parameters()))


def save_sentence_transformers(engine: Engine, out: Path) -> Path:
    """Write `engine`'s encoder to the folder `out` in the sentence-transformers format (full weights, tokenizer,
    pooling and its settings), for `SentenceTransformer(out)`; the word head is not part of it. Returns `out`."""
    out = Path(out)
    (out / "1_Pooling").mkdir(parents=True, exist_ok=True)
    encoder = engine.encoder
    encoder.backbone.save_pretrained(out)
    encoder.tokenizer.save_pretrained(out)
    pooling = {mode: False for mode in ST_POOLING_MODES.values()}
    pooling[ST_POOLING_MODES[encoder.pooling]] = True
    write_json(out / "1_Pooling" / "config.json", {"word_embedding_dimension": encoder.hidden_size, **pooling})
    write_json(out / "modules.json", [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}])
    write_json(out / "sentence_bert_config.json", {"max_seq_length": encoder.max_length, "do_lower_case": False})
    write_json(out / "config_sentence_transformers.json", {"similarity_fn_name": "cosine"})
    return out
