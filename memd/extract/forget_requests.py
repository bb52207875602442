"""Requests in conversation to forget something ("please forget my SSN", "forget that",
"把我的手机号忘了", "别记这个"): found in a segment's user turns, resolved to what they name, and
taken out of what extraction reads.

A request names a *subject* (a known one: address, national id, password, phone, email,
birthday, card; or the words after "my"), or is *bare* ("forget that", "别记这个"): then it
means the user's statement just before it in the session. :mod:`memd.store.forget_said`
archives the memories that carry it. Precision first: "forget about the retry logic for now",
"I forgot to add tests", "don't forget to run the migrations", "别忘了跑迁移" are not requests.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from memd.models import Segment, Turn
from memd.text import stopwords
from memd.text.chinese import has_chinese

SUBJECTS: dict[str, tuple[str, str]] = {
    "email": (r"\be-?mail(?: address)?\b", r"邮箱|邮件地址"),
    "address": (
        r"\b(?:home |street |mailing |postal |shipping |billing )?(?<!mail )address(?:es)?\b"
        r"|\bwhere i live\b|\blive (?:at|on)\b|\bzip ?code\b|\bpostcode\b",
        r"(?<!邮件)地址|住址|住在|家在|住哪",
    ),
    "national_id": (
        r"\bssns?\b|\bsocial security\b|\bnational (?:id|insurance)\b|\bid number\b"
        r"|\bpassport\b|\btax id\b",
        r"身份证|社保|护照",
    ),
    "password": (r"\bpass(?:word|phrase|code)s?\b|\bpins?\b", r"密码|口令"),
    "phone": (
        r"\b(?:phone|mobile|cell|telephone)(?: ?numbers?)?\b|\bnumber to call\b",
        r"手机号?|电话|号码",
    ),
    "birthday": (r"\bbirthday\b|\bdate of birth\b|\bdob\b", r"生日|出生日期"),
    "card": (
        r"\b(?:credit|debit|bank) card\b|\bcard number\b|\bbank account\b|\biban\b",
        r"银行卡|信用卡|卡号|银行账号",
    ),
}
"""Subject -> (English pattern, Chinese pattern): the words that name it, in a request and in
the memories that carry it."""
SUBJECT_RES = {name: re.compile(f"{en}|{zh}", re.IGNORECASE) for name, (en, zh) in SUBJECTS.items()}


@dataclass(frozen=True)
class ForgetRequest:
    """One request: the sentence, the turn it was said in, and what it names."""

    sentence: str
    uuid: str = ""
    timestamp: str = ""
    subject: str = ""
    """A key of :data:`SUBJECTS`, or "" (then ``words`` or ``bare``)."""
    words: tuple[str, ...] = ()
    """An unknown subject's words ("my dog's name" -> dog, name)."""
    bare: bool = False
    said: str = ""
    """For a bare request: the text of the user's statement(s) just before it."""
    said_uuids: tuple[str, ...] = ()


