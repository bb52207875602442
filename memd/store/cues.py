"""The words that say a change, a retirement or a correction, in English and Chinese: what
:mod:`memd.store.current` reads a claim with ("moved from 01:00 to 02:30", "Marta has left",
"I misspoke", "改成", "王磊已经离职")."""

from __future__ import annotations

import re
from functools import lru_cache

from memd.store.diffs import diff_removed
from memd.store.values import CJK, LATIN_V, PART_NOUN, ZH_TO, V, listed
from memd.text import searchterms

ROLLED_BACK = re.compile(
    r"\b(?:rolled back|reverted|rollout undo|(?:is|are|went|got) back (?:to|on))\b"
    r"|回滚了|已回滚|回滚后|已经回滚|退回了|退回到了",
    re.I,
)
"""A rollback told as done (not planned: "roll back if it fails")."""
RETIRED = [
    re.compile(  # "from 01:00 to 02:30", "from Source Sans 3 to IBM Plex Sans"
        rf"\bfrom\s+(?:`)?(?P<v>(?:{V})(?:\s+(?-i:[A-Z][\w.+-]*|\d[\w.]*)){{0,2}})(?:`)?\s+(?:to|over to)\b",
        re.I,
    ),
    re.compile(
        rf"\b(?:instead of|rather than|in place of|replac(?:e|es|ed|ing))\s+(?:the\s+)?`?(?P<v>{V})",
        re.I,
    ),
    re.compile(rf"(?:,|\bnow)\s+not\s+`?(?P<v>{V})", re.I),
    re.compile(rf"\bI said `?(?P<v>{V})`? but\b", re.I),
    re.compile(  # "now served to 75% of users (was 20%)", "超时改为 30s（原来是 10s）"
        rf"[(（]\s*(?:was|previously|formerly|used to be|原来是|原来|之前是|原为|原先是|以前是)"
        rf"\s*:?\s*`?(?P<v>{V})`?\s*%?\s*[)）]",
        re.I,
    ),
    re.compile(rf"`?(?P<v>{V})`?\s*(?:\.\.\.|…|,|\.|-+|—)?\s*sorry,? I meant\b", re.I),
    re.compile(rf"不是\s*`?(?P<v>{LATIN_V})`?\s*[，,]\s*(?:而)?是"),
    re.compile(
        rf"`?(?P<v>{V})`?(?:\s+{PART_NOUN})?\s+(?:was|is|has been|got|gets?|were|are|have been|will be)\s+"
        r"(?:(?!not\b|never\b|n't\b)\w+\s+)?"
        r"(?:archived|deleted|removed|retired|dropped|deprecated|gone|rolled back|renamed"
        r"|turned off|shut down|switched off|decommissioned)\b",
        re.I,
    ),
    re.compile(rf"\b(?P<v>{V})\s+(?:has|have)\s+(?:left|gone|moved on)\b", re.I),
    re.compile(  # "(order-events retired after the schema split)", not "CI retired the job"
        rf"`?(?P<v>{V})`?\s+(?:retired|deprecated|decommissioned)\b(?!\s+(?:the|a|an|our|its|all)\b)",
        re.I,
    ),
    re.compile(
        rf"\b(?P<v>{V})\s+(?:left the|went on|is on leave|handed|is (?:going|away) on (?:\w+ )?leave)\b",
        re.I,
    ),
    re.compile(
        rf"\b(?:no longer (?:use|uses|run|runs|need)|stop(?:ped)? using)\s+`?(?P<v>{V})", re.I
    ),
    re.compile(rf"\b(?:don't|do not) (?:use|run) `?(?P<v>{V})`?\s+(?:any ?more|again)", re.I),
    re.compile(  # "Actually don't use #release-train, marketing reads that": a channel, a `value`
        r"\b(?:don't|do not|never) (?:use|post to|send (?:\w+ )?to|point (?:\w+ ){0,2}(?:at|to))\s+"
        r"`?(?P<v>#[\w-]+|(?<=`)[^`\s]+(?=`))",
        re.I,
    ),
    re.compile(
        rf"`?(?P<v>{V})`?\s+(?:no longer|doesn't|does not)\s+(?:exists?|resolves?|works?)", re.I
    ),
    re.compile(rf"\bdropped\s+(?:the\s+)?`?(?P<v>{V})", re.I),
    re.compile(rf"`?(?P<v>{V})`?\s+(?:belongs to|is|was)\s+(?:the|an?|our)\s+old\b", re.I),
    re.compile(
        rf"(?:从|由)\s*(?P<v>(?:{V})(?:\s+(?:[A-Z][\w.+-]*|\d[\w.]*)){{0,2}}|[{CJK}]{{2,4}}?)\s*"
        r"(?:天|小时|分钟|秒|个|条|次|台|核)?\s*"
        rf"(?:{ZH_TO}|到)"
    ),
    re.compile(
        rf"(?P<v>{LATIN_V}|[{CJK}]{{2,3}}?)\s*(?:集群|服务器|服务|实例|系统|那套|这套"
        rf"|(?:(?<=[\w+#] )|(?<=[\w+#]))(?:那台|这台)[{CJK}]{{0,8}}?)?\s*(?:已经|已|也)?"
        r"(?:月底|月初|下周|本周|明天|今天|周[一二三四五六日末])?"
        r"(?:离职|离开|不在了|停用|下线|废弃|弃用|退役|淘汰|不用了|停止(?:投递|使用|写入|服务|维护))"
    ),
    re.compile(  # not "deleted rows", nor "the stg-eu name gets deleted friday"
        r"(?<!never )(?<!not )(?<!n't )(?<!was )(?<!were )(?<!been )(?<!be )(?<!is )"
        r"(?<!up )(?<!of )(?<!the )(?<!for )(?<!with )(?<!all )(?<!any )(?<!-)(?<!get )(?<!gets )"
        rf"\b(?:removed|deleted|dropped|uninstalled|decommissioned)\s+(?:the\s+)?`?(?P<v>{V})`?"
        r"(?=[\s,;.]|$)(?!\s+(?:test|tests|call|calls|line|lines|check|checks|import|imports)\b)",
        re.I,
    ),
    re.compile(
        rf"(?P<v>{V}|[{CJK}]{{2,3}}?)\s*(?:那个|这个|原来的|旧的)[{CJK}]{{0,2}}?"
        r"(?:上周|上个月|昨天|已经|已)?(?:解散|停用|下线|废弃|关停|弃用|停掉)"
    ),
    re.compile(rf"不再(?:用|使用|维护|写入)?\s*(?P<v>{V}|[{CJK}]{{2,4}})"),
    re.compile(rf"(?:已经|已|再也)没(?:有|再用)\s*`?(?P<v>{LATIN_V})"),  # "已经没有 vuex 依赖了"
    re.compile(rf"(?P<v>{V})\s*(?:的)?(?:升级)?(?:已经)?回滚"),
    re.compile(
        rf"\b(?:got|moved|migrated|switched|came|stepped) off\s+(?:of\s+)?(?:the\s+)?`?(?P<v>{V})",
        re.I,
    ),
    re.compile(
        rf"\btried\s+(?:\w+\s+)?`?(?P<v>{V})`?\b[^.;!?]*?"
        r"\b(?:revert(?:ed)?|rolled (?:it )?back|backed (?:it )?out|gave up|abandoned)\b",
        re.I,
    ),
    re.compile(  # "I ditched VS Code for Zed"
        rf"\b(?:ditched|dumped|abandoned|swapped|traded)\s+(?:the\s+)?`?(?P<v>(?:{V})(?: (?!{PART_NOUN})(?:{V}))?)`?"
        rf"(?:\s+{PART_NOUN})?\s+(?:for|with)\b",
        re.I,
    ),
    re.compile(  # "the Papertrail plan is cancelled at month end", "the Kafka migration is off"
        rf"\b(?P<v>{V})\s+(?:plan|subscription|account|cluster|instance|inbox|migration|switch"
        r"|move|upgrade|rollout)\s+(?:is|was|gets?|got|has been)\s+(?:being\s+)?(?:cancell?ed"
        r"|shut down|turned off|decommissioned|called off|scrapped|shelved|abandoned|off)\b",
        re.I,
    ),
    re.compile(  # "we decided against Vitest", "we're not moving to Kafka after all"
        rf"\b(?:decided against|(?:not|n't|never) (?:switching|moving|migrating|upgrading|going)"
        rf" (?:over )?to)\s+(?:the\s+)?`?(?P<v>{V})",
        re.I,
    ),
    re.compile(  # "Kafka for notifications is rejected", "the Kafka proposal was turned down"
        rf"\b(?P<v>{V})(?:\s+(?:for|proposal|idea|option|plan)(?:\s+[\w-]+)?)?\s+(?:is|was|got"
        r"|has been)\s+(?:rejected|turned down|vetoed|off the table)\b",
        re.I,
    ),
    re.compile(rf"不(?:换|迁|切|上)(?:成|到)?\s*`?(?P<v>{LATIN_V})"),  # "评审结论：不换 Dragonfly"
    re.compile(  # "Naive UI 那个迁移不做了"
        rf"(?P<v>(?:{LATIN_V})(?: (?-i:[A-Z][\w-]*))?)\s*(?:那个|这个|的)\s*(?:迁移|方案|计划|升级|切换)?"
        r"\s*(?:不做了|不搞了|取消了|作废了|放弃了|搁置了)"
    ),
    re.compile(  # "迁移 Kafka 的计划取消了", "换成 Vitest 的方案放弃了"
        rf"(?:迁移|迁|切换|切|升级|换)(?:到|成)?\s*`?(?P<v>{LATIN_V})`?\s*(?:的)?(?:计划|方案|迁移)?\s*"
        r"(?:已经|已)?(?:取消|作废|搁置|放弃|不做)"
    ),
    re.compile(  # "the Thursday line in RELEASING.md is stale"
        rf"\bthe\s+(?P<v>{V})\s+(?:line|wording|entry|value|setting)\b[^;]{{0,40}}?\s+(?:is|was)"
        r"\s+(?:stale|outdated|obsolete|wrong)",
        re.I,
    ),
    re.compile(  # "The old acme-uploads-prod bucket is read-only now"
        rf"\bthe old\s+`?(?P<v>{V})`?\s+(?:bucket|host|server|cluster|instance|database|db|repo"
        r"|domain|url|endpoint|queue|topic|channel|account|project|service|box|machine|image)\b",
        re.I,
    ),
    re.compile(
        rf"(?P<v>[{CJK}]{{2,3}}?)(?:家里有事|生病了?|临时)?(?:请假|休假|请了假)"
    ),  # 张伟请假了
    re.compile(  # "Changed `line-length = 100` to `line-length = 120`"
        rf"\bchang(?:ed|e|ing)\s+[`'\"]?(?P<k>[A-Za-z_][\w.-]*)\s*[:=]\s*[`'\"]?(?P<v>{V})[`'\"]?"
        r"\s+to\s+[`'\"]?(?P=k)\b",
        re.I,
    ),
    re.compile(  # a plan's `region = "us-east-1" -> "eu-central-1"`
        rf"\b[A-Za-z_][\w.-]*\s*[:=]\s*[\"']?(?P<v>{V})[\"']?\s*(?:->|→|=>)\s*[\"']?\w"
    ),
    re.compile(rf"\bgit branch -[mM]\s+(?P<v>{V})\s+\S"),  # a branch renamed
    re.compile(rf"\bused to (?:use|run|be on|deploy (?:on|to))\s+`?(?P<v>{V})", re.I),
    re.compile(rf"以前(?:用|是|跑在)的?\s*(?P<v>{LATIN_V})"),  # "以前用 webpack 时留下的"
    re.compile(  # "we're done with CircleCI", "finished with `yarn`": a name, not "my exams"
        r"\b(?:done|finished|through) with\s+(?:the\s+)?(?P<v>[A-Z][\w.+-]*[\w+]|`[^`\s]+`)"
    ),
    re.compile(  # "bumped Node 18 → 20", "renamed ci.yml -> build.yml": an arrow after a change
        rf"\b(?:bump|upgrad|downgrad|chang|mov|switch|migrat|renam)\w*\b[^.;]{{0,40}}?"
        rf"`?(?P<v>{V})`?\s*(?:->|→|=>)\s*\S",
        re.I,
    ),
    re.compile(  # "把 Jenkins 换掉了", "Jenkins 已经被替换掉"
        rf"(?:把\s*)?`?(?P<v>{LATIN_V})`?\s*(?:已经|已)?被?(?:换掉|替换掉|干掉|下掉|去掉)了?"
        r"(?=\s*(?:[，,。；;！!]|$))"  # (not "3.12 去掉了 distutils": 3.12 did it)
    ),
    re.compile(  # "删除 amqp091-go 依赖", "移除了 `sentry-go` 包": a dependency, a service removed
        rf"(?:删除|移除|去掉|卸载)(?:了)?\s*`?(?P<v>{LATIN_V})`?\s*"
        r"(?:的)?(?:依赖|包|库|服务|插件|模块|客户端)"
    ),
    re.compile(  # "用 zap 替换 logrus", "以 Caddy 取代了 nginx": the second is gone
        rf"(?:用|以|拿)\s*`?(?:{LATIN_V})`?\s*(?:替换|替代|代替|取代)(?:了|掉)?\s*(?:原来的|旧的|原有的)?"
        rf"\s*`?(?P<v>{LATIN_V})"
    ),
    re.compile(  # "staging-api.x.io now returns 301 to https://api.stg.x.io": a host moved
        rf"`?(?P<v>{V})`?\s+(?:now\s+)?(?:(?:returns?|answers?|responds?)(?:\s+with)?\s+(?:an?\s+)?"
        r"30[1278]\b(?:\s+\w+)?|(?:permanently\s+)?redirects?)\s+to\b",
        re.I,
    ),
    re.compile(  # "So it's no longer CloudFront", "the owner is no longer Tomás"
        r"\b(?:it's|it is|is|are|we're|we are)\s+no longer\s+(?:on\s+|behind\s+|using\s+)?"
        r"(?P<v>[A-Z][\w.+-]*[\w+]|`[^`\s]+`)(?=[\s,;:.—-]|$)"
    ),
    re.compile(  # git's `Revert "gateway: raise per-key limit to 1200 req/min"`: 1200 undone
        rf"\bRevert\s+\"[^\"]*?\b(?:to|=)\s*`?(?P<v>{V})`?[^\"]*\""
    ),
    re.compile(  # "tidy 把 `gorm.io/gorm`、`gorm.io/driver/mysql` 都删了"
        rf"把\s*`?(?P<v>{LATIN_V})`?(?:\s*[、，,和及与]\s*`?(?:{LATIN_V})`?)*"
        rf"(?:\s*(?:和|及)(?:它们|其)的?[{CJK}]{{0,6}}?)?\s*(?:都|也|全)?"
        r"(?:删了|删掉了?|删除了|移除了|卸载了)"
    ),
    re.compile(  # "Scrap the Doppler migration", "cancel the Kafka move": a plan called off
        rf"\b(?:scrap|cancel|shelve|abandon|call off|drop)\s+the\s+`?(?P<v>{V})`?\s+"
        r"(?:plan|migration|switch|move|upgrade|rollout)\b",
        re.I,
    ),
    re.compile(  # "$ sudo mv /etc/nginx/conf.d/mall.conf /etc/nginx/sites-available/mall-api.conf"
        r"(?:^|[\s$;&])(?:sudo\s+)?(?:git\s+)?mv\s+(?:-\w+\s+)*[`'\"]?/?(?P<v>[\w.~-][\w./~-]*)"
        r"[`'\"]?\s+[`'\"]?[\w./~-]"
    ),
]
"""Where a sentence names a value that is no longer current."""
RETIRE_HINT = re.compile(
    r"from|instead|rather than|in place of|replac|archiv|delet|remov|retir|deprecat|drop"
    r"|rolled back|renam|\bleft\b|went on|leave|handed|no longer|stop|don't|do not|not\b|tried|old\b"
    r"|gone|uninstall|decommission|\bI said\b|I meant|\boff\b|ditched|dumped|abandoned|swapped|\bmv\b"
    r"|traded|cancell?ed|shut down|turned off|switched off|stale|outdated|obsolete|wrong"
    r"|不再|没有|没再用|离职|离开|不在|停用|下线|废弃|回滚|从|由|解散|关停|弃用|停掉|不是"
    r"|\bchang|->|→|=>|branch -[mM]|used to|以前|called off|scrapped|shelved|decided against|n't"
    r"|never|取消|作废|搁置|放弃|不做|不搞|rejected|turned down|vetoed|off the table|不换|不迁|不切|不上"
    r"|请假|休假|请了假|done with|finished with|through with|换掉|替换掉|干掉|下掉|去掉|退役|淘汰|不用了|停止"
    r"|替换|替代|代替|取代|\b30[1278]\b|redirect|删除|移除"
    r"|删了|删掉|删除了|移除了|卸载了|Revert\s+\"|scrap|cancel|shelve|abandon|call off|drop"
    r"|[(（]\s*(?:was|previously|formerly|原来|之前是|原为|原先是)",
    re.I,
)
"""What every pattern of :data:`RETIRED` holds: one search rules most sentences out."""
_HINTS = [
    r"\bfrom\b",
    r"instead of|rather than|in place of|replac",
    r"\bnot\b",
    r"\bI said\b",
    r"[(（]\s*(?:was|previously|formerly|used to be|原来|之前是|原为|原先是|以前是)",
    r"sorry,? I meant",
    r"不是",
    r"archived|deleted|removed|retired|dropped|deprecated|gone|rolled back|renamed|turned off"
    r"|shut down|switched off|decommissioned",
    r"\b(?:has|have)\s+(?:left|gone|moved on)",
    r"retired|deprecated|decommissioned",
    r"left the|went on|is on leave|handed|on (?:\w+ )?leave",
    r"no longer|stop",
    r"don't|do not",
    r"don't|do not|never",
    r"no longer|doesn't|does not",
    r"\bdropped\b",
    r"\bold\b",
    r"从|由",
    r"离职|离开|不在了|停用|下线|废弃|弃用|退役|淘汰|不用了|停止",
    r"removed|deleted|dropped|uninstalled|decommissioned",
    r"解散|停用|下线|废弃|关停|弃用|停掉",
    r"不再",
    r"没(?:有|再用)",
    r"回滚",
    r"\boff\b",
    r"\btried\b",
    r"ditched|dumped|abandoned|swapped|traded",
    r"cancell?ed|shut down|turned off|decommissioned|called off|scrapped|shelved|abandoned|\boff\b",
    r"decided against|\bnot\b|n't|never",
    r"rejected|turned down|vetoed|off the table",
    r"不(?:换|迁|切|上)",
    r"不做了|不搞了|取消了|作废了|放弃了|搁置了",
    r"取消|作废|搁置|放弃|不做",
    r"stale|outdated|obsolete|wrong",
    r"\bthe old\b",
    r"请假|休假|请了假",
    r"\bchang",
    r"->|→|=>",
    r"branch -[mM]",
    r"used to",
    r"以前",
    r"(?:done|finished|through) with",
    r"->|→|=>",
    r"换掉|替换掉|干掉|下掉|去掉",
    r"删除|移除|去掉|卸载",
    r"替换|替代|代替|取代",
    r"\b30[1278]\b|redirect",
    r"no longer",
    r"Revert\s+\"",
    r"删了|删掉|删除了|移除了|卸载了",
    r"scrap|cancel|shelve|abandon|call off|drop",
    r"\bmv\b",
]
RETIRED_HINTED = list(zip([re.compile(h, re.I) for h in _HINTS], RETIRED, strict=True))
"""Each pattern of :data:`RETIRED` behind the words it cannot match without: the patterns that
start with a value try every position of a sentence (0.1 ms each on a long one)."""


