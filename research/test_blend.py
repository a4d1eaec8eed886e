"""research/blend.py: base + alpha * delta, its measurements and the saved blend, on a tiny model
(research code keeps its tests: `python -m pytest` runs research/ too)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from core import Engine
from core.lexicon.dictionary import Entry
from core.train import TrainConfig, train
from research.blend import BlendedEngine, main
from tests.conftest import build_tiny_bert

TEXTS = ["a small dog", "the man in charge of the city"]
WORDS = ["dog", "king", "river", "bread", "car", "teacher", "song", "tree", "cat", "queen", "house", "water",
         "fire", "book", "city", "road", "doctor", "child", "wine", "pizza"]
ENTRIES = [Entry(word, f"a {word} that is good and small") for word in WORDS]


@pytest.fixture(scope="module")
def tiny_mlm_dir(tmp_path_factory):
    return build_tiny_bert(tmp_path_factory.mktemp("tiny_mlm"), with_mlm_head=True)


@pytest.fixture()
def trained(tiny_mlm_dir, tmp_path):
    """A checkpoint whose encoder differs from its base in one tensor; its path and that tensor's name."""
    engine = Engine.from_base(str(tiny_mlm_dir))
    name = "backbone.encoder.layer.1.output.dense.bias"
    bias = engine.encoder.state_dict()[name]
    with torch.no_grad():  # not a constant: the LayerNorm after this bias would cancel a constant shift
        bias.add_(torch.linspace(-1, 1, bias.numel()))
    return engine.save(tmp_path / "trained"), name


def test_alpha_walks_from_the_base_to_the_checkpoint(trained, tiny_mlm_dir):
    path, name = trained
    blend = BlendedEngine(path)
    base = Engine.load(path, untrained=True, decoder=None).encode(TEXTS)
    tuned = Engine.load(path, decoder=None).encode(TEXTS)
    np.testing.assert_allclose(blend.set_alpha(0.0).encode(TEXTS), base, atol=1e-6)
    np.testing.assert_allclose(blend.set_alpha(1.0).encode(TEXTS), tuned, atol=1e-3)  # delta stored in fp16
    halfway = blend.set_alpha(0.5).encoder.state_dict()[name]
    torch.testing.assert_close(halfway, blend.base[name] + 0.5 * torch.linspace(-1, 1, halfway.numel()),
                               atol=1e-3, rtol=0)
    assert not np.allclose(blend.engine.encode(TEXTS), base, atol=1e-4)


def test_word_vectors_follow_the_blended_encoder(trained):
    path, _ = trained
    engine = Engine.load(path, decoder=None)
    engine.add_word_vectors(scale=3.0)
    engine.save_word_scoring(path)
    blend = BlendedEngine(path)
    for alpha in (1.0, 0.0):
        words = [blend.engine.words.vocab.words[i] for i in blend.set_alpha(alpha).words.vectors.ids.tolist()]
        fresh = blend.engine.encode(words, normalize=True)
        np.testing.assert_allclose(blend.engine.words.vectors.vectors.numpy(), fresh, atol=1e-5)
    assert blend.engine.words.vectors.scale == 3.0


def test_fingerprint_follows_the_weights(trained):
    blend = BlendedEngine(trained[0])
    fingerprints = {alpha: blend.set_alpha(alpha).fingerprint for alpha in (0.0, 0.5, 0.0)}
    assert len(set(fingerprints.values())) == 2


def test_cli_measures_and_saves_the_blend(trained, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr("core.lexicon.dictionary.load_wordnet", lambda: ENTRIES)
    out = tmp_path / "blended"
    assert main(["--model", str(trained[0]), "--alphas", "0.5", "--out", str(out),
                 "--senteval", str(tmp_path / "no-senteval")]) == 0
    printed = capsys.readouterr().out
    assert "| alpha | dev MRR | dev top-10 | test MRR | test top-10 |" in printed and "| 0.5 |" in printed
    saved = Engine.load(out, decoder=None)
    assert saved.manifest["training"]["blend"]["alpha"] == 0.5
    np.testing.assert_allclose(saved.encode(TEXTS), BlendedEngine(trained[0]).set_alpha(0.5).encode(TEXTS),
                               atol=1e-3)


def test_cli_refuses_to_save_several_alphas(trained, tmp_path):
    with pytest.raises(SystemExit):
        main(["--model", str(trained[0]), "--alphas", "0.5", "1", "--out", str(tmp_path / "x")])


def test_a_low_rank_checkpoint_blends_like_a_dense_one(tiny_mlm_dir, tmp_path):
    engine = Engine.from_base(str(tiny_mlm_dir))
    train(engine, ENTRIES, ENTRIES, TrainConfig(lora_rank=2, lr=1e-2, max_steps=30, batch_size=8, eval_every=10,
                                                seed=1, word_vector_scale=0, hub_weight=0.0))
    path = engine.save(tmp_path / "lora")
    blend = BlendedEngine(path)
    texts = ["a dog that runs", "the king"]
    np.testing.assert_allclose(blend.set_alpha(1.0).encode(texts), Engine.load(path).encode(texts), atol=1e-5)
    np.testing.assert_allclose(blend.set_alpha(0.0).encode(texts),
                               Engine.load(path, untrained=True).encode(texts), atol=1e-6)
