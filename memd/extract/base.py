"""The extractor interface, and the daily token ledger the LLM backends share."""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from typing import Any, Protocol, runtime_checkable

from memd.errors import BudgetExceeded
from memd.models import Candidate, Segment


@runtime_checkable
class Extractor(Protocol):
    """Turns one closed segment into candidate memories.

    The segment's turns arrive already redacted. ``extract`` raises ``ExtractionError`` when the
    segment should stay pending for a retry, and ``BudgetExceeded`` (a subclass) when the daily
    token budget is spent: the caller then falls back to the heuristic extractor.
    """

    name: str

    def extract(self, segment: Segment) -> list[Candidate]: ...

    def stats(self) -> dict[str, Any]: ...


class KeyValueState(Protocol):
    """What the ledger needs from memd's state: a small persistent JSON key-value store."""

    def get(self, key: str, default: Any = None) -> Any: ...

    def set(self, key: str, value: Any) -> None: ...


class MemoryState:
    """A dict-backed ``KeyValueState`` for when no persistent state is given."""

    def __init__(self) -> None:
        self.values: dict[str, Any] = {}

    def get(self, key: str, default: Any = None) -> Any:
        return self.values.get(key, default)

    def set(self, key: str, value: Any) -> None:
        self.values[key] = value


def utc_day() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%d")


LEDGER_KEY = "extract.llm_tokens"
"""State key: ``{"day": "YYYY-MM-DD", "tokens": N, "by_backend": {name: N}}`` (UTC day)."""


class TokenLedger:
    """LLM tokens spent per UTC day, shared by every LLM backend, persisted in ``state``."""

    def __init__(self, budget: int, state: KeyValueState | None = None) -> None:
        self.budget = budget
        self.state: KeyValueState = state if state is not None else MemoryState()
        self.lock = threading.Lock()

    def today(self) -> dict[str, Any]:
        raw = self.state.get(LEDGER_KEY, None)
        day = utc_day()
        if not isinstance(raw, dict) or raw.get("day") != day:
            return {"day": day, "tokens": 0, "by_backend": {}}
        return raw

    def spent(self) -> int:
        return int(self.today().get("tokens") or 0)

    def remaining(self) -> int:
        return max(0, self.budget - self.spent())

    def check(self, estimate: int = 0) -> None:
        """Raise ``BudgetExceeded`` when today's spend (plus ``estimate``) passes the budget."""
        spent = self.spent()
        if spent >= self.budget or spent + estimate > self.budget:
            raise BudgetExceeded(
                f"daily LLM token budget spent: {spent} of {self.budget} tokens used today "
                f"(UTC); falling back to the heuristic extractor"
            )

    def add(self, backend: str, tokens: int) -> None:
        with self.lock:
            entry = self.today()
            entry["tokens"] = int(entry.get("tokens") or 0) + tokens
            by = dict(entry.get("by_backend") or {})
            by[backend] = int(by.get(backend) or 0) + tokens
            entry["by_backend"] = by
            self.state.set(LEDGER_KEY, entry)


class BackendStats:
    """Counters each backend exposes through ``stats()``."""

    def __init__(self, name: str, ledger: TokenLedger | None = None) -> None:
        self.name = name
        self.ledger = ledger
        self.calls = 0
        self.tokens_in = 0
        self.tokens_out = 0
        self.failures = 0
        self.fallbacks = 0
        self.exhausted_day = ""
        self.last_error = ""
        self.lock = threading.Lock()

    @property
    def budget_exhausted(self) -> bool:
        """True when the budget stopped a call today (UTC); it resets with the day."""
        return self.exhausted_day == utc_day()

    def record_budget_fallback(self) -> None:
        with self.lock:
            self.fallbacks += 1
            self.exhausted_day = utc_day()

    def record_failure(self, error: BaseException | str) -> None:
        with self.lock:
            self.failures += 1
            self.last_error = str(error)[:300]

    def record_usage(self, tokens_in: int, tokens_out: int) -> None:
        with self.lock:
            self.tokens_in += tokens_in
            self.tokens_out += tokens_out
        if self.ledger is not None:
            self.ledger.add(self.name, tokens_in + tokens_out)

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "backend": self.name,
            "calls": self.calls,
            "tokens_in": self.tokens_in,
            "tokens_out": self.tokens_out,
            "failures": self.failures,
            "fallbacks": self.fallbacks,
            "budget_exhausted": self.budget_exhausted,
            "last_error": self.last_error,
        }
        if self.ledger is not None:
            out["tokens_today"] = self.ledger.spent()
            out["daily_budget"] = self.ledger.budget
        return out


def usage_tokens(usage: Any) -> tuple[int, int]:
    """(input, output) tokens of a ``usage`` object or dict; cache reads and writes count as input."""
    if usage is None:
        return 0, 0

    def get(key: str) -> int:
        value = usage.get(key) if isinstance(usage, dict) else getattr(usage, key, None)
        try:
            return int(value or 0)
        except (TypeError, ValueError):
            return 0

    tokens_in = (
        get("input_tokens") + get("cache_creation_input_tokens") + get("cache_read_input_tokens")
    )
    return tokens_in, get("output_tokens")
