"""memd/text: the one Chinese character class and the stemmers, each for its purpose."""

from __future__ import annotations

import pytest

from memd.text.chinese import CJK_CHAR, has_chinese, is_chinese
from memd.text.stems import grounding_stem, search_stem, statement_stem


@pytest.mark.parametrize(
    ("word", "search", "statement", "grounding"),
    [
        ("deployments", "deployment", "deploy", "deplo"),  # statements drop "-ment"
        ("announcements", "announcement", "announc", "annou"),
        ("committed", "committ", "commit", "commi"),  # statements drop the doubled consonant
        ("caches", "cach", "cach", "cache"),
        ("configure", "configure", "configur", "confi"),  # statements drop a final "e"
        ("built", "built", "build", "built"),  # only statements fold irregular verbs
        ("queries", "query", "query", "queri"),
        ("api", "api", "api", "api"),  # short words are kept whole
    ],
)
def test_the_stemmers_differ_by_purpose(
    word: str, search: str, statement: str, grounding: str
) -> None:
    assert search_stem(word) == search
    assert statement_stem(word) == statement
    assert grounding_stem(word) == grounding


def test_one_character_class_for_chinese() -> None:
    assert CJK_CHAR.search("部署") and CJK_CHAR.search("\u3400") and CJK_CHAR.search("\uf900")
    assert not CJK_CHAR.search("ひらがな") and not CJK_CHAR.search("한국어")
    assert is_chinese("把超时改成 30 秒") and not is_chinese("set timeout_seconds to 30 (秒)")
    assert has_chinese("set timeout_seconds to 30 (秒)") and not has_chinese("plain English")
