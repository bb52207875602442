"""What an LLM answers for an extraction: the output schema it is asked for, read leniently
into candidate memories that cite their turns, and dropped when the turns do not say them."""

from __future__ import annotations

import json
import logging
import re
from typing import Any

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaMode
from pydantic_core import CoreSchema

from memd import kinds
from memd.errors import ExtractionError
from memd.extract.redact import redact
from memd.extract.vocabulary import STOPWORDS
from memd.models import Candidate
from memd.text.chinese import CJK_RUN
from memd.text.stems import grounding_stem

log = logging.getLogger(__name__)

LLM_KINDS: tuple[str, ...] = kinds.names("llm")
"""The kinds an LLM may answer with (an excerpt is made from the turns, never by a model)."""
TOOL_NAME = "record_memories"
_KIND_ALIASES = {alias: k.name for k in kinds.KINDS if k.llm for alias in k.llm_aliases}
_TEXT_KEYS = ("text", "memory", "content", "fact", "statement", "value", "description")
_SOURCE_KEYS = ("sources", "source_uuids", "source_ids", "source", "turns", "turn_ids", "ids")
_LIST_KEYS = ("memories", "candidates", "items", "results", "facts", "data", "output")


def _one_line(value: Any, cap: int) -> str:
    return " ".join(str(value or "").split())[:cap]


def _present(key: str, value: Any) -> bool:
    """Whether an item's key is read: a text must be a string; elsewhere null and "" are absent
    (so ``{"kind": "", "type": "todo"}`` is a todo: the next alias is read instead)."""
    if key in _TEXT_KEYS:
        return isinstance(value, str)
    return value is not None and value != ""


class LlmMemory(BaseModel):
    """One memory as an LLM writes it: the schema it is asked for, read leniently.

    Besides the schema's own keys it accepts the shapes models drift into: ``type`` or
    ``category`` for the kind (with plural and synonym kinds), ``content``/``memory``/... for
    the text, importance on a 0-10 or 0-100 scale, keywords and sources as one string, a turn
    number without its ``t``. Anything else is ignored; an item without text is invalid.
    """

    # kind and sources are asked for (required in the schema) but default when reading
    model_config = ConfigDict(
        extra="ignore", json_schema_extra={"required": ["kind", "text", "sources"]}
    )

    kind: str = Field(
        default="fact",
        validation_alias=AliasChoices("kind", "type", "category"),
        json_schema_extra={"enum": list(LLM_KINDS)},
    )
    text: str = Field(
        min_length=1,
        description="One short, self-contained fact.",
        validation_alias=AliasChoices(*_TEXT_KEYS),
    )
    topic: str = Field(default="", description="A few words: what it is about.")
    keywords: list[str] = Field(default_factory=list)
    importance: float = Field(default=0.5, ge=0, le=1)
    sources: list[str] = Field(
        default_factory=list,
        description="Ids of the turns that state it, e.g. t3.",
        validation_alias=AliasChoices(*_SOURCE_KEYS),
    )
    supersedes: str = Field(
        default="",
        description="An earlier statement this one replaces, if any.",
        validation_alias=AliasChoices("supersedes", "supersedes_hint"),
    )
    subject: str = Field(
        default="",
        description=(
            "For a value that can change and has one value at a time: what has the value, "
            "without the value (e.g. 'start time of the nightly batch'); else empty."
        ),
    )
    value: str = Field(
        default="",
        description="The value the text states for the subject, as written (e.g. '02:30 UTC').",
    )

    @classmethod
    def read(cls, item: Any) -> LlmMemory | None:
        """``item`` validated, a bare string taken as the text; None when it is not a memory."""
        if isinstance(item, str):
            item = {"text": item}
        if not isinstance(item, dict):
            return None
        if isinstance(item.get("value"), int | float) and not isinstance(item["value"], bool):
            item = {**item, "value": str(item["value"])}  # a version or a count given as a number
        item = {k: v for k, v in item.items() if _present(k, v)}
        try:
            return cls.model_validate(item)
        except ValidationError as exc:
            log.debug("LLM memory skipped: %s", exc.errors(include_input=False)[:1])
            return None

    @field_validator("kind", mode="before")
    @classmethod
    def _kind(cls, value: Any) -> str:
        k = str(value or "fact").strip().lower().replace("-", "_").replace(" ", "_")
        return k if k in LLM_KINDS else _KIND_ALIASES.get(k, "fact")

    @field_validator("text", mode="before")
    @classmethod
    def _text(cls, value: Any) -> Any:
        return _one_line(value, 500) if isinstance(value, str) else value

    @field_validator("topic", mode="before")
    @classmethod
    def _topic(cls, value: Any) -> str:
        return _one_line(value, 80)

    @field_validator("subject", "value", mode="before")
    @classmethod
    def _short_field(cls, value: Any) -> str:
        return _one_line(value, 120) if isinstance(value, str | int | float) else ""

    @field_validator("supersedes", mode="before")
    @classmethod
    def _supersedes(cls, value: Any) -> str:
        return str(value or "")[:300]

    @field_validator("importance", mode="before")
    @classmethod
    def _importance(cls, value: Any) -> float:
        try:
            x = float(value)
        except (TypeError, ValueError):
            return 0.5
        if x > 10:
            x /= 100
        elif x > 1:
            x /= 10
        return min(1.0, max(0.0, x))

    @field_validator("keywords", mode="before")
    @classmethod
    def _keywords(cls, value: Any) -> list[str]:
        if isinstance(value, str):
            value = re.split(r"[,，;；]", value)
        if not isinstance(value, list):
            return []
        out: list[str] = []
        for w in value:
            w = _one_line(w, 40)
            if w and w.lower() not in {x.lower() for x in out}:
                out.append(w)
        return out[:8]

    @field_validator("sources", mode="before")
    @classmethod
    def _sources(cls, value: Any) -> list[str]:
        if isinstance(value, str | int):
            value = re.split(r"[,\s]+", str(value))
        refs = (
            [str(ref).strip().strip("[]").strip() for ref in value]
            if isinstance(value, list)
            else []
        )
        return [f"t{r}" if r.isdigit() else r for r in refs if r]


