"""English glosses of Chinese text, for an English-only embedding model (MiniLM, the default).

MiniLM reads Chinese as rows of unknown characters: two unrelated Chinese sentences score as
high as two related English ones, and a Chinese sentence says nothing to its English
counterpart (zh->en recall@5 ~0.1 on the labelled sets). What it reads well is English. So a
text holding Chinese is embedded as its gloss: the text with its Chinese characters taken out
(its English words, identifiers and numbers stay where they were), followed by the English
words of the zh<->en bridge for its Chinese words (:mod:`memd.text.bridge`: the
software-engineering glossary first, CC-CEDICT for the rest). A Chinese prompt and an English
memory (or the other way round) then meet in English. A gloss is a bag of words, not a
translation; it is only ever embedded, never shown or stored as text.

:class:`memd.embedding.embed.Embedder` imports it on the first text holding Chinese.
"""

from __future__ import annotations

import re

from memd.text import bridge
from memd.text.chinese import CJK_RUN

_SPACES = re.compile(r"\s+")
MAX_GLOSS_CHARS = 1200
"""A Chinese memory's gloss is bridged from at most this many of its characters (an excerpt
can hold a few thousand; the model reads 256 tokens)."""


def gloss(text: str) -> str:
    """``text`` for an English-only model: unchanged without Chinese characters; else its
    non-Chinese part, then the English words the bridge finds for its Chinese words."""
    if CJK_RUN.search(text) is None:
        return text
    head = text[:MAX_GLOSS_CHARS]
    bridged = bridge.bridge(head)  # Chinese: with the dictionary, loaded on first use
    english = [w for w in bridged.words if CJK_RUN.search(w) is None]
    rest = CJK_RUN.sub(" ", text)
    return _SPACES.sub(" ", f"{rest} {' '.join(english)}").strip() or text
