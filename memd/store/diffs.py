"""What a diff in a sentence takes away: the values its removed lines give that its added lines
give otherwise ("-go 1.21 +go 1.23", "-ACCESS_TOKEN_EXPIRE = timedelta(hours=2)
+ACCESS_TOKEN_EXPIRE = timedelta(minutes=15)"), read by :func:`memd.store.cues.retired`."""

from __future__ import annotations

import re
from itertools import takewhile

from memd.store.values import CJK, V, listed

_DIFF_LINE = re.compile(
    rf"(?:^|\s)(?P<s>[-+])\s*(?P<item>-\s+)?(?P<k>[A-Za-z_][\w.-]*)\s*[:=]\s*[`'\"]?(?P<v>{V})[`'\"]?",
    re.M,
)
_DIFF_WORDS = re.compile(
    rf"(?:^|\s)(?P<s>[-+])(?P<k>[A-Za-z_][\w.-]*)\s+[`'\"]?(?P<v>{V})[`'\"]?", re.M
)
"""A diff's line of a keyword and its value, the sign against the keyword ("-go 1.21",
"+FROM golang:1.23.2-alpine", "-resource \"tencentcloud_dnspod_record\"")."""
_DIFF_KEY = re.compile(r"(?:^|\s)(?P<s>[-+])\s*\"(?P<k>@?[\w.-]+(?:/[\w.-]+)?)\"\s*:", re.M)
"""A diff's line of a quoted key (a package.json dependency: ``-  "@bugsnag/js": "^7.22.3"``)."""
_VERSION_IN = re.compile(r"(?<![\w.])\d+(?:\.\d+)+")
_SIGNED = re.compile(r"(?:^|(?<=\s))([-+])(?=[^\s+-])(.*?)(?=\s[-+][^\s+-]|\n|\Z)", re.S)
"""A diff's removed or added line, also where an excerpt ran its lines together."""
_INDENTED = re.compile(
    r"(?:^|(?<=\s))([-+])(?![-+]{2}\s)[ \t]*(-\s+)?(?=[^\s+-]|(?<=\s)--\w)(.*?)"
    r"(?=\s[-+](?![-+])|\n|```|\Z)",
    re.S,
)
"""In a text that shows a diff (:data:`DIFF_SHOWN`), a removed or added line whose code is
indented ("-    huart2.Init.BaudRate = 115200;", "-      - \"8080:8080\"") or starts with a
flag ("- --workers 4 --timeout 30"), also run together in an excerpt's one line, where a sign
between spaces starts the next line."""
HUNK = re.compile(r"@@ -[\d,]+ \+[\d,]+ @@")
"""A diff's hunk header (``@@ -8,7 +8,7 @@``): no line of it."""
DIFF_SHOWN = re.compile(r"```diff|(?:^|\s)(?:---|\+\+\+) [ab]/|(?:^|\s)@@ -\d", re.M)
"""A diff's fence, file header or hunk header."""
_TOP_KEY = re.compile(r"(?:^|\s)(?P<s>[-+])(?P<k>[A-Za-z_][\w.-]*):(?=\s|\Z)", re.M)
"""A diff's line of a key at the start of its line (no indent: a YAML document's top level,
``-apollo:``)."""
_QUOTED_VALUE = re.compile(r"^\s*[\"'](?P<k>[\w.:@/-]+)[\"']\s*:\s*[\"'](?P<v>[^\"']*)[\"']")
"""A line of a quoted key and its quoted value (``"build": "webpack --config x.js",``)."""
_TOKEN = re.compile(V)
_CONSTANTS = listed("none null nil true false yes no on off")
"""A setting's constant, not a value a sentence names (``read=None`` → ``read=30.0``: "none"
is a word of any sentence)."""
_MAPPING = re.compile(r"\d+(?::\d+)+")
"""A port mapping (``8080:8080``): its ports are taken away too."""