def retired(sentence: str, diffs: bool = True) -> set[str]:
    """The values ``sentence`` says are no longer current, as written (not folded); with
    ``diffs=False``, not those a diff in it takes away (the caller reads them itself)."""
    out = diff_removed(sentence) if diffs and shows_diff(sentence) else set()
    if not RETIRE_HINT.search(sentence):
        return out
    reverted = [m.span() for m in _REVERTED.finditer(sentence)] if "Revert" in sentence else []
    return out | {
        m.group("v")
        for hint, pattern in RETIRED_HINTED
        if hint.search(sentence)
        for m in pattern.finditer(sentence)
        if not any(a < m.start() < b for a, b in reverted)
    }


_REVERTED = re.compile(r"\bRevert\s+\"[^\"]*\"")
"""The subject of a commit a revert undoes (``Revert "perf: 使用 sonic 替代 encoding/json"``):
what it retired is current again, so only :data:`RETIRED`'s own pattern for it reads inside."""


_DIFF_HINT = re.compile(r"(?:^|\s)\+\s*(?:-\s+)?[\"']?[@A-Za-z_/]", re.M)


def shows_diff(sentence: str) -> bool:
    """Whether ``sentence`` shows a diff (a ```` ```diff ```` fence, or a line added)."""
    return "```diff" in sentence or _DIFF_HINT.search(sentence) is not None


