"""The ``anthropic`` extractor: the Messages API, structured output through a forced tool."""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING, Any

import anthropic

from memd.errors import ExtractionError
from memd.extract.base import BackendStats, KeyValueState, TokenLedger, usage_tokens
from memd.extract.prompt import extract_with_llm
from memd.extract.reply import CANDIDATE_SCHEMA, TOOL_NAME
from memd.models import Candidate, Segment

if TYPE_CHECKING:
    from collections.abc import Mapping

    from anthropic import APIRequest, APIResponse, CallNext

    from memd.settings import Settings

MAX_OUTPUT_TOKENS = 4096
# The SDK waits as long as a Retry-After header asks; a background extractor does not wait longer
# than this for one retry: it gives up on the segment instead (the heuristic extractor takes it).
MAX_RETRY_WAIT_SECONDS = 30.0
SYSTEM = "You turn coding-session transcripts into short, typed, long-term memories."


class AnthropicExtractor:
    """Extraction through the Messages API with a daily token budget and lenient parsing.

    Retries are the SDK's own (``max_retries``: 408, 409, 429, 5xx, timeouts and connection
    errors, exponential backoff, Retry-After honoured); a middleware counts every attempt.
    """

    name = "anthropic"

    def __init__(
        self,
        settings: Settings,
        state: KeyValueState | None = None,
    ) -> None:
        self.settings = settings
        self.model = settings.anthropic_model
        self.base_url = settings.anthropic_base_url
        self.timeout = settings.llm_timeout_seconds
        self.max_retries = settings.llm_max_retries
        self.extra_patterns = tuple(settings.redact_patterns)
        self.ledger = TokenLedger(settings.llm_daily_token_budget, state)
        self.counters = BackendStats(self.name, self.ledger)
        self._client: anthropic.Anthropic | None = None
        self._client_lock = threading.Lock()
        self._attempts = threading.local()  # attempts of this thread's current call

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
                    max_retries=self.max_retries,
                    middleware=[self.on_attempt],
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

    def on_attempt(self, request: APIRequest, call_next: CallNext) -> APIResponse[Any]:
        """SDK middleware, run once per HTTP attempt inside the SDK's retry loop."""
        self.counters.calls += 1
        self._attempts.n = request.retries_taken + 1
        response = call_next(request)
        wait = retry_after(response.headers)
        if response.status_code >= 400 and wait > MAX_RETRY_WAIT_SECONDS:
            raise ExtractionError(
                f"anthropic: HTTP {response.status_code}, asked to wait {wait:.0f} s before "
                f"retrying (more than {MAX_RETRY_WAIT_SECONDS:.0f} s): not retried"
            )
        return response

    def create(self, prompt: str) -> Any:
        """One Messages API call; the SDK retries 408, 409, 429, 5xx, timeouts and lost connections."""
        client = self.client()
        self._attempts.n = 0
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
        except ExtractionError:
            raise
        except (anthropic.APIStatusError, anthropic.APIConnectionError) as exc:
            attempts = self._attempts.n
            if isinstance(exc, anthropic.APIStatusError):
                what = f"HTTP {exc.status_code}: {short(exc)}"
            else:  # includes APITimeoutError
                kind = "timed out" if isinstance(exc, anthropic.APITimeoutError) else "failed"
                what = f"{kind}: {short(exc)}"
            if attempts > 1:
                what = f"{what} (gave up after {attempts} attempts)"
            raise ExtractionError(f"anthropic: {what}") from exc
        except anthropic.APIError as exc:
            raise ExtractionError(f"anthropic: {short(exc)}") from exc
        except Exception as exc:  # a reply the SDK cannot read (not JSON, wrong shape)
            raise ExtractionError(f"anthropic: unreadable reply: {short(exc)}") from exc
        self.counters.record_usage(*usage_tokens(getattr(message, "usage", None)))
        return message

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


def retry_after(headers: Mapping[str, str]) -> float:
    """Seconds a reply's retry-after-ms / retry-after header asks to wait (0 if none or a date)."""
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        try:
            return float(headers.get(name) or "") * scale
        except ValueError:
            continue
    return 0.0


def short(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:200]