class LlmOutput(BaseModel):
    """What the LLM is asked to answer (the forced tool's input, the ``--json-schema``)."""

    memories: list[LlmMemory]


class _CompactSchema(GenerateJsonSchema):
    """JSON Schema without titles, docstrings or defaults, the nested model inlined: short."""

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False

    def default_schema(self, schema: Any) -> Any:
        return self.generate_inner(schema["schema"])  # defaults are how memd reads, not asks

    def model_schema(self, schema: Any) -> Any:
        out = super().model_schema(schema)
        out.pop("description", None)  # the docstring is for readers of this code, not the LLM
        return out

    def generate(self, schema: CoreSchema, mode: JsonSchemaMode = "validation") -> Any:
        out = super().generate(schema, mode)
        defs = out.pop("$defs", {})

        def inline(node: Any) -> Any:
            if isinstance(node, dict):
                ref = node.get("$ref", "")
                if ref.startswith("#/$defs/"):
                    return inline(defs[ref.rsplit("/", 1)[1]])
                return {k: inline(v) for k, v in node.items() if k != "title"}
            if isinstance(node, list):
                return [inline(v) for v in node]
            return node

        return inline(out)


CANDIDATE_SCHEMA: dict[str, Any] = LlmOutput.model_json_schema(schema_generator=_CompactSchema)
"""The output schema, from :class:`LlmOutput`."""

GROUNDED_MIN_SHARE = 0.5
"""An LLM memory is dropped when under half of its content words are in the turns it cites."""
_LATIN = re.compile(r"[a-z][a-z0-9_-]{2,}")
_CJK_RUN = CJK_RUN


def content_units(text: str) -> list[str]:
    """Content words (stemmed to five letters, stop words left out) and Chinese bigrams."""
    low = text.lower()
    units = [grounding_stem(w) for w in _LATIN.findall(low) if w not in STOPWORDS]
    for run in _CJK_RUN.findall(text):
        units += [run[i : i + 2] for i in range(len(run) - 1)] or [run]
    return units


def grounded_share(text: str, said: str) -> float:
    """The share of ``text``'s content units that ``said`` (the cited turns) contains."""
    units = content_units(text)
    if len(units) < 3:
        return 1.0  # too short to judge
    low = said.lower()
    stems = {grounding_stem(w) for w in _LATIN.findall(low)}
    present = sum(1 for u in units if (u in stems if u.isascii() else u in said))
    return present / len(units)


# --- lenient parsing ----------------------------------------------------------------------
_FENCE = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.DOTALL)


def _repair_truncated(text: str) -> Any:
    """JSON cut off mid-list (the output hit max tokens): keep the complete items."""
    decoder = json.JSONDecoder()
    ends = [m.start() for m in re.finditer(r"\}", text)][::-1][:40]
    start = min((i for i in (text.find("{"), text.find("[")) if i >= 0), default=-1)
    if start < 0:
        return None
    for end in ends:
        body = text[start : end + 1]
        for closing in ("]}", "]", "}", "]}}"):
            try:
                value, _ = decoder.raw_decode(body + closing)
                return value
            except ValueError:
                continue
    return None


