"""How a value is written in a sentence ("02:30", "eu-central-1", "Source Sans 3", "钉钉"), and
the Chinese verbs that name the value a change goes to: the words :mod:`memd.store.cues` and
:mod:`memd.store.diffs` read values with."""

from __future__ import annotations

from memd.text.chinese import RANGES

CJK = RANGES
"""The ranges of Chinese characters."""


def listed(words: str) -> frozenset[str]:
    return frozenset(words.split())


V = r"(?:--?|[#@])?[\w][\w.+/:#@-]*[\w+#]|[#@]?\w"
"""A value as written: a name, a number, a version, a path, a host, a #channel."""
LATIN_V = r"(?:--?|[#@])?[A-Za-z0-9][\w.+/:#@-]*[A-Za-z0-9_+#]|[#@]?[A-Za-z0-9]"
"""A value written in Latin letters and digits ("Elasticsearch" of "Elasticsearch 集群已下线")."""
PART_NOUN = (
    r"(?:integrations?|gems?|packages?|librar(?:y|ies)|sdks?|SDKs?|clients?|plugins?|modules?"
    r"|dependenc(?:y|ies)|crates?|bindings?|support|setup|config|(?:host)?names?|hosts?|domains?)\b"
)
"""What a name is the name of ("the Stripe integration", "the sentry gems"): not the value."""
ZH_TO = "迁到|迁移到|改成|改为|换成|换到|切到|切换到|调成|调到|降到|提到|升到|升级到|搬到|定成|定为"
"""Chinese verbs that name the value a change goes to ("从 2 小时改成 30 分钟", "换成 Caffeine")."""
