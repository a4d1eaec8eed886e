"""Answers never depend on who else is asking: models stay in eval mode, and no request switches
shared state (a thread that switched dropout on changed another thread's answer, issue 27)."""
from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import torch

from core import Engine
from core.runtime.hardware import train_mode
from core.vec2sent import Vec2SentConfig, Vec2SentDecoder, greedy_decode

TEXTS = ["a dog", "the king of the city", "water", "a small red car in the road", "happy music"]


@pytest.fixture(scope="module")
def engine(tiny_mlm_dir) -> Engine:
    return Engine.from_base(str(tiny_mlm_dir))  # BERT's default dropout 0.1: train mode shows


def test_a_loaded_engine_is_in_eval_mode_and_encode_keeps_it(engine):
    engine.encode(TEXTS)
    assert not any(module.training for module in engine.encoder.modules())
    assert not any(module.training for module in engine.words.head.modules())


def test_one_request_finishing_does_not_change_another_in_its_forward_pass(engine):
    """A starts encoding and pauses inside its forward pass; B starts and pauses before its first
    layer; A finishes; then B runs on. B's answer must be the one it gets alone (when `encode`
    restored the mode it found, A's end switched dropout on under B)."""
    alone = engine.encode(["a small red car"])
    layers = engine.encoder.backbone.encoder.layer
    a_paused, a_resume, b_inside, b_resume = (threading.Event() for _ in range(4))

    def pause(name: str, reached: threading.Event, resume: threading.Event):
        def hook(*_):
            if threading.current_thread().name == name and not reached.is_set():
                reached.set()
                resume.wait(10)
        return hook

    hooks = [layers[1].register_forward_pre_hook(pause("A", a_paused, a_resume)),
             layers[0].register_forward_pre_hook(pause("B", b_inside, b_resume))]
    result = {}
    a = threading.Thread(target=lambda: result.update(a=engine.encode(["water"])), name="A")
    b = threading.Thread(target=lambda: result.update(b=engine.encode(["a small red car"])), name="B")
    try:
        a.start()
        assert a_paused.wait(10)
        b.start()
        assert b_inside.wait(10)
        a_resume.set()
        a.join(10)
        b_resume.set()
        b.join(10)
    finally:
        a_resume.set(), b_resume.set()
        for hook in hooks:
            hook.remove()
    np.testing.assert_array_equal(result["b"], alone)


def test_concurrent_requests_get_the_answers_they_get_alone(engine):
    alone = {t: engine.predict_words(t, k=5) for t in TEXTS}
    vectors = {t: engine.encode([t])[0] for t in TEXTS}
    requests = TEXTS * 8

    def ask(text):
        return text, engine.predict_words(text, k=5), engine.encode([text])[0]

    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(ask, requests))
    assert all(words == alone[t] for t, words, _ in answers)
    assert all(np.array_equal(v, vectors[t]) for t, _, v in answers)


def test_encode_in_train_mode_is_refused_not_silently_random(tiny_mlm_dir):
    engine = Engine.from_base(str(tiny_mlm_dir))
    engine.encoder.train()
    with pytest.raises(RuntimeError, match="eval mode"):
        engine.encode(TEXTS)


def test_train_mode_is_left_in_eval_even_after_an_error():
    module = torch.nn.Dropout(0.5)
    with pytest.raises(KeyError):
        with train_mode(module):
            assert module.training
            raise KeyError("boom")
    assert not module.training


def test_a_new_decoder_is_in_eval_mode_and_decoding_never_switches_it():
    model = Vec2SentDecoder(Vec2SentConfig(vocab_size=20, sent_dim=8, emb_dim=8, hidden=16, layers=2,
                                           dropout=0.5, max_length=6))
    assert not model.training
    vectors = torch.randn(3, 8)
    first = greedy_decode(model, vectors, 6)
    assert greedy_decode(model, vectors, 6) == first and not model.training
    model.train()
    with pytest.raises(RuntimeError, match="eval mode"):
        greedy_decode(model, vectors, 6)
