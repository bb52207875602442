"""Sentence rules of the heuristic extractor: cleaning, splitting, and what a sentence states.

Each rule is a marker in English or Chinese ("we decided", "决定", "TODO", "还没", "root cause",
"原因是", ...). Questions, hedged statements ("might", "可能") and an assistant narrating its
own actions ("Let me ...", "已经 ...") state nothing. Precision comes first: typed memories are
injected into future sessions.
"""

from __future__ import annotations

import re

from memd import kinds
from memd.extract import vocabulary as vocab
from memd.extract.vocabulary import tech_in_text
from memd.text import stopwords
from memd.text.chinese import CJK_CHAR

SENTENCE_MAX = 400

# --- text cleaning ------------------------------------------------------------------------
_NOISE_BLOCKS = re.compile(
    r"<(system-reminder|task-notification|local-command-stdout|local-command-stderr|"
    r"bash-stdout|bash-stderr|command-message|command-args|command-name|bash-input|"
    r"memd-context|user-prompt-submit-hook)>.*?(?:</\1>|\Z)",
    re.DOTALL,
)
_CODE_FENCE = re.compile(r"```.*?(?:```|\Z)", re.DOTALL)
_INTERRUPTED = re.compile(r"\[Request interrupted by user[^\]]*\]")
_CJK = CJK_CHAR
_SENT_SPLIT = re.compile(r"(?<=[.!?])\s+|(?<=[。！？；])|\n+")
_BULLET = re.compile(r"^\s*(?:[-*•>]+|\d+[.)]|#+)(?:\s+|$)")  # not "1.9.0", "--force"
_FILLER = re.compile(
    r"^(?:ok(?:ay)?|so|well|alright|right|yes|yeah|great|sure|hmm|好的|好|嗯|那么|那|行)[,，.。!！\s]+",
    re.IGNORECASE,
)
_TRIVIAL = {
    "ok", "okay", "k", "thanks", "thank you", "thx", "yes", "no", "y", "n", "continue", "go on",
    "go ahead", "sounds good", "lgtm", "perfect", "great", "nice", "cool", "done", "proceed",
    "继续", "好的", "好", "谢谢", "可以", "行", "嗯", "没问题", "对", "是的", "继续吧", "好的谢谢",
}  # fmt: skip


def clean_text(text: str) -> str:
    """Turn text without transcript noise (system reminders, command wrappers, interrupts)."""
    if "<" in text:
        text = _NOISE_BLOCKS.sub(" ", text)
    if "[Request interrupted" in text:
        text = _INTERRUPTED.sub(" ", text)
    return text.strip()


def is_substantive(text: str) -> bool:
    norm = re.sub(r"[\W_]+", " ", text.lower()).strip()
    if not norm or norm in _TRIVIAL:
        return False
    cjk = len(_CJK.findall(text))
    return cjk >= 4 or len(norm.replace(" ", "")) >= 10


def sentences(text: str) -> list[str]:
    """Prose sentences of a turn: code blocks dropped, bullets and fillers stripped."""
    if "```" in text:
        text = _CODE_FENCE.sub("\n", text)
    out = []
    for raw in _SENT_SPLIT.split(text):
        s = _BULLET.sub("", raw).replace("**", "").replace("__", "").strip()
        s = _FILLER.sub("", s).strip()
        if not s or len(s) > SENTENCE_MAX:
            continue
        cjk = len(_CJK.findall(s))
        if cjk < 3 and len(s) < 12:
            continue
        if looks_like_code(s):
            continue
        out.append(s)
    return out


_NON_LETTER = re.compile(r"[\W\d_]+")


def looks_like_code(s: str) -> bool:
    if s.startswith(("$ ", "def ", "class ", "import ", "from ", "return ", "{", "}", "//", "|")):
        return True
    letters = len(_NON_LETTER.sub("", s))
    return letters < 0.45 * len(s) or bool(re.search(r"[{};]\s*$|=>|\)\s*\{", s))


# --- typed sentence rules -----------------------------------------------------------------
def _rx(*parts: str, flags: int = re.IGNORECASE) -> re.Pattern[str]:
    return re.compile("|".join(parts), flags)


