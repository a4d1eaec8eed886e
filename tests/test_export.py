"""An engine's encoder seen from outside it (core/export.py): its facts, and its sentence-transformers folder."""
from __future__ import annotations

import json

import numpy as np
import pytest

from core.export import EncoderFacts, encoder_facts, save_sentence_transformers


def test_encoder_facts_are_the_encoders(engine, tiny_mlm_dir):
    config = json.loads((tiny_mlm_dir / "config.json").read_text(encoding="utf-8"))
    facts = encoder_facts(engine)
    assert facts == EncoderFacts("mean", facts.max_length, config["hidden_size"], config["num_hidden_layers"],
                                 facts.parameters)
    assert 0 < facts.max_length <= 128  # the engine's default, or less where the model's positions end sooner
    assert facts.parameters == sum(p.numel() for p in engine.encoder.backbone.parameters()) > 0


def test_the_sentence_transformers_folder_encodes_as_the_engine(engine, tmp_path):
    facts = encoder_facts(engine)
    folder = save_sentence_transformers(engine, tmp_path / "st")
    pooling = json.loads((folder / "1_Pooling" / "config.json").read_text(encoding="utf-8"))
    assert pooling["word_embedding_dimension"] == facts.hidden_size and pooling["pooling_mode_mean_tokens"]
    assert [mode for mode, on in pooling.items() if on is True] == ["pooling_mode_mean_tokens"]
    settings = json.loads((folder / "sentence_bert_config.json").read_text(encoding="utf-8"))
    assert settings["max_seq_length"] == facts.max_length
    st = pytest.importorskip("sentence_transformers")
    vectors = st.SentenceTransformer(str(folder), device="cpu").encode(["a dog", "a red car"])
    assert np.allclose(vectors, engine.encode(["a dog", "a red car"]), atol=1e-4)
