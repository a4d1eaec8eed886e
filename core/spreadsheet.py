"""Text a spreadsheet shows as text: the one escape for every cell of every file written for a spreadsheet (CSV,
TSV: the Map's selection and its Projector export) and for user text echoed in reports (issue 55)."""
from __future__ import annotations

# A spreadsheet evaluates a cell starting with one of these (tab and carriage return too, after some
# imports): "=cmd|' /C calc'!A0", "=HYPERLINK(...)", "+1+1", "@SUM(...)".
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def inert(value):
    """`value` with a "'" in front when it is text starting like a formula (the spreadsheet then shows it as
    text); anything else (numbers) unchanged."""
    return "'" + value if isinstance(value, str) and value.startswith(FORMULA_STARTS) else value