_HEDGE = _rx(
    r"\b(?:might|maybe|perhaps|probably|possibly|likely|could be|i think|i guess|not sure|"
    r"seems?|suspect|wonder|hypothes\w+|whether|appears? to|apparently)\b",
    r"\b(?:it|that|this|you|she|he|they)(?:'s)? must(?:'ve| have)? be(?:en)? (?:so |really |very "
    r"|pretty |quite )?(?:\w+ing|nice|hard|tough|great|awesome|fun|amazing|cool|exciting|scary"
    r"|lovely|wonderful|rough|incredible|a (?:great|big|huge|tough|hard|lot))\b",
    r"可能|也许|大概|似乎|好像|是不是|要不要|是否|吗$",
)
_QUESTION_START = re.compile(
    r"^(?:should|shall|can|could|would|do|does|did|is|are|what|why|how|which|where|when)\b",
    re.IGNORECASE,
)
_NARRATION = re.compile(
    r"^(?:let me|now let me|now i(?:'ll| will)?|i'll now|i will now|first,? i|next,? i|continuing|"
    r"i(?:'m| am) going to (?:run|check|look|read|open|search)|let's (?:run|check|look|see|read))\b",
    re.IGNORECASE,
)
_ZH_NARRATION = re.compile(r"^(?:已|已经|我已|我把|我用|我先|我来|我会|我这边|好的|明白|收到|可以)")
DECISION = _rx(
    r"\bwe(?:'ll| will|'re going to| are going to| should| now)? (?:use|go with|adopt|switch to"
    r"|stick with|move to|migrate to|keep using)\b",
    r"\bdecided (?:to|on|that|against)\b|\b(?:we|i) decide (?:to|on|that|against)\b",
    r"\b(?:the )?decision(?: is| was|:)",
    r"\b(?:chose|chosen|opted for|settled on|went with|(?<!keep )(?<!keeps )going with)\b",
    r"\bswitch(?:ed|ing)? (?:\S+ ){0,3}?(?:from \S+(?: \S+)? )?to\b",
    r"\bmigrat(?:e|ed|ing) (?:\S+ ){0,2}?from \S+(?: \S+)? to\b",
    r"\b(?:use|using) \S+(?: \S+)? (?:instead of|rather than|over) \S+",
    r"决定|采用|改成|改为|改用|定为|选用|选择了|换成|就用|最终用",
)
_UNDECIDED = _rx(
    r"\b(?:never|not|haven't|hasn't|didn't|don't|can't|won't|undecided|if|unless|someday)\b"
    r"[^.,]{0,20}"
    r"\b(?:decid|chose|choose|chosen|going with)",
    r"还没(?:有)?决定|没决定|不确定",
)
"""A choice not made ("I never decided to try it"): states nothing."""
_DECISION_USER_ONLY = _rx(r"\blet'?s (use|go with|switch to|stick with|adopt|move to|keep)\b")
_DECISION_EXPLICIT = _rx(
    r"\b(?:decided|decision(?: is| was|:)|chose|chosen|opted for|settled on"
    r"|(?<!keep )(?<!keeps )going with"
    r"|we(?:'ll| will) use)\b",
    r"决定|定为|选用|采用|选择了",
)
"""What an assistant must say, whole, for a decision (it narrates "switched to X" every edit)."""
_SAYS_ALONE = _rx(r"^(?!(?:now|next|then|that'?s|this is|it'?s)\b).{40,}").search  # "Now the…"
PREFERENCE = _rx(
    r"\bI (?:really |strongly )?(?:prefer|like to|want you to|don't want|do not want|hate|dislike"
    r"|always|never)\b",
    r"^(?:(?:to be clear|also|and|but|oh|ok(?:ay)?|so|btw|actually|just|note|and also)[:,]?\s+)?"
    r"(?:please )?(?:always|never|don't|do not|avoid|make sure to|remember to|stop)\b",
    r"\b(?:always|never) (?:use|run|write|add|put|commit|push|call|import|keep|prefer|include"
    r"|mock|edit|create|format|touch|delete|leave)\b",
    r"\bmust (?:always |never |not )?(?:be|use|have|run|pass|include|stay|go|live)\b",
    r"\bplease (?:use|always|never|don't|do not|keep|write|prefer|avoid)\b",
    r"^(?:use|keep|write|put|name|prefer)\b.{3,200},? please[.!]?$|\bno more \w+|\b\w+, ever\b",
    r"\bI'd rather\b|\bprefer \S+ (?:over|to)\b",
    r"不要|别用|统一(?!一下|下)|必须|偏好|一律|总是|永远不要|务必|请用|请使用|习惯用|喜欢用|禁止",
)
_SCOPE = _rx(
    r"\b(?:everywhere|from now on|going forward|by default|in this (?:codebase|project|repo)"
    r"|across the (?:codebase|project|repo))\b",
    r"以后都|今后|从现在开始|所有的?(?:代码|项目|文件)",
)
"""A user instruction meant to last: a preference unless it is a decision."""
_CONVENTION = _rx(r"\b(?:our|the project'?s?|the) conventions? (?:is|are|:)|\bby convention\b")
_WORK_WORD_TEXT = """
    code codebase coding test tests testing spec specs commit commits committing pr prs branch
    branches merge rebase repo repository git file files folder folders directory directories
    module modules package packages deps dependency dependencies import imports function
    functions method methods variable variables constant constants typing typed annotation
    annotations naming comment comments docstring docstrings docs documentation readme changelog
    format formatting formatter lint linter linting indent indents indentation indenting tabs
    semicolon semicolons error errors exception exceptions log logs logging debug debugging
    debugger api apis endpoint endpoints schema schemas database db sql query queries migration
    migrations column columns index indexes cache config configuration settings env deploy
    deploys deployed deploying deployment deployments release releases released releasing build
    builds ci pipeline pipelines script scripts command commands cli shell terminal mock mocks
    mocking fixture fixtures component components hook hooks props css ui frontend backend server
    client request requests response responses async await thread threads queue queues worker
    workers diff diffs refactor refactors refactoring refactored framework tooling editor ide vim
    emacs prompt prompts output summary summaries markdown json yaml toml sudo docker dockerfile
    container containers reply replies orm route routes router routers export exports suite
    suites object objects timeout timeouts retry retries subagent subagents plugin plugins
"""
_WORK_WORDS = frozenset(_WORK_WORD_TEXT.split())
_WORD_RX = re.compile(r"[a-z]+")
_WORK = _rx(
    r"\b(?:pull requests?|code reviews?|type hints?|style guide|(?:code|coding|commit|naming"
    r"|writing) style|(?:two|four|2|4) spaces|(?:single|double) quotes|line length"
    r"|bullet points?|respond in|answer in|in (?:English|Chinese)|force[- ]push"
    r"|push(?:ed|es|ing)? (?!(?:my|your|him|her|them|our)sel)(?:\w+ ){0,2}(?:to|directly))\b",
    r"[\w.-]+/[\w.-]+|`[^`]+`|\b\w+_\w+\b|\b\w+\.(?:py|ts|tsx|js|go|rs|md|json|toml|ya?ml)\b"
    r"|(?-i:\b[a-z]+[A-Z]\w*\b)",
    r"代码|测试|提交|分支|合并|仓库|文件|目录|路径|模块|依赖|导入|函数|方法|变量|常量|类型|命名"
    r"|注释|文档|格式|风格|样式|缩进|报错|错误|异常|日志|接口|数据库|查询|迁移|字段|索引|缓存"
    r"|配置|环境|部署|发布|构建|打包|脚本|命令|组件|页面|前端|后端|服务|请求|响应|异步|版本|写法"
    r"|框架|工具|弹窗|提示|输出|回答|中文|英文|注解|校验|单测|用例|重构|接入|队列|超时|重试|并发"
    r"|分页|权限|登录|鉴权|参数|返回值",
)
"""Words of work (code, tools, style, process): a preference must be about one of them.

A remark in conversation ("I always cry at weddings", "don't forget to call your mom")
states no way of working, so it is never filed as a preference."""
_PERSONAL = _rx(
    r"^(?:[A-Z][\w.'-]*: )?I (?:always|never|usually|often|really |absolutely )?"
    r"(?:love|like|enjoy|hate|dislike|prefer|always|never|usually)\b",
)
"""A first-person habit or taste without work words: a fact about the speaker (LoCoMo-like)."""
_DEICTIC = _rx(r"\b(?:this|that|these|those|it|you|your|them|they|him|her|he|she)\b")
"""Points at the conversation ("I like this approach"): not a fact about the speaker."""
DONE = _rx(
    r"\b(?:is|are|was|were|'s|'re|now|all|been|got|get) (?:\w+ )?(?:done|finished|complete"
    r"|completed|merged|shipped|released|closed)\b",
    r"\b(?:i|we|you)(?:'ve| have)? (?:just |finally |already )?(?:finished|completed"
    r"|wrapped up|shipped|released|merged|closed out)\b|^(?:finished|completed|shipped"
    r"|wrapped up)\b",
    r"已完成|已经完成|完成了|做完了|搞定了|已经搞定|弄好了|已上线|已发布",
)
"""A sentence that says something is done: progress, never a new TODO."""
NOT_DONE = _rx(
    r"\b(?:not|never|yet|still|todo|pending|almost|partially|half|remaining|left to|next|need"
    r"|needs|should|must|will|'ll|going to|until|unless|once|when|before|after|if)\b|n't",
    r"还没|尚未|未完成|没有?完成|还需要|还要|待办|没搞定|没做完|之后|以后|下次|等.{0,6}再|如果",
)
"""What makes a completion only partial, conditional or future."""
TODO_MARK = re.compile(
    r"\b(?:TODO|FIXME|XXX)\b(?!(?i:[- ](?:app|apps|list|lists|item|items|component|components"
    r"|page|model|models|type|types|application)\b)|s\b)"
)
"""A to-do marker ("TODO: add the CI job"), not a product's name ("the TODO app", "TODO App
Creation Complete")."""
TODO = _rx(
    r"\bstill (?:need|needs|have|has) to\b|\bstill (?:missing|pending|to do)\b"
    r"|(?<!\d, )(?<!\d )\bstill open\b",  # (not a numbered issue's: "issue #94732, still open")
    r"\b(?:next steps?|remaining work|left to do|to do next)\b"
    r"|\b(?:a|as a|needs? a|in a|separate) follow[- ]up\b(?! (?:push|batch|request|commit)\w*)",
    r"\bnot (?:yet )?(?:implemented|handled|supported|done|wired)(?: yet)?\b",
    r"待办|还没|下次|以后再|以后要|还需要|还要|待处理|后续|回头再|稍后",
)
_TODO_LATER = _rx(
    r"\b(?:need to|needs? \w+ing|should|will|'ll|must|have to)\b[^.]{0,80}\blater\b",
    r"\blater\b[^.]{0,40}\b(?:we|i)(?:'ll| will| should| need)\b",
)
"""Something for later: a TODO only when it is about work ("I'll catch up with you later" is not)."""
BUG_CAUSE = _rx(
    r"\bthe (?:bug|issue|problem|error|crash|failure|regression) (?:was|is|came from|comes from)\b",
    r"\b(?:was|were|is) caused by\b|\broot cause\b|\bthe culprit\b",
    r"\bfailing because\b|\bfailed because\b|\bbroke because\b",
    r"原因是|问题出在|根因|根本原因",
)
_CAUSE_LOOSE = _rx(
    r"\bturned out (?:to be|that)\b|\b(?:that's|that is|this is|which is) why\b"
    r"|\bwhich explains\b",
    r"是因为|导致",
)
"""Cause markers of everyday speech: a bug cause only in a sentence about work or a failure."""
_FAILURE = _rx(
    r"\b(?:bugs?|fail\w*|broke\w*|break\w*|crash\w*|flaky|hangs?|hung|timeouts?|slow|leaks?"
    r"|wrong|stale|race|regression|exceptions?|errors?)\b",
    r"失败|报错|崩溃|超时|卡住|泄漏|不对|异常|慢",
)
BUG_FIX = _rx(
    r"\bfix(?:ed)? (?:it |this |that |the \w+ )?by\b|\bfix:"
    r"|\bthe fix (?:is|was)\b(?! (?:complete|done|in place|ready|working|correct|applied|pushed"
    r"|committed|finished)\b)",
    r"\b(?:resolved|solved) (?:it |this |the \w+ )?by\b|\bfixed (?:the|a|an|it|this|that)\b",
    r"修复|修好|解决了|改好了",
)
BUG_FIX_EXPLAINED = _rx(
    r"\b(?:fix(?:ed)?|resolved|solved) (?:it |this |that |the \w+ )?by\b"
    r"|\bthe fix (?:is|was)\b(?! (?:complete|done|in place|ready|working|correct|applied|pushed"
    r"|committed|finished)\b)",
    r"\bfix:",
    r"(?:修复|解决)[^，。]{0,6}[:：]|通过.{2,40}(?:修复|解决)",
)
"""A fix statement that stands on its own as a memory (it says how)."""
_STRUCTURE = _rx(
    r"\b(?:lives?|is|are|located|defined|implemented|stored|kept|configured|goes|go|sits?)"
    r"\s+(?:in|under|at)\s+`?(?:[\w.-]+/)+[\w.-]*`?",
    r"(?:在|位于)\s*`?(?:[\w.-]+/)+[\w.-]*`?",
)
STACK_SAID = _rx(
    r"\b(?:we|project|repo|app|service|it|this)\b[^.]{0,40}\b(?:uses?|using|built with"
    r"|written in|based on|runs on)\b",
    r"\b(?:our|the) (?:stack|backend|frontend|database|test runner|formatter|linter) (?:is|uses)\b",
    r"用的是|使用|基于|我们用|项目用|技术栈",
)

