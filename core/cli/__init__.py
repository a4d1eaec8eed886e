"""The command line of the engine: `python -m core COMMAND [flags]`.

    python -m core "a person who is in charge"      # the reverse dictionary (the command `words`)
    python -m core encode "a sentence" --out v.npy  # sentence vectors; similarity, search, decode, analogy,
                                                    # interpolate: the rest of the engine (core/cli/vectors.py)
    python -m core train --out checkpoints/NAME     # DefSent training (docs/training.md)
    python -m core eval --model checkpoints/NAME --tasks words,sts
    python -m core COMMAND --help                   # a command's flags

Library modules hold no argument parsing: each command here parses its flags and calls them.
Flags of a configuration dataclass are made from its fields (`add_config_flags`), so a new field
is a new flag. Heavy modules are imported inside the commands, so `--help` answers at once.
The commands live by what they work on: `words` (the reverse dictionary, training, word scoring),
`vectors` (encode, similarity, search, decode, analogy, interpolate), `evaluate`, `data` (dictionaries and indexes) and `vec2sent`; `flags` holds the registry and the
flags they share.
"""
from __future__ import annotations

import sys
from typing import Sequence

# Each command module registers its commands as it is imported: this order is the order usage lists them.
from . import words, vectors, evaluate, data, vec2sent  # noqa: F401
from .flags import COMMANDS, program

__all__ = ["COMMANDS", "main", "usage"]

DEFAULT_COMMAND = "words"


def main(argv: Sequence[str] | None = None, stdin=None) -> int:
    """Run `python -m core ARGS`: a command by its name, else the reverse dictionary; a first argument a
    mistyped command name (`near_command`) is refused rather than looked up as a description. No arguments
    and nothing piped in: the commands are listed (exit status 2)."""
    args = list(sys.argv[1:] if argv is None else argv)
    stdin = sys.stdin if stdin is None else stdin
    if args and args[0] in COMMANDS:
        return COMMANDS[args[0]](args[1:])
    if args and args[0] in ("-h", "--help"):
        print(usage())
        return 0
    if args and args[0] == "--version":
        print(f"defsent-studio {version()}")
        return 0
    if not args and (stdin is None or stdin.isatty()):
        print(usage(), file=sys.stderr)
        return 2
    near = near_command(args)
    if near:
        print(f"error: unknown command {args[0]!r}: did you mean `{program()} {near}`? (to look up a description "
              f"starting with {args[0]!r}, quote it whole or use `{program()} {DEFAULT_COMMAND} ...`)", file=sys.stderr)
        return 2
    return COMMANDS[DEFAULT_COMMAND](args)


def near_command(args: Sequence[str], distance: int = 2) -> str | None:
    """The command name within `distance` edits of `args[0]` when more arguments follow it and it is one
    word ("encod 'a sentence'"); None otherwise ("a person who is in charge", or one word alone, which is a
    description)."""
    if len(args) < 2 or not args[0].isascii() or not args[0].replace("-", "").isalpha():
        return None
    found = min(COMMANDS, key=lambda name: edit_distance(args[0].lower(), name))
    return found if edit_distance(args[0].lower(), found) <= distance else None


def edit_distance(a: str, b: str) -> int:
    """Levenshtein distance: insertions, deletions and substitutions of one character."""
    row = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        previous, row[0] = row[0], i
        for j, y in enumerate(b, 1):
            previous, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, previous + (x != y))
    return row[-1]


def version() -> str:
    """The installed package's version, or the source tree's (pyproject.toml) when it is not installed."""
    from importlib.metadata import PackageNotFoundError, version as installed

    try:
        return installed("defsent-studio")
    except PackageNotFoundError:
        import re

        from ..paths import REPO_ROOT
        found = re.search(r'^version = "([^"]+)"', (REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"), re.M)
        return found.group(1) if found else "unknown"


def usage() -> str:
    width = max(map(len, COMMANDS))
    lines = [f"  {name:<{width}}  {(function.__doc__ or '').strip().splitlines()[0]}"
             for name, function in COMMANDS.items()]
    return (f"usage: {program()} COMMAND [flags]   ({program()} COMMAND --help)\n"
            f"       {program()} \"a description\" ...   (the command {DEFAULT_COMMAND})\n\ncommands:\n"
            + "\n".join(lines))
