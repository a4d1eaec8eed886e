"""The dev set for paths through the embedding space (issue 59): analogies with the sentence each
should decode to, and pairs of related sentences to interpolate between.

Analogies are made by rule from small word lists written here (swaps of gender, number, tense,
negation, verb, object and its article, place, time, adjective, question form, weather, captions),
plus a few written by hand. Each one is a : b :: c : expected, where b differs from a by one change
and expected is c with the same change, written out grammatically (plurals, past forms, "a"/"an").

Interpolation pairs are related but different sentences from STS-B's dev split (gold similarity
2-4, 4-15 words each), which the decoder never trained on (its corpus leaves out every benchmark's
dev and test splits). The set is for development: the issue's own evaluation sets are elsewhere.
"""
from __future__ import annotations

import random
import re
from dataclasses import dataclass
from pathlib import Path

from core.lexicon.forms import third_person


@dataclass(frozen=True)
class PathAnalogy:
    kind: str
    a: str
    b: str
    c: str
    expected: str


def words_of(text: str) -> tuple[str, ...]:
    """Lower-case words of a sentence, punctuation left out: how an answer is compared."""
    return tuple(re.findall(r"[a-z0-9']+", text.lower()))


# ---- word lists -----------------------------------------------------------------------------------

GENDER = [("man", "woman"), ("boy", "girl"), ("king", "queen"), ("father", "mother"), ("brother", "sister"),
          ("husband", "wife"), ("son", "daughter"), ("uncle", "aunt"), ("actor", "actress"), ("prince", "princess")]
ACTIVITIES = ["walking", "running", "singing", "cooking", "reading a book", "swimming", "sleeping", "dancing",
              "writing a letter", "eating an apple", "laughing", "driving a car", "painting a picture"]
NOUNS = [("dog", "dogs"), ("cat", "cats"), ("child", "children"), ("horse", "horses"), ("bird", "birds"),
         ("man", "men"), ("woman", "women"), ("baby", "babies"), ("boy", "boys"), ("girl", "girls"),
         ("mouse", "mice"), ("puppy", "puppies"), ("fox", "foxes"), ("sheep", "sheep")]
NUMBERS = ["Two", "Three", "Four"]
INTRANSITIVE = ["sleeping", "eating", "playing", "running", "jumping", "sitting", "resting", "waiting"]
PAST = [("opens", "opened", "the door"), ("closes", "closed", "the window"), ("buys", "bought", "bread"),
        ("eats", "ate", "an apple"), ("writes", "wrote", "a letter"), ("drinks", "drank", "coffee"),
        ("watches", "watched", "television"), ("cleans", "cleaned", "the kitchen"), ("visits", "visited", "Paris"),
        ("paints", "painted", "the fence"), ("plays", "played", "football"), ("sells", "sold", "the car"),
        ("finds", "found", "the keys"), ("sings", "sang", "a song"), ("teaches", "taught", "English")]
SUBJECTS = ["She", "He", "My brother", "The teacher", "Our neighbour"]
LIKES = ["tea", "coffee", "music", "football", "chocolate", "winter", "this song", "the city", "dogs", "cheese"]
STATES = ["happy", "tired", "hungry", "ready", "angry", "busy", "afraid", "sick", "late", "sure"]
PEOPLE = ["I", "You", "We", "They"]
VERB_SWAPS = [("bought", "sold"), ("opened", "closed"), ("won", "lost"), ("started", "finished"),
              ("loves", "hates"), ("found", "lost"), ("remembered", "forgot")]
SWAP_OBJECTS = ["a car", "the house", "the game", "the book", "the door", "the letter", "the race", "the job"]
ARTICLE_NOUNS = ["dog", "elephant", "apple", "house", "owl", "umbrella", "horse", "orange", "car", "egg",
                 "island", "tree"]
SEERS = ["She", "He", "I", "We", "The child"]
PLACES = ["Paris", "London", "Berlin", "Tokyo", "Rome", "Madrid", "Chicago", "Sydney"]
LIVES = [("We", "live"), ("They", "work"), ("She", "studies"), ("He", "teaches"), ("I", "live"), ("My sister", "works")]
TIMES = [("It", "is", "was", "today", "yesterday"), ("I", "am", "was", "now", "yesterday"),
         ("They", "are", "were", "today", "last week")]
TIME_STATES = {"It": ["sunny", "cold", "warm", "quiet", "late", "windy"],
               "I": ["busy", "tired", "happy", "free", "at home", "hungry"],
               "They": ["busy", "tired", "happy", "free", "at home", "hungry"]}
ANTONYMS = [("big", "small"), ("hot", "cold"), ("old", "new"), ("happy", "sad"), ("fast", "slow"),
            ("clean", "dirty"), ("expensive", "cheap"), ("long", "short"), ("heavy", "light")]
THINGS = ["house", "car", "dog", "room", "road", "coffee", "book", "table", "city", "bag"]
QUESTIONS = [("You", "are", "Are you"), ("She", "can", "Can she"), ("He", "is", "Is he"), ("They", "are", "Are they"),
             ("We", "can", "Can we"), ("It", "is", "Is it")]
Q_REST = ["happy", "tired", "ready", "at home", "a doctor", "an engineer", "swim", "drive", "cook", "late",
          "in London", "open"]
WEATHER = [("raining", "snowing"), ("sunny", "cloudy"), ("cold", "hot"), ("windy", "foggy")]
CAPTION_SCENES = [("A dog runs", "A cat sleeps", "A child plays", "A man sits", "A bird lands"),
                  ("on the grass", "on the beach", "in the snow", "by the river", "under a tree")]


def _article(word: str) -> str:
    return "an" if word[0] in "aeiou" else "a"


def _q_fits(verb: str, rest: str) -> bool:
    """Whether `rest` follows `verb` ("can" takes a verb, "is"/"are" an adjective, place or noun)."""
    is_verb = rest in ("swim", "drive", "cook")
    return is_verb == (verb == "can")