IMPORTANCE = {k.name: k.importance for k in kinds.KINDS}
_STRONG = _rx(r"\b(?:always|never|must)\b", r"必须|一律|永远|务必|禁止")


def about_work(sentence: str) -> bool:
    """The sentence names code, tools, process or style (a work word, an identifier, a tool)."""
    if not _WORK_WORDS.isdisjoint(_WORD_RX.findall(sentence.lower())):
        return True
    return bool(_WORK.search(sentence)) or bool(tech_in_text(sentence))


def is_tentative(sentence: str) -> bool:
    """A question or a hedged statement: it states nothing."""
    s = sentence.rstrip()
    return s.endswith(("?", "？")) or bool(_QUESTION_START.match(s) or _HEDGE.search(s))


_SPEAKER = re.compile(r"^[A-Z][\w.'-]{0,30}:\s+")
_CHIT_CHAT = _rx(
    # phrases first: the leftmost alternative that matches wins ("sorry to hear" over "sorry")
    r"\b(?:how (?:are|have) you(?: been| doing)?|how's it going|how are things|what's up"
    r"|long time no see|sorry to hear(?: about)?(?: that| this)?|since we (?:last )?(?:chatted"
    r"|talked|spoke)|(?:nice|good|great|glad) to (?:meet|see|hear|talk to|chat with) you"
    r"|you too|me too|same here|no problem|no worries|of course|sounds (?:good|great)"
    r"|that's (?:so |really )?(?:great|awesome|amazing|cool|nice|sweet|wonderful|fantastic"
    r"|true|right|good)|i know|i see|for sure|good (?:morning|afternoon|evening|night|day)"
    r"|thank you|see (?:you|ya)(?: soon| later)?|take care"
    r"|hi|hey|hello|hiya|howdy|yo|thanks|thx|cheers|bye|goodbye|welcome|congrats"
    r"|congratulations|wow|whoa|oh|ooh|aww+|haha\w*|lol|omg|yay|cool|awesome|great|nice"
    r"|amazing|sweet|glad|sorry|wonderful|fantastic|lovely|totally|absolutely|exactly|yes|yeah"
    r"|yep|ok(?:ay)?|sure|hmm+)\b",
    r"你好|您好|嗨|最近(?:怎么样|好吗|如何)|谢谢|多谢|辛苦了|早上好|晚上好|再见|哈哈+|好的|收到"
    r"|明白|没问题|不客气",
)


