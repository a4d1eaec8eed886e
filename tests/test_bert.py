"""core/bert.py against transformers' BERT on tiny random checkpoints: same weights, same outputs."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

from core.bert import BertModel, Unsupported, load_bert
from core.encoder import SentenceEncoder

IDS = torch.tensor([[4, 30, 41, 52, 5, 0, 0], [4, 33, 34, 35, 36, 37, 5]])  # (B, T), row 0 padded
MASK = (IDS != 0).long()


def hidden_states(model: torch.nn.Module) -> torch.Tensor:
    with torch.no_grad():
        return model.eval()(input_ids=IDS, attention_mask=MASK).last_hidden_state


def test_same_weights_and_outputs_as_transformers(tiny_mlm_dir):
    from transformers import BertForMaskedLM
    reference = BertForMaskedLM.from_pretrained(tiny_mlm_dir)
    model, head = load_bert(tiny_mlm_dir)
    ours, theirs = model.state_dict(), reference.bert.state_dict()
    assert list(ours) == list(theirs)  # names and order: fingerprints and deltas carry over
    assert all(torch.equal(ours[k], theirs[k]) for k in ours)
    torch.testing.assert_close(hidden_states(model), hidden_states(reference.bert), atol=1e-6, rtol=1e-6)
    predictions = reference.cls.predictions
    assert torch.equal(head.transform.dense.weight, predictions.transform.dense.weight)
    assert torch.equal(head.transform.LayerNorm.bias, predictions.transform.LayerNorm.bias)
    assert torch.equal(head.bias, predictions.bias)


def test_padding_does_not_change_the_real_tokens(tiny_mlm_dir):
    model, _ = load_bert(tiny_mlm_dir)
    padded = hidden_states(model)[0, :5]
    with torch.no_grad():
        alone = model(input_ids=IDS[:1, :5], attention_mask=MASK[:1, :5]).last_hidden_state[0]
    torch.testing.assert_close(padded, alone, atol=1e-6, rtol=1e-6)


def test_folder_without_head_and_trainable_parameters(tiny_base_dir):
    model, head = load_bert(tiny_base_dir)
    assert head is None
    assert all(p.requires_grad for p in model.parameters())
    model.train()
    model(input_ids=IDS, attention_mask=MASK).last_hidden_state.sum().backward()
    assert model.encoder.layer[0].attention.self.query.weight.grad is not None


def test_save_pretrained_is_readable_by_transformers(tiny_mlm_dir, tmp_path):
    from transformers import BertModel as HFBertModel
    model, _ = load_bert(tiny_mlm_dir)
    model.save_pretrained(tmp_path)
    torch.testing.assert_close(hidden_states(HFBertModel.from_pretrained(tmp_path, add_pooling_layer=False)),
                               hidden_states(model), atol=1e-6, rtol=1e-6)
    assert json.loads((tmp_path / "config.json").read_text())["architectures"] == ["BertModel"]


def test_tensorflow_era_layer_norm_names(tiny_mlm_dir, tmp_path):
    """SPLADE-tiny names LayerNorm parameters gamma/beta; they load as weight/bias."""
    folder = Path(shutil.copytree(tiny_mlm_dir, tmp_path / "old"))
    tensors = load_file(str(folder / "model.safetensors"))
    renamed = {k.replace("LayerNorm.weight", "LayerNorm.gamma").replace("LayerNorm.bias", "LayerNorm.beta"): v
               for k, v in tensors.items()}
    save_file(renamed, str(folder / "model.safetensors"))
    old, old_head = load_bert(folder)
    new, _ = load_bert(tiny_mlm_dir)
    torch.testing.assert_close(hidden_states(old), hidden_states(new))
    assert old_head is not None


@pytest.mark.parametrize("change, reason", [
    ({"model_type": "roberta"}, "model_type"),
    ({"position_embedding_type": "relative_key"}, "position_embedding_type"),
    ({"is_decoder": True}, "decoder"),
    ({"hidden_act": "silu"}, "activation"),
])
def test_unsupported_configs_are_refused(tiny_mlm_dir, tmp_path, change, reason):
    folder = Path(shutil.copytree(tiny_mlm_dir, tmp_path / "other"))
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, **change}))
    with pytest.raises(Unsupported, match=reason):
        load_bert(folder)


def test_weights_that_do_not_fit_are_refused(tiny_mlm_dir, tmp_path):
    folder = Path(shutil.copytree(tiny_mlm_dir, tmp_path / "broken"))
    tensors = load_file(str(folder / "model.safetensors"))
    del tensors["bert.encoder.layer.1.output.dense.weight"]
    save_file(tensors, str(folder / "model.safetensors"))
    with pytest.raises(Unsupported, match="missing"):
        load_bert(folder)


def test_encoder_falls_back_to_transformers_for_what_bert_py_does_not_cover(tiny_mlm_dir, tmp_path):
    """A relative-position BERT is still a Hugging Face masked LM: transformers loads it."""
    folder = Path(shutil.copytree(tiny_mlm_dir, tmp_path / "relative"))
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "position_embedding_type": "relative_key"}))
    encoder, head = SentenceEncoder.from_pretrained(folder)
    assert not isinstance(encoder.backbone, BertModel) and head is not None
    assert encoder.encode(["a small dog"]).shape == (1, encoder.hidden_size)
    plain, _ = SentenceEncoder.from_pretrained(tiny_mlm_dir)
    assert isinstance(plain.backbone, BertModel)