def _line_pairs(lines: list[tuple[str, str]]) -> set[str]:
    """What a diff's removed line gives that the added line after it, on the same first word
    (or the one line of one value that replaces another in place), gives otherwise: one or two
    words ("-ACCESS_TOKEN_EXPIRE = timedelta(hours=2) +ACCESS_TOKEN_EXPIRE =
    timedelta(minutes=15)": hours, 2; ``- "8080:8080"`` ``+ "8443:8443"``: the mapping and its
    port 8080)."""
    out: set[str] = set()
    removed: dict[tuple[str, bool], list[str]] = {}
    run: list[list[str]] = []  # the removed lines right before, for a line replaced in place
    added, run_item = 0, False
    signed = [
        (sign, words, line.startswith("- "), line.startswith("|"))
        for sign, line in lines
        if (words := _TOKEN.findall(line))
    ]
    for at, (sign, words, item, row) in enumerate(signed):
        if sign == "-":
            if added:
                run, added = [], 0
            run.append(words)
            run_item = item
            removed.setdefault((words[0], item), words)
            continue
        added += 1
        before = removed.pop((words[0], item), None)  # (an item added replaces no other item)
        if before is None:  # "-  - \"8080:8080\"" then "+  - \"8443:8443\"": one line, one value
            if len(run) == 1 and added == 1 and len(run[0]) == 1 and not (item and not run_item):
                before, words = run[0], words[:1]  # (an excerpt runs the lines after onto it;
                # "enable: - errcheck + - revive": an item added after one left as it was)
            elif (
                run
                and added == 1
                and len(words[0]) > len(run[-1][0]) > 3
                and words[0].startswith(run[-1][0])
            ):
                before = run[-1]  # "- node-version: '18.19'" / "+ node-version-file: '.nvmrc'"
            else:
                continue
        after = takewhile(lambda line: line[0] == "+", signed[at + 1 :])
        said = {w for _, later, _, _ in after for w in later}  # what the added lines after it keep:
        gone = [w for w in before if w not in words and w not in said]  # a statement wrapped
        # ("+redis = { url: … }," "+  pool_timeout: 5"), a command moved to a script of its
        # own (`-"lint": "eslint ."` / `+"lint": "npm run lint:js && …"` `+"lint:js": "eslint ."`)
        most = 4 if row else 2  # a table's row may change a name and its handle at once
        if 0 < len(gone) <= most and any(w not in before for w in words):
            out.update(gone)
            kept = {p for w in words if _MAPPING.fullmatch(w) for p in w.split(":")}
            out.update(
                p for w in gone if _MAPPING.fullmatch(w) for p in w.split(":") if p not in kept
            )
    return out


def _signed_lines(text: str) -> list[tuple[str, str]]:
    """A diff's removed and added lines, as (sign, line); a YAML list's item keeps its "- "
    ("+ - name: feishu-ops": an item added)."""
    if not DIFF_SHOWN.search(text):
        return [(m.group(1), m.group(2)) for m in _SIGNED.finditer(HUNK.sub(" ", text))]
    return [
        (m.group(1), ("- " if m.group(2) else "") + m.group(3))
        for m in _INDENTED.finditer(HUNK.sub(" ", text))
    ]


def removed_lines(text: str) -> str:
    """A diff's removed lines, one to a line."""
    return "\n".join(line for sign, line in _signed_lines(text) if sign == "-")


def _items_dropped(lines: list[tuple[str, str]]) -> set[str]:
    """The first words of a YAML list's items a diff removes while it adds another item, when
    no added line names them ("-  - kfk-hz-02.x:9092" and "+  - kfk-hz-06.x:9092": a broker
    replaced in the list; the items left as they were are no lines of the diff)."""
    gone = [
        words[0]
        for sign, line in lines
        if sign == "-" and line.startswith("- ") and (words := _TOKEN.findall(line))
    ]
    if not gone or not any(sign == "+" and line.startswith("- ") for sign, line in lines):
        return set()
    said = {w for sign, line in lines if sign == "+" for w in _TOKEN.findall(line)}
    return {w for w in gone if w not in said}


def _commands_swapped(lines: list[tuple[str, str]]) -> set[str]:
    """The first word of a quoted value a diff's removed line gives a quoted key when its added
    line gives the key a value without that word (``-"build": "webpack --config x.js"``,
    ``+"build": "rsbuild build"``: webpack, a package.json script's tool swapped)."""
    out: set[str] = set()
    removed: dict[str, str] = {}
    added = {w for sign, line in lines if sign == "+" for w in _TOKEN.findall(line)}
    for sign, line in lines:
        m = _QUOTED_VALUE.match(line)
        if m is None:
            continue
        key, value = m.group("k"), m.group("v")
        if sign == "-":
            removed.setdefault(key, value)
            continue
        before = removed.pop(key, None)
        words = _TOKEN.findall(before or "")
        if words and words[0] not in added and len(words[0]) > 2:
            out.add(words[0])  # (not when another script runs it: `+"lint:js": "eslint ."`)
    return out


def _top_keys_swapped(text: str) -> set[str]:
    """The keys a diff removes from a YAML document's top level while it adds others there
    (``-apollo:`` … ``+spring:``: the Apollo block replaced by Spring Cloud's)."""
    if not DIFF_SHOWN.search(text):
        return set()
    keys: dict[str, set[str]] = {"-": set(), "+": set()}
    for m in _TOP_KEY.finditer(text):
        keys[m.group("s")].add(m.group("k"))
    gone, new = keys["-"] - keys["+"], keys["+"] - keys["-"]
    return gone if new else set()


_TABLE_RULE = re.compile(r"\|(?:[ \t]*:?-{3,}:?[ \t]*\|)+")
"""A markdown table's rule under its header (``|---|---|``), also in an excerpt's one line."""
_BEFORE = re.compile(
    rf"(?:before|old|from|previous|prior|was)(?: value| setting)?|(?!目前)[{CJK}]{{0,3}}前|旧值?|原值?",
    re.I,
)
_AFTER = re.compile(rf"(?:after|new|to|now)(?: value| setting)?|[{CJK}]{{0,3}}后|新值?|现在", re.I)