def is_small_talk(sentence: str) -> bool:
    """Greetings, thanks and chit-chat ("Hey Mel! Good to see you!", "how are you", "谢谢"):
    what is left without them holds fewer than two words of substance."""
    rest = _CHIT_CHAT.sub(" ", _SPEAKER.sub("", sentence))
    if _CJK.search(rest):
        return len(_CJK.findall(rest)) < 4
    words = [
        w
        for w in re.findall(r"[a-z][a-z'-]{2,}", rest.lower())
        if w not in stopwords.SMALL_TALK and w not in vocab.STOPWORDS
    ]
    return len(words) < 2


_WRITING_NEXT = re.compile(r"^(?:now|next|then)\b,? (?:the|a)\b[^.]{0,40}\bsections?\.?$", re.I)
_ASKS = re.compile(  # a user's request: a cause it names is asked about, not a bug fixed
    r"^(?:please|pls|kindly|(?:can|could|would) you|make|write|give|list|explain|summari[sz]e"
    r"|show|tell|describe)\b|^(?:请|麻烦|帮我)",
    re.I,
)


def classify(sentence: str, role: str, work: bool | None = None) -> str | None:
    """The memory kind a sentence states, or None when it states none clearly.

    ``"fix"`` is a fix statement without a cause: the caller appends it to the cause stated
    just before (one bugfix memory with cause and fix), or keeps it alone when it says how.
    """
    s = sentence
    question = s.rstrip().endswith(("?", "？")) or bool(_QUESTION_START.match(s))
    if question or _HEDGE.search(s) or s.rstrip().endswith((":", "：")):
        return None  # a question, a guess, or the lead-in of a list ("Here's what changed:")
    narration = role == "assistant" and bool(_NARRATION.match(s) or _ZH_NARRATION.match(s))
    if role == "assistant" and _WRITING_NEXT.match(s):
        return None  # "Now the Next Steps section.": what it writes next, not a todo
    known = work

    def is_work() -> bool:  # computed once, and only when a rule needs it
        nonlocal known
        if not known:
            known = about_work(s)
        return known

    if (
        BUG_CAUSE.search(s) or (_CAUSE_LOOSE.search(s) and (_FAILURE.search(s) or is_work()))
    ) and not (role == "user" and _ASKS.match(s)):
        return "bugfix"  # ("Please make a simple list with the root cause": a request)
    if COMMIT_STYLE.search(s):  # "fix: for bug fixes, feat: for features" is a convention
        # ... said as a rule: "Using commit message: Create a hello script" is a log line
        ruled = _RULE_WORD.search(s) or ("fix:" in s and "feat:" in s)
        return "preference" if role == "user" and not narration and ruled else None
    if BUG_FIX.search(s):
        # "Let me fix it by ..." is an intention; "已修复：..." is a fix reported
        return None if role == "assistant" and _NARRATION.match(s) else "fix"
    if states_completion(s) or TODO_CLOSED.search(s):
        return "progress"
    if (TODO_MARK.search(s) and _says_what(TODO_MARK.sub(" ", s))) or (
        not narration
        and not (role == "assistant" and _OFFER_OR_DOING.search(s))
        and (TODO.search(s) or (_TODO_LATER.search(s) and is_work()))
    ):
        return "todo"
    if role == "user" and PREFERENCE.search(s) and is_work():
        return "preference"
    if _CONVENTION.search(s) and is_work():
        return "preference"
    if _UNDECIDED.search(s):
        return None
    if role == "user" and (
        DECISION.search(s)
        or ((m := _DECISION_USER_ONLY.search(s)) and (m[1] != "keep" or is_work()))
    ):
        return "decision"
    if role == "user" and _SCOPE.search(s) and is_work():
        return "preference"
    if len(s) >= 25 and _PERSONAL.search(s) and not _DEICTIC.search(s) and not is_work():
        return "fact"
    if role == "assistant" and not narration and _DECISION_EXPLICIT.search(s) and _SAYS_ALONE(s):
        return "decision"
    if not narration and _STRUCTURE.search(s):
        return "fact"
    return None


