"""Extraction: closed segments in, candidate memories out, through one of three backends.

- ``heuristic`` (default): offline, free, deterministic (``memd.extract.heuristic``).
- ``anthropic``: the Messages API through the ``anthropic`` SDK (``memd.extract.anthropic``).
- ``claude-cli``: ``claude -p`` with the user's login, fully guarded (``memd.extract.claude_cli``).

The LLM backends raise ``BudgetExceeded`` once the daily token budget is spent; the caller then
runs the heuristic extractor on that segment and reports the fallback.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memd.errors import ConfigError
from memd.extract.base import Extractor, KeyValueState, MemoryState, TokenLedger

if TYPE_CHECKING:
    from memd.settings import Settings

__all__ = ["Extractor", "KeyValueState", "MemoryState", "TokenLedger", "get_extractor"]


def get_extractor(settings: Settings, state: KeyValueState | Any = None) -> Extractor:
    """The backend ``settings.extractor`` names. ``state`` persists the daily token ledger."""
    name = settings.extractor
    if name == "heuristic":
        from memd.extract.heuristic import HeuristicExtractor

        return HeuristicExtractor(extra_patterns=tuple(settings.redact_patterns))
    if name == "anthropic":
        from memd.extract.anthropic import AnthropicExtractor

        return AnthropicExtractor(settings, state=state)
    if name == "claude-cli":
        from memd.extract.claude_cli import ClaudeCliExtractor

        return ClaudeCliExtractor(settings, state=state)
    raise ConfigError(f"unknown extractor {name!r}; choose heuristic, anthropic or claude-cli")