def _rule_analogies(rng: random.Random, per_kind: int) -> list[PathAnalogy]:
    out: list[PathAnalogy] = []

    def add(kind: str, make) -> None:
        seen = set()
        for _ in range(per_kind * 20):
            item = make()
            if item is not None and item not in seen and len({item[0], item[1], item[2], item[3]}) == 4:
                seen.add(item)
                out.append(PathAnalogy(kind, *item))
            if len(seen) == per_kind:
                break

    def gender():
        (m, f), (act1, act2) = rng.choice(GENDER), rng.sample(ACTIVITIES, 2)
        return (f"The {m} is {act1}.", f"The {f} is {act1}.", f"The {m} is {act2}.", f"The {f} is {act2}.")

    def number():
        (n1, p1), (n2, p2) = rng.sample(NOUNS, 2)
        v1, v2 = rng.sample(INTRANSITIVE, 2)
        k = rng.choice(NUMBERS)
        return (f"A {n1} is {v1}.", f"{k} {p1} are {v1}.", f"A {n2} is {v2}.", f"{k} {p2} are {v2}.")

    def tense():
        (p1, d1, o1), (p2, d2, o2) = rng.sample(PAST, 2)
        s1, s2 = rng.choice(SUBJECTS), rng.choice(SUBJECTS)
        return (f"{s1} {p1} {o1}.", f"{s1} {d1} {o1}.", f"{s2} {p2} {o2}.", f"{s2} {d2} {o2}.")

    def negation():
        if rng.random() < 0.5:
            who, (x, y) = rng.choice(PEOPLE), rng.sample(LIKES, 2)
            return (f"{who} like {x}.", f"{who} do not like {x}.", f"{who} like {y}.", f"{who} do not like {y}.")
        (s1, s2), (x, y) = rng.sample([("He", "is"), ("She", "is"), ("They", "are"), ("I", "am")], 2), rng.sample(STATES, 2)
        return (f"{s1[0]} {s1[1]} {x}.", f"{s1[0]} {s1[1]} not {x}.", f"{s2[0]} {s2[1]} {y}.", f"{s2[0]} {s2[1]} not {y}.")

    def verb():
        (v, w), (o1, o2) = rng.choice(VERB_SWAPS), rng.sample(SWAP_OBJECTS, 2)
        who = rng.choice(["She", "He"] if v.endswith("s") else ["I", "She", "He", "They"])  # "loves": third person
        return (f"{who} {v} {o1}.", f"{who} {w} {o1}.", f"{who} {v} {o2}.", f"{who} {w} {o2}.")

    def obj():
        (x, y), (s1, s2) = rng.sample(ARTICLE_NOUNS, 2), rng.sample(SEERS, 2)
        return (f"{s1} saw {_article(x)} {x}.", f"{s1} saw {_article(y)} {y}.",
                f"{s2} saw {_article(x)} {x}.", f"{s2} saw {_article(y)} {y}.")

    def place():
        (x, y), ((s1, v1), (s2, v2)) = rng.sample(PLACES, 2), rng.sample(LIVES, 2)
        return (f"{s1} {v1} in {x}.", f"{s1} {v1} in {y}.", f"{s2} {v2} in {x}.", f"{s2} {v2} in {y}.")

    def time():
        who, now, then, t1, t2 = rng.choice(TIMES)
        x, y = rng.sample(TIME_STATES[who], 2)
        return (f"{who} {now} {x} {t1}.", f"{who} {then} {x} {t2}.", f"{who} {now} {y} {t1}.", f"{who} {then} {y} {t2}.")

    def adjective():
        (big, small), (x, y) = rng.choice(ANTONYMS), rng.sample(THINGS, 2)
        return (f"The {x} is {big}.", f"The {x} is {small}.", f"The {y} is {big}.", f"The {y} is {small}.")

    def question():
        who, verb_, asked = rng.choice(QUESTIONS)
        fitting = [r for r in Q_REST if _q_fits(verb_, r)]
        x, y = rng.sample(fitting, 2)
        return (f"{who} {verb_} {x}.", f"{asked} {x}?", f"{who} {verb_} {y}.", f"{asked} {y}?")

    def weather():
        (x, y), (p, q) = rng.choice(WEATHER), rng.sample(PLACES, 2)
        be = "It is"
        return (f"{be} {x} in {p}.", f"{be} {y} in {p}.", f"{be} {x} in {q}.", f"{be} {y} in {q}.")

    def caption():
        (s1, s2), (w1, w2) = rng.sample(CAPTION_SCENES[0], 2), rng.sample(CAPTION_SCENES[1], 2)
        return (f"{s1} {w1}.", f"{s1} {w2}.", f"{s2} {w1}.", f"{s2} {w2}.")

    for kind, make in [("gender", gender), ("number", number), ("tense", tense), ("negation", negation),
                       ("verb", verb), ("object", obj), ("place", place), ("time", time),
                       ("adjective", adjective), ("question", question), ("weather", weather), ("caption", caption)]:
        add(kind, make)
    return out


HAND_WRITTEN = [
    PathAnalogy("hand", "The man is walking.", "The woman is walking.", "The man is running.", "The woman is running."),
    PathAnalogy("hand", "A dog is sleeping.", "Two dogs are sleeping.", "A cat is eating.", "Two cats are eating."),
    PathAnalogy("hand", "I bought a car.", "I sold a car.", "I bought a house.", "I sold a house."),
    PathAnalogy("hand", "It is sunny today.", "It is raining today.", "It was sunny yesterday.", "It was raining yesterday."),
    PathAnalogy("hand", "He has one brother.", "He has two brothers.", "She has one sister.", "She has two sisters."),
    PathAnalogy("hand", "The king rules the country.", "The queen rules the country.", "The king lives in a castle.",
                "The queen lives in a castle."),
    PathAnalogy("hand", "She owns a house.", "She owns two houses.", "He owns a car.", "He owns two cars."),
    PathAnalogy("hand", "I am tired today.", "I was tired yesterday.", "I am hungry today.", "I was hungry yesterday."),
    PathAnalogy("hand", "He is a teacher.", "He is an engineer.", "She is a teacher.", "She is an engineer."),
    PathAnalogy("hand", "The door is open.", "The door is not open.", "The shop is open.", "The shop is not open."),
    PathAnalogy("hand", "You like pizza.", "Do you like pizza?", "You like pasta.", "Do you like pasta?"),
    PathAnalogy("hand", "The children are playing outside.", "The children are playing inside.",
                "The dogs are sleeping outside.", "The dogs are sleeping inside."),
]