_OFFER_OR_DOING = _rx(
    r"\bif you (?:want|like|'d like|prefer|need)\b|\bwant me to\b|\bshall I\b|^\w+ing (?:as|now|this|that|it|them)\b",
    r"如果你(?:想|需要|愿意)|要我|需要我",
)
"""An agent's offer ("worth a follow-up if you want it") or what it is doing as it speaks
("Committing as a follow-up to the review"): not work left open."""
COMMIT_STYLE = _rx(
    r"\bcommit (?:message|messages|style|subject|subjects|format|convention|conventions)\b"
    r"|\bconventional commits?\b|\bgitmoji\b",
    r"提交信息|提交说明|提交规范|commit 规范",
)
"""A sentence about how commits are written: a preference, never a bug fix for its "fix:"."""
_RULE_WORD = _rx(
    r"\b(?:always|never|should|must|prefer|please|don'?t|do not|use|keep|want|like|we|our|my"
    r"|i|follow|write|start|end|no|only|max|maximum|imperative|lowercase|capitali[sz]e)\b",
    r"要|请|必须|不要|别|统一|用|应该|习惯|喜欢|我们|只",
)
"""A word that makes a sentence about commits a rule ("always", "use", "we")."""
TODO_CLOSED = _rx(
    r"\b(?:that|the|this|our|my|your)\s+(?:todo|to-do|task|item)s?\s+(?:is|are|was|were|'s"
    r"|has been|have been|can be)\s+(?:now\s+|already\s+|finally\s+)?(?:done|closed|finished"
    r"|complete|completed|resolved|checked off)\b"
    r"|\b(?:close|closes|closed|tick off|check off)\s+(?:that|the|this)\s+(?:todo|to-do)\b",
    r"(?:这个|那个|该)\s*(?:TODO|待办)\s*(?:已经|可以)?(?:完成|搞定|关掉|关闭|做完)",
)
"""A sentence that closes a TODO it points at ("so that TODO is done"): progress, never a TODO."""


