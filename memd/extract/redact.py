"""Secret redaction: runs before anything is stored, embedded, exported or sent to an LLM.

``redact(text)`` replaces each secret with ``[REDACTED:<kind>]`` and drops ``<private>…</private>``
spans entirely (an unterminated ``<private>`` drops everything after it). It is a pure function;
every pattern is compiled once, at import.

Rules, applied in this order:

1. ``<private>`` spans.
2. Private-key blocks (``-----BEGIN … PRIVATE KEY-----`` to ``END``, or to the end of the text).
3. Well-known token shapes: Anthropic, OpenAI, GitHub, GitLab, AWS key ids, Slack tokens and
   webhooks, Google API keys, Stripe, Hugging Face, npm, SendGrid, JWTs.
4. Passwords in URLs: ``scheme://user:pass@host`` keeps scheme, user and host.
5. Assignments whose key looks secret (``password=``, ``"token": "…"``, ``API_KEY=…`` in .env
   files, YAML ``secret:``, ``--password x``), and ``Authorization: Bearer …`` style headers;
   a ``dsn:`` loses only its password (or the key in its user's place), not its host.
6. Secrets said in words (``my password is …``, ``密码是 …``), US SSNs, Chinese resident ids
   and Luhn-valid card numbers, ``mysql -p…`` and ``?password=`` in URLs:
   :mod:`memd.extract.prose_secrets`.
7. High-entropy words: at least 24 characters of ``[A-Za-z0-9+/=_-]``, letters *and* digits,
   Shannon entropy of at least 3.7 bits per character, not made of short ``-``/``_`` parts
   (identifiers like ``all-MiniLM-L6-v2-int8``).

What deliberately survives: UUIDs (provenance uses them), pure-hex strings such as git SHAs and
content hashes (the entropy rule skips hex; a hex secret behind a secret-looking key is still
caught by rule 5), file paths, and URLs without credentials.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import replace
from functools import lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from memd.models import Turn


def mark(kind: str) -> str:
    return f"[REDACTED:{kind}]"


# --- 1. private spans --------------------------------------------------------------------
_PRIVATE = re.compile(r"<private>.*?(?:</private>|\Z)", re.IGNORECASE | re.DOTALL)

# --- 2. private-key blocks ---------------------------------------------------------------
_PRIVATE_KEY = re.compile(
    r"-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----"
    r".*?(?:-----END[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----|\Z)",
    re.DOTALL,
)

# --- 3. token shapes (most specific first) -----------------------------------------------
_B = r"(?<![A-Za-z0-9_\-])"  # left boundary: not inside a longer word
_E = r"(?![A-Za-z0-9_\-])"
_TOKENS: list[tuple[str, re.Pattern[str]]] = [
    (kind, re.compile(pattern))
    for kind, pattern in (
        ("anthropic_key", _B + r"sk-ant-[A-Za-z0-9_\-]{20,}"),
        ("openai_key", _B + r"sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}"),
        ("github_token", _B + r"(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{20,})"),
        ("gitlab_token", _B + r"glpat-[A-Za-z0-9_\-]{20,}"),
        (
            "aws_access_key_id",
            r"(?<![A-Z0-9])(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA)[A-Z0-9]{16}"
            r"(?![A-Z0-9])",
        ),
        ("slack_token", _B + r"xox[abprse]-[A-Za-z0-9\-]{10,}"),
        (
            "slack_webhook",
            r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_\-]+",
        ),
        ("google_api_key", _B + r"AIza[0-9A-Za-z_\-]{35}" + _E),
        ("stripe_key", _B + r"(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}"),
        ("huggingface_token", _B + r"hf_[A-Za-z0-9]{30,}" + _E),
        ("npm_token", _B + r"npm_[A-Za-z0-9]{36}" + _E),
        ("sendgrid_key", _B + r"SG\.[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{16,}"),
        ("jwt", _B + r"eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"),
    )
]

# --- 4. passwords in URLs ----------------------------------------------------------------
_URL_PASSWORD = re.compile(
    r"(?P<head>\b[a-zA-Z][a-zA-Z0-9+.\-]{1,20}://[^\s:/@\[\]]*):(?P<pw>[^\s@/]+)@"
)

# --- 5. secret-looking assignments -------------------------------------------------------
_SECRET_WORDS = {
    "password": "password",
    "passwd": "password",
    "pwd": "password",
    "pass": "password",
    "passphrase": "password",
    "secret": "secret",
    "secrets": "secret",
    "token": "token",
    "apikey": "api_key",
    "credential": "secret",
    "credentials": "secret",
    "auth": "token",
    "signature": "secret",
    "sig": "secret",
    "dsn": "secret",
    "pat": "token",
}
_KEY_PAIRS = {
    "api", "access", "secret", "private", "signing", "encryption", "master", "client", "account",
    "auth", "app", "license", "ssh", "session", "storage", "service",
}  # fmt: skip
_PUBLIC_KEYS = {"public", "publishable", "primary", "foreign", "sort", "partition", "cache"}
_KEY_HINTS = ("pass", "pwd", "secret", "token", "key", "auth", "cred", "sig", "dsn", "pat")
_COMPOUND_SUFFIXES = (
    ("password", "password"),
    ("passwd", "password"),
    ("secret", "secret"),
    ("token", "token"),
    ("apikey", "api_key"),
)
_NOT_A_SECRET_SUFFIX = {
    "count", "counts", "type", "types", "url", "uri", "endpoint", "length", "len", "limit",
    "budget", "file", "path", "dir", "env", "name", "names", "id", "ttl", "expiry", "expires",
    "in", "out", "usage", "field", "header", "prefix", "regex", "pattern", "min", "max", "policy",
    "provider", "method", "mode", "required", "enabled", "version", "format", "kind", "hash_alg",
    "seconds", "secs", "sec", "ms", "minutes", "mins", "hours", "days", "timeout", "lifetime",
    "interval", "size", "bytes",
}  # fmt: skip
_PLACEHOLDERS = {
    "", "none", "null", "nil", "true", "false", "str", "string", "int", "bool", "bytes", "any",
    "optional", "required", "undefined", "yes", "no", "on", "off", "changeme?", "xxx", "xxxx",
    "***", "****", "*****", "******", "...", "<redacted>", "redacted", "example", "dict",
}  # fmt: skip
_ASSIGNMENT = re.compile(
    r"(?P<key>(?<![A-Za-z0-9_])[A-Za-z_][A-Za-z0-9_.\-]{0,80})"
    r"(?P<q1>[\"']?)(?P<sep>[ \t]*(?:=>|:=|=|:)[ \t]*|[ \t]+(?=[\"']))"
    r"(?P<val>\"[^\"\n]*\"|'[^'\n]*'|[^\s,;'\"}\]\)`（），。；]+)",
    re.IGNORECASE,
)
_FLAG = re.compile(
    r"(?P<head>(?<![A-Za-z0-9])--?(?:password|passwd|token|secret|api-key|apikey|auth-token)"
    r"[ =])(?P<val>\"[^\"\n]+\"|'[^'\n]+'|[^\s\"']+)",
    re.IGNORECASE,
)
_NETRC = re.compile(
    r"(?P<head>(?:^|\bmachine[ \t]+\S+[ \t]+(?:login[ \t]+\S+[ \t]+)?)password[ \t]+)"
    r"(?P<val>[^\s\[]\S*)(?=[ \t]*$|[ \t]+(?:machine|login|account|macdef)\b)",
    re.MULTILINE,
)
"""A .netrc ``password`` token: the value ends its line or comes before another netrc token
(prose that starts a line with "password hashing uses argon2" is not one)."""
_USER_FLAG = re.compile(r"(?P<head>(?<![\w-])(?:-u|--user)[ =]+[^\s:'\"]+:)(?P<val>[^\s'\"]+)")
_AUTH_HEADER = re.compile(
    r"(?P<head>\b(?:[Bb]earer|BEARER|Basic|BASIC|Digest|[Aa]uthorization:[ \t]*[Tt]oken)[ \t]+)"
    r"(?P<val>[A-Za-z0-9_\-.=+/~]{12,})",
)
"""Authorization schemes: case-sensitive, so prose ("a basic python3-ready setup") survives."""

# --- 7. high entropy ---------------------------------------------------------------------
_WORD = re.compile(r"(?<![A-Za-z0-9+/=_\-])[A-Za-z0-9+/=_\-]{24,}(?![A-Za-z0-9+/=_\-])")
_HEX = re.compile(r"[0-9a-fA-F\-]+")
_WORDISH = re.compile(r"[A-Z]?[a-z]{3,}")
ENTROPY_MIN_BITS = 3.7
"""Bits per character from which a mixed word of 24+ characters counts as a secret."""


def split_key(key: str) -> list[str]:
    """``DB_PASSWORD`` / ``dbPassword`` / ``db.password`` -> ``["db", "password"]``."""
    key = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", key.strip("\"'"))
    return [p for p in re.split(r"[_.\-]+", key.lower()) if p]


def secret_kind_of_key(key: str) -> str | None:
    """The redaction kind when ``key`` names a secret, else None."""
    low = key.lower()
    if not any(w in low for w in _KEY_HINTS):
        return None
    parts = split_key(key)
    if not parts or parts[-1] in _NOT_A_SECRET_SUFFIX or parts in (["pwd"], ["oldpwd"]):
        return None  # PWD/OLDPWD in an env dump are directories
    env_style = key.strip("\"'").isupper()
    found = None
    for i, part in enumerate(parts):
        prev = parts[i - 1] if i else ""
        if part in _SECRET_WORDS:
            found = _SECRET_WORDS[part]
        elif part == "key" and prev in _KEY_PAIRS:
            found = "api_key" if prev == "api" else "secret"
        elif part == "key" and env_style and i and prev not in _PUBLIC_KEYS:
            found = "secret"  # STRIPE_KEY=..., MAPBOX_KEY=... in .env files
        else:
            for suffix, kind in _COMPOUND_SUFFIXES:
                if part.endswith(suffix):
                    found = kind
                    break
    return found


def _is_placeholder(value: str, quoted: bool = True, env_style: bool = False) -> bool:
    """Values that are not secrets: empty, types, booleans, references, masks, code."""
    v = value.strip()
    low = v.lower()
    if low in _PLACEHOLDERS or v.startswith(("[REDACTED", "${", "{{", "<", "%(")):
        return True
    if re.fullmatch(r"\*+|x+|\.+|-+", low):
        return True
    if quoted:
        return False
    if len(v) < 4 or v.startswith(("$", "os.environ", "process.env")) or "(" in v or "[" in v:
        return True
    # token = request.token (code); an env file's KEY=pk.abc123 is a value, not code.
    return not env_style and bool(re.fullmatch(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+", v))


def _assignment(match: re.Match[str]) -> str:
    kind = secret_kind_of_key(match.group("key"))
    if kind is None:
        # A quoted value may hold an assignment itself: grep -n 'password: "hunter2"' .
        raw = match.group("val")
        if len(raw) > 2 and raw[0] in "\"'":
            head = match.group(0)[: match.start("val") - match.start(0)]
            return head + raw[0] + _ASSIGNMENT.sub(_assignment, raw[1:])
        return match.group(0)
    raw = match.group("val")
    quote = raw[0] if raw[:1] in "\"'" and raw[-1:] == raw[:1] and len(raw) >= 2 else ""
    inner = raw[1:-1] if quote else raw
    env_style = match.group("key").isupper()
    if _is_placeholder(inner, quoted=bool(quote), env_style=env_style):
        return match.group(0)
    if not quote and inner.lower() in {match.group("key").lower(), *split_key(match.group("key"))}:
        return match.group(0)  # token = token or ..., f(password=password)
    head = match.group(0)[: match.start("val") - match.start(0)]
    if "dsn" in split_key(match.group("key")) and (dsn := _dsn(inner)) is not None:
        return f"{head}{quote}{dsn}{quote}"
    return f"{head}{quote}{mark(kind)}{quote}"


_DSN_USER = re.compile(
    r"^(?P<head>(?:[A-Za-z][\w+.\-]*://)?(?P<user>[^\s:/@(]*))(?::(?P<pw>[^\s@]*))?@"
)
"""A connection string's credentials (``mall:${MYSQL_PASSWORD}@tcp(10.0.3.21:3306)/mall``,
``https://3f1a…@o1.ingest.sentry.io/4``)."""