# Written after the choice rules of core/vec2sent/paths.py were designed and before any of their
# settings were tuned (session 41); never used to choose one. Some have no word-for-word counterpart
# in c (another verb, object or subject), where the edit transfer must find its place by form.
HELD_OUT = [PathAnalogy("held-out", *item) for item in [
    ("The boy is reading.", "The boys are reading.", "The girl is singing.", "The girls are singing."),
    ("She walks to school.", "She walked to school.", "He rides a bike.", "He rode a bike."),
    ("I have a cat.", "I have three cats.", "We have a dog.", "We have three dogs."),
    ("The car is fast.", "The car is not fast.", "The film is good.", "The film is not good."),
    ("He can swim.", "Can he swim?", "She can dance.", "Can she dance?"),
    ("The shop opens at nine.", "The shop closes at nine.", "The bank opens at ten.", "The bank closes at ten."),
    ("My father is a doctor.", "My mother is a doctor.", "My father is a pilot.", "My mother is a pilot."),
    ("The river is wide.", "The river is narrow.", "The street is wide.", "The street is narrow."),
    ("We play tennis on Monday.", "We play tennis on Friday.", "They swim on Monday.", "They swim on Friday."),
    ("A man is playing a guitar.", "A woman is playing a guitar.", "A man is riding a horse.",
     "A woman is riding a horse."),
    ("The baby sleeps.", "The babies sleep.", "The dog barks.", "The dogs bark."),
    ("It is snowing in Oslo.", "It is snowing in Rome.", "It is raining in Oslo.", "It is raining in Rome."),
    ("He likes apples.", "He does not like apples.", "She likes bananas.", "She does not like bananas."),
    ("The teacher is talking.", "The teachers are talking.", "The student is listening.",
     "The students are listening."),
    ("I eat breakfast.", "I ate breakfast.", "I take the bus.", "I took the bus."),
    ("He bought an umbrella.", "He bought a hat.", "She found an umbrella.", "She found a hat."),
    ("The glass is full.", "The glass is empty.", "The box is full.", "The box is empty."),
    ("They are at home.", "They were at home.", "We are at work.", "We were at work."),
    ("A girl is smiling.", "A girl is crying.", "A boy is smiling.", "A boy is crying."),
    ("The cat sits on the mat.", "The cats sit on the mat.", "The bird sings in the tree.",
     "The birds sing in the tree."),
    ("My sister lives in Spain.", "My brother lives in Spain.", "My sister works in a bank.",
     "My brother works in a bank."),
    ("You are late.", "Are you late?", "They are hungry.", "Are they hungry?"),
    ("The door is open.", "The doors are open.", "The window is dirty.", "The windows are dirty."),
    ("He writes a book.", "He is writing a book.", "She reads a letter.", "She is reading a letter."),
]]


# ---- analogies that change a sentence's structure (issue 74) ----------------------------------------

STRUCTURE_KINDS = ("possessive", "irregular", "do-negation", "two-changes", "yes-no", "passive")
# (subject, its possessive); a pair changes one into the other, the verb agreeing with the new subject
OWNERS = [(("I", "my"), ("She", "her")), (("I", "my"), ("He", "his")), (("We", "our"), ("They", "their")),
          (("I", "my"), ("We", "our")), (("They", "their"), ("She", "her")), (("You", "your"), ("He", "his"))]
OWNED = [("feed", "feeds", "cat"), ("wash", "washes", "car"), ("paint", "paints", "door"), ("call", "calls", "mother"),
         ("clean", "cleans", "room"), ("miss", "misses", "friends"), ("visit", "visits", "parents"),
         ("walk", "walks", "dog"), ("fix", "fixes", "bike"), ("love", "loves", "garden")]
REGULAR_NOUNS = [("dog", "dogs"), ("cat", "cats"), ("horse", "horses"), ("bird", "birds"), ("duck", "ducks")]
IRREGULAR_NOUNS = [("goose", "geese"), ("mouse", "mice"), ("child", "children"), ("man", "men"), ("woman", "women"),
                   ("ox", "oxen"), ("sheep", "sheep"), ("wolf", "wolves"), ("person", "people"), ("deer", "deer")]
MOVES = [("sleeps", "sleep"), ("runs", "run"), ("swims", "swim"), ("waits", "wait"), ("eats", "eat"), ("hides", "hide")]
# (lemma, past, object): regular pasts for a and b, irregular ones for c
REGULAR_PASTS = [("walk", "walked", "to school"), ("cook", "cooked", "dinner"), ("watch", "watched", "the game"),
                 ("clean", "cleaned", "the house"), ("play", "played", "chess"), ("open", "opened", "the box")]
IRREGULAR_PASTS = [("take", "took", "the bus"), ("eat", "ate", "the soup"), ("write", "wrote", "a letter"),
                   ("buy", "bought", "a hat"), ("see", "saw", "the film"), ("drink", "drank", "the milk"),
                   ("find", "found", "the key"), ("sing", "sang", "a song"), ("ride", "rode", "a horse"),
                   ("bring", "brought", "a cake"), ("go", "went", "home"), ("leave", "left", "the room")]
DOERS = ["I", "We", "They", "You"]
THIRD_DOERS = ["She", "He", "My friend", "The driver"]
# (lemma, third person, object) for "does not"
HABITS = [("like", "likes", "tea"), ("drink", "drinks", "milk"), ("play", "plays", "tennis"), ("read", "reads", "novels"),
          ("eat", "eats", "meat"), ("watch", "watches", "the news"), ("speak", "speaks", "French"),
          ("own", "owns", "a car")]
MODALS = ["can", "will", "should", "must"]
ABILITIES = ["swim", "cook", "drive", "sing", "wait", "stay", "help", "win"]
THINGS_STATES = [("lamp", "lamps"), ("road", "roads"), ("room", "rooms"), ("box", "boxes"), ("cup", "cups"),
                 ("street", "streets"), ("window", "windows"), ("table", "tables"), ("garden", "gardens")]
