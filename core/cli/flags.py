"""The registry of commands and the flags they share: `command(name)` registers a function of the
command's arguments as `python -m core NAME` (core/cli/__init__.py dispatches to it), every command's bad
input reported the same way (`reports_errors`: one line, exit status 2); `parser_for` gives it a parser
whose description is its docstring and whose help shows each flag's default, `add_config_flags` and
`config_from_flags` turn a configuration dataclass into flags (their help the fields' comments) and back,
`parse_with_recipe` reads a --recipe's flags as the defaults, and --threads and --device are the same flag
wherever a command takes them. The commands on texts share how they read texts (`add_text_flags`,
`texts_from`), their bounds and --json.
"""
from __future__ import annotations

import argparse
import copy
import dataclasses
import json
import sys
import typing
from pathlib import Path
from typing import Callable, Sequence

from ..paths import REPO_ROOT

Command = Callable[[Sequence[str]], int]
COMMANDS: dict[str, Command] = {}


def command(name: str) -> Callable[[Command], Command]:
    """Register a function taking the command's arguments (after its name) as `python -m core NAME`; bad
    input it raises is reported as one line, exit status 2 (`reports_errors`), as every command's is."""
    def register(function: Command) -> Command:
        COMMANDS[name] = reports_errors(function)
        return function
    return register


class HelpFormatter(argparse.RawDescriptionHelpFormatter, argparse.ArgumentDefaultsHelpFormatter):
    """A command's docstring as written, and each flag's default; a path inside the repository is shown
    relative to it (not as this machine's absolute path)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        if (action.default in (None, [], ()) or isinstance(action.default, bool)
                or "default" in (action.help or "").lower()):
            return action.help or ""  # no default, an on/off flag, or one its help already names
        return super()._get_help_string(action)

    def _expand_help(self, action: argparse.Action) -> str:
        if isinstance(action.default, Path) or str(action.default).startswith("/"):
            action = copy.copy(action)
            action.default = shown_path(action.default)
        return super()._expand_help(action)


def shown_path(path: Path) -> str:
    """`path` relative to the repository (or its parent, where ../shared lives) when inside it, else as is."""
    for base, prefix in ((REPO_ROOT, ""), (REPO_ROOT.parent, "../")):
        try:
            return prefix + str(Path(path).resolve().relative_to(base.resolve()))
        except ValueError:
            continue
    return str(path)


def program() -> str:
    """How the command line was called: `defsent` (the installed script) or `python -m core`."""
    return "defsent" if Path(sys.argv[0]).name == "defsent" else "python -m core"


def parser_for(name: str, function: Command) -> argparse.ArgumentParser:
    return argparse.ArgumentParser(prog=f"{program()} {name}", description=function.__doc__,
                                   formatter_class=HelpFormatter)


def add_config_flags(parser: argparse.ArgumentParser, config: type, skip: Sequence[str] = ()) -> None:
    """One flag per field of the dataclass `config`: --field-name with the field's type and default
    (a bool: --field-name / --no-field-name; `int | None`: an int, None by default), its help the
    comment written beside the field (`field_comments`)."""
    hints = typing.get_type_hints(config)
    comments = field_comments(config)
    for f in dataclasses.fields(config):
        if f.name in skip or f.default is dataclasses.MISSING:
            continue
        flag = "--" + f.name.replace("_", "-")
        if isinstance(f.default, bool):
            parser.add_argument(flag, action=argparse.BooleanOptionalAction, default=f.default,
                                help=comments.get(f.name))
        else:
            kind = next(t for t in typing.get_args(hints[f.name]) or (hints[f.name],) if t is not type(None))
            parser.add_argument(flag, type=kind, default=f.default, help=comments.get(f.name))


def field_comments(config: type) -> dict[str, str]:
    """{field: the comment beside it in the class body, its continuation lines joined} of the dataclass
    `config` (a field's one definition documents its flag too); {} where the source cannot be read."""
    import inspect
    import re
    import textwrap

    try:
        lines = textwrap.dedent(inspect.getsource(config)).splitlines()
    except (OSError, TypeError):
        return {}
    field_line = re.compile(r"^    (\w+)\s*:[^#]*?(?:#\s*(.*))?$")
    comments: dict[str, str] = {}
    last = None
    for line in lines[1:]:
        continued = re.match(r"^\s{5,}#\s*(.*)$", line)  # a field's comment goes on, indented past the fields
        if continued and last in comments:
            comments[last] += " " + continued.group(1)
            continue
        found = field_line.match(line)
        last = found.group(1) if found else None
        if found and found.group(2):
            comments[last] = found.group(2).strip()
    return comments


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
                        help="torch threads (0: torch's default; 1 can be fastest when other jobs share the cores)" + note)


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


