"""How the reverse dictionary's answers are asked for and shown, shared by the command line, the API
(`Engine.predict_words`) and the app, so that the three give the same answers for the same query.
Imports nothing heavy: the command line reads it to build its flags before it loads a model.
"""
from __future__ import annotations

from typing import Sequence

# Leave the description's own words (and their inflections, core/text.py `query_words`) out of its
# answers: "the opposite of hot" answers "cold", not "hot". The app's checkbox, the command line's
# --exclude-query-words / --no-exclude-query-words and `Engine.predict_words` all default to this.
EXCLUDE_QUERY_WORDS = True

SCORE_NOTE = "score: the model's probability of each word, the first answer = 100"


def relative_scores(probabilities: Sequence[float]) -> list[int]:
    """Each probability as a share of the largest, 0-100: a softmax over 147k words gives even a good
    answer "0.05 %", which tells a person nothing; "80" next to the first answer's "100" does."""
    top = max(probabilities, default=0.0) or 1.0
    return [round(100 * p / top) for p in probabilities]
