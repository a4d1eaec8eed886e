"""How a refusal quotes what the user sent (issue 55): at most a short, escaped part of it, in one line. A
message used to repeat the whole input (a 116 kB model name, a job id) with its HTML as it was.

Plain Python (no gradio): the handlers' modules raise their messages with these; app.wiring passes every
refusal through `one_line` on its way to the page."""
from __future__ import annotations

from html import escape
from pathlib import Path

QUOTE_CHARS = 40  # of the user's input a message repeats
MESSAGE_CHARS = 600  # of a whole refusal; the app's own messages are under 400


def quoted(value: object, limit: int = QUOTE_CHARS) -> str:
    """`value` as a message quotes it: one line of printable characters, at most `limit` of them (then "..."),
    HTML-escaped, in quotes."""
    text = " ".join("".join(ch if ch.isprintable() else " " for ch in str(value)).split())
    text = text if len(text) <= limit else text[: limit - 3] + "..."
    return '"' + escape(text, quote=False) + '"'


def naming_only(message: str, folder: Path) -> str:
    """`message` with the server folder `folder` named by its name alone (a public server never shows its paths):
    "no decoder in /srv/app/checkpoints" -> "no decoder in checkpoints", a checkpoint in it by its name."""
    return message.replace(str(folder), folder.name)


def one_line(message: str, limit: int = MESSAGE_CHARS) -> str:
    """A refusal as shown: whitespace runs made single spaces, HTML tags escaped, at most `limit` characters."""
    text = escape(" ".join(message.split()), quote=False)
    return text if len(text) <= limit else text[: limit - 3] + "..."
