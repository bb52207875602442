"""An App on a store of its own, pinned to MiniLM: the relevance thresholds the recall tests
assert were tuned on MiniLM cosines (the multilingual default has its own scale)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from memd.daemon.app import App
from memd.embedding.models import MINILM_MODEL
from memd.settings import Settings


@contextmanager
def minilm_app(root: Path) -> Iterator[App]:
    """A writer App with its home under ``root``, closed afterwards."""
    settings = Settings(
        home=root / "memd",
        transcripts_dir=root / "projects",
        config=root / "none.toml",
        embedding_model=MINILM_MODEL,
    )
    application = App(settings).open(writer=True, owner="test")
    try:
        yield application
    finally:
        application.close()