QUALITIES = ["bright", "wet", "clean", "empty", "full", "quiet", "dark", "new", "warm"]
# (agent, past, participle, patient)
DEEDS = [("The wind", "broke", "broken", "the branch"), ("The cat", "caught", "caught", "the mouse"),
         ("The boy", "kicked", "kicked", "the ball"), ("The chef", "cooked", "cooked", "the meal"),
         ("The girl", "wrote", "written", "the letter"), ("The storm", "destroyed", "destroyed", "the bridge"),
         ("The dog", "chased", "chased", "the rabbit"), ("The teacher", "opened", "opened", "the door"),
         ("The man", "stole", "stolen", "the car"), ("The police", "found", "found", "the money"),
         ("The baker", "made", "made", "the bread"), ("The child", "drew", "drawn", "the picture")]


def _third(doer: str, lemma_verb: str, third: str) -> str:
    """The verb as `doer` takes it in the present: "she feeds", "I feed"."""
    return third if doer in ("She", "He", "It") else lemma_verb


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def _structure_analogies(rng: random.Random, per_kind: int) -> list[PathAnalogy]:
    """`per_kind` rule-made analogies of each of STRUCTURE_KINDS (issue 74)."""
    out: list[PathAnalogy] = []

    def add(kind: str, make) -> None:
        seen = set()
        for _ in range(per_kind * 40):
            item = make()
            if item not in seen and len(set(item)) == 4:
                seen.add(item)
                out.append(PathAnalogy(kind, *item))
            if len(seen) == per_kind:
                break

    def possessive():
        ((s1, p1), (s2, p2)), ((v, v3, o1), (w, w3, o2)) = rng.choice(OWNERS), rng.sample(OWNED, 2)
        if rng.random() < 0.5:
            (s1, p1), (s2, p2) = (s2, p2), (s1, p1)
        return (f"{s1} {_third(s1, v, v3)} {p1} {o1}.", f"{s2} {_third(s2, v, v3)} {p2} {o1}.",
                f"{s1} {_third(s1, w, w3)} {p1} {o2}.", f"{s2} {_third(s2, w, w3)} {p2} {o2}.")

    def irregular():
        if rng.random() < 0.5:
            (n, ns), (m, ms), ((v3, v), (w3, w)) = rng.choice(REGULAR_NOUNS), rng.choice(IRREGULAR_NOUNS), rng.sample(MOVES, 2)
            k = rng.choice(NUMBERS)
            return (f"One {n} {v3}.", f"{k} {ns} {v}.", f"One {m} {w3}.", f"{k} {ms} {w}.")
        (v, vd, o1), (w, wd, o2), (s1, s2) = rng.choice(REGULAR_PASTS), rng.choice(IRREGULAR_PASTS), rng.sample(DOERS, 2)
        return (f"{s1} {v} {o1}.", f"{s1} {vd} {o1}.", f"{s2} {w} {o2}.", f"{s2} {wd} {o2}.")

    def do_negation():
        roll = rng.random()
        if roll < 0.35:
            (v, vd, o1), (w, wd, o2), (s1, s2) = (rng.choice(REGULAR_PASTS), rng.choice(IRREGULAR_PASTS),
                                                  rng.sample(DOERS + THIRD_DOERS, 2))
            return (f"{s1} {vd} {o1}.", f"{s1} did not {v} {o1}.", f"{s2} {wd} {o2}.", f"{s2} did not {w} {o2}.")
        if roll < 0.7:
            ((v, v3, o1), (w, w3, o2)), (s1, s2) = rng.sample(HABITS, 2), rng.sample(THIRD_DOERS, 2)
            return (f"{s1} {v3} {o1}.", f"{s1} does not {v} {o1}.", f"{s2} {w3} {o2}.", f"{s2} does not {w} {o2}.")
        modal, (x, y), (s1, s2) = rng.choice(MODALS), rng.sample(ABILITIES, 2), rng.sample(DOERS + THIRD_DOERS, 2)
        negated = "cannot" if modal == "can" else f"{modal} not"
        return (f"{s1} {modal} {x}.", f"{s1} {negated} {x}.", f"{s2} {modal} {y}.", f"{s2} {negated} {y}.")

    def two_changes():
        if rng.random() < 0.5:
            ((n, ns), (m, ms)), (x, y) = rng.sample(THINGS_STATES, 2), rng.sample(QUALITIES, 2)
            return (f"The {n} is {x}.", f"The {ns} are not {x}.", f"The {m} is {y}.", f"The {ms} are not {y}.")
        (man, woman), ((v, vd, o1), (w, wd, o2)) = rng.choice(GENDER), rng.sample(REGULAR_PASTS + IRREGULAR_PASTS, 2)
        v3, w3 = third_person(v), third_person(w)
        return (f"The {man} {v3} {o1}.", f"The {woman} {vd} {o1}.", f"The {man} {w3} {o2}.", f"The {woman} {wd} {o2}.")

    def yes_no():
        who = rng.choice(DOERS + THIRD_DOERS)
        asked = who if who == "I" else who[:1].lower() + who[1:]
        if rng.random() < 0.5:
            ((v, v3, o1), (w, w3, o2)), plain = rng.sample(HABITS, 2), who in DOERS
            do = "Do" if plain else "Does"
            return (f"{who} {v if plain else v3} {o1}.", f"{do} {asked} {v} {o1}?",
                    f"{who} {w if plain else w3} {o2}.", f"{do} {asked} {w} {o2}?")
        (v, vd, o1), (w, wd, o2) = rng.sample(REGULAR_PASTS + IRREGULAR_PASTS, 2)
        return (f"{who} {vd} {o1}.", f"Did {asked} {v} {o1}?", f"{who} {wd} {o2}.", f"Did {asked} {w} {o2}?")

    def passive():
        (g1, d1, p1, t1), (g2, d2, p2, t2) = rng.sample(DEEDS, 2)
        active1, active2 = f"{g1} {d1} {t1}.", f"{g2} {d2} {t2}."
        passive1, passive2 = (f"{_cap(t1)} was {p1} by {g1[0].lower() + g1[1:]}.",
                              f"{_cap(t2)} was {p2} by {g2[0].lower() + g2[1:]}.")
        if rng.random() < 0.7:
            return active1, passive1, active2, passive2
        return passive1, active1, passive2, active2

    for kind, make in zip(STRUCTURE_KINDS, (possessive, irregular, do_negation, two_changes, yes_no, passive)):
        add(kind, make)
    return out


