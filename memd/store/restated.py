"""A later sentence that restates an older one's subject with another value and no change word
("the rotation job runs on Sundays at 23:00"), and a setting's key given another value
(``rollout_percent: 10`` / ``rollout_percent: 50``): read by :func:`memd.store.current.replaces`
last, after the cues of a change."""

from __future__ import annotations

import re
from functools import lru_cache

from memd.store import cues, current, diffs, roles
from memd.store.values import listed
from memd.text.chinese import CJK_RUN

RESTATED = "the same subject, another value"
RESTATED_SUBJECT = 3
"""Subject words (not values) two sentences share when a later one restates the subject with
another value and no change word ("the rotation job runs on Sundays at 23:00")."""
_KEY = re.compile(r"[_./]")
"""A value both name that is a key or a file (``client_max_body_size``): it says the subject."""


def restated(new: current.Claim, old: current.Claim, shared: frozenset[str]) -> bool:
    """Whether ``new`` says the same thing as ``old`` with another value in its place: on at
    least :data:`RESTATED_SUBJECT` shared subject words (a shared key or file counts two; or
    twice as many Chinese bigrams), a value of ``old`` that ``new`` does not say, where ``new``
    says one of the same shape that ``old`` does not, with two words around each in common, and
    no other setting's key before either. The values are numbers, paths or channels, never
    names or counted words (a story told twice names other days and people). Read only where
    it is shown (marked, never superseded on insert): it can be a second thing of one kind."""
    words = shared - new.values - old.values
    latin = sum(1 for x in words if not CJK_RUN.fullmatch(x))
    keys = sum(1 for x in shared - words if _KEY.search(x))  # `client_max_body_size`, a path
    if same_key(new, old):
        return True
    if cues.shows_diff(new.text) and not new.diffed:
        return False  # a diff that takes no value away adds (``+ users = [dana, marcus]``)
    if latin + 2 * keys < RESTATED_SUBJECT and len(words) - latin < 2 * RESTATED_SUBJECT:
        return False
    for o in old.values - new.anchors:
        if current.shape(o) == "name" or o in current.NUMBER_WORDS:
            continue  # "two children" / "three children", "Friday" / "Sunday": events, not states
        near_old = current.slot(old.text, o)
        for f in new.values - old.anchors:
            if (
                current.shape(f) != current.shape(o)
                or f in current.NUMBER_WORDS
                or roles.different_jobs({f}, {o})
                or cues.unit(old.text, o) != cues.unit(new.text, f)  # "10% of prod" / "AUC 0.936"
            ):
                continue
            if len(near_old & current.slot(new.text, f)) < 2:
                continue
            if any(
                current.shape(v) == current.shape(f)
                and cues.listed_with(new.text, new.values, v, f)
                for v in old.values & new.values
            ):
                continue  # "Both specs are published (`/v1/openapi.json`, `/v2/openapi.json`)"
            key_old, key_new = _key_before(old.text, o), _key_before(new.text, f)
            if key_old and key_new and key_old != key_new:
                continue  # `work_mem 64MB` / `max_connections 100`: two settings
            if not _one_item(old.text, o, new.text, f):
                continue  # `module "ack_hz"`'s `worker_count` / `module "ack_sg"`'s
            return True
    return False


def same_key(new: current.Claim, old: current.Claim) -> bool:
    """Whether ``new`` gives a setting's key another value of the same shape right after it
    (``rollout_percent: 10`` / ``rollout_percent: 50``), whatever else the sentences say; a key
    in code counts by its last part and any value but a number is of one shape (```minute:
    250``` / ``config: minute: 600`` in a YAML block, ``{"queue": "thumbs-default"}`` /
    ``{"queue": "media.thumbnails.v2"}``). In a diff, only a key its removed lines name: the key
    of an added line alone is another thing's (``+data "pagerduty_user" "marcus" { email = … }``
    beside a user whose ``email`` stays)."""
    return _keyed(new, old, one=True)


def another_item(new: current.Claim, old: current.Claim) -> bool:
    """Whether ``new`` gives a key of ``old`` another value in another item or block that its
    name tells apart (``provider "aws" { alias = "apse1" region = "ap-southeast-1" }`` beside
    ``provider "aws" { region = "us-west-2" }``): a second one beside the first, both as they
    are."""
    return _keyed(new, old, one=False)


def _keyed(new: current.Claim, old: current.Claim, one: bool) -> bool:
    """A key of ``old`` given another value by ``new``, in one item (:func:`same_key`) or in
    another (:func:`another_item`)."""
    for o in old.values - new.anchors:
        key = _key_before(old.text, o)
        in_code = not key and bool(key := _code_key_before(old.text, o))
        if not key:
            continue
        for f in new.values - old.anchors:
            if in_code:
                alike = (current.shape(f) == "number") == (current.shape(o) == "number")
            else:
                alike = current.shape(f) == current.shape(o)
            # in code or in words, either way ("bumped `CONFIG_X` to 4096" / ```CONFIG_X=2048```)
            if (
                alike
                and (_key_before(new.text, f) == key or _code_key_before(new.text, f) == key)
                and _one_item(old.text, o, new.text, f) == one
                and (not one or not _only_added(new.text, key))
            ):
                return True
    return False