def load_lenient(raw: Any) -> Any:
    """JSON from a model reply: plain, fenced, embedded in prose, or cut off at the end."""
    if isinstance(raw, dict | list):
        return raw
    if not isinstance(raw, str) or not raw.strip():
        raise ExtractionError("empty model output")
    text = raw.strip()
    try:
        return json.loads(text)
    except ValueError:
        pass
    for block in _FENCE.findall(text):
        try:
            return json.loads(block.strip())
        except ValueError:
            continue
    decoder = json.JSONDecoder()
    for m in re.finditer(r"[\[{]", text):
        try:
            value, _ = decoder.raw_decode(text, m.start())
        except ValueError:
            continue
        if isinstance(value, dict) or (isinstance(value, list) and value):
            return value
    repaired = _repair_truncated(text)
    if repaired is not None:
        return repaired
    raise ExtractionError(f"model output is not JSON: {' '.join(text.split())[:120]!r}")


def _items(data: Any) -> list[Any]:
    if isinstance(data, list):
        return data
    if not isinstance(data, dict):
        raise ExtractionError("model output holds no list of memories")
    for key in _LIST_KEYS:
        value = data.get(key)
        if isinstance(value, list):
            return value
        if isinstance(value, str):  # a JSON string inside JSON
            try:
                return _items(load_lenient(value))
            except ExtractionError:
                continue
        if isinstance(value, dict):
            return _items(value)
    if any(k in data for k in _TEXT_KEYS):
        return [data]
    lists = [v for v in data.values() if isinstance(v, list) and v and isinstance(v[0], dict)]
    if lists:
        return lists[0]
    raise ExtractionError("model output holds no list of memories")


def resolve_sources(refs: list[str], ids: dict[str, str]) -> list[str]:
    """Turn ids (t3) or uuids -> the uuids of this segment's turns, unknown ones left out."""
    uuids = set(ids.values())
    out: list[str] = []
    for r in refs:
        uuid = ids.get(r.lower()) or (r if r in uuids else None)
        if uuid and uuid not in out:
            out.append(uuid)
    return out


def parse_candidates(
    raw: Any,
    ids: dict[str, str],
    extra_patterns: tuple[str, ...] = (),
    said: dict[str, str] | None = None,
) -> list[Candidate]:
    """Candidates from a model reply, read leniently; ``ExtractionError`` when hopeless.

    A memory without a valid source is dropped (provenance is not optional), except the
    summary, which then covers the whole segment. With ``said`` (uuid -> turn text), a memory
    whose content words are mostly absent from the turns it cites is dropped too.
    """
    items = _items(load_lenient(raw))
    out: list[Candidate] = []
    for item in items:
        memory = LlmMemory.read(item)
        if memory is None:
            continue
        text = redact(memory.text, extra_patterns)
        if not text:
            continue
        kind = memory.kind
        sources = resolve_sources(memory.sources, ids)
        if not sources and kind == "summary":
            sources = list(ids.values())
        if not sources:
            continue
        if said is not None:
            cited = "\n".join(said.get(u, "") for u in sources)
            if grounded_share(text, cited) < GROUNDED_MIN_SHARE:
                log.info("ungrounded %s dropped: %.80s", kind, text)
                continue
        subject, value = stated_value(memory, text, extra_patterns)
        out.append(
            Candidate(
                kind=kind,
                text=text,
                topic=redact(memory.topic, extra_patterns),
                keywords=[redact(k, extra_patterns) for k in memory.keywords],
                importance=memory.importance,
                source_uuids=sources,
                supersedes_hint=redact(memory.supersedes, extra_patterns),
                subject=subject,
                value=value,
            )
        )
    return out


def stated_value(memory: LlmMemory, text: str, extra_patterns: tuple[str, ...]) -> tuple[str, str]:
    """The memory's subject and value, kept only when both are given and the (redacted) text
    states the value: fields the text does not back are dropped, never the memory."""
    subject = redact(memory.subject, extra_patterns).strip()
    value = redact(memory.value, extra_patterns).strip(" .,;:")
    if not subject or not value or "[REDACTED" in value:
        return "", ""
    if " ".join(value.casefold().split()) not in " ".join(text.casefold().split()):
        return "", ""
    return subject, value
