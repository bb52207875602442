"""The stop words: words (and Chinese function characters) that say nothing about a subject,
one list per purpose, each named for what it is for.

They differ on purpose (``tests/test_stopwords.py`` shows how): search drops the words of a
question ("how", "should", 怎么) but keeps the verbs of coding talk a prompt is about; extraction
drops those verbs too ("fix", "add", "run"), since they never make a keyword or a topic; the
statement list also drops the verbs that only link a subject to its value ("uses", "runs",
"lives"), so that two statements meet on what they are about.
"""

from __future__ import annotations

from memd.text.chinese import RANGES
from memd.text.stems import statement_stem


def _listed(words: str) -> frozenset[str]:
    return frozenset(words.split())


# ---- search (memd.text.terms: a prompt's and a memory's terms)

SEARCH = _listed(
    """
a about above after again against all am an and any are as at be because been before being
below between both but by can could did do does doing done down during each few for from
further had has have having he her here hers herself him himself his how i if in into is it its
itself just me more most my myself no nor not now of off on once only or other our ours
ourselves out over own same she should so some such than that the their theirs them themselves
then there these they this those through to too under until up very was we were what when where
which while who whom why will with would you your yours yourself yourselves
let lets let's i'm i've i'll we'll we're we've you're it's that's there's what's how's don't
doesn't didn't isn't aren't can't won't shouldn't
also always never ever still yet already really very much many thing things something anything
please thanks thank ok okay yes yeah hi hello hey sure right well
tell know remember think want need like get got make made use used using uses rely relies relying
again us one two way ways time times
"""
)
"""English words a search term never is: a question's words and the verbs of asking."""
SEARCH_CJK_WORDS = [
    "怎么样",
    "怎么",
    "怎样",
    "什么",
    "哪个",
    "哪些",
    "哪家",
    "哪位",
    "哪种",
    "哪台",
    "哪里",
    "哪儿",
    "如何",
    "是否",
    "应该",
    "可以",
    "需要",
    "已经",
    "现在",
    "之前",
    "之后",
    "以前",
    "以后",
    "时候",
    "多少",
    "几个",
    "几次",
    "还是",
    "或者",
    "以及",
    "并且",
    "而且",
    "但是",
    "因为",
    "所以",
    "如果",
    "然后",
    "关于",
    "一直",
    "总是",
    "所有",
    "每个",
    "其他",
    "自己",
    "告诉",
    "知道",
    "记得",
    "使用",
    "一律",
    "原来",
    "后来",
    "例如",
    "比如",
    "所在",
    "由于",
    "那么",
    "这样",
    "那样",
    "这种",
    "那种",
    "这类",
    "那类",
    "干嘛",
    "为啥",
    "一些",
    "东西",
    "多久",
    "多长",
    "多大",
    "之间",
    "以内",
    "希望",
    "日常",
    "平时",
    "平常",
    "目前",
    "当前",
    "如今",
    "通常",
    "一般",
]
"""Chinese function words, the counterparts of English stop words ("how", "should", "where")."""
SEARCH_CJK_CHARS = (
    "的了是在我你他她它们这那和与就都也还要把被给对从到个上下中为吗呢吧啊有没不会能很再先让看请帮"
    "一下用里只做按由已啥咋弄搞呀哦嘛啦"
)
"""Characters that are function words on their own ("用" use, "里" in, "只" only; the
colloquial "啥" what, "咋" how, "弄"/"搞" do)."""

# ---- extraction (keywords, topics, what a sentence is about, LLM grounding)

EXTRACTION = _listed(
    """
    the and for are but not you all any can had her was one our out get has him his how its may
    new now old see two way who did yes let put say she too use that with this from they will
    would there their what about which when make like time just know take into year your good
    some could them than then look only come over also back after work first well even want
    because these give most should here where been were have more other such very much does done
    doing being same still need needs needed each many those while why able again both down few
    off once own don didn doesn isn aren wasn weren won hasn haven might must shall into onto
    using used uses okay thanks thank please sure yeah right think thing things really going
    gonna maybe something anything everything nothing file files code line lines run runs now
    let's i'll we'll it's that's there's here's you're i'm i've we're don't can't won't
    switch switched prefer todo later add added fix fixed caused lives decided decide instead
    always never
"""
)
"""English words never a keyword, a topic or a word a statement is grounded on: the search list
without most question words, with the verbs of coding talk and of deciding."""
MEMORY_KEY = _listed(
    "a an to of in on at is be it we i by as or so remember reminder note noted said mentioned "
    "again earlier already told tell say"
)
"""Words left out of a memory's dedupe key on top of :data:`EXTRACTION` (the verbs of being
asked to remember)."""
KEYWORD_CJK_CHARS = (
    "的了是在我你他她它们这那和与就都也还要把被给对从到个上下中为吗呢吧啊一有没不会能很再先让看下"
)
"""Chinese characters at which a keyword candidate is cut."""
SMALL_TALK = _listed(
    "you your yours i me my we us our it its this that so very really too just what how "
    "are been doing going today again all"
)
"""Words of chit-chat: a sentence left with fewer than two other words is small talk."""
FORGET_REQUEST = frozenset(
    {"a", "an", "the", "my", "our", "your", "that", "this", "those", "these", "about", "of"}
    | {"for", "to", "in", "on", "at", "is", "was", "i", "me", "and", "or", "old", "new"}
)
"""Words of a forget request ("forget my old address") that do not name what to forget."""