def _only_added(text: str, key: str) -> bool:
    """Whether ``text`` shows a diff whose removed lines do not name ``key``: its added lines
    give the key to another thing (``+data "pagerduty_user" "marcus" { email = … }``)."""
    if not cues.shows_diff(text):
        return False
    removed = diffs.removed_lines(text)
    return re.search(rf"(?<![\w.]){re.escape(key)}(?!\w)", removed, re.I) is None


_KEY_BEFORE = re.compile(
    r"([A-Za-z]\w*(?:_\w+|(?:[.-][A-Za-z]\w*)*\.[A-Za-z]\w*-\w+))(?:[\s:=`'\"]+"
    r"|[\s`'\"]*[，,(（]?\s*(?:默认值?(?:为|是)?|defaults? to|default)\s*(?:->|→|=>)?[\s:=`'\"]*"
    r"|[\s`'\"]+(?:from\s+\S+\s+)?(?:to|->|→|=>)[\s`'\"]+"
    r"|[\s`'\"]*(?:从\s*\S+\s*)?(?:调到|调成|调整为|改成|改为|改到|设为|设成|设置为|设置成)[\s`'\"]*)\Z",
    re.I,
)
_FLAG_BEFORE = re.compile(r"(--[a-z][\w-]*[a-z])[\s=]+\Z", re.I)
"""A command's flag just before a number (``--partitions 12``)."""
_VALUE_GOES_ON = re.compile(r"[\w.-]")


@lru_cache(maxsize=16384)
def _key_before(sentence: str, value: str) -> str:
    """The setting's key written just before ``value`` (``client_max_body_size`` of
    ``client_max_body_size 12m``, ``global.index-url`` of ``pip config set global.index-url
    https://…``; a flag with its command, ``kafka-topics --partitions`` of ``$ kafka-topics
    … --partitions 12``), or ""."""
    for at in cues.places(sentence, value, goes_on=_VALUE_GOES_ON):
        m = _KEY_BEFORE.search(sentence, 0, at)
        if m:
            return m.group(1).casefold()
        flag = _FLAG_BEFORE.search(sentence, 0, at) if value[:1].isdigit() else None
        if flag:  # (not `--no-ff release/x.y`: a switch, then an argument)
            # the command is part of the key: `vite --port` is no `uvicorn --port`
            command = _COMMAND.findall(sentence, 0, flag.start())
            key = flag.group(1).casefold()
            return f"{command[-1].casefold()} {key}" if command else key
    return ""


def same_key_named(old: str, new: str, value: str) -> bool:
    """Whether ``new`` names the key that ``old`` writes just before ``value``
    (``rate_limit.search.requests_per_minute: 100`` / a diff's ``-requests_per_minute: 100``)."""
    key = _key_before(old, value) or _code_key_before(old, value)
    return bool(key) and key.rsplit(" ", 1)[-1] in new.casefold()


_COMMAND = re.compile(r"(?:^|[`$|;&(\n])\s*([A-Za-z][\w.-]*)")
"""The first word of a command (after a backtick, a prompt's ``$``, a pipe or a line's start)."""


_CODE = re.compile(r"```(.*?)(?:```|$)|`([^`]+)`", re.S)
_CODE_KEY = re.compile(r"(?<![\w@:./-])[\"']?(@?[A-Za-z][\w.:/-]*)[\"']?\s*[:=]\s*[\"']?/?\Z", re.I)
"""A key in code, with its scope (``@acme:registry=`` is no ``registry=``, an annotation's
``prometheus.io/port:`` no ``server.port:``), also before an absolute path's root, which a
value leaves out (``dir = "/data/sim/out"``)."""
_ITEM_KEY = re.compile(r"(?:^|\s)-\s+\Z")
"""A YAML list's item marker before a key: the key names which item (``- alert: NodeCPUHigh``,
``- repo: …/ruff-pre-commit``), as :data:`_PLAIN_KEYS` do."""
_ITEMS = re.compile(
    r"(?:^|\s)-\s+[A-Za-z][\w.-]*:\s*[\"']?([^\s\"',]+)"
    r"|\b(?:module|resource|data)((?:\s+\"[\w.-]+\"){1,2})\s*\{"
    r"|\bprovider\s+(\"[\w.-]+\")\s*\{\s*(?:alias\s*=\s*(\"[\w.-]+\"))?"
)
"""A YAML list's item and the value that names it (``- alert: NodeCPUHigh``), a Terraform
block and its labels (``module "ack_hz" {``), a Terraform provider and its alias (``provider
"alicloud" { alias = "sz"``: a second region's, beside the first)."""