# Issue 74's held-out analogies of STRUCTURE_KINDS: written by hand before any candidate for them was built, from
# other sentences (words, subjects, verbs) than the rule-made ones above; never used to choose a rule or setting.
HELD_OUT_STRUCTURE = [PathAnalogy(kind, *item) for kind, items in [
    ("possessive", [
        ("I brush my teeth.", "She brushes her teeth.", "I comb my hair.", "She combs her hair."),
        ("We sell our house.", "They sell their house.", "We water our plants.", "They water their plants."),
        ("I lock my bike.", "He locks his bike.", "I pack my bag.", "He packs his bag."),
        ("She answers her phone.", "I answer my phone.", "She reads her mail.", "I read my mail."),
        ("They park their van.", "We park our van.", "They mow their lawn.", "We mow our lawn."),
        ("He irons his shirt.", "I iron my shirt.", "He tidies his desk.", "I tidy my desk."),
        ("I hug my son.", "She hugs her son.", "I thank my teacher.", "She thanks her teacher."),
        ("You keep your promise.", "He keeps his promise.", "You check your email.", "He checks his email."),
        ("We love our neighbours.", "They love their neighbours.", "We trust our doctor.", "They trust their doctor."),
        ("I sign my name.", "He signs his name.", "I fill my glass.", "He fills his glass."),
    ]),
    ("irregular", [
        ("One cow grazes.", "Two cows graze.", "One goose grazes.", "Two geese graze."),
        ("A pig sleeps.", "Three pigs sleep.", "A mouse sleeps.", "Three mice sleep."),
        ("The girl laughs.", "The girls laugh.", "The child laughs.", "The children laugh."),
        ("One tree fell.", "Two trees fell.", "One leaf fell.", "Two leaves fell."),
        ("A fox hunts.", "Four foxes hunt.", "A wolf hunts.", "Four wolves hunt."),
        ("We jump rope.", "We jumped rope.", "We throw stones.", "We threw stones."),
        ("They dance well.", "They danced well.", "They swim well.", "They swam well."),
        ("I help my aunt.", "I helped my aunt.", "I tell a story.", "I told a story."),
        ("You fill the bucket.", "You filled the bucket.", "You break the glass.", "You broke the glass."),
        ("We paint the gate.", "We painted the gate.", "We build a fence.", "We built a fence."),
    ]),
    ("do-negation", [
        ("He missed the train.", "He did not miss the train.", "He caught the fish.", "He did not catch the fish."),
        ("They visited the museum.", "They did not visit the museum.", "They forgot the tickets.",
         "They did not forget the tickets."),
        ("She enjoys jazz.", "She does not enjoy jazz.", "She wears glasses.", "She does not wear glasses."),
        ("My uncle smokes cigars.", "My uncle does not smoke cigars.", "My uncle grows roses.",
         "My uncle does not grow roses."),
        ("We can ski.", "We cannot ski.", "We can dance.", "We cannot dance."),
        ("He will call.", "He will not call.", "He will listen.", "He will not listen."),
        ("You should run.", "You should not run.", "You should shout.", "You should not shout."),
        ("I kept the receipt.", "I did not keep the receipt.", "I paid the bill.", "I did not pay the bill."),
        ("The baby cries at night.", "The baby does not cry at night.", "The baby sleeps at night.",
         "The baby does not sleep at night."),
        ("She must leave.", "She must not leave.", "She must stay.", "She must not stay."),
    ]),
    ("two-changes", [
        ("The lake is calm.", "The lakes are not calm.", "The sea is rough.", "The seas are not rough."),
        ("The shirt is dry.", "The shirts are not dry.", "The towel is soft.", "The towels are not soft."),
        ("The bottle is cold.", "The bottles are not cold.", "The plate is hot.", "The plates are not hot."),
        ("The door is locked.", "The doors are not locked.", "The gate is open.", "The gates are not open."),
        ("The train is late.", "The trains are not late.", "The bus is early.", "The buses are not early."),
        ("The king opens the gate.", "The queen opened the gate.", "The king reads the letter.",
         "The queen read the letter."),
        ("The waiter brings the menu.", "The waitress brought the menu.", "The waiter cleans the table.",
         "The waitress cleaned the table."),
        ("My brother drives a truck.", "My sister drove a truck.", "My brother rides a bike.", "My sister rode a bike."),
        ("The prince meets the guests.", "The princess met the guests.", "The prince greets the guests.",
         "The princess greeted the guests."),
        ("The grandfather tells a joke.", "The grandmother told a joke.", "The grandfather sings a song.",
         "The grandmother sang a song."),
    ]),
    ("yes-no", [
        ("She knits scarves.", "Does she knit scarves?", "She bakes bread.", "Does she bake bread?"),
        ("They own a boat.", "Do they own a boat?", "They rent a flat.", "Do they rent a flat?"),
        ("He plays the piano.", "Does he play the piano?", "He studies history.", "Does he study history?"),
        ("You know the answer.", "Do you know the answer?", "You need a pen.", "Do you need a pen?"),
        ("We won the match.", "Did we win the match?", "We lost the keys.", "Did we lose the keys?"),
        ("She fed the cat.", "Did she feed the cat?", "She locked the door.", "Did she lock the door?"),
        ("The shop sells shoes.", "Does the shop sell shoes?", "The shop opens early.", "Does the shop open early?"),
        ("They came early.", "Did they come early?", "They stayed late.", "Did they stay late?"),
        ("He speaks Spanish.", "Does he speak Spanish?", "He teaches music.", "Does he teach music?"),
        ("You heard the news.", "Did you hear the news?", "You met the mayor.", "Did you meet the mayor?"),
    ]),
    ("passive", [
        ("The fox killed the hen.", "The hen was killed by the fox.", "The hawk caught the snake.",
         "The snake was caught by the hawk."),
        ("The flood damaged the road.", "The road was damaged by the flood.", "The fire burned the barn.",
         "The barn was burned by the fire."),
        ("The pupil answered the question.", "The question was answered by the pupil.", "The judge asked the question.",
         "The question was asked by the judge."),
        ("The farmer sold the cow.", "The cow was sold by the farmer.", "The butcher bought the cow.",
         "The cow was bought by the butcher."),
        ("The artist painted the portrait.", "The portrait was painted by the artist.",
         "The author wrote the novel.", "The novel was written by the author."),
        ("The nurse helped the patient.", "The patient was helped by the nurse.", "The doctor saw the patient.",
         "The patient was seen by the doctor."),
        ("The mayor opened the bridge.", "The bridge was opened by the mayor.", "The army built the bridge.",
         "The bridge was built by the army."),
        ("The vase was broken by the cat.", "The cat broke the vase.", "The cake was eaten by the dog.",
         "The dog ate the cake."),
        ("The letter was sent by the clerk.", "The clerk sent the letter.", "The song was sung by the choir.",
         "The choir sang the song."),
        ("The tree was cut by the gardener.", "The gardener cut the tree.", "The window was cleaned by the maid.",
         "The maid cleaned the window."),
    ]),
] for item in items]


