"""A model folder's tokenizer without transformers (core/tokenizer.py): the same ids, type ids and masks as
transformers' tokenizer of the folder, for the shipped base and a tiny BERT, on many kinds of text; anything
else asked of it answered by transformers' tokenizer; folders it cannot vouch for left to transformers."""
from __future__ import annotations

import copy
import json
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from core.checkpoint import DEFAULT_BASE, resolve_base
from core.lexicon.dictionary import load_wordnet
from core.tokenizer import BertFolderTokenizer, _bert_folder_tokenizer, load_tokenizer, tokenize_padded

ODD = ["a person who is in charge", "Café naïve résumé", "ÀÉÎÕÜ çñß", "中文字符 and 日本語", "emoji 😀 🎉 here",
       "tabs\tand\nnewlines\r\n", "zero\u200bwidth\u00a0space", "control \x00\x01\x7f chars", "   leading and trailing   ",
       "[CLS] [MASK] the [SEP] [PAD] [UNK]", "##ing ##s pieces", "ice-cream, o'clock; u.s.a. (e.g.) 3.14 -- 42%",
       "ＦＵＬＬＷＩＤＴＨ ｌｅｔｔｅｒｓ", "Ελληνικά и русский", "x", "supercalifragilisticexpialidocious" * 5,
       " ".join(["word"] * 700), "The END.", "İstanbul ǅ ﬁ ligature", "\u0301combining first"]


def transformers_tokenizer(folder):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(folder))


def texts() -> list[str]:
    rng = random.Random(0)
    entries = rng.sample(load_wordnet(), 1500)
    return ODD + [e.definition for e in entries] + [e.word for e in entries[:300]]


def assert_same_encoding(ours: BertFolderTokenizer, theirs, batch: list[str], max_length: int) -> None:
    mine = tokenize_padded(ours, batch, max_length)
    expected = theirs(batch, padding=True, truncation=True, max_length=max_length, return_tensors="pt")
    assert not ours.transformers_loaded
    for key in ("input_ids", "attention_mask", "token_type_ids"):
        assert mine[key].dtype == expected[key].dtype and torch.equal(mine[key], expected[key]), (key, batch[:3])


@pytest.fixture(params=["shipped base", "tiny"])
def folder(request, tiny_mlm_dir):
    return Path(resolve_base(DEFAULT_BASE)) if request.param == "shipped base" else tiny_mlm_dir


def test_the_same_ids_as_transformers(folder):
    ours, theirs = load_tokenizer(folder), transformers_tokenizer(folder)
    assert isinstance(ours, BertFolderTokenizer)
    every = texts()
    for max_length in (128, 9):
        for start in range(0, len(every), 64):  # batches of mixed lengths, as `encode` makes them
            assert_same_encoding(ours, theirs, every[start:start + 64], max_length)
        for text in ODD:  # each alone, padded to itself
            assert_same_encoding(ours, theirs, [text], max_length)
    assert ours.get_vocab() == theirs.get_vocab() and ours.model_max_length == theirs.model_max_length
    assert not ours.transformers_loaded


def test_anything_else_is_transformers_own_answer_and_then_all_is(folder):
    ours, theirs = load_tokenizer(folder), transformers_tokenizer(folder)
    twin = copy.deepcopy(ours)  # the word tower copies the encoder: no transformers needed for that
    assert not ours.transformers_loaded and not twin.transformers_loaded
    assert ours.convert_ids_to_tokens([5, 6, 7]) == theirs.convert_ids_to_tokens([5, 6, 7])
    assert ours.transformers_loaded and len(ours) == len(theirs) and ours.pad_token == theirs.pad_token
    assert ours("a dog", add_special_tokens=False)["input_ids"] == theirs("a dog", add_special_tokens=False)["input_ids"]
    ours.padding_side = "left"  # a setting changed on transformers' tokenizer is honoured from then on
    theirs.padding_side = "left"
    batch = ["a dog", "a much longer description of a dog"]
    assert torch.equal(tokenize_padded(ours, batch, 16)["input_ids"], tokenize_padded(theirs, batch, 16)["input_ids"])
    assert torch.equal(tokenize_padded(twin, batch, 16)["input_ids"],
                       tokenize_padded(transformers_tokenizer(folder), batch, 16)["input_ids"])


def test_an_encoder_loads_and_encodes_without_importing_transformers(tiny_mlm_dir):
    code = ("import sys; from core.encoder import SentenceEncoder\n"
            f"encoder, _ = SentenceEncoder.from_pretrained({str(tiny_mlm_dir)!r})\n"
            "vectors = encoder.encode(['a dog', 'the king of the city'])\n"
            "assert vectors.shape == (2, 32) and not any(m.split('.')[0] == 'transformers' for m in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).resolve().parents[1], capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr[-2000:]


@pytest.mark.parametrize("change", [
    lambda folder: _edit(folder / "tokenizer_config.json", padding_side="left"),
    lambda folder: _edit(folder / "tokenizer_config.json", do_lower_case=False),
    lambda folder: _edit(folder / "tokenizer_config.json", tokenizer_class="RobertaTokenizer"),
    lambda folder: _edit(folder / "tokenizer_config.json", some_new_setting=1),
    lambda folder: _edit(folder / "tokenizer_config.json", additional_special_tokens=["[X]"]),
    lambda folder: (folder / "added_tokens.json").write_text('{"newtoken": 99}'),
    lambda folder: (folder / "special_tokens_map.json").write_text('{"pad_token": "[UNK]"}'),
    lambda folder: (folder / "tokenizer.json").unlink(),
    lambda folder: (folder / "tokenizer.json").write_text("not json"),
    lambda folder: _edit_pipeline(folder, lambda p: p["normalizer"].update(strip_accents=True)),
    lambda folder: _edit_pipeline(folder, lambda p: p["added_tokens"].append(
        {"id": 7, "content": "[X]", "special": True, "normalized": False, "lstrip": False, "rstrip": False,
         "single_word": False})),
    lambda folder: _edit_pipeline(folder, lambda p: p.update(pre_tokenizer={"type": "Whitespace"})),
    lambda folder: _edit_pipeline(folder, lambda p: p["post_processor"].update(single=[])),
], ids=["padding-side", "cased", "class", "unknown-key", "extra-specials", "added-tokens", "special-map", "no-json",
        "bad-json", "accents", "added-token", "pre-tokenizer", "template"])
def test_a_folder_it_cannot_vouch_for_is_left_to_transformers(tiny_mlm_dir, tmp_path, change):
    folder = Path(shutil.copytree(tiny_mlm_dir, tmp_path / "model"))
    assert isinstance(load_tokenizer(folder), BertFolderTokenizer)
    change(folder)
    assert _bert_folder_tokenizer(folder) is None  # left to transformers, whether or not it can read the folder


def _edit(path: Path, **changes) -> None:
    path.write_text(json.dumps({**json.loads(path.read_text()), **changes}))


def _edit_pipeline(folder: Path, change) -> None:
    pipeline = json.loads((folder / "tokenizer.json").read_text())
    change(pipeline)
    (folder / "tokenizer.json").write_text(json.dumps(pipeline))