SELF_CORRECTION = (
    r"I misspoke|I was wrong|I got (?:it|that) wrong|my mistake|I mis(?:read|typed)"
    r"|I said \S+ but (?:it's|it is|it should be|I meant)|sorry,? I meant"
    r"|(?:no|oh),? wait\b|scratch that"
)
"""A speaker correcting what they said before (a change cue, and a correction)."""
OTHER_CORRECTION = (
    r"(?:^|[.!?]\s+)(?:no|nope)\b[,.!]?\s*(?:[—–-]+\s*)?(?:that'?s|that is|it'?s|it is)\s+"
    r"(?:wrong|incorrect|not (?:right|correct|true)|outdated|out of date|the old)"
    r"|\bthat'?s (?:wrong|incorrect|not right|not correct)\b"
    r"|\bit'?s\s+(?:`[^`\s]+`|\S*\d\S*?)(?:\s+now)?,?\s+not\s+(?:`[^`\s]+`|\S*\d)"
)
"""A speaker saying what was said before is wrong ("No, that's wrong — …", "actually it's 300
now, not 120")."""
REQUEST = re.compile(
    r",?\s+(?:so |and |but )?(?:can|could|would|will) you\b"
    r"|[，,]\s*(?:那|请|帮我|能不能|可以|怎么|如何|为什么)",
    re.I,
)
"""A request after a statement in one sentence ("I use Sublime Text, so can you…?",
"最近换成 nvim 了，怎么让它…？")."""
CUE = re.compile(
    r"(?<!/)\b(?:now(?! that\b| (?:passes|works|fails|builds|compiles|succeeds|shows|prints|returns"
    r"|reports|lists|outputs|finds|logs)\b)"
    r"|no longer|any ?more|instead|ditched|swapped|switch(?:ed|ing)?|mov(?:ed|ing)|move(?= [^.;!?]{0,60}?\bto\b)|relocat(?:ed|ing)|migrat(?:ed|ing)|"
    r"(?<!before )(?<!without )chang(?:ed|ing)(?! (?:anything|nothing))|renam(?:ed|ing)|replac(?:ed|ing)|bump(?:ed)?|upgrad(?:ed|ing)|"
    r"downgrad(?:ed|ing)|rais(?:ed|ing)|lower(?:ed|ing)|rolled back|revert(?:ed)?|(?<!falls )(?<!fall )back (?:to|on)|"
    r"(?:is|are) \S+ again|"
    r"has left|took over|handed|from now on|these days|(?<!\bto )actually|made|make the|set to|"
    r"(?:updated|set|raised|lowered|changed) (?:the |its |our )?\S+(?: \S+){0,2} to|"
    r"(?:updated|changed|moved|pointed|switched) (?:[^.;:!?]|\.(?=\S)){0,80}? to\b|"
    r"as of|started at|joined|is at|are at|agreed|decided|settled on"
    r"|go(?:ing)? with|going forward|from (?:this|the next|today|now)(?: \w+)? on"
    r"|starting (?:today|now|this|with|from)|(?:not|never) going back|retarget(?:ed|ing)?"
    r"|point(?:ed|ing)? (?:the |its |our )?\S+(?: \S+){0,3} (?:at|to)"
    r"|(?:rewr(?:o|i)te|port(?:ed)?) \S+(?: \S+){0,3} to use"
    rf"|{SELF_CORRECTION}|{OTHER_CORRECTION}"
    r"|the new (?:host|address|url|endpoint|domain|port|path|location|channel|owner|one) is"
    r"|since (?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|yesterday|today"
    r"|last \w+|this \w+|the (?:\w+ ){1,2}(?:switch|move|migration|release|upgrade|cutover)"
    r"|the (?:move|switch|migration) to))\b(?!/)"
    r"|现在|改为|改成|改用|改了|换成|换为|换到|切换(?!时)|迁移|迁到|不再|离职|跳槽|回滚|退回|搬到|调到|调成|"
    r"提到|降到|改到|调整到|接手|交接|取代|替换|如今|目前|已经从|已经是|已是|已经换|已经改|"
    r"其实是|看错|说错|记错|搞错|写错|设为|设成|已更新|更新为|更新成|统一用|统一为|统一成|重建|定在|定成|定为|改在|推迟到|提前到|"
    r"新地址|新域名|新端口|新路径|新的地址|以后都|以后就|今后|往后|指向|指到|对齐到|接下来|调整为|调为|(?<!跳)转到|转用|"
    r"回退|恢复成|恢复为|改回|换回|用回|退回到",
    re.I,
)
CORRECTED = re.compile(OTHER_CORRECTION, re.I)
CORRECTION = re.compile(
    rf"\b(?:{SELF_CORRECTION})\b|{OTHER_CORRECTION}|说错|看错|记错|搞错|写错|弄错|^\s*不对[，,。！!]",
    re.I,
)
"""A speaker correcting what was said before: one shared subject word is enough."""