# A second held-out set of STRUCTURE_KINDS (session 48): written by hand before any change of that session to the
# decoding, from other sentences (and mostly other nouns, verbs and gender pairs) than the dev set, HELD_OUT_STRUCTURE
# and the tests; measured once, after the session's changes (`--structure --held-out 2`). Some are harder than the
# dev kinds on purpose, as a new user writes them: "have" as a main verb, plural patients, "would".
HELD_OUT_STRUCTURE_2 = [PathAnalogy(kind, *item) for kind, items in [
    ("possessive", [
        ("I polish my shoes.", "He polishes his shoes.", "I tie my shoes.", "He ties his shoes."),
        ("We repair our roof.", "They repair their roof.", "We sweep our porch.", "They sweep their porch."),
        ("She phones her sister.", "I phone my sister.", "She meets her sister.", "I meet my sister."),
        ("They wave their flags.", "We wave our flags.", "They raise their hands.", "We raise our hands."),
        ("You open your eyes.", "She opens her eyes.", "You close your eyes.", "She closes her eyes."),
        ("He drinks his juice.", "I drink my juice.", "He finishes his soup.", "I finish my soup."),
        ("I praise my students.", "He praises his students.", "I scold my puppy.", "He scolds his puppy."),
        ("We hide our money.", "They hide their money.", "We count our money.", "They count their money."),
        ("I grab my coat.", "She grabs her coat.", "I button my coat.", "She buttons her coat."),
        ("They decorate their tree.", "She decorates her tree.", "They plant their seeds.", "She plants her seeds."),
    ]),
    ("irregular", [
        ("One frog jumps.", "Two frogs jump.", "One foot hurts.", "Two feet hurt."),
        ("A bee buzzes.", "Four bees buzz.", "A tooth aches.", "Four teeth ache."),
        ("One fork is sharp.", "Two forks are sharp.", "One knife is sharp.", "Two knives are sharp."),
        ("A guard runs.", "Three guards run.", "A thief runs.", "Three thieves run."),
        ("One lamb drinks.", "Two lambs drink.", "One calf drinks.", "Two calves drink."),
        ("One roll is fresh.", "Two rolls are fresh.", "One loaf is fresh.", "Two loaves are fresh."),
        ("We climb the hill.", "We climbed the hill.", "We dig a hole.", "We dug a hole."),
        ("They pull the rope.", "They pulled the rope.", "They hold the rope.", "They held the rope."),
        ("I cross the street.", "I crossed the street.", "I sweep the floor.", "I swept the floor."),
        ("You knock twice.", "You knocked twice.", "You ring twice.", "You rang twice."),
    ]),
    ("do-negation", [
        ("She returned the book.", "She did not return the book.", "She stole the book.",
         "She did not steal the book."),
        ("They liked the lesson.", "They did not like the lesson.", "They understood the lesson.",
         "They did not understand the lesson."),
        ("My cousin collects stamps.", "My cousin does not collect stamps.", "My cousin draws cartoons.",
         "My cousin does not draw cartoons."),
        ("He chews gum.", "He does not chew gum.", "He bites his nails.", "He does not bite his nails."),
        ("The kettle whistles.", "The kettle does not whistle.", "The kettle leaks.", "The kettle does not leak."),
        ("I ordered the pizza.", "I did not order the pizza.", "I froze the pizza.", "I did not freeze the pizza."),
        ("They can climb.", "They cannot climb.", "They can whistle.", "They cannot whistle."),
        ("She will agree.", "She will not agree.", "She will complain.", "She will not complain."),
        ("We should hurry.", "We should not hurry.", "We should argue.", "We should not argue."),
        ("You must whisper.", "You must not whisper.", "You must laugh.", "You must not laugh."),
        ("I would forget.", "I would not forget.", "I would refuse.", "I would not refuse."),
    ]),
    ("two-changes", [
        ("The pond is deep.", "The ponds are not deep.", "The well is shallow.", "The wells are not shallow."),
        ("The desk is tidy.", "The desks are not tidy.", "The chair is broken.", "The chairs are not broken."),
        ("The apple is ripe.", "The apples are not ripe.", "The pear is sweet.", "The pears are not sweet."),
        ("The tent is big.", "The tents are not big.", "The hut is small.", "The huts are not small."),
        ("The coin is shiny.", "The coins are not shiny.", "The ring is heavy.", "The rings are not heavy."),
        ("The nephew kicks the ball.", "The niece kicked the ball.", "The nephew hits the ball.",
         "The niece hit the ball."),
        ("The duke signs the treaty.", "The duchess signed the treaty.", "The duke hides the treaty.",
         "The duchess hid the treaty."),
        ("The groom thanks the priest.", "The bride thanked the priest.", "The groom pays the priest.",
         "The bride paid the priest."),
        ("The emperor enters the temple.", "The empress entered the temple.", "The emperor sees the temple.",
         "The empress saw the temple."),
        ("The host serves the soup.", "The hostess served the soup.", "The host tastes the soup.",
         "The hostess tasted the soup."),
    ]),
    ("yes-no", [
        ("She sews dresses.", "Does she sew dresses?", "She designs hats.", "Does she design hats?"),
        ("They grow tomatoes.", "Do they grow tomatoes?", "They pick tomatoes.", "Do they pick tomatoes?"),
        ("He repairs clocks.", "Does he repair clocks?", "He builds clocks.", "Does he build clocks?"),
        ("You remember the address.", "Do you remember the address?", "You have the address.",
         "Do you have the address?"),
        ("We missed the flight.", "Did we miss the flight?", "We booked the flight.", "Did we book the flight?"),
        ("He dropped the plate.", "Did he drop the plate?", "He threw the plate.", "Did he throw the plate?"),
        ("The museum closes early.", "Does the museum close early?", "The museum opens late.",
         "Does the museum open late?"),
        ("They printed the report.", "Did they print the report?", "They sent the report.",
         "Did they send the report?"),
        ("She understands German.", "Does she understand German?", "She learns German.", "Does she learn German?"),
        ("You saw the film.", "Did you see the film?", "You liked the film.", "Did you like the film?"),
    ]),
    ("passive", [
        ("The lion attacked the zebra.", "The zebra was attacked by the lion.", "The snake bit the farmer.",
         "The farmer was bitten by the snake."),
        ("The plumber repaired the sink.", "The sink was repaired by the plumber.", "The plumber installed the sink.",
         "The sink was installed by the plumber."),
        ("The students planted the trees.", "The trees were planted by the students.", "The workers chopped the logs.",
         "The logs were chopped by the workers."),
        ("The thief took the jewels.", "The jewels were taken by the thief.", "The guard hid the jewels.",
         "The jewels were hidden by the guard."),
        ("The company hired the engineer.", "The engineer was hired by the company.", "The company fired the engineer.",
         "The engineer was fired by the company."),
        ("The boy threw the stone.", "The stone was thrown by the boy.", "The girl kicked the stone.",
         "The stone was kicked by the girl."),
        ("The queen crowned the knight.", "The knight was crowned by the queen.", "The king chose the knight.",
         "The knight was chosen by the king."),
        ("The house was sold by the bank.", "The bank sold the house.", "The loan was approved by the bank.",
         "The bank approved the loan."),
        ("The bell was rung by the monk.", "The monk rang the bell.", "The candle was lit by the monk.",
         "The monk lit the candle."),
        ("The goal was scored by the captain.", "The captain scored the goal.", "The trophy was lifted by the captain.",
         "The captain lifted the trophy."),
    ]),
] for item in items]



