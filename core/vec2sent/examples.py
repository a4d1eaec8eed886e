"""The analogies the app offers as examples, with the content words a good decoding should contain.

`engine.analogy(a, b, c)` reads b - a + c ("a is to b as c is to ?"); scripts/analogies.py decodes
each example and checks `expected` (docs/vec2sent.md keeps the table).
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class AnalogyExample:
    a: str
    b: str
    c: str
    expected: tuple[str, ...]  # content words of the intended answer (lower case)


ANALOGY_EXAMPLES = (
    AnalogyExample("The man is walking.", "The woman is walking.", "The man is running.", ("woman", "running")),
    AnalogyExample("A dog is sleeping.", "Two dogs are sleeping.", "A cat is eating.", ("two", "cats", "eating")),
    AnalogyExample("The boy is happy.", "The girl is happy.", "The boy is singing.", ("girl", "singing")),
    AnalogyExample("I bought a car.", "I sold a car.", "I bought a house.", ("sold", "house")),
    AnalogyExample("It is sunny today.", "It is raining today.", "It was sunny yesterday.", ("raining", "yesterday")),
    AnalogyExample("He eats pizza.", "He visits Italy.", "She drinks wine.", ("she", "visits")),
)