def only_instead(sentence: str) -> bool:
    """Whether the one change word of ``sentence`` is "instead" (of a value it names)."""
    return all(m.group(0).lower() == "instead" for m in CUE.finditer(sentence))


ALSO = re.compile(
    r"\b(?:also|as well|in addition|alongside|along with|together with)\b|\bboth\b(?=[^.;]*\band\b)|\btoo\b(?=\s*(?:[.,;!?)]|$))|同时|另外|分别"
    r"|不是迁移|是新增|\band the rest (?:from|on|in|via)\b|也(?:部署|放|用|跑|接入|加|支持)"
    r"|[和与及、][^，。；,.;]{1,30}?都(?:会|要|在|有|能|可以|得|跑|用)|(?:一起|共同)(?:负责|维护|管)"
)
"""A second thing beside the first ("we use Prettier too", "ESLint 和 Stylelint 都会跑"); "too
small" is no such word."""
CUE_BIGRAMS = listed(
    "现在 改为 改成 改用 换成 换为 换到 切换 迁移 迁到 不再 离职 回滚 退回 搬到 调到 调成 提到 降到 "
    "接手 交接 取代 替换 如今 目前 已经 帮我 一下 顺便 其实 实是 看错 说错 记错 搞错 写错 设为 设成 "
    "统一 一用 一为 一成 重建 定在 定成 定为 改在 推迟 迟到 提前 前到 新地 新域 新端 新路 以后 后都 后就 今后 往后 指向 指到 对齐 齐到 接下 下来 调整 整为 调为 转到 转用 "
    "回退 恢复 复成 复为 改回 换回 用回 已更 更新 新为 新成"
)