# ---- statements (duplicates, conflicts, which claim is current)

ARTICLES = frozenset({"a", "an", "the"})
"""Dropped when statements are normalised ("the billing database" = "billing database")."""
STATEMENT = _listed(
    """
    a an the to for of and or in on at by with from into onto as via per than then so through
    is are was were be been being am it its this that these those there here
    we our us you your they their he she his her i me my
    use uses used using do does did done doing go goes going gone get gets got make makes made
    have has had having should must need needs needed require requires required can could will
    would shall may might let please also too just only all every each any some
    run runs ran running keep kept keeps live lives living now currently anymore
    always instead rather well way thing things which what who when where how
    not no never without avoid don doesn didn isn aren won can't cannot
    happen happens handled handle come comes stay stays stored store
    """
)
"""Words no two statements are about: also the verbs that link a subject to its value."""
STATEMENT_CJK = (
    r"我们|你们|他们|现在|统一|都|也|就|把|被|吧|呢|啊|了|着|的|是|在|使用|采用|通过|进行|一下|"
    rf"一遍|需要|要(?!求)|用(?![户例])|为|所有|之前|以前|上(?=$)|做(?=[{RANGES}])|作为|由|"
    rf"执行|运行|跑|走|放在|位于|一次|每隔|先|和|与|及|加|三个|两个|中|到(?=[{RANGES}])|"
    r"不要|不能|不用|不需要|不再|禁止|别|勿|没有|无需|避免|不|分钟|小时|秒|天|次|个|"
    r"设置|设为|调整|改为|改成|改用|换成|换用|提高到|降低到|发送|上报|推送"
)
"""A regular expression of the Chinese function words and linking verbs a statement is cut at."""
SUBJECT_CJK_CHARS = (
    "的了是在把被就都也还和与及我你他她们这那个些么吗呢吧啊要会能让给用过来去上下里中"
)
"""Chinese characters left out of a claim's subject bigrams."""
SUBJECT_GENERIC = frozenset(
    statement_stem(w)
    for w in _listed(
        """
    add added fix fixed run ran make file files test tests pass passed check checked work works
    set update updated change changed new old now thing way time day one two also still back
    said say tell know think want like look sure thank thanks please ok okay yes good great
    done let us heads noted understood right got will would
    """
    )
)
"""Stems too common in coding talk to say two sentences are about the same subject."""
MEASURES = frozenset({"qps", "tps", "rps", "p50", "p95", "p99", "cpu", "ram", "sla", "slo", "oom"})
"""What is measured, never a value of it ("QPS 太高" and "加了 Caffeine" name no two caches)."""

# ---- TODOs (what a later memory must share with a TODO to close it)

TODO_MATCH = frozenset(
    {
        *("a", "an", "the", "to", "of", "for", "and", "or", "in", "on", "with", "is", "are"),
        *("be", "we", "it", "this", "that", "use", "uses", "using", "user", "assistant"),
        *("todo", "need", "needs", "should", "must", "will", "later"),
        *("add", "added", "adding", "fix", "fixed", "fixing", "done"),
        *("finish", "finished", "finishing", "complete", "completed"),
        *("implement", "implemented", "resolve", "resolved"),
    }
)
"""Words a TODO and the memory that closes it share without being about the same work."""
DONE_GENERIC = _listed(
    "here's here what which implementation successfully functionally fully following below "
    "i we you it that this all everything changes change work tasks task items stuff done "
    "finished complete completed now just finally already have has been is are was were the a "
    "an and of to with my our"
)
"""Words of a completion report that name no piece of work ("all changes are done")."""

# ---- reply headings

HEADING_GENERIC = _listed(
    """
    summary overview changes change made key what changed files modified updated results result
    findings next steps notes details implementation conclusion conclusions recommendation
    recommendations status context background problem solution analysis approach plan testing
    tests verification sources references example examples the of and a
    """
)
"""A reply's heading made only of these words is structure ("## Summary of changes"), not
content; any other heading names what its lines are about ("### 5. opentelemetry_phoenix")."""

# ---- the zh<->en dictionary

GLOSS_GENERIC = frozenset(
    ["time", "times", "way", "ways", "thing", "things", "one", "a", "an", "the"]
)
"""English words a dictionary sense is not reduced to ("a way" of 方式 keeps its other words)."""
