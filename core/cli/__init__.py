"""The command line of the engine: `python -m core COMMAND [flags]`.

    python -m core "a person who is in charge"      # the reverse dictionary (the command `words`)
    python -m core train --out checkpoints/NAME     # DefSent training (docs/training.md)
    python -m core eval --model checkpoints/NAME --tasks words,sts
    python -m core COMMAND --help                   # a command's flags

Library modules hold no argument parsing: each command here parses its flags and calls them.
Flags of a configuration dataclass are made from its fields (`add_config_flags`), so a new field
is a new flag. Heavy modules are imported inside the commands, so `--help` answers at once.
The commands live by what they work on: `words` (the reverse dictionary, training, word scoring),
`evaluate`, `data` (dictionaries and indexes) and `vec2sent`; `flags` holds the registry and the
flags they share.
"""
from __future__ import annotations

import sys
from typing import Sequence

# Each command module registers its commands as it is imported: this order is the order usage lists them.
from . import words, evaluate, data, vec2sent  # noqa: F401
from .flags import COMMANDS

__all__ = ["COMMANDS", "main", "usage"]

DEFAULT_COMMAND = "words"


def main(argv: Sequence[str] | None = None) -> int:
    """Run `python -m core ARGS`: a command by its name, else the reverse dictionary."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] in COMMANDS:
        return COMMANDS[args[0]](args[1:])
    if args and args[0] in ("-h", "--help"):
        print(usage())
        return 0
    return COMMANDS[DEFAULT_COMMAND](args)


def usage() -> str:
    width = max(map(len, COMMANDS))
    lines = [f"  {name:<{width}}  {(function.__doc__ or '').strip().splitlines()[0]}"
             for name, function in COMMANDS.items()]
    return (f"usage: python -m core COMMAND [flags]   (python -m core COMMAND --help)\n"
            f"       python -m core \"a description\" ...   (the command {DEFAULT_COMMAND})\n\ncommands:\n"
            + "\n".join(lines))
