"""The stemmers, each named for what it is for. They differ on purpose (tests/test_text.py shows
how): search matches a prompt's word forms lightly and keeps stems readable for the index,
statements fold harder so that two wordings of one statement meet, and grounding only asks
whether an LLM's word was said at all."""

from __future__ import annotations

from functools import lru_cache

IRREGULAR = {
    "built": "build", "sent": "send", "written": "write", "wrote": "write", "shown": "show",
    "ran": "run", "kept": "keep", "taken": "take", "took": "take", "came": "come",
    "went": "go", "made": "make", "held": "hold", "chosen": "choose", "chose": "choose",
    "maximum": "max", "minimum": "min", "larger": "large", "smaller": "small",
}  # fmt: skip
"""Irregular verb forms, folded to their base by :func:`statement_stem`."""


def search_stem_uncached(word: str) -> str:
    """A light, consistent stemmer: plural and common suffixes only. Query and memory go
    through the same function, so what matters is that variants meet, not that stems are real
    words."""
    if len(word) <= 3 or not word.isalpha():
        return word
    if word.endswith("'s"):
        word = word[:-2]
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith("ing") and len(word) > 5:
        return word[:-3]
    if word.endswith("ed") and len(word) > 4:
        return word[:-2]
    if word.endswith(("sses", "shes", "ches", "xes", "zes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


search_stem = lru_cache(maxsize=1 << 16)(search_stem_uncached)
""":func:`search_stem_uncached`, remembered: the same words come up prompt after prompt (a
caller stemming a whole dictionary once uses the uncached one, not to flush this cache)."""


def statement_stem(word: str) -> str:
    """For telling two statements apart (dedupe, conflicts, supersession): strong, irregular
    verbs folded, a final "e" and a doubled consonant dropped ("committed" and "commits" meet)."""
    word = IRREGULAR.get(word, word)
    if not word.isalpha() or len(word) <= 3:
        return word
    if word.endswith(("ies", "ied")) and len(word) > 4:
        word = word[:-3] + "y"
    elif word.endswith("ing") and len(word) > 5:
        word = word[:-3]
    elif (word.endswith("ed") and len(word) > 4) or word.endswith(("ches", "shes", "sses", "xes")):
        word = word[:-2]
    elif word.endswith("s") and not word.endswith("ss"):
        word = word[:-1]
    if word.endswith("ment") and len(word) > 7:
        word = word[:-4]  # "announcements" -> "announce"
    if word.endswith("e") and len(word) > 3:
        word = word[:-1]
    if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "slz":
        word = word[:-1]  # "committed" -> "commit"
    return word


def grounding_stem(word: str) -> str:
    """For checking that an LLM memory's words were said in its turns: the first five letters
    (any inflection of a word said counts)."""
    return word[:5]
