"""Secrets said in words: passwords, PINs, national id numbers and card numbers in prose, and
credentials tools print that the token rules miss (``-p<password>``, ``?password=`` in a URL).

``redact_prose(text)`` is one step of :func:`memd.extract.redact.redact`, with the same
``[REDACTED:<kind>]`` marks. Value-shaped rules: a keyword alone is no secret ("reset the
password flow", "the PIN field is required"); a value must follow it behind "is", ":", "=",
"是", "为" and their kin, and look like a value (not a word such as "required" or "hashed").

Kinds: ``password`` (passwords, passphrases, passcodes), ``pin``, ``national_id`` (a US SSN,
a Chinese 身份证号 with a valid check digit, and numbers named as national ids) and
``card_number`` (Luhn-valid 13-19 digits, grouped or with a card brand's prefix and length).
"""

from __future__ import annotations

import re

from memd.extract.redact import mark, secret_kind_of_key

# --- English: keyword [for/of/on… something] is/was/:/= value --------------------------------
_MARKER = r"\s*(?:(?:is|was|are)(?:\s+(?:now|still|set\s+to|changed\s+to))?\s*:?|:|：|=)\s*"
_OF = r"(?:\s+(?:for|of|to|on|at|in|from)\s+[^\n.,;:!?=]{1,40}?)?"
_VALUE = r"(?P<val>\"[^\"\n]{1,80}\"|'[^'\n]{1,80}'|`[^`\s]{1,80}`|“[^”\n]{1,80}”|[^\s\"'`]{1,80})"
_EN_KEYS: list[tuple[str, str]] = [
    ("password", r"(?:pass(?:word|phrase|code)s?|passwd)"),
    ("pin", r"(?:\b(?:PIN|[Pp]in)\s+(?:code|number)\b|\bPIN\b|(?<=\b[Mm]y\s)pin\b)"),
    (
        "national_id",
        r"(?:social\s+security(?:\s+(?:number|no\.?|#))?|\bSSNs?\b|social\s+insurance\s+number"
        r"|national\s+(?:insurance|id(?:entity)?)\s+(?:number|no\.?)|passport\s+(?:number|no\.?)"
        r"|tax\s+(?:id|file\s+number))",
    ),
    ("card_number", r"(?:(?:credit|debit|bank)?\s*card\s+(?:number|no\.?)|\bCVV\b|\bCVC\b)"),
]
_EN = [
    (kind, re.compile(rf"(?P<head>(?i:{key}){_OF}{_MARKER})" + _VALUE))
    if kind != "pin"
    else (kind, re.compile(rf"(?P<head>{key}{_OF}(?i:{_MARKER}))" + _VALUE))
    for kind, key in _EN_KEYS
]
_NOT_A_VALUE = {
    "a", "an", "the", "not", "no", "too", "very", "now", "still", "also", "required", "optional",
    "empty", "blank", "wrong", "incorrect", "invalid", "correct", "right", "expired", "hashed",
    "stored", "missing", "set", "reset", "changed", "same", "different", "long", "short", "weak",
    "strong", "encrypted", "saved", "updated", "ok", "okay", "fine", "null", "none", "nil",
    "being", "case-sensitive", "mandatory", "needed", "unknown", "unset", "secret", "private",
    "hidden", "masked", "redacted", "broken", "valid", "used", "checked", "validated", "ignored",
    "in", "on", "at", "of", "for", "to", "from", "by", "with", "and", "or", "but", "that", "which",
    "what", "where", "how", "there", "here", "this", "it", "its", "my", "your", "our", "their",
    "his", "her", "one", "two", "three", "only", "just", "always", "never", "easy", "hard",
    "generated", "random", "unique", "shown", "displayed", "sent", "given", "known", "safe",
    "true", "false", "yes", "str", "string", "int", "bool", "field", "option", "argument",
}  # fmt: skip
_UNIT_AFTER = re.compile(
    r"\s*(?:characters?|chars?|digits?|letters?|symbols?|bytes?|bits?|words?|long|minutes?"
    r"|hours?|days?|weeks?|months?|years?|times?|attempts?|tries|rounds?|iterations?|%)\b",
    re.IGNORECASE,
)
_CODE_REF = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+|[A-Z][a-z]+\[.*")
_KEY_WORDS = {"password", "passwd", "pass", "pwd", "passphrase", "pin", "secret", "token"}
_PLAIN_WORD = re.compile(r"[a-z]+(?:-[a-z]+)*")
_WORDY_SUFFIX = ("ed", "ing", "ly", "able", "ible", "ful", "less", "ive", "ous", "tion")

# --- Chinese: 密码是/为/：value ------------------------------------------------------------------
_ZH_MARKER = (
    r"\s*(?:(?:是|为|為|改成了?|改为|改為|换成了?|設為|设为|设置为|設置為)\s*[：:]?|[：:=])\s*"
)
_ZH_VALUE = r"(?P<val>[\x21-\x7e]{3,80})"
_ZH = [
    (
        "password",
        re.compile(
            rf"(?P<head>(?:密码|密碼|口令|(?i:PIN)码|(?i:PIN)碼){_ZH_MARKER}){_ZH_VALUE}",
        ),
    ),
    (
        "national_id",
        re.compile(
            rf"(?P<head>(?:身份证|身份證|社保|护照|護照)(?:号码|號碼|号|號)?{_ZH_MARKER})"
            r"(?P<val>[0-9A-Za-z]{6,20})"
        ),
    ),
    (
        "card_number",
        re.compile(
            rf"(?P<head>(?:银行卡|銀行卡|信用卡|卡)(?:号码|號碼|号|號){_ZH_MARKER})"
            r"(?P<val>\d[\d -]{10,24}\d)"
        ),
    ),
]
_ZH_GUARD = re.compile(r"密|口令|码|碼|身份|社保|护照|護照|卡")

_EN_GUARD = {
    "password": ("pass",),
    "pin": ("pin",),
    "national_id": ("ssn", "social", "national", "passport", "tax "),
    "card_number": ("card", "cvv", "cvc"),
}
"""A first look, much cheaper than the rules: a rule runs only on a text holding one of these."""

# --- shapes that are secrets wherever they stand -----------------------------------------------
_NUMBER = re.compile(
    r"(?<![\w-])(?<!\d\.)(?:(?P<ssn>\d{3}-\d{2}-\d{4})"
    r"|(?P<grouped>\d{4}(?:[ -]\d{4}){2}[ -]\d{1,7}|\d{4}[ -]\d{6}[ -]\d{4,5})"
    r"|(?P<long>\d{17}[Xx]|\d{13,19}))(?![\w-])(?!\.\d)"
)
"""US SSNs, card numbers in groups, and long numbers (a Chinese id, a card), in one pass."""
_CN_ID = re.compile(r"\d{6}(?:19|20)\d{2}(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])\d{3}[\dXx]")
_CN_ID_WEIGHTS = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
_THREE_DIGITS = re.compile(r"\d{3}")
_CARD_BRANDS = re.compile(
    r"4(?:\d{12}|\d{15}|\d{18})|5[1-5]\d{14}|2(?:2[2-9]|[3-6]\d|7[01]|720)\d{12}|3[47]\d{13}"
    r"|6(?:011|5\d\d|4[4-9]\d)\d{12}|62\d{14,17}|35\d{14}|3(?:0[0-5]|[68]\d)\d{11}"
)

# --- credentials tools print ---------------------------------------------------------------
_MYSQL_P = re.compile(
    r"(?P<head>\b(?:mysql|mysqldump|mysqladmin|mariadb)\b[^\n|;&]*?\s-p)(?P<val>[^\s'\"-][^\s'\"]{2,})"
)
_QUERY_PARAM = re.compile(r"(?P<head>[?&;](?P<key>[A-Za-z_][\w.-]{0,40})=)(?P<val>[^&\s#'\"]+)")


def luhn(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        n = int(ch)
        if i % 2:
            n = n * 2 - 9 if n > 4 else n * 2
        total += n
    return total % 10 == 0


def cn_id_valid(number: str) -> bool:
    """The check digit of an 18-digit Chinese resident id (ISO 7064 MOD 11-2)."""
    total = sum(int(c) * w for c, w in zip(number[:17], _CN_ID_WEIGHTS, strict=True))
    return "10X98765432"[total % 11] == number[17].upper()


def ssn_valid(a: str, g: str, s: str) -> bool:
    return a not in ("000", "666") and a[0] != "9" and g != "00" and s != "0000"


def _unquoted(raw: str) -> tuple[str, str, str]:
    """(opening quote, inner value, closing quote) of a value as matched."""
    pairs = {'"': '"', "'": "'", "`": "`", "“": "”"}
    if len(raw) >= 2 and raw[0] in pairs and raw[-1] == pairs[raw[0]]:
        return raw[0], raw[1:-1], raw[-1]
    return "", raw, ""


def _trail(inner: str) -> tuple[str, str]:
    """A bare value without the sentence's punctuation after it: (value, punctuation)."""
    value = inner.rstrip(".,;:)]}>。，；：）")
    return value, inner[len(value) :]


def placeholder(value: str) -> bool:
    """An example, a mask or a reference in place of a value: ``…``, ``***``, ``<pw>``,
    ``${DB_PASSWORD}``, ``{guard.token}``, ``$PW``."""
    return (
        not value
        or value.startswith(("[REDACTED", "<", "{", "$", "%(", "`"))
        or "…" in value
        or "..." in value
        or re.fullmatch(r"[*xX?_.-]+", value) is not None
    )


def _is_value(kind: str, value: str, quoted: bool, after: str) -> bool:
    """Whether what follows a keyword and its marker is the secret's value, not prose."""
    if placeholder(value) or value.lower() in _KEY_WORDS:
        return False  # "password=password", "password: …"
    if not quoted and ("(" in value or "[" in value or _CODE_REF.fullmatch(value)):
        return False  # code: password: Optional[str], password = self.password
    digits = sum(c.isdigit() for c in value)
    if kind == "pin":
        return re.fullmatch(r"\d{4,12}", value) is not None and not _UNIT_AFTER.match(after)
    if kind == "national_id":
        return digits >= 4 and len(value) >= 6 and not _UNIT_AFTER.match(after)
    if kind == "card_number":
        return digits >= 3 and not _UNIT_AFTER.match(after)
    if quoted:
        return value.lower() not in _NOT_A_VALUE
    if digits and digits == len(value) and _UNIT_AFTER.match(after):
        return False  # "is 12 characters long"
    low = value.lower()
    if low in _NOT_A_VALUE:
        return False
    if _PLAIN_WORD.fullmatch(value):
        # A lowercase word: a value only at the end of its clause, and not an adjective
        # or participle ("is hashed with argon2", "is stored in vault").
        if low.endswith(_WORDY_SUFFIX) or len(value) < 4:
            return False
        return not re.match(r"\s*[A-Za-z0-9(]", after)
    if re.fullmatch(r"[A-Z][a-z]+", value):
        return not re.match(r"\s*[a-z]", after)  # "is Tuesday" / "is Required by ..."
    return True


def _keyword_value(kind: str, match: re.Match[str]) -> str:
    raw = match.group("val")
    open_q, inner, close_q = _unquoted(raw)
    tail = ""
    if not open_q:
        inner, tail = _trail(inner)
    after = tail + match.string[match.end() :]
    if not _is_value(kind, inner, bool(open_q), after):
        return match.group(0)
    return f"{match.group('head')}{open_q}{mark(kind)}{close_q}{tail}"


def _number(match: re.Match[str]) -> str:
    value = match.group(0)
    if match.lastgroup == "ssn":
        area, group, serial = value.split("-")
        return mark("national_id") if ssn_valid(area, group, serial) else value
    if match.lastgroup == "long" and _CN_ID.fullmatch(value) and cn_id_valid(value):
        return mark("national_id")
    digits = re.sub(r"\D", "", value)
    if not value[-1].isdigit() or not 13 <= len(digits) <= 19 or not luhn(digits):
        return value
    if match.lastgroup == "long" and not _CARD_BRANDS.fullmatch(digits):
        return value  # ids and timestamps: a bare number needs a card's shape
    return mark("card_number")


def _query_param(match: re.Match[str]) -> str:
    kind = secret_kind_of_key(match.group("key"))
    value = match.group("val")
    if kind is None or placeholder(value) or len(value) < 3:
        return match.group(0)
    return f"{match.group('head')}{mark(kind)}"


def _mysql_password(match: re.Match[str]) -> str:
    if placeholder(match.group("val")):
        return match.group(0)
    return f"{match.group('head')}{mark('password')}"


def redact_prose(text: str) -> str:
    """``text`` with secrets said in words, national ids, card numbers and tool-printed
    credentials (``mysql -p…``, ``?password=…``) replaced by ``[REDACTED:<kind>]``."""
    low = text.lower()
    for kind, pattern in _EN:
        if any(word in low for word in _EN_GUARD[kind]):
            text = pattern.sub(lambda m, k=kind: _keyword_value(k, m), text)  # type: ignore[misc]
    if _ZH_GUARD.search(text):
        for kind, pattern in _ZH:
            text = pattern.sub(lambda m, k=kind: _keyword_value(k, m), text)  # type: ignore[misc]
    if "=" in text and ("?" in text or "&" in text or ";" in text):
        text = _QUERY_PARAM.sub(_query_param, text)
    if " -p" in text:
        text = _MYSQL_P.sub(_mysql_password, text)
    if _THREE_DIGITS.search(text):
        text = _NUMBER.sub(_number, text)
    return text