# --- English -------------------------------------------------------------------------------
_LEAD = (
    r"^(?:(?:actually|ok(?:ay)?|oh|also|and|so|hey|wait|hmm|sorry|one more thing|on second"
    r" thought|thanks|thank you|never ?mind|scratch that|no)[,!.]?\s+)*"
    r"(?:(?:please|pls|kindly|just)\s+|(?:can|could|would|will) you(?: please)?\s+"
    r"|i(?:'d| would) like you to\s+|i (?:want|need) you to\s+|you should\s+|go ahead and\s+)*"
)
_EN_VERB = re.compile(
    _LEAD + r"(?P<verb>forget|don'?t remember|do not remember|stop remembering"
    r"|(?:don'?t|do not) (?:store|save|keep|record|memori[sz]e)"
    r"|(?:erase|delete|remove|wipe|scrub|drop))\s+(?P<obj>.+)$",
    re.IGNORECASE,
)
_EN_PLEASE_FORGET = re.compile(r"\bplease\s+(?:just\s+)?forget\s+(?P<obj>.+)$", re.IGNORECASE)
_FROM_MEMORY = re.compile(
    r"\s+(?:from|out of) (?:your |the |my )?(?:memory|memories|memd|notes|records)\b",
    re.IGNORECASE,
)
_TAIL = re.compile(
    r"(?:[\s,]+(?:please|immediately|right away|right now|now|for good|too|as well|entirely"
    r"|completely|thanks|thank you|ok\??|okay\??))+\W*$|[\s.!?,;:]+$",
    re.IGNORECASE,
)
_SET_ASIDE = re.compile(
    r"\b(?:for now|for the moment|for a (?:moment|minute|bit|second|while)|focus|instead"
    r"|let'?s|and (?:just )?(?:do|focus|work|use|go|try|move|look))\b",
    re.IGNORECASE,
)
_BARE = re.compile(
    r"^(?:that|this|it all|all (?:of )?that|that last (?:bit|part|one|thing|message)"
    r"|the last (?:bit|part|one|thing|message)|what i (?:just )?(?:said|told you|wrote|typed"
    r"|shared|mentioned)|everything i (?:just )?(?:said|told you)"
    r"|(?:that|this|the) (?:thing|info|information|detail|details|fact|number|one)"
    r"(?: i (?:just )?(?:said|told you|gave you|mentioned|shared))?"
    r"|(?:that|this|it),? i (?:just )?(?:said|told you|shared|mentioned)(?: (?:it|that))?)$",
    re.IGNORECASE,
)
_SAID_ABOUT = re.compile(
    r"^(?:(?:that|what) )?i (?:just |ever )?(?:told you|said|mentioned|gave you|shared)"
    r"(?: (?:about|of))? (?=(?:my|our|the|that|this) )",
    re.IGNORECASE,
)
_DET = re.compile(
    r"^(?:(?:about|everything about|all about)\s+)?(?P<det>my|our|that|this|those|these|the|your)\s+(?P<rest>.+)$",
    re.IGNORECASE,
)
_RELATIVE = re.compile(
    r"\s+(?:that |which )?i (?:just )?(?:said|told you|gave you|mentioned|shared|typed).*$",
    re.IGNORECASE,
)
_WHERE = re.compile(
    r"\b(?:in|to|into|on|inside|as)\s+(?:plain ?text|clear ?text|the\b|a\b|disk|logs?\b|db\b"
    r"|database|repo|git|config|code|env|cookies?|local ?storage|cache)",
    re.IGNORECASE,
)
"""Where a thing is kept: "don't store my password in plain text" is a rule about code."""


def _subject_of(words: str) -> str:
    return next((name for name, rx in SUBJECT_RES.items() if rx.search(words)), "")


def _english(sentence: str) -> tuple[str, tuple[str, ...], bool] | None:
    """(subject, words, bare) of an English request, or None."""
    m = _EN_VERB.match(sentence) or _EN_PLEASE_FORGET.search(sentence)
    if m is None:
        return None
    verb = (m.groupdict().get("verb") or "forget").lower()
    obj = m.group("obj").strip()
    if verb in ("erase", "delete", "remove", "wipe", "scrub", "drop"):
        cut = _FROM_MEMORY.search(obj)
        if cut is None:
            return None  # "delete the old migration": not about memory
        obj = obj[: cut.start()] + obj[cut.end() :]
    else:
        obj = _FROM_MEMORY.sub("", obj)
    obj = _TAIL.sub("", obj).strip()
    obj = _SAID_ABOUT.sub("", obj)  # "forget (what) I told you (about) my address"
    low = obj.lower()
    if verb != "forget" and low in ("it", "them"):
        return "", (), True  # "don't remember it"
    if not low or low.startswith(("to ", "it", "everything i", "the rest", "about it")):
        return None  # "forget to …", "forget it" (never mind)
    if _SET_ASIDE.search(low):
        return None  # "forget about the retry logic for now, focus on the parser"
    obj = _TAIL.sub("", re.split(r"\s*[,;:]\s+|\s+[-–—]+\s+", obj)[0]).strip()
    low = obj.lower()
    if _BARE.match(low):
        return "", (), True
    det = _DET.match(obj)
    if det is None:
        return None
    which = det.group("det").lower()
    rest = _RELATIVE.sub("", det.group("rest")).strip()
    subject = _subject_of(rest)
    if verb not in ("forget", "erase", "delete", "remove", "wipe", "scrub", "drop"):
        # "don't store my SSN" asks; "don't store the password in plain text" is a rule.
        if not subject or which not in ("my", "our", "that", "this") or _WHERE.search(rest):
            return None
    if subject:
        return subject, (), False
    if which in ("my", "our"):
        found = (w.removesuffix("'s") for w in re.findall(r"[a-z0-9']+", rest.lower()))
        words = tuple(w for w in found if w.strip("'") and w not in stopwords.FORGET_REQUEST)
        return ("", words[:4], False) if words else None
    if _RELATIVE.search(det.group("rest")) and which in ("that", "this", "the"):
        return "", (), True  # "that thing I told you"
    return None