def _says_what(rest: str) -> bool:
    """Whether what is left of a TODO sentence says what to do ("Noted as a TODO." does not)."""
    if _CJK.search(rest):
        return len(_CJK.findall(rest)) >= 3
    words = [
        w for w in re.findall(r"[a-z][a-z'-]{2,}", rest.lower()) if w not in stopwords.SMALL_TALK
    ]
    return len([w for w in words if w not in vocab.STOPWORDS and w != "noted"]) >= 2


def states_completion(sentence: str) -> bool:
    """The sentence says something specific is done, with no negation, condition or rest."""
    if not DONE.search(sentence) or NOT_DONE.search(sentence) or TODO_MARK.search(sentence):
        return False
    if _CJK.search(sentence):
        return len(_CJK.findall(sentence)) >= 6
    specific = [
        w
        for w in re.findall(r"[a-z0-9][\w.-]*", sentence.lower())
        if w not in stopwords.DONE_GENERIC
    ]
    return len(specific) >= 2


_CLAUSE_SPLIT = re.compile(
    r"\s*[，；;]\s*|,\s+(?:and|but)\s+(?=(?:don't|do not|never|always|please|avoid|use)\b)",
    re.IGNORECASE,
)


REFERS_BACK = re.compile(
    r"^(?:that's|that is|this is|which is) why\b|^这(?:就)?是(?:为什么|因为)", re.I
)