MAY_REPLACE = re.compile(
    CUE.pattern
    + r"|\bfrom\b|instead of|rather than|in place of|replac|archived|deleted|removed|retired"
    r"|deprecated|dropped|renamed|has left|have left|went on|handed|stop(?:ped)? using"
    r"|离开|停用|下线|废弃|从|由|停止|```diff|\bmv\s",
    re.I,
)


def _before(
    into: str,
) -> re.Pattern[str]:
    return re.compile(
        r"\b(?:switch(?:ed|ing)?|mov(?:ed|ing)|chang(?:ed|ing)|migrat(?:ed|ing)|now"
        r"|(?:chang|updat|mov|point|migrat)(?:e|ed|ing)? (?:[^.;!?]|\.(?=\S)){0,80}?)"
        rf"(?:\s+(?:it|them|both|all|everything|those|these)\b)?\s+(?:over\s+)?(?:{into})\s+`?\Z",
        re.I,
    )


_SWITCHED = {False: _before("to|into"), True: _before("to|in|on|into")}
_CHANGED_ZH = re.compile(rf"(?:{ZH_TO})\s*`?\Z")
_TOKEN_GOES_ON = re.compile(r"[\w-]")


def places(
    sentence: str, value: str, whole: bool = True, goes_on: re.Pattern[str] = _TOKEN_GOES_ON
) -> list[int]:
    """Where ``value`` starts in ``sentence``: with ``whole`` in any case and not followed by a
    word character or a hyphen, else as written. A value's place, found without compiling a
    pattern for each value."""
    low, v = (sentence.lower(), value.lower()) if whole else (sentence, value)
    if not v:
        return []
    if len(low) != len(sentence):  # (a letter whose lower case is longer: compile after all)
        end = rf"(?!{goes_on.pattern})" if whole else ""
        return [m.start() for m in re.finditer(rf"{re.escape(value)}{end}", sentence, re.I)]
    out, i = [], low.find(v)
    while i >= 0:
        if not (whole and goes_on.match(sentence, i + len(v))):
            out.append(i)
        i = low.find(v, i + 1)
    return out


