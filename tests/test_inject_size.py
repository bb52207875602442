"""BlockSize: the length of a block, kept item by item, equals what render() gives (day lines
included)."""

from __future__ import annotations

import random

from hitdata import hit

from memd.recall import block
from memd.recall.hits import Hit


def memory(i: int, kind: str, text: str, project: str = "/p") -> Hit:
    return hit(
        {
            "id": f"m{i:04d}",
            # "pinned" and "sessions" (a prompt's summaries) are sections, not kinds
            "kind": {"pinned": "fact", "sessions": "summary"}.get(kind, kind),
            "text": text,
            "project": project,
            "sources": [{"uuid": f"u{i}", "timestamp": f"2026-0{1 + i % 9}-1{i % 10}T00:00:00Z"}],
            "score": 1.0 - i / 100,
        }
    )


def test_block_size_matches_render() -> None:
    rng = random.Random(7)
    kinds = [key for key, _ in block.SECTIONS]
    for trial in range(200):
        items: list[block.Item] = []
        size = block.BlockSize()
        footer = "" if trial % 3 else block.overflow(trial % 5 + 1)
        for i in range(rng.randint(1, 12)):
            kind = rng.choice(kinds)
            words = " ".join(
                rng.choice(["deploy", "日志", "port", "v0.5.0", "x"]) for _ in range(9)
            )
            project = "user" if rng.random() < 0.2 else "/p"
            item = block.Item(memory(i, kind, words, project), kind, 1.0)
            if rng.random() < 0.3:
                item.note = "newer"
            if kind == "excerpt" and rng.random() < 0.8:  # shown under a line for its day
                item.day = rng.choice(["2026-11-20", "2026-11-21", "2026-11-30"])
            expected = block.rendered_size(block.ordered([*items, item]), footer)
            assert size.with_item(item, footer) == expected
            items.append(item)
            size.add(item)
        assert size.total(footer) == block.rendered_size(block.ordered(items), footer)
    assert block.BlockSize().total() == 0 == block.rendered_size([])