def _dsn(value: str) -> str | None:
    """A connection string (a ``dsn:`` key's value) with only its password redacted, so its host
    and database stay ("mall:[REDACTED:password]@tcp(10.0.3.21:3306)/mall"); a key in place of
    a user (Sentry's) is redacted, a password that is a reference (``${MYSQL_PASSWORD}``) kept.
    None when the value is no connection string: the whole value is then redacted."""
    m = _DSN_USER.match(value)
    if m is None:
        if "=" in value:  # "host=db user=app password=s3cret": its own assignments
            return _ASSIGNMENT.sub(_assignment, value)
        return value if "://" in value else None
    rest = value[m.end() :]
    pw = m.group("pw")
    if pw is None:
        user = m.group("user")
        return (
            value if len(user) < 16 else m.group("head")[: -len(user)] + mark("secret") + "@" + rest
        )
    if _is_placeholder(pw, quoted=False) and pw[:1] in "$[<%*":
        return value
    return f"{m.group('head')}:{mark('password')}@{rest}"


def _flag(match: re.Match[str]) -> str:
    raw = match.group("val")
    inner = raw.strip("\"'")
    if _is_placeholder(inner, quoted=raw[:1] in "\"'"):
        return match.group(0)
    quote = raw[0] if raw[:1] in "\"'" else ""
    flag = match.group("head").lower()
    kind = "password" if "pass" in flag else "token" if "token" in flag else "secret"
    return f"{match.group('head')}{quote}{mark(kind)}{quote}"


