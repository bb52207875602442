"""A corpus of realistic tool output with fake but well-formed secrets in it.

Each ``*.txt`` file here is one piece of tool output (an env dump, a config file, a curl command,
a stack trace, docker logs, ``git remote -v``, a JSON API response, ...). Secrets are written as
placeholders ``<<name:generator>>`` and filled in at load time from a seeded generator, so the
repository never holds anything a secret scanner would flag, and the values stay deterministic.

``load_corpus()`` returns ``[(text, [secret, ...]), ...]``: after ``redact(text)`` none of the
secrets may survive, anywhere (store files, journal, exports, search results, hook output).
``NON_SECRETS`` lists strings that must survive redaction.
"""

from __future__ import annotations

import base64
import json
import random
import re
import string
import zlib
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
PLACEHOLDER = re.compile(r"<<(?P<name>[a-z0-9_]+):(?P<gen>[a-z0-9_]+)>>")

ALNUM = string.ascii_letters + string.digits
B64 = ALNUM + "+/"
B64URL = ALNUM + "-_"


def _pick(rng: random.Random, alphabet: str, n: int) -> str:
    # Guarantee letters and digits, like real tokens almost always have.
    while True:
        s = "".join(rng.choice(alphabet) for _ in range(n))
        if any(c.isdigit() for c in s) and any(c.isalpha() for c in s):
            return s