def statements(sentence: str, role: str) -> list[tuple[str, str]]:
    """(kind, text) for each fact a sentence states: one, or one per clause when several clauses
    state different things ("组件统一用函数式写法，必须用 TypeScript，不要用 any")."""
    kind = classify(sentence, role)
    parts = [p for p in _CLAUSE_SPLIT.split(sentence) if p]
    if len(parts) > 1:
        work = about_work(sentence)  # "必须用 TypeScript，不要用 any": the sentence is about work
        typed = [(k, p) for p in parts if (k := classify(p, role, work)) == "preference"]
        if len(typed) > 1 and all(len(p) >= 6 for _, p in typed):
            return typed
    return [(kind, sentence)] if kind else []


_T = r"[\w.+#/-]+"
_REPLACES = [
    re.compile(p, re.IGNORECASE)
    for p in (
        rf"switch(?:ed|ing)?\s+(?:(?P<what>[a-z][\w -]{{0,30}}?)\s+)?from\s+(?P<old>{_T})\s+to\s+{_T}",
        rf"migrat\w*\s+(?:(?P<what>[a-z][\w -]{{0,30}}?)\s+)?from\s+(?P<old>{_T})\s+to\s+{_T}",
        rf"replac\w*\s+(?P<old>{_T})\s+with\s+{_T}",
        rf"\b{_T}\s+(?:instead of|rather than)\s+(?P<old>{_T})",
        rf"(?:从|把)\s*(?P<old>{_T})\s*(?:改成|改为|换成|迁移到|切换到)",
        rf"(?:改用|换成|用)\s*{_T}\s*(?:替代|替换|代替)\s*(?P<old>{_T})",
    )
]


def supersedes_hint(sentence: str) -> str:
    """For "switch formatting from ruff to black": "use ruff for formatting" (the old choice)."""
    for rx in _REPLACES:
        m = rx.search(sentence)
        if m:
            what = (m.groupdict().get("what") or "").strip()
            old = m.group("old").rstrip(".,;:!?")
            return f"use {old} for {what}" if what else f"use {old}"
    return ""


def importance_of(kind: str, sentence: str, role: str) -> float:
    base = IMPORTANCE[kind]
    if role == "user":
        base += 0.05
    if kind in ("preference", "decision") and _STRONG.search(sentence):
        base += 0.1
    return round(min(1.0, base), 2)


def clip_words(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters at a word boundary, with "…" when cut."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    if " " in cut[limit // 2 :]:
        cut = cut.rsplit(" ", 1)[0]
    return cut.rstrip(" ,;:") + "…"