def _one_item(old: str, o: str, new: str, f: str) -> bool:
    """Whether ``o`` of ``old`` and ``f`` of ``new`` are not in two items of a list or two
    blocks of Terraform that their names tell apart."""
    return len({_item(old, o), _item(new, f)} - {""}) < 2


def _item(sentence: str, value: str) -> str:
    """The name of the YAML list's item or the Terraform block ``value`` is written in
    (``nodecpuhigh`` for the ``for: 5m`` under ``- alert: NodeCPUHigh``), or ""."""
    at = sentence.casefold().find(value)
    names = [
        "".join(g for g in m.groups() if g).casefold()
        for m in _ITEMS.finditer(sentence, 0, max(at, 0))
    ]
    return names[-1] if names else ""


_DIRECTIVE = re.compile(r"[;{}]\s*([a-z][a-z_]+[a-z])\s+[/\"']?\Z")
"""A directive of an nginx-like config before its value, in a block (``{ alias /srv/www/h5/;``;
not the shell's ``alias kbj='…'``)."""
_GETENV = re.compile(
    r"(?:environ\.get|getenv|env\.get|ENV\.fetch|Getenv|env::var_or)\(\s*[\"']([A-Za-z_]\w*)[\"']\s*,\s*[\"']?\Z"
)
"""An environment variable's default in code (``os.environ.get("MODEL_BUCKET", "…")``, Ruby's
``ENV.fetch("REDIS_URL", "…")``): the variable is the key, as where a deployment sets it
(``MODEL_BUCKET: nimbus-artifacts-prod``)."""
_FROM = re.compile(r"\bFROM\s+\Z")
"""A Dockerfile's ``FROM``: its image's tag is its value, the image's name part of its key (the
stages of one Dockerfile build from different images)."""
_EXPOSE = re.compile(r"\bEXPOSE\s+\Z")
"""A Dockerfile's ``EXPOSE``: the port the container listens on."""
_DIRECTIVES = listed("alias root")
"""Such directives without an underscore (``proxy_pass``, ``worker_processes`` have one)."""
_PLAIN_KEYS = listed("name id type kind key value title description label run uses with on if")
"""Keys of code that say which item a value belongs to, not a setting (``- name: lint``)."""


@lru_cache(maxsize=16384)
def _code_key_before(sentence: str, value: str) -> str:
    """The last part of the key written just before ``value`` in code of ``sentence``
    (``minute`` of ```config.minute: 100```), or ""."""
    for m in _CODE.finditer(sentence):
        code = m.group(1) or m.group(2) or ""
        for at in cues.places(code, value, goes_on=_VALUE_GOES_ON):
            env = _GETENV.search(code, 0, at)
            if env:
                return env.group(1).casefold()
            k = _CODE_KEY.search(code, 0, at)
            if k:
                key = k.group(1).casefold().rsplit(".", 1)[-1]
                item = _ITEM_KEY.search(code, 0, k.start())  # `- alert: NodeCPUHigh`
                return "" if key in _PLAIN_KEYS or item else key
            if _FROM.search(code, 0, at) and ":" in value:  # a Dockerfile's image, by name
                return "from " + value.split(":", 1)[0].casefold()
            if _EXPOSE.search(code, 0, at):  # a Dockerfile's port
                return "expose"
            d = _DIRECTIVE.search(code, 0, at) if m.group(1) else None
            if d and ("_" in d.group(1) or d.group(1) in _DIRECTIVES):
                return d.group(1)
    return ""


_ADDED = re.compile(r"^\s*\+(?!\+)", re.M)
_REMOVED = re.compile(r"^\s*-(?!-).*$", re.M)
"""A diff's added and removed lines."""


def keeps(text: str, old: current.Claim) -> bool:
    """Whether ``text`` still gives a key of ``old`` its old value ("staging has
    `rollout_percent: 50`; prod keeps `rollout_percent: 10`": two places, two values); a
    diff's removed line (``-  key: 100`` beside ``+  key: 250``) gives it no more."""
    if _ADDED.search(text):
        text = _REMOVED.sub("", text)
    for o in old.values:
        key = _key_before(old.text, o)
        if key and _key_before(text, o) == key and _keyed_otherwise(text, key, o):
            return True
    return False


_WORD = re.compile(r"[\w][\w.:/-]*")


def _keyed_otherwise(text: str, key: str, value: str) -> bool:
    """Whether ``text`` gives ``key`` a value besides ``value`` (two places, two values); a
    key ``text`` leaves as it was (``--bootstrap-server`` beside a changed ``--partitions``)
    keeps nothing."""
    return any(
        value not in w.casefold() and _key_before(text, w) == key for w in set(_WORD.findall(text))
    )