def _url_password(match: re.Match[str]) -> str:
    if match.group("pw").startswith("[REDACTED"):
        return match.group(0)
    return f"{match.group('head')}:{mark('password')}@"


def _keep_head(kind: str) -> Callable[[re.Match[str]], str]:
    def sub(match: re.Match[str]) -> str:
        if match.group("val").startswith("[REDACTED"):
            return match.group(0)
        return f"{match.group('head')}{mark(kind)}"

    return sub


def _auth_header(match: re.Match[str]) -> str:
    value = match.group("val")
    mixed = re.search(r"\d", value) or (re.search(r"[a-z]", value) and re.search(r"[A-Z]", value))
    if value.startswith("[REDACTED") or not mixed:
        return match.group(0)
    if match.group("head").upper().startswith("BASIC") and not re.fullmatch(
        r"[A-Za-z0-9+/]+=*", value
    ):
        return match.group(0)  # Basic credentials are base64
    return f"{match.group('head')}{mark('token')}"


def shannon_entropy(word: str) -> float:
    n = len(word)
    return -sum(c / n * math.log2(c / n) for c in Counter(word).values())


def looks_random(word: str) -> bool:
    """Is ``word`` (24+ chars of a base64-ish alphabet) likely a secret?"""
    if _HEX.fullmatch(word):  # git SHAs, hashes, uuids: provenance, not secrets
        return False
    if not (re.search(r"\d", word) and re.search(r"[A-Za-z]", word)):
        return False
    parts = [p for p in re.split(r"[\-_/]+", word) if p]
    if len(parts) >= 3 and sum(map(len, parts)) / len(parts) < 8:
        return False  # identifiers and paths made of short words
    if not (re.search(r"[a-z]", word) and re.search(r"[A-Z]", word)) and len(word) < 32:
        return False
    if sum(map(len, _WORDISH.findall(word))) > 0.5 * len(word):
        return False  # camelCase identifiers: mostly runs of lowercase words
    return shannon_entropy(word) >= ENTROPY_MIN_BITS