# ---- texts in, answers out: what the commands on texts and vectors share --------------------------

MAX_TEXTS = 100_000  # texts one command reads (arguments, --file or standard input)
MAX_TEXT_CHARS = 20_000  # characters of one text (the encoder reads its first 128 tokens anyway)
MAX_K = 100  # answers a command lists, as the app's lists


class InputError(ValueError):
    """Bad input a user can fix: printed as one line, `error: ...`, exit status 2, nothing written."""


def add_text_flags(parser: argparse.ArgumentParser, what: str = "a text") -> None:
    """Positional texts, and --file: texts come from the arguments, a file (one a line) or standard input
    (`--file -`, or piped in when neither is given); `texts_from` reads them."""
    parser.add_argument("text", nargs="*", help=f"{what} (several: one after another)")
    parser.add_argument("--file", type=Path, metavar="F",
                        help="also read texts from F, one a line ('-': standard input)")


def add_output_flags(parser: argparse.ArgumentParser, model: bool = True) -> None:
    """--json (one JSON document on standard output, for scripts), and --model / --device."""
    parser.add_argument("--json", action="store_true", help="print one JSON document instead of text")
    if model:
        parser.add_argument("--model", default=None, help="checkpoint directory (default: the shipped one)")
        add_device_flag(parser)


def texts_from(args: argparse.Namespace, minimum: int = 1, stdin=None) -> list[str]:
    """The texts of `add_text_flags`: the arguments, then --file's lines (blank ones skipped); standard
    input's lines when neither is given and it is not a terminal. InputError past the bounds."""
    texts = [t for t in args.text]
    source = args.file
    stdin = stdin if stdin is not None else sys.stdin
    if source is None and not texts and stdin is not None and not stdin.isatty():
        source = Path("-")
    if source is not None:
        texts += _lines(source, stdin)
    if len(texts) < minimum:
        raise InputError(f"give at least {minimum} text{'s' if minimum > 1 else ''}: as arguments, with --file F, "
                         "or on standard input")
    if len(texts) > MAX_TEXTS:
        raise InputError(f"{len(texts):,} texts: at most {MAX_TEXTS:,} at a time")
    for i, text in enumerate(texts, 1):
        if not text.strip():
            raise InputError(f"text {i} is empty")
        if len(text) > MAX_TEXT_CHARS:
            raise InputError(f"text {i} has {len(text):,} characters: at most {MAX_TEXT_CHARS:,}")
    return texts


def _lines(source: Path, stdin) -> list[str]:
    """The non-blank lines of `source` ('-': `stdin`), stripped; InputError when it cannot be read."""
    try:
        if str(source) == "-":
            text = stdin.read()
        else:
            text = source.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise InputError(f"cannot read {source}: {getattr(err, 'strerror', None) or err}") from None
    return [line.strip() for line in text.splitlines() if line.strip()]


def check_range(name: str, value: int, low: int, high: int) -> int:
    """`value` when low <= value <= high, else InputError naming the flag."""
    if not low <= value <= high:
        raise InputError(f"{name} must be from {low} to {high}, not {value}")
    return value


def print_json(document) -> None:
    print(json.dumps(document, ensure_ascii=False))


def reports_errors(function: Command) -> Command:
    """Run a command, turning bad input (InputError, ValueError, a missing or refused checkpoint, a missing
    decoder) into one line on standard error and exit status 2 instead of a traceback."""
    import functools

    @functools.wraps(function)
    def run(argv: Sequence[str]) -> int:
        try:
            return function(argv)
        except Exception as err:  # noqa: BLE001 - a bug's traceback still shows: re-raised below
            if not is_user_error(err):
                raise
            print(f"error: {error_line(err)}", file=sys.stderr)
            return 2
    return run


def error_line(err: BaseException) -> str:
    """The first line of `err`'s message; a file error as "PATH: what is wrong" (without "[Errno 2]")."""
    if isinstance(err, OSError) and err.filename is not None and err.strerror:
        return f"{err.filename}: {err.strerror}"
    return (str(err) or type(err).__name__).splitlines()[0]


def is_user_error(err: BaseException) -> bool:
    """Whether `err` is about the user's input or setup (a value, a file, a checkpoint, a decoder, a
    device), not a bug."""
    return (isinstance(err, (ValueError, FileNotFoundError, PermissionError, IsADirectoryError, NotADirectoryError))
            or type(err).__name__ in USER_ERRORS)


# Errors that are about the user's input or setup, not bugs: named, so that this module imports no torch.
USER_ERRORS = {"CheckpointError", "NoDecoderError", "EncoderMismatchError", "DeviceError", "ExpressionError"}
