"""A model folder's tokenizer, without importing transformers until something needs more than a query does.

Importing transformers for its tokenizer costs about 1 s of CPU (its version checks and its index of every
model it knows), a third of a cold reverse-dictionary query besides torch itself (docs/results.md, issue 62).
Tokenizing is the `tokenizers` library's work even inside transformers: its fast tokenizer hands the texts to
the `tokenizers.Tokenizer` stored in the folder's tokenizer.json, with padding and truncation set per call.

`load_tokenizer(path)` returns a `BertFolderTokenizer` for a BERT folder whose tokenizer.json holds exactly the
pipeline its tokenizer_config.json describes (checked by `_bert_folder_tokenizer`: the normalizer, the
pre-tokenizer, the word pieces, the [CLS] ... [SEP] template and the special tokens; nothing the config adds
or changes beyond that), else transformers' `AutoTokenizer`. A BertFolderTokenizer answers what loading a
model and encoding needs (`tokenize_padded`, `get_vocab`, `model_max_length`) from tokenizer.json alone, the
ids transformers gives (tests/test_tokenizer.py compares them); anything else asked of it (decoding, ids of
tokens, saving, calling it) loads transformers' tokenizer of the folder and answers from it, as does
`tokenize_padded` from then on, so a setting changed there is honoured.
"""
from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Mapping

import torch

from .runtime.imports import from_transformers