_ID_PREFIXES = (
    "msg_", "toolu_", "srvtoolu_", "req_", "file_", "batch_", "chatcmpl-", "call_", "run_",
    "thread_", "asst_", "cus_", "pi_", "ch_", "evt_", "sha1-", "sha256-", "sha384-", "sha512-",
)  # fmt: skip
"""Public object ids from APIs, and integrity hashes: random-looking, but not secrets."""


def _entropy(match: re.Match[str]) -> str:
    word = match.group(0)
    if word.startswith(_ID_PREFIXES):
        return word
    before = match.string[max(0, match.start() - 7) : match.start()]
    if before.upper().endswith(("SHA256:", "SHA1:", "MD5:")):
        return word  # key fingerprints
    return mark("high_entropy") if looks_random(word) else word


@lru_cache(maxsize=32)
def _compile_extra(patterns: tuple[str, ...]) -> tuple[re.Pattern[str], ...]:
    compiled = []
    for p in patterns:
        try:
            compiled.append(re.compile(p))
        except re.error as exc:
            from memd.errors import ConfigError

            raise ConfigError(f"redact_patterns: invalid regex {p!r}: {exc}") from exc
    return tuple(compiled)


def _extra(match: re.Match[str]) -> str:
    if "secret" in match.re.groupindex and match.group("secret") is not None:
        s, e = match.span("secret")
        base = match.start(0)
        whole = match.group(0)
        return whole[: s - base] + mark("custom") + whole[e - base :]
    return mark("custom")