def before_after(text: str) -> list[tuple[str, str, str]]:
    """The rows of a markdown table of a change (columns "before" and "after", "迁移前" and
    "迁移后") whose two cells differ, as (row's first cell, before, after): "| max upload size
    | 25 MB | 100 MB |" under "| limit | before | after |"."""
    out: list[tuple[str, str, str]] = []
    for rule in _TABLE_RULE.finditer(text):
        n = rule.group(0).count("|") - 1
        head = text[: rule.start()].rstrip()
        if n < 3 or not head.endswith("|"):
            continue
        header = [c.strip(" *`") for c in head.split("|")[-(n + 1) : -1]]
        was = [i for i, c in enumerate(header) if _BEFORE.fullmatch(c)]
        now = [i for i, c in enumerate(header) if _AFTER.fullmatch(c)]
        if len(was) != 1 or len(now) != 1 or min(was[0], now[0]) == 0:
            continue
        row = re.compile(r"[ \t\n]*\|" + r"([^|\n]*)\|" * n)
        at = rule.end()
        while (m := row.match(text, at)) is not None:
            cells = [c.strip(" *") for c in m.groups()]
            before, after = cells[was[0]], cells[now[0]]
            if before and after and before.casefold() != after.casefold():
                out.append((cells[0], before, after))
            at = m.end()
    return out


_SED = re.compile(
    r"\bsed\b[^\n|;]*?['\"]?(?:\d+,\d+)?s(?P<d>[/|#,])(?P<a>(?:\\.|(?!(?P=d))[^\s'\"])+)(?P=d)"
    r"(?P<b>(?:\\.|(?!(?P=d))[^\s'\"])+)(?P=d)[gI]*['\"]?"
)
"""A ``sed`` substitution of one value by another (``sed -i 's/stg-eu\\.x\\.dev/api-stg.x.internal/g'``)."""
_SED_ESCAPE = re.compile(r"\\(.)")


def sed_swaps(text: str) -> list[tuple[str, str, str]]:
    """The ``sed`` substitutions of ``text`` that put one literal value for another, as (the
    expression, the value replaced, the value put in its place); none that uses a pattern
    (``s/v[0-9]+/…/``, ``s/^#//``)."""
    out = []
    for m in _SED.finditer(text):
        a, b = (_SED_ESCAPE.sub(r"\1", m.group(g)) for g in ("a", "b"))
        if not (re.fullmatch(r"[\w.:@/=-]+", a) and re.fullmatch(r"[\w.:@/=-]+", b)):
            continue
        key, _, was = a.rpartition("=")
        if key and b.startswith(f"{key}="):  # "s/PORT=8080/PORT=9090/": the value of a key
            a, b = was, b[len(key) + 1 :]
        if a and b and a != b:
            out.append((m.group(0), a, b))
    return out


def sed_read(text: str, swaps: list[tuple[str, str, str]] | None = None) -> str:
    """``text`` with each substitution of :func:`sed_swaps` (``swaps``, when the caller has
    them) told as "sed a.b → c.d"."""
    if swaps is None:
        swaps = sed_swaps(text) if "sed" in text else []
    for expression, was, now in swaps:
        text = text.replace(expression, f"sed {was} → {now}")
    return text


def diff_removed(text: str) -> set[str]:
    """The values a diff's removed lines give a key that its added lines give another
    ("-EMAIL_PROVIDER=sendgrid -SENDGRID_API_KEY=… +EMAIL_PROVIDER=postmark": sendgrid;
    "- - id: pylint + - repo: … + - id: ruff": pylint; "-go 1.21 +go 1.23": 1.21;
    "-FROM golang:1.21.6-alpine +FROM golang:1.23.2-alpine": the image and its 1.21.6), and
    the quoted keys it removes while it adds others (``-"@bugsnag/js": … +"@sentry/react": …``:
    a dependency swapped), a script's tool (:func:`_commands_swapped`), a YAML document's
    top-level key (:func:`_top_keys_swapped`) and a YAML list's item replaced
    (:func:`_items_dropped`); never a constant (``read=None``)."""
    out: set[str] = set()
    for pattern in (_DIFF_LINE, _DIFF_WORDS):
        removed: dict[tuple[str, bool], str] = {}
        for m in pattern.finditer(text):  # (an item added to a list, "+ - name: feishu-ops",
            # replaces no item's line: "- name: dingtalk-ops" is one left as it was)
            key, value = (m.group("k"), bool(m.groupdict().get("item"))), m.group("v")
            if m.group("s") == "-":
                removed.setdefault(key, value)
            elif key in removed and removed[key] != value:
                old = removed[key]
                out.add(old)
                out.update(v for v in _VERSION_IN.findall(old) if v not in value)
    lines = _signed_lines(text)
    out |= _line_pairs(lines) | _commands_swapped(lines) | _top_keys_swapped(text)
    out |= _items_dropped(lines)
    out = {v for v in out if v.casefold() not in _CONSTANTS}
    keys: dict[str, set[str]] = {"-": set(), "+": set()}
    for m in _DIFF_KEY.finditer(text):
        keys[m.group("s")].add(m.group("k"))
    if keys["+"] - keys["-"]:
        out.update(keys["-"] - keys["+"])
    return out