def _b64url(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _jwt(rng: random.Random) -> str:
    header = _b64url(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    payload = _b64url(
        json.dumps(
            {"sub": str(rng.randint(10**6, 10**7)), "iat": 1764400000, "role": "admin"}
        ).encode()
    )
    return f"{header}.{payload}.{_pick(rng, B64URL, 43)}"


def _private_key(rng: random.Random) -> str:
    lines = [_pick(rng, B64, 64) for _ in range(6)] + [_pick(rng, B64, 28) + "=="]
    return (
        "-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(lines) + "\n-----END RSA PRIVATE KEY-----"
    )


def _password(rng: random.Random) -> str:
    words = ["Velvet", "Orchid", "Granite", "Comet", "Harbor", "Maple", "Quartz", "Falcon"]
    return rng.choice(words) + rng.choice(words).lower() + str(rng.randint(100, 999)) + "!x"


def _ssn(rng: random.Random) -> str:
    return f"{rng.randint(100, 665)}-{rng.randint(10, 99)}-{rng.randint(1000, 9999)}"


def _check_digit(digits: str) -> str:
    """The Luhn digit that makes ``digits`` + it valid."""
    total = 0
    for i, ch in enumerate(reversed(digits)):
        n = int(ch) * (2 if i % 2 == 0 else 1)
        total += n - 9 if n > 9 else n
    return str(-total % 10)


def _card(rng: random.Random) -> str:
    body = "4" + "".join(str(rng.randint(0, 9)) for _ in range(14))
    digits = body + _check_digit(body)
    return " ".join(digits[i : i + 4] for i in range(0, 16, 4))


def _cn_id(rng: random.Random) -> str:
    weights = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
    born = f"{rng.randint(1950, 2005)}{rng.randint(1, 12):02d}{rng.randint(1, 28):02d}"
    body = f"{rng.randint(110000, 659000)}{born}{rng.randint(100, 999)}"
    return body + "10X98765432"[sum(int(c) * w for c, w in zip(body, weights, strict=True)) % 11]


GENERATORS: dict[str, Callable[[random.Random], str]] = {
    "aws_key_id": lambda r: (
        "AKIA" + "".join(r.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567") for _ in range(16))
    ),
    "aws_secret": lambda r: _pick(r, B64, 40),
    "ghp": lambda r: "ghp_" + _pick(r, ALNUM, 36),
    "gho": lambda r: "gho_" + _pick(r, ALNUM, 36),
    "ghs": lambda r: "ghs_" + _pick(r, ALNUM, 36),
    "github_pat": lambda r: "github_pat_11" + _pick(r, ALNUM, 20) + "_" + _pick(r, ALNUM, 59),
    "anthropic": lambda r: "sk-ant-api03-" + _pick(r, B64URL, 93) + "AA",
    "openai": lambda r: "sk-" + _pick(r, ALNUM, 48),
    "openai_proj": lambda r: "sk-proj-" + _pick(r, B64URL, 64),
    "slack_bot": lambda r: (
        f"xoxb-{r.randint(10**11, 10**12)}-{r.randint(10**11, 10**12)}-" + _pick(r, ALNUM, 24)
    ),
    "slack_user": lambda r: (
        f"xoxp-{r.randint(10**11, 10**12)}-{r.randint(10**11, 10**12)}-" + _pick(r, ALNUM, 32)
    ),
    "slack_hook": lambda r: (
        "https://hooks.slack.com/services/T"
        + _pick(r, string.ascii_uppercase + string.digits, 8)
        + "/B"
        + _pick(r, string.ascii_uppercase + string.digits, 8)
        + "/"
        + _pick(r, ALNUM, 24)
    ),
    "google": lambda r: "AIza" + _pick(r, B64URL, 35),
    "jwt": _jwt,
    "private_key": _private_key,
    "password": _password,
    "pin8": lambda r: str(r.randint(10**7, 10**8 - 1)),
    "ssn": _ssn,
    "card": _card,
    "cn_id": _cn_id,
    "stripe": lambda r: "sk_live_" + _pick(r, ALNUM, 24),
    "hf": lambda r: "hf_" + _pick(r, ALNUM, 34),
    "npm": lambda r: "npm_" + _pick(r, ALNUM, 36),
    "hex64": lambda r: "".join(r.choice("0123456789abcdef") for _ in range(64)),
    "b64_40": lambda r: _pick(r, B64, 40),
    "token32": lambda r: _pick(r, ALNUM, 32),
    "django": lambda r: (
        "django-insecure-" + _pick(r, ALNUM + "!@#%^&*(-_=+)", 50).replace("=", "q")
    ),
}

NON_SECRETS = [
    "0b3c5e0e-6f1c-4d8a-9a57-1f2b3c4d5e6f",  # a transcript line uuid (provenance)
    "15b63a3c6be9f62530bdb5d47ccfcc001f8a7837",  # a git sha
    "/home/dev/projects/shop-api/src/shop_api/settings.py",
    "https://github.com/acme/shop-api/pull/42",
    "memd/all-MiniLM-L6-v2-int8",
    "我们决定把缓存从 Redis 改成本地 LRU，因为部署更简单。",
    "The root cause was a missing await in the retry loop.",
    "max_tokens: 4096",
    "配置里设了 `ACCESS_TOKEN_EXPIRE_SECONDS=7200`（2 小时）和 `REFRESH_TOKEN_EXPIRE_DAYS=7`。",
    "SESSION_TOKEN_TIMEOUT=1800 AUTH_TOKEN_LIFETIME_MINUTES=30",
    "getUserProfileByIdentifier",
]


def _fill(name: str, template: str) -> tuple[str, list[str]]:
    rng = random.Random(zlib.crc32(name.encode()))
    values: dict[str, str] = {}

    def sub(m: re.Match[str]) -> str:
        key = m.group("name")
        if key not in values:
            values[key] = GENERATORS[m.group("gen")](rng)
        return values[key]

    text = PLACEHOLDER.sub(sub, template)
    secrets: list[str] = []
    for v in values.values():
        if v.startswith("-----BEGIN"):
            secrets.extend(line for line in v.splitlines() if not line.startswith("-----"))
        else:
            secrets.append(v)
    return text, secrets


def load_corpus() -> list[tuple[str, list[str]]]:
    """Every corpus document with the secrets it holds (at least 30 in all)."""
    return [_fill(p.name, p.read_text(encoding="utf-8")) for p in sorted(HERE.glob("*.txt"))]


def encodings(secret: str) -> list[bytes]:
    """The byte forms a secret could take in a file: UTF-8, and JSON-escaped (both ASCII modes)."""
    forms = {secret, json.dumps(secret)[1:-1], json.dumps(secret, ensure_ascii=False)[1:-1]}
    return sorted(f.encode("utf-8") for f in forms)


def scan_tree(root: Path, secrets: list[str]) -> list[str]:
    """Every (file, secret) where a secret's bytes occur in a file under ``root``.

    Reads every regular file whatever its kind (SQLite main file, -wal, -shm, LanceDB data and
    index files, journal, logs, archive, backups). Returns ``"<path>: <secret head>…"`` lines.
    """
    found = []
    for path in sorted(p for p in root.rglob("*") if p.is_file() and not p.is_symlink()):
        data = path.read_bytes()
        for secret in secrets:
            if any(form in data for form in encodings(secret)):
                found.append(f"{path.relative_to(root)}: {secret[:10]}…")
    return found