def redact(text: str, extra_patterns: Iterable[str] = ()) -> str:
    """``text`` with every secret replaced by ``[REDACTED:<kind>]`` and private spans dropped.

    ``extra_patterns`` are the user's regexes (``redact_patterns`` in config). The whole match is
    redacted, or only the named group ``secret`` when the pattern has one.
    """
    if not text:
        return text
    if "<" in text:
        text = _PRIVATE.sub("", text)
    if "PRIVATE KEY" in text:
        text = _PRIVATE_KEY.sub(mark("private_key"), text)
    for kind, pattern in _TOKENS:
        text = pattern.sub(mark(kind), text)
    if "://" in text:
        text = _URL_PASSWORD.sub(_url_password, text)
    text = _ASSIGNMENT.sub(_assignment, text)
    text = prose_secrets.redact_prose(text)
    if "-" in text:
        text = _FLAG.sub(_flag, text)
        text = _USER_FLAG.sub(_keep_head("password"), text)
    if "password" in text:
        text = _NETRC.sub(_keep_head("password"), text)
    text = _AUTH_HEADER.sub(_auth_header, text)
    text = _WORD.sub(_entropy, text)
    extra = tuple(extra_patterns)
    if extra:
        for pattern in _compile_extra(extra):
            text = pattern.sub(_extra, text)
    return text


def redact_turn(turn: Turn, extra_patterns: Iterable[str] = (), *, remember: bool = False) -> Turn:
    """A copy of ``turn`` whose text, tool summaries, tool errors and tool outputs are redacted.

    ``remember``: keep recent strings' results (the state DB writes a growing turn again and
    again, with mostly the same pieces: streamed lines, tool results folded in)."""
    extra = tuple(extra_patterns)
    clean = _remembered if remember else redact

    def data(value: Any) -> Any:
        if isinstance(value, str):
            return clean(value, extra)
        if isinstance(value, list):
            return [data(v) for v in value]
        if isinstance(value, dict):
            return {k: data(v) for k, v in value.items()}
        return value

    return replace(
        turn,
        text=clean(turn.text, extra),
        tools=[
            replace(
                t,
                summary=clean(t.summary, extra),
                args=data(t.args) if t.args else t.args,
                result=clean(t.result, extra),
            )
            for t in turn.tools
        ],
        tool_errors=[clean(e, extra) for e in turn.tool_errors],
        tool_outputs=[clean(o, extra) for o in turn.tool_outputs],
    )


@lru_cache(maxsize=2048)
def _remembered(text: str, extra: tuple[str, ...]) -> str:
    return redact(text, extra)


# Last: its rules build on this module's (``mark``, ``secret_kind_of_key``).
from memd.extract import prose_secrets  # noqa: E402