# A third held-out set of STRUCTURE_KINDS (session 49): written by hand before that session's work on the kinds, from
# other sentences (and mostly other nouns, verbs and gender pairs) than the dev set, the two sets above and the tests;
# not run when written: to be measured once, after the next change of the structural decoding (`--held-out 3`).
# Harder on purpose in places: plurals that do not change ("fish") or change whole ("person" -> "people"), "read"
# in the past, "could" and "might", a passive of plural fish.
HELD_OUT_STRUCTURE_3 = [PathAnalogy(kind, *item) for kind, items in [
    ("possessive", [
        ("I sharpen my pencil.", "She sharpens her pencil.", "I lose my pencil.", "She loses her pencil."),
        ("We clean our garage.", "They clean their garage.", "We empty our garage.", "They empty their garage."),
        ("He loves his grandmother.", "I love my grandmother.", "He visits his grandmother.", "I visit my grandmother."),
        ("They sell their paintings.", "We sell our paintings.", "They frame their paintings.", "We frame our paintings."),
        ("You warm your hands.", "He warms his hands.", "You rub your hands.", "He rubs his hands."),
        ("She wraps her gifts.", "We wrap our gifts.", "She opens her gifts.", "We open our gifts."),
        ("I trim my beard.", "He trims his beard.", "I shave my beard.", "He shaves his beard."),
        ("We greet our guests.", "They greet their guests.", "We invite our guests.", "They invite their guests."),
        ("I stretch my legs.", "She stretches her legs.", "I cross my legs.", "She crosses her legs."),
        ("They guard their castle.", "He guards his castle.", "They defend their castle.", "He defends his castle."),
    ]),
    ("irregular", [
        ("One girl sings.", "Two girls sing.", "One elf sings.", "Two elves sing."),
        ("A boy smiles.", "Three boys smile.", "A person smiles.", "Three people smile."),
        ("One box is full.", "Two boxes are full.", "One shelf is full.", "Two shelves are full."),
        ("One swan swims.", "Two swans swim.", "One fish swims.", "Two fish swim."),
        ("We wash the car.", "We washed the car.", "We drive the car.", "We drove the car."),
        ("They lift the box.", "They lifted the box.", "They bring the box.", "They brought the box."),
        ("I fix the bike.", "I fixed the bike.", "I sell the bike.", "I sold the bike."),
        ("You call the dog.", "You called the dog.", "You feed the dog.", "You fed the dog."),
        ("She guards the gate.", "She guarded the gate.", "She leaves the gate.", "She left the gate."),
        ("We count the sheep.", "We counted the sheep.", "We keep the sheep.", "We kept the sheep."),
    ]),
    ("do-negation", [
        ("She painted the fence.", "She did not paint the fence.", "She built the fence.", "She did not build the fence."),
        ("They cleaned the kitchen.", "They did not clean the kitchen.", "They left the kitchen.",
         "They did not leave the kitchen."),
        ("My aunt bakes cookies.", "My aunt does not bake cookies.", "My aunt buys cookies.",
         "My aunt does not buy cookies."),
        ("He reads comics.", "He does not read comics.", "He writes comics.", "He does not write comics."),
        ("The dog growls.", "The dog does not growl.", "The dog bites.", "The dog does not bite."),
        ("We wanted the car.", "We did not want the car.", "We sold the car.", "We did not sell the car."),
        ("She can skate.", "She cannot skate.", "She can knit.", "She cannot knit."),
        ("They will vote.", "They will not vote.", "They will protest.", "They will not protest."),
        ("He could sleep.", "He could not sleep.", "He could breathe.", "He could not breathe."),
        ("I might stay.", "I might not stay.", "I might go.", "I might not go."),
    ]),
    ("two-changes", [
        ("The glass is clean.", "The glasses are not clean.", "The jar is empty.", "The jars are not empty."),
        ("The path is steep.", "The paths are not steep.", "The hill is high.", "The hills are not high."),
        ("The cake is fresh.", "The cakes are not fresh.", "The pie is warm.", "The pies are not warm."),
        ("The bag is heavy.", "The bags are not heavy.", "The basket is light.", "The baskets are not light."),
        ("The key is lost.", "The keys are not lost.", "The phone is new.", "The phones are not new."),
        ("The uncle drives the car.", "The aunt drove the car.", "The uncle washes the car.", "The aunt washed the car."),
        ("The actor learns the lines.", "The actress learned the lines.", "The actor forgets the lines.",
         "The actress forgot the lines."),
        ("The husband cooks the dinner.", "The wife cooked the dinner.", "The husband eats the dinner.",
         "The wife ate the dinner."),
        ("The son feeds the horse.", "The daughter fed the horse.", "The son rides the horse.",
         "The daughter rode the horse."),
        ("The lord builds the castle.", "The lady built the castle.", "The lord visits the castle.",
         "The lady visited the castle."),
    ]),
    ("yes-no", [
        ("She plays chess.", "Does she play chess?", "She teaches chess.", "Does she teach chess?"),
        ("They sell bicycles.", "Do they sell bicycles?", "They repair bicycles.", "Do they repair bicycles?"),
        ("He writes poems.", "Does he write poems?", "He reads poems.", "Does he read poems?"),
        ("You want dessert.", "Do you want dessert?", "You like dessert.", "Do you like dessert?"),
        ("We passed the test.", "Did we pass the test?", "We failed the test.", "Did we fail the test?"),
        ("She wrote the email.", "Did she write the email?", "She read the email.", "Did she read the email?"),
        ("The bakery sells cakes.", "Does the bakery sell cakes?", "The bakery makes cakes.",
         "Does the bakery make cakes?"),
        ("They found the key.", "Did they find the key?", "They lost the key.", "Did they lose the key?"),
        ("He can cook.", "Can he cook?", "He can dance.", "Can he dance?"),
        ("You washed the car.", "Did you wash the car?", "You parked the car.", "Did you park the car?"),
    ]),
    ("passive", [
        ("The dog bit the postman.", "The postman was bitten by the dog.", "The dog followed the postman.",
         "The postman was followed by the dog."),
        ("The chef baked the bread.", "The bread was baked by the chef.", "The chef sliced the bread.",
         "The bread was sliced by the chef."),
        ("The children painted the walls.", "The walls were painted by the children.", "The children washed the walls.",
         "The walls were washed by the children."),
        ("The pirate buried the treasure.", "The treasure was buried by the pirate.", "The pirate found the treasure.",
         "The treasure was found by the pirate."),
        ("The teacher graded the tests.", "The tests were graded by the teacher.", "The teacher gave the tests.",
         "The tests were given by the teacher."),
        ("The storm flooded the town.", "The town was flooded by the storm.", "The storm hit the town.",
         "The town was hit by the storm."),
        ("The mechanic fixed the engine.", "The engine was fixed by the mechanic.", "The mechanic tested the engine.",
         "The engine was tested by the mechanic."),
        ("The pie was made by the cook.", "The cook made the pie.", "The soup was stirred by the cook.",
         "The cook stirred the soup."),
        ("The poem was read by the poet.", "The poet read the poem.", "The book was signed by the poet.",
         "The poet signed the book."),
        ("The fish were caught by the fishermen.", "The fishermen caught the fish.", "The nets were mended by the fishermen.",
         "The fishermen mended the nets."),
    ]),
] for item in items]