# --- Chinese -------------------------------------------------------------------------------
_ZH_BA = re.compile(
    r"(?:^|[，,。！!？?\s]|请|麻烦|帮我|你)[把将](?P<obj>[^，,。！!？?]{1,30}?)(?:给)?(?:忘掉|忘了|忘记)"
)
_ZH_FORGET_AWAY = re.compile(r"(?:^|[，,。！!？?]|请|麻烦|你)忘掉(?P<obj>[^，,。！!？?]{0,30})")
_ZH_FORGET = re.compile(r"(?:^|[，,。！!？?]|请|麻烦|你)(?:忘记|忘了)(?P<obj>[^，,。！!？?]{0,30})")
_ZH_DONT = re.compile(
    r"(?:^|[，,。！!？?]|请|你)(?:别|不要|不用|无需|不必)(?:再)?(?:记住|记下|记|保存|存)(?!录|错|得|性)(?P<obj>[^，,。！!？?]{0,20})"
)
_ZH_MEMORY_OF = re.compile(
    r"(?:删掉|删除|删了|去掉|抹掉)(?:关于)?(?P<obj>[^，,。！!？?]{0,30}?)的?记忆"
    r"|[把将](?P<obj2>[^，,。！!？?]{0,30}?)的?记忆(?:给)?(?:删掉|删除|删了|去掉|抹掉)"
)
_ZH_FROM_MEMORY = re.compile(
    r"从(?:你的)?记忆(?:里|中)?(?:删掉|删除|去掉|抹掉)(?P<obj>[^，,。！!？?]{0,30})"
)
_ZH_BARE = re.compile(
    r"^(?:吧|了|掉)?(?:这个|那个|这些|那些|它|这句话?|那句话?|刚才(?:说)?的|刚刚(?:说)?的|上面的|我刚才说的|我刚说的)?(?:吧|了|掉)?[。！!]?$"
)
_ZH_PERSONAL = re.compile(r"我的|刚才|刚刚|之前|上面|那个|这个|那条|这条")


def _chinese(sentence: str) -> tuple[str, tuple[str, ...], bool] | None:
    s = sentence.replace(" ", "")
    patterns = (
        (_ZH_BA, False),
        (_ZH_FROM_MEMORY, False),
        (_ZH_MEMORY_OF, False),
        (_ZH_FORGET_AWAY, False),
        (_ZH_DONT, True),
        (_ZH_FORGET, True),
    )
    for rx, strict in patterns:
        m = rx.search(s)
        if m is None:
            continue
        obj = m.group("obj") or m.groupdict().get("obj2") or ""
        if rx is _ZH_BA and s[: m.start()].endswith(("我", "我们", "他", "她")):
            continue  # "我把测试忘了": I forgot the tests
        if strict and not (_ZH_PERSONAL.search(obj) or _ZH_BARE.match(obj)):
            continue  # "忘了加测试", "忘记密码的页面", "不用记录日志"
        subject = _subject_of(obj)
        if subject:
            return subject, (), False
        if _ZH_BARE.match(obj) or _ZH_PERSONAL.search(obj):
            return "", (), True
    return None