@lru_cache(maxsize=16384)
def switched_to(sentence: str, value: str, place: bool = False) -> bool:
    """Whether ``sentence`` names ``value`` as the target of a change ("switched to
    #release-train", "moved over to Buildkite", "switched both to help@…"); with ``place`` (a
    channel) "in" and "on" name it too ("changed in #ops"), never for a file ("What changed in
    research.md")."""
    before = _SWITCHED[place]
    return any(before.search(sentence, 0, i) for i in places(sentence, value))


@lru_cache(maxsize=16384)
def changed_to(sentence: str, value: str) -> bool:
    """Whether ``sentence`` names ``value`` as the target of a change, in English
    (:func:`switched_to`) or Chinese ("从 2 小时改成 30 分钟", "换成 Caffeine")."""
    if switched_to(sentence, value):
        return True
    low = sentence.lower()
    seen = low if len(low) == len(sentence) else sentence  # ("Jackson" of a folded "jackson")
    return any(_CHANGED_ZH.search(sentence, 0, i) for i in places(seen, value, whole=False))


_KEY_CHANGED = re.compile(rf"(?:`([A-Za-z_][\w.-]*)`|([A-Za-z_][\w.-]*)|\S)\s*(?:{ZH_TO})")


def changes_another(new: str, old: str) -> bool:
    """Whether every Chinese change verb of ``new`` follows a setting's name that ``old`` does
    not say ("`notify_url` 改成这个域名" after "测试环境用沙箱"): it changes something else."""
    keys = [m.group(1) or m.group(2) for m in _KEY_CHANGED.finditer(new)]
    folded = old.casefold()
    return bool(keys) and all(k and k.casefold() not in folded for k in keys)


