"""The ``anthropic`` extractor: the Messages API, structured output through a forced tool."""

from __future__ import annotations

import os
import random
import threading
import time
from typing import TYPE_CHECKING, Any

import anthropic

from memd.errors import ExtractionError
from memd.extract.base import BackendStats, KeyValueState, TokenLedger, usage_tokens
from memd.extract.prompt import CANDIDATE_SCHEMA, TOOL_NAME, extract_with_llm
from memd.models import Candidate, Segment

if TYPE_CHECKING:
    from memd.settings import Settings

MAX_OUTPUT_TOKENS = 4096
MAX_BACKOFF_SECONDS = 30.0
SYSTEM = "You turn coding-session transcripts into short, typed, long-term memories."


class AnthropicExtractor:
    """Extraction through the Messages API with retries, a daily token budget and lenient parsing."""

    name = "anthropic"

    def __init__(
        self,
        settings: Settings,
        state: KeyValueState | None = None,
        backoff_seconds: float = 1.0,
    ) -> None:
        self.settings = settings
        self.model = settings.anthropic_model
        self.base_url = settings.anthropic_base_url
        self.timeout = settings.llm_timeout_seconds
        self.max_retries = settings.llm_max_retries
        self.backoff_seconds = backoff_seconds
        self.extra_patterns = tuple(settings.redact_patterns)
        self.ledger = TokenLedger(settings.llm_daily_token_budget, state)
        self.counters = BackendStats(self.name, self.ledger)
        self._client: anthropic.Anthropic | None = None
        self._client_lock = threading.Lock()

    def stats(self) -> dict[str, Any]:
        out = self.counters.as_dict()
        out["model"] = self.model
        return out

    def client(self) -> anthropic.Anthropic:
        with self._client_lock:
            if self._client is None:
                key = self.settings.anthropic_api_key or os.environ.get("ANTHROPIC_API_KEY")
                if not key:
                    raise ExtractionError(
                        "anthropic extractor: no API key (set anthropic_api_key in the config "
                        "or ANTHROPIC_API_KEY)"
                    )
                self._client = anthropic.Anthropic(
                    api_key=key,
                    base_url=self.base_url or None,
                    timeout=self.timeout,
                    max_retries=0,  # retries are ours, so timeouts and 5xx are all covered
                )
            return self._client

    def extract(self, segment: Segment) -> list[Candidate]:
        return extract_with_llm(
            segment,
            lambda prompt: self.reply_payload(self.create(prompt)),
            self.ledger,
            self.counters,
            self.extra_patterns,
        )

    def create(self, prompt: str) -> Any:
        """One Messages API call, retried on 429, 5xx, timeouts and connection errors."""
        client = self.client()
        attempts = self.max_retries + 1
        for attempt in range(attempts):
            self.counters.calls += 1
            try:
                message = client.messages.create(
                    model=self.model,
                    max_tokens=MAX_OUTPUT_TOKENS,
                    system=SYSTEM,
                    messages=[{"role": "user", "content": prompt}],
                    tools=[
                        {
                            "name": TOOL_NAME,
                            "description": "Record the memories extracted from the transcript.",
                            "input_schema": CANDIDATE_SCHEMA,
                        }
                    ],
                    tool_choice={"type": "tool", "name": TOOL_NAME},
                )
            except anthropic.APIStatusError as exc:
                status = exc.status_code
                if not (status == 429 or status == 408 or status >= 500):
                    raise ExtractionError(f"anthropic: HTTP {status}: {short(exc)}") from exc
                error: Exception = exc
                delay = retry_after(exc)
            except anthropic.APIConnectionError as exc:  # includes APITimeoutError
                error, delay = exc, 0.0
            except anthropic.APIError as exc:
                raise ExtractionError(f"anthropic: {short(exc)}") from exc
            except Exception as exc:  # a reply the SDK cannot read (not JSON, wrong shape)
                raise ExtractionError(f"anthropic: unreadable reply: {short(exc)}") from exc
            else:
                self.counters.record_usage(*usage_tokens(getattr(message, "usage", None)))
                return message
            if attempt + 1 >= attempts:
                kind = "timed out" if isinstance(error, anthropic.APITimeoutError) else "failed"
                raise ExtractionError(
                    f"anthropic: {kind} after {attempts} attempts: {short(error)}"
                ) from error
            backoff = self.backoff_seconds * (2**attempt) * (1 + random.random() / 4)
            time.sleep(min(max(delay, backoff), MAX_BACKOFF_SECONDS))
        raise ExtractionError("anthropic: no attempt made")  # pragma: no cover

    @staticmethod
    def reply_payload(message: Any) -> Any:
        """The forced tool's input, else the reply's text (parsed leniently later)."""
        texts = []
        for block in getattr(message, "content", None) or []:
            btype = getattr(block, "type", None)
            if btype == "tool_use":
                payload = getattr(block, "input", None)
                if payload:
                    return payload
            elif btype == "text":
                texts.append(getattr(block, "text", "") or "")
        if not any(t.strip() for t in texts):
            raise ExtractionError("anthropic: the reply has neither a tool call nor text")
        return "\n".join(texts)


def retry_after(exc: anthropic.APIStatusError) -> float:
    try:
        return float(exc.response.headers.get("retry-after") or 0)
    except (TypeError, ValueError, AttributeError):
        return 0.0


def short(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:200]
