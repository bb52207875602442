"""Values of one thing: versions of one major, hosts of one domain, tags of one image, tools
for one job. A later value of the same family can replace an earlier one
(:mod:`memd.store.current`); a prompt asking for a kind finds every value of it
(:mod:`memd.recall.disputed`)."""

from __future__ import annotations

import re

from memd.store import cues, roles

VERSION = re.compile(r"^v?(\d+)\.\d+(?:\.\d+)*$")
"""A version number (its major is group 1): "3.12", "v18.19.0"."""


def family(value: str) -> frozenset[str]:
    """Keys that values of one thing share: a version's major ("v3" for 3.11 and 3.12), an
    address's domain ("mail:kelpie.io"), a host's domain ("h:corvid-labs.dev"), a tool's job
    ("job:package manager" for yarn and pnpm); none for other values."""
    version = VERSION.match(value)
    if version:
        return frozenset([f"v{version.group(1)}"])
    mail = _MAIL.match(value)
    if mail:  # support@kelpie.io, later help@kelpie.io: one organisation's addresses
        return frozenset([f"mail:{mail.group(1)}"])
    image = _IMAGE.match(value)
    registry = _REGISTRY.match(value)  # docker.io/wrenfield/api, later ghcr.io/wrenfield-labs/api
    moved = [f"repo:{registry.group(1)}"] if registry else []  # (one image in another registry)
    if image:
        return frozenset([f"img:{image.group(1)}", *moved])
    if moved:
        return frozenset(moved)
    url = _URL.match(value)
    if url:  # an endpoint: its host's family ("http://localhost:8000" -> "h:localhost")
        value = url.group(1)
        if "." not in value:
            return frozenset([f"h:{value}"])
    parts = value.split(".")
    if len(parts) > 2 and "/" not in value:
        keys = ["h:" + ".".join(parts[-2:])]
        if parts[-1] in _TLDS:  # a host's name without its TLD: harbourline .net -> .io
            keys.append("o:" + parts[-2])
        return frozenset(keys)
    return frozenset(f"job:{role}" for role in roles.roles(value))


_URL = re.compile(r"^[a-z][\w+.-]*://(?:[^@/]*@)?([\w.-]+)")
_MAIL = re.compile(r"^[\w.+-]+@([\w-]+(?:\.[\w-]+)+)$")
_TLDS = frozenset(["com", "net", "org", "io", "dev", "app", "co", "cloud", "ai", "internal"])
"""Top-level domains a host of one organisation moves between (not a file's extension)."""
_IMAGE = re.compile(r"^([a-z][\w.-]*(?:/[\w.-]+)*):[\w][\w.-]*$")
"""A container image and its tag ("python:3.12-alpine"): the tags of one image are one family."""
_REGISTRY = re.compile(
    r"^(?:docker\.io|ghcr\.io|quay\.io|(?:[a-z\d-]+\.)*gcr\.io|[a-z\d-]+-docker\.pkg\.dev"
    r"|[\w.-]+\.dkr\.ecr\.[\w.-]+\.amazonaws\.com|[\w-]+\.azurecr\.io|registry\.[\w.-]+)"
    r"(?::\d+)?/(?:[\w.-]+/)*([\w.-]+?)(?::[\w][\w.-]*)?$"
)
"""An image's path in a container registry (group 1: its name, without the tag): one image
pushed to another registry is one thing moved."""


def rolled_back(
    text: str, new: frozenset[str], old: frozenset[str], shared: frozenset[str]
) -> bool:
    """Whether ``text`` (with values ``new``) tells a rollback to another version of one of
    the ``old`` values: "Rolled back: … is back to `pydantic==2.7.1`" after "now has
    `pydantic==2.8.0`" (a version on a shared word), `kubectl rollout undo` printing an image's
    older tag; whatever else it names (the newer version in a comment)."""
    if not cues.ROLLED_BACK.search(text):
        return False
    back = back_on(text)
    for f in new - old:
        for o in old - {f} - back:  # (the version it is back on is not one it undoes)
            kin = family(f) & family(o)
            if any(k.startswith("img:") for k in kin) or (
                any(re.fullmatch(r"v\d+", k) for k in kin) and shared - {o, f}
            ):
                return True
    return False


_BACK_ON = re.compile(
    r"(?:\bback (?:to|on)\s*(?:the\s+)?(?:old\s+)?(?:[A-Za-z][\w.-]*\s+)?"
    r"|(?:回滚|回退|退回|降回|切回|换回|回到)(?:到|至|成|为)?了?\s*(?:旧的?|之前的?|原来的?)?\s*"
    r"(?:[A-Za-z][\w.-]*\s*)?)`?v?(\d+(?:\.\d+)+)",
    re.I,
)
"""The version a rollback is back on ("back on the old Python 3.10.14", "Rolled back to
4.2.2", "回滚到 Python 3.10.14", "vite 已退回 `5.2.8`")."""


def back_on(text: str) -> frozenset[str]:
    """The versions a rollback in ``text`` is back on ("Rolled back to 4.2.2")."""
    return frozenset(m.group(1).casefold() for m in _BACK_ON.finditer(text))


def stem_of(path: str) -> str:
    """A path's last part without its extension ("app" of "config/app.yaml"); a URL's host
    ("localhost" of "http://localhost:8088/api")."""
    url = _URL.match(path)
    if url:
        return url.group(1)
    last = path.rstrip("/").rsplit("/", 1)[-1]
    return last.split(".", 1)[0] if not last.startswith(".") else last