_UNITS = {"time": "秒分钟小时天周月年", "count": "个条次台核人件"}


def unit(sentence: str, value: str) -> str:
    """What the number ``value`` counts in ``sentence``, by the Chinese unit right after it:
    "time" ("14 天", "2 小时"), "count" ("30 个问题"), "percent" ("85%"), or "" (none)."""
    if re.search(rf"(?<![\w.]){re.escape(value)}\s*[%％]", sentence):
        return "percent"  # "CPU 从 85% 降到了 35%" is no pool's "只有 10"
    m = re.search(rf"(?<![\w.]){re.escape(value)}\s*([{CJK}])", sentence)
    return next((k for k, chars in _UNITS.items() if m and m.group(1) in chars), "")


def now_is(sentence: str, value: str) -> bool:
    """Whether ``sentence`` says ``value`` is what holds now ("our account manager is Tomás
    Ferreira now", "the owner is now Inês")."""
    v = re.escape(value)
    m = re.search(
        rf"\b(?:is|are)\s+(?:now\s+{v}(?![\w-])|{v}(?![\w-])(?:\s+\w+)?\s+now\b)", sentence, re.I
    )
    return m is not None


LIST_GLUE = re.compile(r"(?:[\s,、，;/&+`'\"()（）]|\band\b|\bor\b|和|及|与|或)*")


def listed_with(text: str, values: frozenset[str], a: str, b: str) -> bool:
    """Whether ``text`` (of ``values``) lists ``a`` and ``b`` together, nothing but separators and its other
    values between them ("golangci-lint、gosec、hadolint", "@hana-sato @oskar-berg")."""
    text = text.casefold()
    if a == b:
        return False
    at_a, at_b = _occurrences(text, a), _occurrences(text, b)  # (any two: a diff's "eslint
    for i in at_a:  # --fix", then "ESLint 和 Stylelint 都会跑")
        for j in at_b:
            between = text[i + len(a) : j] if i < j else text[j + len(b) : i]
            if len(between) > 200:
                continue
            for v in sorted(values, key=len, reverse=True):
                between = between.replace(v, " ")
            if LIST_GLUE.fullmatch(between) is not None:
                return True
    return False


def _occurrences(text: str, value: str, most: int = 8) -> list[int]:
    """Where ``value`` starts in ``text``, the first ``most`` times."""
    out: list[int] = []
    at = text.find(value)
    while at >= 0 and len(out) < most:
        out.append(at)
        at = text.find(value, at + 1)
    return out


_JOINED = re.compile(f"(?=([{CJK}]{{2}})(?:[（(][^（）()]{{1,40}}[)）])?[和与及、]([{CJK}]{{2}}))")


def joined(text: str, anchors: frozenset[str]) -> bool:
    """Whether ``text`` joins a word of ``anchors`` and a new one with 和, 与, 及 or 、
    ("周涛和林晓" after "需要周涛审批", "杭州（cn-hangzhou）和新加坡"), or adds one besides it
    ("除了王磊，还要陈静"): one more beside the older's, not another."""
    if any((a in anchors) != (b in anchors) for a, b in _JOINED.findall(text)):
        return True
    return any(
        any(m.group(1)[i : i + 2] in anchors for i in range(len(m.group(1)) - 1))
        for m in _BESIDES.finditer(text)
    )


