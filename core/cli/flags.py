"""The registry of commands and the flags they share: `command(name)` registers a function of the
command's arguments as `python -m core NAME` (core/cli/__init__.py dispatches to it), `parser_for` gives
it a parser whose description is its docstring, `add_config_flags` and `config_from_flags` turn a
configuration dataclass into flags and back, `parse_with_recipe` reads a --recipe's flags as the
defaults, and --threads and --device are the same flag wherever a command takes them.
"""
from __future__ import annotations

import argparse
import dataclasses
import typing
from pathlib import Path
from typing import Callable, Sequence

Command = Callable[[Sequence[str]], int]
COMMANDS: dict[str, Command] = {}


def command(name: str) -> Callable[[Command], Command]:
    """Register a function taking the command's arguments (after its name) as `python -m core NAME`."""
    def register(function: Command) -> Command:
        COMMANDS[name] = function
        return function
    return register


def parser_for(name: str, function: Command) -> argparse.ArgumentParser:
    return argparse.ArgumentParser(prog=f"python -m core {name}", description=function.__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)


def add_config_flags(parser: argparse.ArgumentParser, config: type, skip: Sequence[str] = ()) -> None:
    """One flag per field of the dataclass `config`: --field-name with the field's type and default
    (a bool: --field-name / --no-field-name; `int | None`: an int, None by default)."""
    hints = typing.get_type_hints(config)
    for f in dataclasses.fields(config):
        if f.name in skip or f.default is dataclasses.MISSING:
            continue
        flag = "--" + f.name.replace("_", "-")
        if isinstance(f.default, bool):
            parser.add_argument(flag, action=argparse.BooleanOptionalAction, default=f.default)
        else:
            kind = next(t for t in typing.get_args(hints[f.name]) or (hints[f.name],) if t is not type(None))
            parser.add_argument(flag, type=kind, default=f.default)


def config_from_flags(config: type, args: argparse.Namespace, **given):
    """The dataclass `config` from the flags `add_config_flags` made (and `given` fields)."""
    names = {f.name for f in dataclasses.fields(config)}
    return config(**{k: v for k, v in vars(args).items() if k in names and k not in given}, **given)


def parse_with_recipe(parser: argparse.ArgumentParser, argv: Sequence[str]) -> argparse.Namespace:
    """Parse `argv`, the flags of a --recipe FILE (recipes/*.json: {"flags": {dest: value}}) being
    the defaults, so that a flag given on the command line still wins."""
    parser.add_argument("--recipe", type=Path, help="a JSON recipe (recipes/*.json) whose flags are the defaults")
    recipe = argparse.ArgumentParser(add_help=False)
    recipe.add_argument("--recipe", type=Path)
    path = recipe.parse_known_args(argv)[0].recipe
    if path is not None:
        import json
        flags = json.loads(path.read_text(encoding="utf-8"))["flags"]
        unknown = sorted(set(flags) - {action.dest for action in parser._actions})
        if unknown:
            parser.error(f"{path} sets flags this command does not have: {', '.join(unknown)}")
        for action in parser._actions:
            action.required = action.required and action.dest not in flags
        parser.set_defaults(**flags)  # string defaults are converted by each flag's type
    return parser.parse_args(argv)


def set_threads(threads: int) -> None:
    if threads:
        import torch
        torch.set_num_threads(threads)


def add_threads_flag(parser: argparse.ArgumentParser, default: int = 0, note: str = "") -> None:
    parser.add_argument("--threads", type=int, default=default,
                        help="torch threads (0: torch's default; 1 is fastest on a busy 2-core machine)" + note)


def add_device_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--device", default="auto",
                        help="where to compute: auto (a CUDA GPU, else Apple's MPS, else the CPU), cpu, cuda, "
                             "cuda:N or mps (core/runtime/device.py)")


def device_from_flag(parser: argparse.ArgumentParser, name: str):
    """The torch.device `--device` names; a parser error (exit 2) naming what this machine has when absent."""
    from ..runtime.device import DeviceError, resolve_device

    try:
        return resolve_device(name)
    except DeviceError as err:
        parser.error(str(err))
