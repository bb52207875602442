"""The stop words live in one module, one list per purpose (memd/text/stopwords.py); how the
lists differ is on purpose, and this says how."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import memd
from memd.text import stopwords as sw

ROOT = Path(memd.__file__).resolve().parent


def test_each_list_keeps_its_words() -> None:
    sizes = {
        "SEARCH": (sw.SEARCH, 202),
        "EXTRACTION": (sw.EXTRACTION, 187),
        "STATEMENT": (sw.STATEMENT, 151),
        "SUBJECT_GENERIC": (sw.SUBJECT_GENERIC, 50),
        "TODO_MATCH": (sw.TODO_MATCH, 46),
        "DONE_GENERIC": (sw.DONE_GENERIC, 49),
        "MEMORY_KEY": (sw.MEMORY_KEY, 28),
        "SMALL_TALK": (sw.SMALL_TALK, 27),
        "FORGET_REQUEST": (sw.FORGET_REQUEST, 25),
        "HEADING_GENERIC": (sw.HEADING_GENERIC, 42),
        "GLOSS_GENERIC": (sw.GLOSS_GENERIC, 10),
        "ARTICLES": (sw.ARTICLES, 3),
    }
    assert {name: len(words) for name, (words, _) in sizes.items()} == {
        name: size for name, (_, size) in sizes.items()
    }
    assert len(sw.SEARCH_CJK_WORDS) == 80
    assert {"怎么", "应该", "希望", "哪家"} <= set(sw.SEARCH_CJK_WORDS)
    assert len(sw.SEARCH_CJK_CHARS) == 63 and "啥" in sw.SEARCH_CJK_CHARS


def test_how_the_lists_differ() -> None:
    """Search keeps the verbs of coding talk a prompt is about; extraction drops them (never a
    keyword or a topic); statements also drop the verbs that link a subject to its value."""
    coding_verbs = {"fix", "add", "run", "file", "code"}
    assert not coding_verbs & sw.SEARCH
    assert coding_verbs <= sw.EXTRACTION
    linking = {"lives", "living", "stored", "keep"}
    assert linking <= sw.STATEMENT and not linking & sw.SEARCH
    assert "remember" in sw.SEARCH and "remember" not in sw.EXTRACTION
    assert "remember" in sw.MEMORY_KEY  # a memory's key drops "remember" on top of extraction
    assert "old" in sw.FORGET_REQUEST and "old" not in sw.SEARCH  # "forget my old address"
    assert "fix" in sw.SUBJECT_GENERIC  # stems: "fixed" folds into it
    assert "用" in sw.SEARCH_CJK_CHARS and "用" not in sw.KEYWORD_CJK_CHARS
    assert re.compile(sw.STATEMENT_CJK).fullmatch("改成")  # a linking verb of a statement


def test_no_stop_word_list_outside_the_text_layer() -> None:
    """A module-level name for stop words (``*STOP*``, ``*STOPWORDS*``, ``*GENERIC*``) outside
    memd/text is an alias of memd.text.stopwords, never a list of its own."""
    copies = []
    for path in sorted(ROOT.rglob("*.py")):
        if "text" in path.relative_to(ROOT).parts:
            continue
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if not isinstance(node, ast.Assign):
                continue
            names = [t.id for t in node.targets if isinstance(t, ast.Name)]
            if not any(re.search(r"STOP(?!PED)|GENERIC", n) for n in names):
                continue
            strings = [
                n.value
                for n in ast.walk(node.value)
                if isinstance(n, ast.Constant) and isinstance(n.value, str)
            ]
            if len(strings) >= 5 or any(len(s.split()) >= 5 for s in strings):
                copies.append(f"{path.relative_to(ROOT)}: {', '.join(names)}")
    assert not copies, copies