def structure_analogies(per_kind: int = 10, seed: int = 0) -> list[PathAnalogy]:
    """`per_kind` rule-made analogies of each of STRUCTURE_KINDS (seeded)."""
    return _structure_analogies(random.Random(seed), per_kind)


def path_analogies(per_kind: int = 8, seed: int = 0) -> list[PathAnalogy]:
    """`per_kind` rule-made analogies of each of the 12 kinds (seeded) and the hand-written ones."""
    return _rule_analogies(random.Random(seed), per_kind) + HAND_WRITTEN


STSB = Path("data/senteval/STS/STSBenchmark")


PAIR_SPLITS = ("dev", "test", "test-2")
FIRST_TEST_PAIRS = 40  # "test" as measured since session 47: the first 40 of the seed-0 sample; "test-2" excludes them


def interpolation_pairs(shared: Path, limit: int = 40, seed: int = 0, split: str = "dev") -> list[tuple[str, str]]:
    """`limit` pairs of related but different sentences (gold 2-4, 4-15 words each), a seeded sample of STS-B's
    dev split ("dev") or, held out, its test split: "test" (measured since session 47 with the defaults, limit 40 and
    seed 0) or "test-2" (written in session 50 before that session's interpolation changes: the test pairs not among
    those FIRST_TEST_PAIRS; another limit or seed of "test" may overlap it).
    FileNotFoundError naming the file when ../shared is not there."""
    if split not in PAIR_SPLITS:
        raise ValueError(f"split must be one of {', '.join(PAIR_SPLITS)}, not {split!r}")
    pool = _related_pairs(Path(shared) / STSB / f"sts-{'dev' if split == 'dev' else 'test'}.csv")
    if split == "test-2":
        seen = set(random.Random(0).sample(pool, min(FIRST_TEST_PAIRS, len(pool))))
        pool = [pair for pair in pool if pair not in seen]
    return random.Random(seed).sample(pool, min(limit, len(pool)))


def _related_pairs(file: Path) -> list[tuple[str, str]]:
    """The pairs of an STS-B file with gold 2-4, 4-15 words each side and not the same words."""
    pairs = []
    for line in file.read_text(encoding="utf-8").splitlines():
        cols = line.split("\t")
        if len(cols) < 7:
            continue
        score, x, y = float(cols[4]), cols[5].strip(), cols[6].strip()
        if 2.0 <= score <= 4.0 and all(4 <= len(s.split()) <= 15 for s in (x, y)) and words_of(x) != words_of(y):
            pairs.append((x, y))
    return pairs