_MAY_ASK = re.compile(
    r"忘|记|删|存|forget|remember|store|save|keep|record|memor|erase|delete|remove|wipe|scrub|drop",
    re.IGNORECASE,
)
"""A cheap first look: a sentence without any of these asks nothing to be forgotten."""
_SPLIT = re.compile(r"(?<=[.!?;])\s+|(?<=[。！？；])|\n+")


def request_sentences(text: str) -> list[tuple[str, str, tuple[str, ...], bool]]:
    """(sentence, subject, words, bare) of every forget request in ``text``."""
    out = []
    for raw in _SPLIT.split(text):
        sentence = raw.strip()
        if not sentence or len(sentence) > 300 or not _MAY_ASK.search(sentence):
            continue
        found = _english(sentence) if re.search(r"[A-Za-z]", sentence) else None
        if found is None and has_chinese(sentence):
            found = _chinese(sentence)
        if found is not None:
            out.append((sentence, *found))
    return out


def is_forget_request(text: str) -> bool:
    return bool(_MAY_ASK.search(text)) and bool(request_sentences(text))


def named_in(text: str) -> list[ForgetRequest]:
    """The requests of one prompt that name what to forget (a bare "forget that" needs the
    session's turns: :func:`requests_in`)."""
    return [
        ForgetRequest(sentence, subject=subject, words=words)
        for sentence, subject, words, bare in request_sentences(text)
        if not bare
    ]


def _said_by_user(turn: Turn) -> bool:
    return turn.role == "user" and not turn.is_sidechain and not turn.is_compact_summary


def requests_in(segment: Segment) -> list[ForgetRequest]:
    """The forget requests of the segment's user turns; a bare one carries the user's
    statement just before it (the previous user turn of the segment that is not a request)."""
    out: list[ForgetRequest] = []
    previous: Turn | None = None
    for turn in segment.turns:
        if not _said_by_user(turn) or not turn.text.strip():
            continue
        found = request_sentences(turn.text)
        rest = _without(turn.text, [f[0] for f in found]).strip() if found else turn.text
        for sentence, subject, words, bare in found:
            said = ""
            uuids: tuple[str, ...] = ()
            if bare:
                if rest and len(rest) > 8:  # "My PIN is 4411. Actually, forget that."
                    said, uuids = rest, (turn.uuid,)
                elif previous is not None:
                    said, uuids = previous.text, (previous.uuid,)
                if not said:
                    continue
            out.append(
                ForgetRequest(
                    sentence, turn.uuid, turn.timestamp, subject, words, bare, said, uuids
                )
            )
        if not found or rest:
            previous = turn
    return out


def _without(text: str, sentences: list[str]) -> str:
    for sentence in sentences:
        text = text.replace(sentence, "")
    return text


def without_requests(segment: Segment, requests: list[ForgetRequest]) -> Segment:
    """The segment with the requests' sentences taken out of the user's turns (the request
    itself is not stored), and Claude's reply to a turn that was only a request left empty."""
    by_turn: dict[str, list[str]] = {}
    for r in requests:
        by_turn.setdefault(r.uuid, []).append(r.sentence)
    turns: list[Turn] = []
    answer_cleared = False
    for turn in segment.turns:
        if turn.uuid in by_turn:
            text = _without(turn.text, by_turn[turn.uuid]).strip()
            answer_cleared = not re.search(r"\w", text)
            turns.append(replace(turn, text=text))
        elif answer_cleared and turn.role == "assistant" and not turn.tools:
            turns.append(replace(turn, text=""))
        else:
            if _said_by_user(turn) and turn.text.strip():
                answer_cleared = False
            turns.append(turn)
    return replace(segment, turns=turns)