def added(text: str, value: str) -> bool:
    """Whether ``text`` adds ``value`` beside what there was ("CODEOWNERS 里加了 @wangfang",
    "added @kofi-m to the reviewers"): one more, not another."""
    v = re.escape(value)
    return (
        re.search(
            rf"(?:\badd(?:ed|s|ing)?\b|加了|加上|新增了?|添加了?|加进)\W{{0,3}}{v}", text, re.I
        )
        is not None
    )


_BESIDES = re.compile(f"除了\\s*([{CJK}]{{2,6}})\\s*[，,]?\\s*(?:还|也)")
_EXISTING = re.compile(
    r"\b(?:next to|beside|alongside|on top of|in addition to|besides)\s+(?:the|our)\s+"
    r"(?:existing|current)\s+`?([\w.@/-]+)|(?:在|除了)(?:现有|原有|已有)的?\s*`?([\w.@/-]+)",
    re.I,
)


def existing(text: str) -> frozenset[str]:
    """What ``text`` says stays beside what it adds ("Added a mypy hook next to the existing
    ruff hook": ruff), folded."""
    return frozenset(
        (m.group(1) or m.group(2)).casefold().strip("`") for m in _EXISTING.finditer(text)
    )


def lead(sentence: str, value: str) -> frozenset[str]:
    """The glossary words written just before ``value`` in a Chinese ``sentence`` ("上限" of
    "上限改为 50MB"): what the value is the value of."""
    at = sentence.casefold().find(value)
    text = sentence[max(0, at - LEAD) : at] if at > 0 else ""
    words = searchterms.glossary_words()
    return frozenset(
        text[i : i + n]
        for n in (2, 3, 4)
        for i in range(len(text) - n + 1)
        if text[i : i + n] in words and text[i : i + n] not in _BROAD_LEADS
    )


_BROAD_LEADS = listed("服务 项目 系统 代码 文件 接口 模块 功能 这个 那个 几个 我们")
"""Words too broad to say what a value is the value of ("订单服务的 owner" / "几个服务的
Dockerfile" are no one setting)."""


LEAD = 8
"""Characters before a value in a Chinese sentence read for the word it is the value of."""


_DECLINE = re.compile(
    r"^\W*(?:(?:先|暂时|还是)?不(?:换|改|迁|切|用换|用改|用迁)(?:了)?[，,。！!]"
    r"|no,? (?:let'?s )?(?:not|keep|stay with|stick with)\b|let'?s not (?:switch|move|change|migrate)\b)",
    re.I,
)
_SUGGESTED = re.compile(
    rf"(?:建议|可以考虑|不如|推荐)(?:把[^，。]{{0,12}}?)?(?:{ZH_TO})\s*`?(?P<v>{LATIN_V}|[{CJK}]{{2,4}})"
    rf"|\b(?:suggest|recommend|propose|could|might want to|consider)\w*\s+(?:switching|moving"
    rf"|migrating|changing)\s+(?:\w+\s+){{0,3}}?to\s+`?(?P<w>{V})",
    re.I,
)


def declined(new: str, old: str) -> str:
    """The value ``old`` suggested changing to that ``new`` turns down ("建议把告警通道换成飞书" /
    "不换，公司 IM 还是钉钉"), or ""."""
    if not _DECLINE.search(new):
        return ""
    m = _SUGGESTED.search(old)
    return (m.group("v") or m.group("w")) if m else ""


OLD_MENTION = re.compile(
    r"\b(?:old|legacy|leftover)\b|旧|遗留|迁移前|没人用",
    re.I,
)
"""Words that tell a value named as the old one ("the old `…` bucket in us-east-1 is still
there", "cn-hangzhou 那个旧桶还没删"): a sentence of them mentions the old value, it does not
say it holds again (unless it says a rollback, :data:`ROLLED_BACK`)."""


def mentions_old(sentence: str) -> bool:
    """Whether ``sentence`` names something as the old one, and says no rollback."""
    return OLD_MENTION.search(sentence) is not None and not ROLLED_BACK.search(sentence)


@lru_cache(maxsize=4096)
def named_old(sentence: str, value: str) -> bool:
    """Whether ``sentence`` calls ``value`` itself the old one: the word right before or after
    it ("cn-hangzhou 的旧 SLB", "旧的 `/data/exports`", "the old `acme-assets` bucket")."""
    v = re.escape(value)
    return (
        re.search(
            rf"(?<![\w-]){v}[`'\"]?\s*(?:的|那个|这个|那套|那台|下)?\s*(?:旧|老|迁移前)"
            rf"|(?:\b(?:the\s+)?(?:old|legacy|leftover)|旧的?|老的?|原来的|迁移前的?)\s*[`'\"]?{v}(?![\w-])",
            sentence,
            re.I,
        )
        is not None
    )


KEPT = re.compile(
    r"\b(?:stays?|remains?|still|unchanged|as before|keeps?|kept|stick(?:s|ing)? with"
    r"|continues? (?:to use|using))\b|照旧|不变|保留|仍然|仍是|仍在|还是|保持|不动|继续用|继续使用|沿用|依然|依旧",
    re.I,
)
"""Words that say a value said again still holds ("the frontend stays on 3000")."""
