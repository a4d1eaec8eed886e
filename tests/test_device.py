"""The device setting (core/runtime/device.py): how a name resolves, the errors for a device this machine
lacks, and out-of-memory during training. The GPU path itself is checked by bench/device_check.py on a
machine with one (docs/results.md); these run on the CPU."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from core import Engine
from core.cli import main as cli
from core.runtime.device import DeviceError, OutOfDeviceMemory, available_devices, resolve_device
from core.lexicon.dictionary import Entry
from core.train import TrainConfig, train

ENTRIES = [Entry("dog", "a small animal that people keep"), Entry("king", "the man in charge of the city"),
           Entry("river", "water that runs to the sea"), Entry("bread", "food made of flour")]


def app_main():
    """app.py as a module (the package app/ shadows its name)."""
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location("app_main", Path(__file__).parents[1] / "app.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def no_gpu(monkeypatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr("core.runtime.device._mps_available", lambda: False)


def test_auto_is_the_cpu_without_a_gpu(monkeypatch):
    no_gpu(monkeypatch)
    assert resolve_device("auto") == torch.device("cpu")
    assert resolve_device("cpu") == torch.device("cpu")
    assert available_devices() == ["cpu"]


def test_auto_and_cuda_are_this_process_gpu_under_torchrun(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.setenv("LOCAL_RANK", "1")
    assert resolve_device("auto") == resolve_device("cuda") == torch.device("cuda", 1)
    monkeypatch.setenv("LOCAL_RANK", "2")  # a third process on a machine of two GPUs
    with pytest.raises(DeviceError, match="torchrun process 2 has no GPU of its own: this machine has 2"):
        resolve_device("cuda")


def test_auto_precision_is_float32_on_a_gpu_where_bfloat16_measured_slower():
    from core.runtime.device import resolve_precision

    assert resolve_precision("auto", torch.device("cuda", 0)) == "float32"
    assert resolve_precision("bfloat16", torch.device("cuda", 0)) == "bfloat16"


@pytest.mark.parametrize("name", ["cuda", "cuda:1", "mps"])
def test_an_absent_device_is_refused_naming_what_there_is(monkeypatch, name):
    no_gpu(monkeypatch)
    with pytest.raises(DeviceError, match=r"not available on this machine; it has: cpu$"):
        resolve_device(name)


@pytest.mark.parametrize("name", ["tpu", "gpu", "", "cuda:x"])
def test_a_name_that_is_no_device_is_refused(name):
    with pytest.raises(DeviceError, match="unknown device"):
        resolve_device(name)


def test_cli_and_app_say_which_devices_there_are(monkeypatch, capsys):
    no_gpu(monkeypatch)
    with pytest.raises(SystemExit) as exit_info:
        cli(["words", "--device", "cuda", "a person in charge"])
    assert exit_info.value.code == 2
    assert "device 'cuda' is not available on this machine; it has: cpu" in capsys.readouterr().err
    app = app_main()
    with pytest.raises(SystemExit):
        app.parse_args(["--device", "cuda"])
    assert "--device (or $DEFSENT_DEVICE): device 'cuda' is not available" in capsys.readouterr().err
    assert app.parse_args(["--device", "auto"]).device == "cpu"


def test_engine_moves_to_the_cpu_and_answers_as_before(tiny_mlm_dir):
    engine = Engine.from_base(str(tiny_mlm_dir))
    before = engine.encode(["a small animal"])
    assert engine.to("cpu") is engine and engine.device == torch.device("cpu")
    assert np.array_equal(engine.encode(["a small animal"]), before)


def test_out_of_memory_in_training_restores_the_weights_and_suggests_a_smaller_batch(tiny_mlm_dir, monkeypatch):
    engine = Engine.from_base(str(tiny_mlm_dir))
    start = {k: v.clone() for k, v in engine.encoder.state_dict().items()}
    import core.train as training
    real_loss, calls = training._defsent_loss, []

    def loss_then_out_of_memory(*args, **kwargs):
        calls.append(1)
        if len(calls) == 3:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return real_loss(*args, **kwargs)

    monkeypatch.setattr(training, "_defsent_loss", loss_then_out_of_memory)
    config = TrainConfig(lr=1e-2, max_steps=10, batch_size=4, eval_every=100, word_vector_scale=0, hub_weight=0.0)
    with pytest.raises(OutOfDeviceMemory, match=r"at batch size 4: try a smaller batch \(e.g. 2\); nothing was saved"):
        train(engine, ENTRIES, ENTRIES, config)
    assert all(torch.equal(v, start[k]) for k, v in engine.encoder.state_dict().items())


def test_out_of_memory_in_decoder_training_suggests_a_smaller_batch(monkeypatch):
    from core.vec2sent import train as decoder_training
    from core.vec2sent.model import Vec2SentConfig, Vec2SentDecoder

    data = decoder_training.TrainingData([[5, 6, 7], [8, 9]], np.ones((2, 8), dtype=np.float32))
    model = Vec2SentDecoder(Vec2SentConfig(vocab_size=12, sent_dim=8, emb_dim=8, hidden=8, layers=1))

    def out_of_memory(*args, **kwargs):
        raise torch.OutOfMemoryError("CUDA out of memory")

    monkeypatch.setattr(decoder_training, "sequence_loss", out_of_memory)
    settings = decoder_training.TrainSettings(minutes=1.0, max_steps=5, batch_size=2)
    with pytest.raises(OutOfDeviceMemory, match="Decoder training ran out of memory on cpu at batch size 2"):
        decoder_training.train_decoder(model, data, settings, progress=False)


def test_a_fine_tune_out_of_gpu_memory_tells_the_user_to_lower_the_batch():
    from app.shared.jobs import short_reason
    from core.runtime.device import out_of_memory_message

    reason = short_reason(OutOfDeviceMemory(out_of_memory_message("DefSent training", 64, torch.device("cuda", 0))))
    assert reason == ("OutOfDeviceMemory: DefSent training ran out of memory on cuda:0 at batch size 64: "
                      "try a smaller batch (e.g. 32); nothing was saved")


def test_the_training_command_says_out_of_memory_in_one_line(monkeypatch, tmp_path, capsys):
    import core.cli.words

    def out_of_memory(*args, **kwargs):
        raise OutOfDeviceMemory("DefSent training ran out of memory on cuda:0 at batch size 16: try a smaller batch")

    monkeypatch.setattr(core.cli.words, "_run_training", out_of_memory)
    assert cli(["train", "--out", str(tmp_path / "m"), "--no-open-vocab", "--device", "cpu"]) == 2
    assert capsys.readouterr().err.strip() == ("error: DefSent training ran out of memory on cuda:0 at batch size 16: "
                                               "try a smaller batch")
    assert not (tmp_path / "m").exists()