# tokenizer_config.json keys that change nothing in how texts become ids here, or that the checks below read
_KNOWN_KEYS = {"backend", "tokenizer_class", "name_or_path", "special_tokens_map_file", "clean_up_tokenization_spaces",
               "model_max_length", "do_lower_case", "strip_accents", "tokenize_chinese_chars", "do_basic_tokenize",
               "never_split", "padding_side", "truncation_side", "added_tokens_decoder", "additional_special_tokens",
               "extra_special_tokens", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"}
_LOADING = threading.Lock()  # one for every folder (a lock is not copied with the tokenizer): loads are rare
_SPECIAL = {"unk_token": "[UNK]", "sep_token": "[SEP]", "pad_token": "[PAD]", "cls_token": "[CLS]", "mask_token": "[MASK]"}


def load_tokenizer(path: str | Path):
    """The tokenizer of the model folder or hub id `path`: a `BertFolderTokenizer` when the folder allows one
    (module docstring), else `transformers.AutoTokenizer.from_pretrained(path)`."""
    found = _bert_folder_tokenizer(Path(path)) if Path(path).is_dir() else None
    if found is None:
        (auto_tokenizer,) = from_transformers("AutoTokenizer")
        return auto_tokenizer.from_pretrained(str(path))
    return BertFolderTokenizer(Path(path), *found)


def tokenize_padded(tokenizer, texts: list[str], max_length: int) -> Mapping[str, torch.Tensor]:
    """`tokenizer(texts, padding=True, truncation=True, max_length=max_length, return_tensors="pt")`: at least
    "input_ids" and "attention_mask" (B, T) int64, padded to the longest text, cut at `max_length`."""
    if isinstance(tokenizer, BertFolderTokenizer) and not tokenizer.transformers_loaded:
        return tokenizer.encode_padded(texts, max_length)
    return tokenizer(texts, padding=True, truncation=True, max_length=max_length, return_tensors="pt")


class BertFolderTokenizer:
    """A BERT folder's tokenizer: tokenizer.json for encoding, transformers' tokenizer for anything else (loaded
    the first time anything else is asked for; module docstring)."""

    def __init__(self, path: Path, tokenizer, config: dict):
        object.__setattr__(self, "_path", str(path))
        object.__setattr__(self, "_tokenizer", tokenizer)  # tokenizers.Tokenizer, as tokenizer.json holds it
        object.__setattr__(self, "_config", config)
        object.__setattr__(self, "_by_length", {})  # max_length -> a copy set to pad and truncate as transformers does
        object.__setattr__(self, "_transformers", None)

    @property
    def transformers_loaded(self) -> bool:
        return self._transformers is not None

    @property
    def transformers_tokenizer(self):
        """transformers' own tokenizer of the folder (`AutoTokenizer`), loaded on first use."""
        if self._transformers is None:
            with _LOADING:  # once, though concurrent requests ask at the same moment
                if self._transformers is None:
                    (auto_tokenizer,) = from_transformers("AutoTokenizer")
                    object.__setattr__(self, "_transformers", auto_tokenizer.from_pretrained(self._path))
        return self._transformers

    @property
    def model_max_length(self) -> int:
        stored = self._config.get("model_max_length")
        if self._transformers is None and isinstance(stored, int) and not isinstance(stored, bool):
            return stored
        return self.transformers_tokenizer.model_max_length

    def get_vocab(self) -> dict[str, int]:
        if self._transformers is None:
            return self._tokenizer.get_vocab(with_added_tokens=True)
        return self._transformers.get_vocab()

    def encode_padded(self, texts: list[str], max_length: int) -> dict[str, torch.Tensor]:
        """What transformers' fast tokenizer returns for `tokenize_padded` (its `set_truncation_and_padding`,
        then `encode_batch`): input_ids, token_type_ids and attention_mask (B, T) int64."""
        tokenizer = self._by_length.get(max_length)
        if tokenizer is None:
            from tokenizers import Tokenizer

            # the first length set on the folder's own (get_vocab does not read these settings), others on copies
            tokenizer = Tokenizer.from_str(self._tokenizer.to_str()) if self._by_length else self._tokenizer
            tokenizer.enable_truncation(max_length=max_length, stride=0, strategy="longest_first", direction="right")
            pad = self._config.get("pad_token", _SPECIAL["pad_token"])
            tokenizer.enable_padding(direction="right", pad_id=tokenizer.token_to_id(pad), pad_type_id=0, pad_token=pad,
                                     length=None, pad_to_multiple_of=None)
            self._by_length[max_length] = tokenizer
        encodings = tokenizer.encode_batch(list(texts), add_special_tokens=True, is_pretokenized=False)
        return {"input_ids": torch.tensor([e.ids for e in encodings], dtype=torch.long),
                "token_type_ids": torch.tensor([e.type_ids for e in encodings], dtype=torch.long),
                "attention_mask": torch.tensor([e.attention_mask for e in encodings], dtype=torch.long)}

    def __call__(self, *args, **kwargs):
        return self.transformers_tokenizer(*args, **kwargs)

    def __len__(self) -> int:
        return len(self.transformers_tokenizer)

    def __bool__(self) -> bool:
        return True

    def __getattr__(self, name: str):
        if name.startswith("__") or name in ("_path", "_tokenizer", "_config", "_by_length", "_transformers"):
            raise AttributeError(name)  # copying and pickling look these up before the state is there
        return getattr(self.transformers_tokenizer, name)

    def __setattr__(self, name: str, value) -> None:
        setattr(self.transformers_tokenizer, name, value)

    def __repr__(self) -> str:
        return f"BertFolderTokenizer({self._path!r})"


def _bert_folder_tokenizer(folder: Path) -> tuple[object, dict] | None:
    """(tokenizers.Tokenizer of folder/tokenizer.json, the tokenizer config) when transformers would tokenize
    with exactly that pipeline and these checks can tell; None for anything else (transformers decides)."""
    files = {name: folder / name for name in ("tokenizer.json", "tokenizer_config.json")}
    if not all(path.is_file() for path in files.values()) or (folder / "added_tokens.json").exists():
        return None
    try:
        config = json.loads(files["tokenizer_config.json"].read_text(encoding="utf-8"))
        pipeline = json.loads(files["tokenizer.json"].read_text(encoding="utf-8"))
        mapped = folder / "special_tokens_map.json"
        special_map = json.loads(mapped.read_text(encoding="utf-8")) if mapped.is_file() else {}
    except (OSError, ValueError):
        return None
    if not (isinstance(config, dict) and isinstance(pipeline, dict) and isinstance(special_map, dict)):
        return None
    if (config.get("tokenizer_class") not in ("BertTokenizer", "BertTokenizerFast") or set(config) - _KNOWN_KEYS
            or config.get("backend", "tokenizers") != "tokenizers"
            or config.get("padding_side", "right") != "right" or config.get("truncation_side", "right") != "right"
            or config.get("do_basic_tokenize", True) is not True or config.get("never_split")
            or config.get("additional_special_tokens") or config.get("extra_special_tokens")):
        return None
    special = {key: config.get(key, default) for key, default in _SPECIAL.items()}
    for key, token in special_map.items():  # transformers reads these too: they must say the same
        content = token.get("content") if isinstance(token, dict) else token
        if key not in special or content != special[key]:
            return None
    model = pipeline.get("model") or {}
    vocab = model.get("vocab") or {}
    added = {token.get("content"): token for token in pipeline.get("added_tokens") or [] if isinstance(token, dict)}
    for token in special.values():  # each special token one whole added token of its vocabulary id
        entry = added.get(token)
        if (not isinstance(token, str) or entry is None or not entry.get("special") or entry.get("id") != vocab.get(token)
                or entry.get("normalized") or entry.get("lstrip") or entry.get("rstrip") or entry.get("single_word")):
            return None
    if set(added) != set(special.values()):
        return None
    for key, entry in (config.get("added_tokens_decoder") or {}).items():
        if not isinstance(entry, dict) or added.get(entry.get("content"), {}).get("id") != _int(key):
            return None
    cls, sep = special["cls_token"], special["sep_token"]
    template = [{"SpecialToken": {"id": cls, "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                {"SpecialToken": {"id": sep, "type_id": 0}}]
    processor = pipeline.get("post_processor") or {}
    specials = processor.get("special_tokens") or {}
    if (pipeline.get("normalizer") != {"type": "BertNormalizer", "clean_text": True,
                                       "handle_chinese_chars": config.get("tokenize_chinese_chars", True),
                                       "strip_accents": config.get("strip_accents"),
                                       "lowercase": config.get("do_lower_case", True)}
            or pipeline.get("pre_tokenizer") != {"type": "BertPreTokenizer"}
            or model.get("type") != "WordPiece" or model.get("unk_token") != special["unk_token"]
            or processor.get("type") != "TemplateProcessing" or processor.get("single") != template
            or any((specials.get(token) or {}).get("ids") != [vocab.get(token)] for token in (cls, sep))):
        return None
    from tokenizers import Tokenizer

    try:
        return Tokenizer.from_str(json.dumps(pipeline)), config
    except Exception:  # tokenizers raises its own exception types for a file it cannot read
        return None


def _int(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:
        return None
