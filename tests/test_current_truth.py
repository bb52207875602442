"""Current truth (#31): a correction wins over what it corrects, in English and Chinese.

One real daemon on a real socket reads Claude Code transcripts of a developer's history, the
newest session first (so "later" can only come from the transcripts' own time), then the prompt
hook is asked about each subject: the current value is in the block, and the old one is absent
or marked where it stands ("until DATE; now: ...").
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from daemon_process import DaemonProcess, served
from hashseed import outputs_by_seed
from hitdata import hit
from hitdata import marked as _marked

from memd.extract import rules
from memd.recall import disputed, lexical, stale, synonyms
from memd.recall.block import render
from memd.recall.choose import choose
from memd.recall.hits import Hit
from memd.recall.retrieve import normalize_query
from memd.store import clock, cues, current, families
from memd.text import searchterms

MINILM = "sentence-transformers/all-MiniLM-L6-v2"
Turns = list[tuple[str, str]]

CASES: list[dict[str, Any]] = [
    {
        "name": "schedule",
        "sessions": [
            ("2026-03-02", [
                ("user", "When does the weekly report job run?"),
                ("assistant", "jobs/report.cron says `0 6 * * 1`: the weekly report job runs at 06:00 UTC on Mondays."),
            ]),
            ("2026-04-13", [
                ("user", "FYI ops moved the weekly report job from 06:00 to 08:15 UTC so it runs after the ETL."),
                ("assistant", "Noted. I updated the runbook and the cron comment."),
            ]),
        ],
        "question": "At what time does the weekly report job run?",
        "current": ["08:15"],
        "stale": ["06:00"],
    },
    {
        "name": "version rolled back",
        "sessions": [
            ("2026-05-04", [
                ("user", "Upgrade the service to Go 1.23."),
                ("assistant", "Bumped go.mod to go 1.23.2 and the Dockerfile to golang:1.23.2; the tests pass."),
            ]),
            ("2026-05-20", [
                ("user", "We rolled back the Go upgrade, cgo builds broke on arm64. go.mod and the Dockerfile are back to 1.22.5."),
                ("assistant", "Checked: go.mod says go 1.22.5 and the image is golang:1.22.5 again."),
            ]),
        ],
        "question": "Which Go version does the service build with?",
        "current": ["1.22.5"],
        "stale": ["1.23.2"],
    },
    {
        "name": "owner",
        "sessions": [
            ("2026-01-12", [
                ("user", "Priya Nair owns the search service, so ask her to review the ranking change."),
                ("assistant", "Opened PR #88 for the ranking change and requested a review from Priya Nair."),
            ]),
            ("2026-02-23", [
                ("user", "Priya has left the company. Tom Becker owns the search service now."),
                ("assistant", "Understood, search service reviews go to Tom Becker from now on."),
            ]),
        ],
        "question": "Who should review changes to the search service?",
        "current": ["Tom Becker"],
        "stale": ["Priya"],
    },
    {
        "name": "store",
        "sessions": [
            ("2026-06-01", [
                ("user", "Where do user uploads end up?"),
                ("assistant", "storage/config.py points the upload backend at MinIO on storage-1:9000, bucket `uploads`."),
            ]),
            ("2026-06-19", [
                ("user", "We switched uploads to S3 instead of MinIO last week. Delete the MinIO client code."),
                ("assistant", "Removed the MinIO client; uploads go through boto3 to the S3 bucket `acme-uploads`."),
            ]),
        ],
        "question": "Where are user uploads stored?",
        "current": ["S3"],
        "stale": ["storage-1"],
    },
    {
        "name": "channel",
        "sessions": [
            ("2026-07-01", [
                ("user", "Incident alerts go to #incidents-legacy. Hook the new disk alert into it."),
                ("assistant", "Added the disk alert; it posts to #incidents-legacy."),
            ]),
            ("2026-07-22", [
                ("user", "Update: incident alerts go to #sev-room now, the old channel is archived. Change the config."),
                ("assistant", "Changed the alert channel in alerts.yaml to #sev-room."),
            ]),
        ],
        "question": "Which Slack channel do incident alerts post to?",
        "current": ["#sev-room"],
        "stale": ["#incidents-legacy"],
    },
    {
        "name": "日程",
        "sessions": [
            ("2026-03-03", [
                ("user", "备份任务每天 02:00 跑，别和它抢数据库。"),
                ("assistant", "好的，新的清理任务排在 03:00，避开备份窗口。"),
            ]),
            ("2026-04-07", [
                ("user", "备份任务改成每天 04:30 跑了，清理任务也顺延一下。"),
                ("assistant", "清理任务已改到 05:30。"),
            ]),
        ],
        "question": "备份任务每天几点跑？",
        "current": ["04:30"],
        "stale": ["02:00"],
    },
    {
        "name": "版本回滚",
        "sessions": [
            ("2026-06-02", [
                ("user", "前端升级到 Node 22，把 .nvmrc 改一下。"),
                ("assistant", "已把 .nvmrc 改成 22.11.0，本地构建通过。"),
            ]),
            ("2026-06-16", [
                ("user", "Node 22 的升级回滚了，线上 sharp 报错，.nvmrc 已经改回 20.18.0。"),
                ("assistant", "确认了，.nvmrc 现在是 20.18.0。"),
            ]),
        ],
        "question": "前端用哪个版本的 Node？",
        "current": ["20.18.0"],
        "stale": ["22.11.0"],
    },
    {
        "name": "负责人",
        "sessions": [
            ("2026-02-02", [
                ("user", "订单服务是张伟负责的，改动记得找他 review。"),
                ("assistant", "好的，PR #41 已经请张伟 review。"),
            ]),
            ("2026-03-16", [
                ("user", "张伟已经离职了，订单服务现在由李娜负责，之后的 PR 找她。"),
                ("assistant", "明白，CODEOWNERS 里订单目录已经改成李娜。"),
            ]),
        ],
        "question": "订单服务的改动应该找谁 review？",
        "current": ["李娜"],
        "stale": ["张伟"],
    },
    {
        "name": "存储",
        "sessions": [
            ("2026-04-01", [
                ("user", "会话缓存放在哪？"),
                ("assistant", "settings.py 里会话缓存用的是 Memcached，地址 cache-1:11211。"),
            ]),
            ("2026-04-28", [
                ("user", "会话缓存已经从 Memcached 迁到 Redis 了，把 pymemcache 依赖删掉。"),
                ("assistant", "删掉了 pymemcache，会话缓存现在走 redis-sessions:6379。"),
            ]),
        ],
        "question": "会话缓存现在用的是什么？",
        "current": ["Redis"],
        "stale": ["cache-1"],
    },
    {
        "name": "通知渠道",
        "sessions": [
            ("2026-05-05", [
                ("user", "构建失败的通知发到钉钉群，帮我把新的流水线也接上。"),
                ("assistant", "新流水线失败时会调用钉钉机器人的 webhook。"),
            ]),
            ("2026-06-09", [
                ("user", "公司不再用钉钉了，构建通知统一换成飞书群，webhook 在 FEISHU_WEBHOOK 里。"),
                ("assistant", "已把流水线的通知换成飞书机器人，读取 FEISHU_WEBHOOK。"),
            ]),
        ],
        "question": "构建失败的通知发到哪里？",
        "current": ["飞书"],
        "stale": ["钉钉"],
    },
    {
        "name": "当场更正",
        "sessions": [
            ("2026-02-02", [
                ("user", "给导出接口加个限流，单用户上限 120。"),
                ("assistant", "已在 export/api.py 用令牌桶实现限流，单用户每分钟 120 次，超出返回 429。"),
                ("user", "不好意思我说错了，上限是 80，合同里写的是 80。"),
                ("assistant", "导出接口的限流已改为每分钟 80 次，配置项 EXPORT_RATE_LIMIT 写成 80。"),
            ]),
            ("2026-02-20", [
                ("user", "导出的 CSV 文件名加上日期。"),
                ("assistant", "文件名改成 export-YYYYMMDD.csv 了。"),
            ]),
        ],
        "question": "导出接口每个用户的上限是多少？",
        "current": ["80"],
        "stale": ["120"],
    },
    {
        "name": "city",
        "sessions": [
            ("2026-01-10", [
                ("user", "I'm based in Porto, so schedule the standup reminder for 09:15 my local time."),
                ("assistant", "Configured the reminder in bots/standup.py with the Europe/Lisbon zone at 09:15."),
            ]),
            ("2026-03-16", [
                ("user", "I moved from Porto to Munich last week, so fix the reminder's time zone for me."),
                ("assistant", "Set the zone to Europe/Berlin; the reminder still fires at 09:15 local time."),
            ]),
        ],
        "question": "Which city am I living in these days?",
        "current": ["Munich"],
        "stale": ["based in Porto"],
    },
    {
        "name": "region, no change word",
        "sessions": [
            ("2026-01-07", [
                ("user", "Terraform for prod should use eu-west-1 as the primary region."),
                ("assistant", "Set the provider region in infra/prod/provider.tf; terraform init succeeded."),
            ]),
            ("2026-02-12", [
                ("user", "The migration is finished: for data residency the primary is eu-central-1 now. Update Terraform."),
                ("assistant", "Changed infra/prod/provider.tf and moved the state key; terraform plan is clean."),
            ]),
        ],
        "question": "Which AWS region hosts the primary production stack?",
        "current": ["eu-central-1"],
        "stale": ["eu-west-1"],
    },
    {
        "name": "上限，没有说改",
        "sessions": [
            ("2026-01-16", [
                ("user", "头像和附件上传加个大小限制，单个文件最大 10 MB。"),
                ("assistant", "在 upload/handler.go 里加了 MaxBytesReader，超出返回 413。"),
            ]),
            ("2026-02-26", [
                ("user", "客户要传设计稿，单个文件上限 50 MB。"),
                ("assistant", "handler 和 Nginx 的配置都更新了，传了一个 48MB 的 PSD 测试通过。"),
            ]),
        ],
        "question": "单个文件最大能传多大？",
        "current": ["50"],
        "stale": ["10 MB"],
    },
    {
        "name": "package manager, told in an error",
        "sessions": [
            ("2026-03-03", [
                ("user", "yarn install takes four minutes in CI, can we cache it?"),
                ("assistant", "Cached the Yarn cache folder keyed on yarn.lock in the workflow."),
            ]),
            ("2026-04-20", [
                ("user", "CI fails with ERR_PNPM_OUTDATED_LOCKFILE: pnpm-lock.yaml is not up to date with package.json."),
                ("assistant", "Someone edited package.json by hand; I ran pnpm install to regenerate pnpm-lock.yaml and committed it."),
            ]),
        ],
        "question": "Which package manager do I run to add a dependency here?",
        "current": ["pnpm"],
        "stale": ["yarn"],
    },
    {
        "name": "版本，顺带提到",
        "sessions": [
            ("2026-01-10", [
                ("user", "我在 .python-version 里写了 3.10.13，帮我把 Dockerfile 对齐。"),
                ("assistant", "Dockerfile 改成 FROM python:3.10.13-slim 了，和 .python-version 一致。"),
            ]),
            ("2026-03-05", [
                ("user", "新同事用 pyenv 按 .python-version 装了 Python 3.12.2，跑测试报 distutils 找不到。"),
                ("assistant", "3.12 去掉了 distutils，我把 setup.py 里的 distutils 换成了 setuptools，测试都过了。"),
            ]),
        ],
        "question": "项目现在用的是哪个 Python 版本？",
        "current": ["3.12.2"],
        "stale": ["3.10.13"],
    },
    {
        "name": "组，只说了一次调动",
        "sessions": [
            ("2026-02-02", [
                ("user", "我在测试组，负责接口自动化，帮我写个登录用的 pytest fixture。"),
                ("assistant", "在 conftest.py 里加了 logged_in_client fixture，token 按会话缓存。"),
            ]),
            ("2026-04-07", [
                ("user", "我上个月调到风控组了，帮我看看规则引擎这个单测为什么不稳定。"),
                ("assistant", "规则按 dict 顺序执行，测试依赖了顺序；我改成按优先级排序，连跑 200 次都通过。"),
            ]),
        ],
        "question": "我现在在哪个组？",
        "current": ["风控组"],
        "stale": ["测试组"],
    },
    {  # corrected by the user in the same session (session 30, written for this test)
        "name": "locale, corrected in the same session",
        "sessions": [
            ("2026-02-12", [
                ("user", "Set up next-intl on the docs site."),
                ("assistant", "Added `src/i18n.ts` with `defaultLocale = 'de-DE'` and `messages/de-DE.json`."),
            ]),
            ("2026-04-22", [
                ("user", "Why do new visitors see English dates?"),
                ("assistant", "They should get the default locale, which is de-DE, so dates render as 22.04.2026."),
                ("user", "No, that's wrong — we switched the default to de-AT when the Vienna office opened."),
                ("assistant", "You're right, `src/i18n.ts` on main has `defaultLocale = 'de-AT'`; the date bug was a hard-coded fallback, fixed."),
            ]),
        ],
        "question": "Which default locale does the docs site use?",
        "current": ["de-AT"],
        "stale": ["de-DE"],
    },
    {  # a diff's line given another value (session 30, written for this test)
        "name": "过期时间，改在 diff 里",
        "sessions": [
            ("2026-01-11", [
                ("user", "登录接口签发 JWT。"),
                ("assistant", "在 `app/auth/tokens.py` 里 `ACCESS_TOKEN_EXPIRE = timedelta(hours=2)`，access token 有效期 2 小时。"),
            ]),
            ("2026-02-24", [
                ("user", "安全审计说有效期太长，缩短一下。"),
                ("assistant", "改动如下：\n```diff\n-ACCESS_TOKEN_EXPIRE = timedelta(hours=2)\n+ACCESS_TOKEN_EXPIRE = timedelta(minutes=15)\n```\n前端拦截器会静默刷新。"),
            ]),
        ],
        "question": "access token 现在多久过期？",
        "current": ["minutes=15"],
        "stale": ["hours=2"],
    },
]  # fmt: skip
MARK = re.compile(r"\[until \d{4}-\d\d-\d\d|\[may be outdated: \d{4}-\d\d-\d\d says ")


def transcript(name: str, number: int, date: str, turns: Turns, cwd: str) -> str:
    """One session as Claude Code JSONL, its turns a minute apart from 10:00 UTC on ``date``.
    A turn ``("tool", json)`` is a tool call ``{"name", "input", "result"}``: the assistant's
    ``tool_use`` and the user line carrying its ``tool_result``."""
    sid = str(uuid.uuid5(uuid.NAMESPACE_URL, f"memd-test-truth/{name}/{number}"))
    start = datetime.fromisoformat(f"{date}T10:00:00+00:00")
    lines: list[dict[str, Any]] = []
    for role, text in turns:
        if role == "tool":
            call = json.loads(text)
            tool_id = f"toolu_{number}_{len(lines)}"
            use = {"type": "tool_use", "id": tool_id, "name": call["name"], "input": call["input"]}
            lines.append({"type": "assistant", "content": [use]})
            result = {"type": "tool_result", "tool_use_id": tool_id, "content": call["result"]}
            lines.append({"type": "user", "content": [result]})
        else:
            content: Any = text if role == "user" else [{"type": "text", "text": text}]
            lines.append({"type": role, "content": content})
    out, parent = [], None
    for i, line in enumerate(lines):
        line_id = str(uuid.uuid5(uuid.NAMESPACE_URL, f"{sid}/{i}"))
        at = (start + timedelta(minutes=i)).isoformat(timespec="milliseconds")
        role = line["type"]
        message: dict[str, Any] = {"role": role, "content": line["content"]}
        if role == "assistant":
            message.update(id=f"msg_{i}", type="message", model="claude-sonnet-4-5")
        envelope = {
            "parentUuid": parent,
            "isSidechain": False,
            "type": role,
            "cwd": cwd,
            "sessionId": sid,
            "version": "2.0.14",
            "uuid": line_id,
            "timestamp": at.replace("+00:00", "Z"),
            "message": message,
        }
        out.append(json.dumps(envelope, ensure_ascii=False))
        parent = line_id
    return "\n".join(out) + "\n"


def tool(name: str, args: dict[str, Any], result: str) -> tuple[str, str]:
    return ("tool", json.dumps({"name": name, "input": args, "result": result}))


def ingest_history(
    daemon: DaemonProcess, name: str, sessions: list[tuple[str, Turns]], newest_first: bool = True
) -> str:
    """Write ``sessions`` as the transcripts of project ``name`` and ingest them one by one,
    newest first; the project's path."""
    root: Path = daemon.root  # type: ignore[attr-defined]
    project = root / "projects" / re.sub(r"\W", "-", name)
    (project / ".git").mkdir(parents=True, exist_ok=True)
    cwd = str(project.resolve())
    folder = root / "transcripts" / re.sub(r"[/.]", "-", cwd)
    folder.mkdir(parents=True, exist_ok=True)
    order = sorted(enumerate(sessions), key=lambda p: p[1][0], reverse=newest_first)
    for number, (date, turns) in order:
        path = folder / f"s{number}.jsonl"
        path.write_text(transcript(name, number, date, turns, cwd))
        reply = daemon.request({"cmd": "ingest", "paths": [str(path)]}, timeout=300)
        assert reply.get("ok"), reply
    return cwd


def prompt_block(daemon: DaemonProcess, cwd: str, prompt: str) -> str:
    """What the real prompt hook injects for ``prompt`` in ``cwd``."""
    payload = {
        "session_id": str(uuid.uuid4()),
        "transcript_path": "/nonexistent/t.jsonl",
        "hook_event_name": "UserPromptSubmit",
        "prompt": prompt,
        "cwd": cwd,
    }
    out = daemon.hook("user-prompt-submit", payload)
    assert out.returncode == 0, out.stderr
    if not out.stdout.strip():
        return ""
    return str(json.loads(out.stdout)["hookSpecificOutput"]["additionalContext"])


def stale_as_current(block: str, stale_values: list[str], current_values: list[str]) -> list[str]:
    """Lines of ``block`` that show a stale value with no mark and no current value."""
    return [
        line
        for line in block.splitlines()
        if any(v.lower() in line.lower() for v in stale_values)
        and not MARK.search(line)
        and not any(v.lower() in line.lower() for v in current_values)
    ]


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DaemonProcess]:
    with served(tmp_path_factory.mktemp("truth")) as proc:
        yield proc


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_a_correction_wins_over_what_it_corrects(daemon: DaemonProcess, case: dict) -> None:
    cwd = ingest_history(daemon, case["name"], case["sessions"])
    block = prompt_block(daemon, cwd, case["question"])
    assert all(v.lower() in block.lower() for v in case["current"]), block
    assert not stale_as_current(block, case["stale"], case["current"]), block


def test_tools_for_different_jobs_are_all_kept(daemon: DaemonProcess) -> None:
    """ruff, uv and pyright are three tools, not three answers: none supersedes another."""
    cwd = ingest_history(
        daemon,
        "python tooling",
        [
            ("2026-02-01", [("user", "This project uses ruff for linting."), ("assistant", "Ran ruff: clean.")]),
            ("2026-02-08", [("user", "The project uses uv to manage the environment."), ("assistant", "Ran `uv sync`.")]),
            ("2026-02-15", [("user", "Type checking is done by pyright in this project."), ("assistant", "pyright: 0 errors.")]),
        ],
    )  # fmt: skip
    for text in ("Project uses ruff", "Project uses uv", "Project uses pyright"):
        out = daemon.memd("add", text, "--project", cwd, "--kind", "fact", "--json")
        assert out.returncode == 0, out.stderr
    listed = daemon.request({"cmd": "list", "project": cwd, "include_all": True, "limit": 500})
    memories = listed.get("memories") or listed.get("results") or []
    assert memories
    assert not [m for m in memories if m["status"] == "superseded"], memories
    for job, tool in (("linting", "ruff"), ("the environment", "uv"), ("types", "pyright")):
        block = prompt_block(daemon, cwd, f"What does this project use for {job}?")
        assert f"uses {tool}" in block, block
        assert not MARK.search(block), block


def test_an_older_session_read_later_does_not_supersede_the_newer(daemon: DaemonProcess) -> None:
    """A decision replaced later stays replaced when the older session is read last; the session
    brief's "Decisions:" shows only the current one."""
    cwd = ingest_history(
        daemon,
        "billing db",
        [
            ("2026-01-10", [("user", "We decided to use MySQL 8 for the billing database."), ("assistant", "OK, MySQL 8 it is.")]),
            ("2026-03-02", [("user", "We decided to use PostgreSQL 16 for the billing database instead of MySQL."), ("assistant", "Noted: PostgreSQL 16.")]),
        ],
    )  # fmt: skip
    listed = daemon.request({"cmd": "list", "project": cwd, "include_all": True, "limit": 500})
    decisions = {
        m["text"]: m["status"]
        for m in listed.get("memories") or listed.get("results") or []
        if m["kind"] == "decision"
    }
    assert any("PostgreSQL" in t and s == "active" for t, s in decisions.items()), decisions
    assert all(s == "superseded" for t, s in decisions.items() if "PostgreSQL" not in t), decisions
    brief = daemon.request({"cmd": "context", "cwd": cwd, "event": "session-start"})["context"]
    assert "PostgreSQL 16" in brief
    assert not stale_as_current(brief, ["MySQL 8"], ["PostgreSQL"]), brief


@pytest.mark.parametrize("newest_first", [True, False])
def test_a_decision_superseded_by_a_pr_closed_unmerged_is_current_again(
    daemon: DaemonProcess, newest_first: bool
) -> None:
    """A decision that a PR would have replaced stays current once the PR is closed unmerged,
    whichever session memd reads first: read in order, it is superseded, then restored."""
    cwd = ingest_history(
        daemon,
        f"session cache {newest_first}",
        [
            ("2026-01-12", [("user", "We decided to use Memcached for the session cache."), ("assistant", "Noted: Memcached for sessions.")]),
            ("2026-02-03", [("user", "Open a PR that moves the session cache to Redis."), ("assistant", "Opened PR #77 that switches the session cache from Memcached to Redis.")]),
            ("2026-02-20", [("user", "Load tests say Redis buys us nothing here, close that PR."), ("assistant", "Closed #77 without merging and deleted the branch; the session cache stays on Memcached.")]),
        ],
        newest_first=newest_first,
    )  # fmt: skip
    listed = daemon.request({"cmd": "list", "project": cwd, "include_all": True, "limit": 500})
    memories = listed.get("memories") or listed.get("results") or []
    decision = next(m for m in memories if m["kind"] == "decision" and "Memcached" in m["text"])
    assert decision["status"] == "active", memories
    history = daemon.request({"cmd": "show", "id": decision["id"]})["memory"]["history"]
    assert newest_first or any("its change was called off" in str(e.get("why")) for e in history)


def test_a_claim_said_again_after_a_change_is_current() -> None:
    """A version bumped and rolled back: the first statement is current again, unmarked; the
    bump is marked with the rollback."""
    results = [
        {"id": "a", "project": "p", "kind": "excerpt", "score": 0.9, "sources": [{"timestamp": "2026-02-02T10:00:00Z"}],
         "text": "assistant: .nvmrc pins 20.11.1 and package.json has engines >=20."},
        {"id": "b", "project": "p", "kind": "excerpt", "score": 0.8, "sources": [{"timestamp": "2026-02-20T10:00:00Z"}],
         "text": "assistant: Bumped .nvmrc to 22.4.1 and the Dockerfile base to node:22.4.1-slim."},
        {"id": "c", "project": "p", "kind": "excerpt", "score": 0.1, "relevant": False, "sources": [{"timestamp": "2026-03-04T10:00:00Z"}],
         "text": "user: We rolled back the Node upgrade. .nvmrc and the Dockerfile are back to 20.11.1."},
    ]  # fmt: skip
    out = {r.id: r for r in stale.mark_replaced([hit(r) for r in results], {}, MINILM)}
    assert "[until" not in out["a"].text
    assert (
        "22.4.1-slim [until 2026-03-04; now: .nvmrc and the Dockerfile are back to 20.11.1]."
        in (out["b"].text)
    )
    assert out["c"].relevant and out["c"].score > out["b"].score


def test_why_a_claim_is_replaced_does_not_depend_on_the_hash_seed() -> None:
    """A diff that takes two packages out retires both: the reason names the same one in every
    run (it named either, by the order of a set)."""
    code = (
        "from memd.store import current\n"
        "old = 'assistant: Installed Redux Toolkit (`@reduxjs/toolkit`) and `react-redux`.'\n"
        'new = \'assistant: ```diff --- a/package.json +++ b/package.json "dependencies": { '
        '-    "@reduxjs/toolkit": "^2.2.1", -    "react-redux": "^9.1.0", '
        '+    "zustand": "^4.5.2", ``` Replaced the slices with zustand stores.\'\n'
        "print(current.replaced_claim(new, old, 0.9, 'm'))\n"
    )
    outs = outputs_by_seed(code)
    assert len(outs) == 1
    assert "retires '@reduxjs/toolkit'" in outs.pop()


def test_an_upgrade_rolled_back_to_the_old_version_is_marked_and_the_first_is_not() -> None:
    """ "Upgraded … from Python 3.10.14 to 3.11.9", then "rolled back, … back on the old Python
    3.10.14": the upgrade is marked with the rollback, the first statement is current again
    and unmarked (its value was retired as "python 3.10.14", two words; the rollback names it
    as the version it is back on, not one it undoes)."""
    results = [
        {"id": "a", "project": "p", "kind": "excerpt", "score": 0.9, "sources": [{"timestamp": "2026-03-01T10:00:00Z"}],
         "text": "claude: The ingest box runs Python 3.10.14 from the deadsnakes PPA."},
        {"id": "b", "project": "p", "kind": "excerpt", "score": 0.8, "sources": [{"timestamp": "2026-03-10T10:00:00Z"}],
         "text": "claude: Upgraded the ingest box from Python 3.10.14 to 3.11.9; the venv is rebuilt."},
        {"id": "c", "project": "p", "kind": "excerpt", "score": 0.7, "sources": [{"timestamp": "2026-03-20T10:00:00Z"}],
         "text": "user: The 3.11 upgrade got rolled back, the ingest box is back on the old Python 3.10.14."},
    ]  # fmt: skip
    out = {r.id: r for r in stale.mark_replaced([hit(r) for r in results], {}, MINILM)}
    assert "[until" not in out["a"].text
    assert "3.11.9 [until 2026-03-20; now: The 3.11 upgrade got rolled back" in out["b"].text


@pytest.mark.parametrize(
    ("first", "upgrade", "rollback", "marked"),
    [
        (
            "claude: 采集机上跑的是 Python 3.10.14，装在 deadsnakes PPA 里。",
            "claude: 采集机已从 Python 3.10.14 升级到 3.11.9，venv 已重建。",
            "user: 3.11 的升级回滚了，采集机回滚到 Python 3.10.14。",
            "升级到 3.11.9，venv 已重建 [until 2026-03-20; now: 3.11 的升级回滚了",
        ),
        (
            "claude: 前端依赖 `vite` 版本 `5.2.8`，构建通过。",
            "claude: 把 vite 升到了 `5.4.1`，dev server 启动更快。",
            "claude: 5.4.1 和插件不兼容，vite 已退回 `5.2.8`，`pnpm build` 通过。",
            "dev server 启动更快 [until 2026-03-20; now: 5.4.1 和插件不兼容",
        ),
    ],
    ids=["python", "vite"],
)
def test_a_rollback_told_in_chinese_leaves_the_version_it_is_back_on_current(
    first: str, upgrade: str, rollback: str, marked: str
) -> None:
    """ "回滚到 Python 3.10.14", "vite 已退回 `5.2.8`": the upgrade is marked, the first
    statement holds again, unmarked (it was marked "until" the rollback that restored it, and
    "从 Python 3.10.14 升级到" retired nothing, its value being two words)."""
    out = _marked(("2026-03-01", first), ("2026-03-10", upgrade), ("2026-03-20", rollback))
    assert "[until" not in out["a"]
    assert marked in out["b"]


def test_a_rollback_marks_the_upgrade_and_not_the_version_it_is_back_on() -> None:
    """ "Rolled back to 4.2.2: … - I kept the TileMapLayer branch": the upgrade's request is
    marked (keeping a branch keeps no version), the first setup's 4.2.2 is not (twenty-sixth
    set, read after its blind run)."""
    results = [
        {"id": "a", "project": "p", "kind": "excerpt", "score": 0.9, "sources": [{"timestamp": "2024-05-06T10:00:00Z"}],
         "text": "claude: Set up: - `.gitignore`: `.godot/` excluded - `.godot-version`: `4.2.2` - `.github/workflows/export.yml`: container `barichello/godot-ci:4.2.2`"},
        {"id": "b", "project": "p", "kind": "excerpt", "score": 0.8, "sources": [{"timestamp": "2024-06-18T10:00:00Z"}],
         "text": "user: upgrade to Godot 4.3 stable, I want TileMapLayer"},
        {"id": "c", "project": "p", "kind": "excerpt", "score": 0.7, "sources": [{"timestamp": "2024-06-25T10:00:00Z"}],
         "text": "claude: Rolled back to 4.2.2: - reverted `e4a91c0` (TileMapLayer conversion) - `.godot-version` → `4.2.2` - `project.godot` features back to `\"4.2\"`. I kept the TileMapLayer branch as `feat/tilemaplayer`."},
    ]  # fmt: skip
    out = {r.id: r for r in stale.mark_replaced([hit(r) for r in results], {}, MINILM)}
    assert "TileMapLayer [until 2024-06-25; now: Rolled back to 4.2.2:]" in out["b"].text
    assert "[until" not in out["a"].text


def test_of_two_replacements_said_at_once_the_mark_quotes_the_closer_one() -> None:
    """Two newer statements of one time replace an older one: the mark quotes the one on the
    older's subject (the config line), not the one that happens to come first; the choice was
    made by the order of a set of strings, so it changed from one run to the next."""
    results = [
        {"id": "a", "project": "p", "kind": "excerpt", "score": 0.9, "sources": [{"timestamp": "2026-04-07T10:00:00Z"}],
         "text": "claude: config/db.py 里 DB_POOL_SIZE=20，max_overflow=5。"},
        {"id": "b", "project": "p", "kind": "decision", "score": 0.8, "sources": [{"timestamp": "2026-04-21T10:00:00Z"}],
         "text": "DBA 把数据库连接上限调到 400 了，我们这边 DB_POOL_SIZE 改成 50，已经上线。"},
        {"id": "c", "project": "p", "kind": "excerpt", "score": 0.7, "sources": [{"timestamp": "2026-04-21T10:00:00Z"}],
         "text": "claude: 收到，config/db.py 现在是 DB_POOL_SIZE=50。"},
    ]  # fmt: skip
    for order in (results, results[::-1]):
        out = {r.id: r for r in stale.mark_replaced([hit(r) for r in order], {}, MINILM)}
        assert "[until 2026-04-21; now: 收到，config/db.py 现在是 DB_POOL_SIZE=50]" in out["a"].text


def test_a_value_retired_by_name_is_marked_though_another_is_said_again() -> None:
    """SMTP on 2525 instead of 1025 retires 1025 alone: a later line saying the web UI is
    still on 8025 does not make the older statement current again."""
    results = [
        {"id": "a", "project": "p", "kind": "excerpt", "score": 0.9, "sources": [{"timestamp": "2026-02-16T10:00:00Z"}],
         "text": "claude: Added a mailhog service: SMTP on port 1025, web UI on 8025."},
        {"id": "b", "project": "p", "kind": "excerpt", "score": 0.8, "sources": [{"timestamp": "2026-04-06T10:00:00Z", "session_id": "s2"}],
         "text": "user: Port 1025 is taken, so I put MailHog's SMTP on 2525 instead of 1025."},
        {"id": "c", "project": "p", "kind": "excerpt", "score": 0.7, "sources": [{"timestamp": "2026-04-06T10:05:00Z", "session_id": "s2"}],
         "text": "claude: Updated EMAIL_PORT to 2525 in settings/dev.py. The web UI is still on 8025."},
    ]  # fmt: skip
    out = {r.id: r for r in stale.mark_replaced([hit(r) for r in results], {}, MINILM)}
    assert "on 8025 [until 2026-04-06; now: Port 1025 is taken" in out["a"].text


def test_a_change_proposed_in_a_pr_closed_unmerged_never_held() -> None:
    """A TTL raised in a PR that was closed without merging: the first value is current and
    unmarked, the PR's value is marked with its closing (sixteenth set, read)."""
    results = [
        {"id": "a", "project": "p", "kind": "excerpt", "score": 0.9, "sources": [{"timestamp": "2024-01-15T10:00:00Z"}],
         "text": "claude: Writes go to Redis with `CATALOG_TTL_SECONDS=600` from settings, i.e. 600 seconds (10 minutes)."},
        {"id": "b", "project": "p", "kind": "excerpt", "score": 0.8, "sources": [{"timestamp": "2024-02-08T10:00:00Z"}],
         "text": "claude: Opened PR #482 that sets `CATALOG_TTL_SECONDS=3600` (3600 seconds) in `settings/prod.py`. Waiting on review."},
        {"id": "c", "project": "p", "kind": "excerpt", "score": 0.7, "sources": [{"timestamp": "2024-02-12T10:00:00Z"}],
         "text": "claude: Closed #482 without merging and deleted the branch. The TTL stays where it was."},
    ]  # fmt: skip
    out = {r.id: r for r in stale.mark_replaced([hit(r) for r in results], {}, MINILM)}
    assert "[until" not in out["a"].text
    assert "[until 2024-02-12; now: Closed #482 without merging" in out["b"].text
    merged = dict(results[2], text="claude: Closed #482 after it was merged.")
    out = {
        r.id: r for r in stale.mark_replaced([hit(r) for r in (*results[:2], merged)], {}, MINILM)
    }
    assert "[until 2024-02-08; now: Opened PR #482" in out["a"].text


def test_a_correction_in_the_same_session_marks_the_value_it_corrects() -> None:
    """不对，… 现在是 10.0.3.21 corrects the host the agent read an hour before, in the same
    session: said as a correction, it marks it. A later note that keeps the port and the
    database name does not make the old host current again."""
    results = [
        {"id": "a", "project": "p", "kind": "excerpt", "score": 0.9, "sources": [{"timestamp": "2024-09-23T10:01:30Z", "session_id": "s1"}],
         "text": "[2024-09-23] user: 测试环境数据库的地址是多少？\nassistant: 根据 `deploy/test/values.yaml`，`DB_HOST: 10.0.3.12`，端口 3306，库名 `mall_test`。"},
        {"id": "b", "project": "p", "kind": "excerpt", "score": 0.6, "sources": [{"timestamp": "2024-09-23T10:04:30Z", "session_id": "s1"}],
         "text": "[2024-09-23] user: 不对，那个是老的测试库，上个月迁移后已经下线了。现在是 10.0.3.21，端口没变。"},
        {"id": "c", "project": "p", "kind": "excerpt", "score": 0.5, "sources": [{"timestamp": "2024-10-14T10:00:00Z", "session_id": "s2"}],
         "text": "[2024-10-14] assistant: 已在 README 补充：数据库地址 10.0.3.21:3306，库名 `mall_test`。"},
    ]  # fmt: skip
    out = {r.id: r for r in stale.mark_replaced([hit(r) for r in results], {}, MINILM)}
    assert "`mall_test` [until 2024-09-23; now: 不对" in out["a"].text


@pytest.mark.parametrize(
    ("text", "marked"),
    [
        ("assistant: They should be getting the default locale, which is en-GB. user: No, that's wrong — the default is actually en-AU now.",
         "which is en-GB [until 2024-04-22; now: No, that's wrong"),
        ("assistant: According to `docker-compose.yml` it's published on 8081 on the `gateway` service. user: No, that's the old compose file. We moved the gateway to 7443 with TLS.",
         "`gateway` service [until 2024-04-22; now: No, that's the old compose file. We moved"),
    ],
)  # fmt: skip
def test_a_value_corrected_within_one_excerpt_is_marked_there(text: str, marked: str) -> None:
    """An excerpt that holds the agent's answer and the user's "No, that's wrong — …" after it
    (eighteenth and seventeenth corrected-facts sets, read; the correction's value may come in
    its next sentence): a block may show the answer alone, the correction with another item,
    so the answer carries its mark."""
    results = [
        {"id": "a", "project": "p", "kind": "excerpt", "score": 0.9, "sources": [{"timestamp": "2024-02-12T10:00:10Z", "session_id": "s1"}],
         "text": "user: Add the pricing page. / assistant: Done, `/pricing` renders."},
        {"id": "b", "project": "p", "kind": "excerpt", "score": 0.8, "sources": [{"timestamp": "2024-04-22T10:00:10Z", "session_id": "s3"}],
         "text": text},
    ]  # fmt: skip
    out = {r.id: r for r in stale.mark_replaced([hit(r) for r in results], {}, MINILM)}
    assert marked in out["b"].text
    assert out["b"].replaced_by == ""


def test_a_change_in_an_excerpt_that_says_no_wait_marks_within_the_session() -> None:
    """ "No wait, sorry, legal just said 50 MB" and the change made after it, in the same
    session as the 25 MB it replaces (nineteenth corrected-facts set, read)."""
    results = [
        {"id": "a", "project": "p", "kind": "excerpt", "score": 0.9, "sources": [{"timestamp": "2024-04-08T10:00:10Z", "session_id": "s2"}],
         "text": "assistant: Updated multer to `fileSize: 25 * 1024 * 1024`, nginx to `client_max_body_size 25m;`, and the dropzone hint to 'max 25 MB'. Want me to deploy?"},
        {"id": "b", "project": "p", "kind": "excerpt", "score": 0.8, "sources": [{"timestamp": "2024-04-08T10:00:30Z", "session_id": "s2"}],
         "text": "user: No wait, sorry, legal just said 50 MB, some scans are huge. / assistant: Changed everything to 50 MB before deploying: multer `fileSize: 50 * 1024 * 1024`, nginx `client_max_body_size 50m;`."},
    ]  # fmt: skip
    out = {r.id: r for r in stale.mark_replaced([hit(r) for r in results], {}, MINILM)}
    assert "[until 2024-04-08; now: Changed everything to 50 MB" in out["a"].text


def test_a_value_the_replacement_says_is_kept_is_not_marked() -> None:
    """Staging moves to chart 3.2.0 and the same reply says production keeps 3.1.4
    (nineteenth corrected-facts set, read): both hold."""
    results = [
        {"id": "a", "project": "p", "kind": "excerpt", "score": 0.9, "sources": [{"timestamp": "2024-03-04T10:00:10Z", "session_id": "s1"}],
         "text": "claude: `helm upgrade --install order-service acme/order-service --version 3.1.4 -n prod`，6 个副本就绪。"},
        {"id": "b", "project": "p", "kind": "excerpt", "score": 0.8, "sources": [{"timestamp": "2024-04-10T10:00:10Z", "session_id": "s2"}],
         "text": "claude: staging 已升级：`helm upgrade order-service acme/order-service --version 3.2.0 -n staging`。生产保持 3.1.4。"},
    ]  # fmt: skip
    out = {r.id: r for r in stale.mark_replaced([hit(r) for r in results], {}, MINILM)}
    assert "[until" not in out["a"].text
    moved = dict(
        results[1],
        text="claude: 生产已升级：`helm upgrade order-service acme/order-service --version 3.2.0 -n prod`。",
    )
    out = {r.id: r for r in stale.mark_replaced([hit(r) for r in (results[0], moved)], {}, MINILM)}
    assert "[until 2024-04-10" in out["a"].text


def test_a_mark_quotes_what_a_diff_adds() -> None:
    sentence = "已升级到 Go 1.23: ```diff --- a/go.mod +++ b/go.mod -go 1.21 +go 1.23 -FROM golang:1.21.6-alpine AS builder +FROM golang:1.23.2-alpine AS builder ```"
    assert stale.mark_text(sentence, "2024-05-10") == (
        " [until 2024-05-10; now: 已升级到 Go 1.23: go 1.23; FROM golang:1.23.2-alpine AS builder]"
    )


def test_a_mark_quotes_a_tables_changed_rows_and_a_diffs_added_line() -> None:
    table = "Updated the limits: | limit | before | after | |---|---|---| | max upload size | 25 MB | 100 MB | | share links | 10 | 10 |"
    assert stale.mark_text(table, "2024-03-15") == (
        " [until 2024-03-15; now: Updated the limits: max upload size: 25 MB → 100 MB]"
    )
    diff = "```diff --- a/alertmanager.yml +++ b/alertmanager.yml @@ -8,7 +8,7 @@ receivers: - - channel: '#ops-alerts' + - channel: '#ops-incidents' ```"
    assert stale.mark_text(diff, "2024-08-26") == (
        " [until 2024-08-26; now: channel: '#ops-incidents']"
    )  # (not the hunk's "8,7 @@ receivers:", nor a line emptied by the YAML list's dash)


def test_a_mention_of_the_old_value_neither_replaces_nor_disputes() -> None:
    """ "cn-hangzhou 的旧 SLB 还没释放" names the old region after the move to cn-beijing: it
    replaces nothing of the older memory (it gives no new value) and does not mark the move
    itself "may be outdated" (twenty-third set, read)."""
    results = [
        {"id": "a", "project": "p", "kind": "excerpt", "score": 0.9, "sources": [{"timestamp": "2024-03-01T10:00:00Z"}],
         "text": "claude: `infra/provider.tf`：`provider \"alicloud\" { region = \"cn-hangzhou\" }`。`terraform import` 了现有的 VPC、2 台 ECS 和 SLB。"},
        {"id": "b", "project": "p", "kind": "excerpt", "score": 0.8, "sources": [{"timestamp": "2024-03-18T10:00:00Z"}],
         "text": "claude: 主站点迁到北京：```diff - region = \"cn-hangzhou\" + region = \"cn-beijing\" ``` 3 月 16 日凌晨切的 DNS。"},
        {"id": "c", "project": "p", "kind": "excerpt", "score": 0.7, "sources": [{"timestamp": "2024-04-01T10:00:00Z"}],
         "text": "claude: 费用中心看，主要是 cn-hangzhou 的旧 SLB 和 ECS 还没释放，约 1800 元。"},
    ]  # fmt: skip
    out = {r.id: r for r in stale.mark_replaced([hit(r) for r in results], {}, MINILM)}
    assert '[until 2024-03-18; now: 主站点迁到北京： region = "cn-beijing"' in out["a"].text
    assert "[until 2024-04-01" not in out["a"].text
    hits = [hit(r) for r in results]
    out = {r.id: r for r in disputed.mark_disputed(hits, "主站点部署在哪个 region？")}
    assert "may be outdated" not in out["b"].text


def test_a_later_mention_of_the_old_value_says_which_is_current() -> None:
    """ "cn-shanghai 那个旧桶还没删" after the move to cn-shenzhen names the old region as old:
    it is marked with the change, so the line does not read as where the bucket is; a later
    line that names it without calling it old is left as it is (twenty-fourth set, read)."""
    results = [
        {"id": "a", "project": "p", "kind": "excerpt", "score": 0.9, "sources": [{"timestamp": "2024-04-15T10:00:00Z"}],
         "text": "claude: 静态资源放在 OSS bucket `foo-assets`，地域 cn-shanghai。"},
        {"id": "b", "project": "p", "kind": "excerpt", "score": 0.8, "sources": [{"timestamp": "2024-05-06T10:00:00Z"}],
         "text": "claude: 迁移完成： | 项 | 迁移前 | 迁移后 | |---|---|---| | 地域 | cn-shanghai | cn-shenzhen | | bucket | foo-assets | foo-assets-sz |"},
        {"id": "c", "project": "p", "kind": "excerpt", "score": 0.7, "sources": [{"timestamp": "2024-06-03T10:00:00Z"}],
         "text": "claude: 账单涨了：cn-shanghai 那个旧桶还没删，两边各存了一份。已经加了生命周期规则。"},
    ]  # fmt: skip
    out = {r.id: r for r in stale.mark_replaced([hit(r) for r in results], {}, MINILM)}
    assert (
        "地域 cn-shanghai [until 2024-05-06; now: 迁移完成： 地域: cn-shanghai → cn-shenzhen"
        in out["a"].text
    )
    assert "两边各存了一份 [cn-shanghai: until 2024-05-06; now: 迁移完成：" in out["c"].text
    plain = dict(results[2], text="claude: 账单涨了：cn-shanghai 的流量费占了一半。")
    out = {
        r.id: r for r in stale.mark_replaced([hit(r) for r in (*results[:2], plain)], {}, MINILM)
    }
    assert ": until" not in out["c"].text


@pytest.mark.parametrize(
    ("new", "old"),
    [
        ("ops moved the nightly ingest from 01:00 to 02:30", "the ingest batch starts at 01:00 UTC"),
        ("We switched session storage to Redis instead of Memcached.", "CACHES points at Memcached on cache-1:11211."),
        ("Actually I'm in Rotterdam now, not Lisbon.", "I'm in Lisbon, so use my local time."),
        ("Deploy alerts now go to #deploys.", "Deploy alerts go to #ops-firehose."),
        ("Set the request timeout to 45s in config/prod.yaml.", "The request timeout is 30s for every upstream call."),
        ("Nightly backups now land in /mnt/backups/pg, the old volume was too small.", "Nightly backups go to /data/backups/pg on the db host."),
        ("I read postgresql.conf on prod: `max_connections 400` since the pooler change.", "postgresql.conf sets `max_connections 100` on the primary."),
        ("Marta has left the company.", "Marta Kowalczyk owns billing-svc."),
        ("The full suite is `just test-all` now.", "Run the full suite with `make test`."),
        ("DBA 把上限调高了，我们这边 DB_POOL_SIZE 改成 50。", "config/db.py 里 DB_POOL_SIZE=20。"),
        ("我已经改用 Neovim 了，不用再维护那份插件配置。", "我平时用 VS Code，帮我在仓库里加一份推荐插件的配置。"),
        ("Run the consumers with 4 workers instead of 2. Deploy after lunch.", "consumer/main.py starts WORKERS = 2 processes."),
        ("Release notes are written by Priya Nair from this sprint on.", "Tomasz Wojcik writes the release notes for every tag."),
        ("We moved the base image to node:20-bookworm-slim for faster installs.", "The Dockerfile starts `FROM node:20-alpine`."),
        ("运维说线上已经是 Redis 7.2 了。", "我们线上是 Redis 6.2，先别用新命令。"),
        ("We tried 2.9 on a branch, the DAG parser broke, and we reverted.", "Next sprint: upgrade Airflow to 2.9."),
        ("分支命名改了：统一用 fix/工单号，比如 fix/OPS-12。", "我们的分支命名是 bugfix/描述，比如 bugfix/login。"),
        ("The cert renewal job runs on Tuesdays at 04:00, so avoid deploys then.", "The cert renewal job runs on Mondays at 02:00, so no deploys on Monday nights."),
        ("redis.conf now says maxmemory = 2gb (commit 9f1e2d3 by Ana, 'raise the cache ceiling for peak load').", "redis.conf sets maxmemory = 512mb with allkeys-lru."),
        ("Push them to metrics-eu-2; metrics-eu-1 belongs to the old account.", "Push the dashboards to metrics-eu-1."),
        ("react-router is 6.22.3 again and the lockfile is restored.", "Upgraded react-router to 7.1.0 and rewrote the loaders."),
        ("Since Tuesday the price import runs every 15 minutes.", "The price import pulls from the supplier feed every 60 minutes."),
        ("Incident pages switched to #sev-room this week.", "The pager bot posts each incident to #oncall-noise."),
        ("我之前看错了，线上 MySQL 其实是 8.0。", "线上 MySQL 是 5.7，帮我看看有没有不兼容的语法。"),
        ("我已经搬到柏林了，时区是 Europe/Berlin，提醒还是早上 8 点发。", "我的时区是 Asia/Tokyo，提醒按我这边早上 8 点发。"),
        ("Updated the host in settings to files.acme-transfer.io and pinned its key.", "The importer connects to sftp.acme-transfer.net and lists /inbox."),
        ("Changed the channel in ops/pager.py and the runbook to #sev-room.", "Added a pager step to ops/pager.py that posts the service and owner to #oncall-noise."),
        ("预发环境的新地址是 pre2.lanting.example，前端配置改一下。", "预发环境的域名是 pre.lanting.example，帮我把前端配置加上。"),
        ("告警改推到企业微信群。钉钉那个群上周解散了，相关配置删掉。", "告警推送到钉钉的「值班」群，webhook 在 secret/alert/dingtalk。"),
        ("I misspoke, the pool size should be 30.", "Set the pool size to 20 in config/db.py."),
        ("不好意思我说错了，上限是 80，合同里写的是 80。", "给导出接口加个限流，单用户上限 120。"),
        ("双方商定上线日期定在 6月15日。", "商城项目要在 5月31日 上线，帮我按这个上线日期排期。"),
        ("Bumped .nvmrc to 22.11.0 and engines.node to '>=22.11 <23'.", "Added .nvmrc with 18.19.0, set engines.node to '>=18.19 <19' in package.json, and changed actions/setup-node in .github/workflows/ci.yml to node-version-file: .nvmrc."),
        ("I've been on Helix for a month now and I'm not going back.", "I use Sublime Text for everything, so can you add a project file for it?"),
        ("Point the session store at the new sessions table in Postgres.", "Sessions are stored in MongoDB, collection `sessions` in the auth database."),
        ("I was wrong about the flag service earlier. Here we run a self-hosted Unleash.", "We use LaunchDarkly for feature flags, so gate the checkout behind a flag."),
        ("公司给我配了台 MacBook，以后都在 macOS 上开发了。", "我的开发机是 Windows + WSL2，脚本里的路径要注意兼容。"),
        ("Small update: I started at Northpeak Analytics this week.", "I work at Brightwave Labs on the data team."),
        ("I relocated to Munich last week, so fix the reminder.", "I'm based in Porto, so use my local time."),
        ("我已经跳槽到云帆数据了，周末才会看这个项目。", "我在星河科技上班，平时只有晚上有空。"),
        ("我现在搬到成都了，提醒时间不变。", "我住在杭州，提醒按东八区发。"),
        ("Oh, I switched to fish last month, so the old completion does nothing.", "My shell is zsh with oh-my-zsh."),
        ("Big news: I'm the engineering manager for the team now.", "I'm a backend engineer on the payments team."),
        ("我现在是架构师了，主要做方案评审。", "我是后端开发，主要写 Go。"),
        ("After the reorg I report to Hiroshi Tanaka.", "My manager Dana Whitfield wants the review by Friday."),
        ("Put +1-555-0199 as my number in the table.", "I'm the secondary; my number is +1-555-0142."),
        ("Elixir is my favourite language now.", "Kotlin is my favourite language, so use Kotlin scripts."),
        ("vite.config.ts 的 /api 代理指向 http://localhost:8088，README 也同步了。", "在 vite.config.ts 里把 /api 代理到 http://localhost:8000。"),
        ("Migrated the repo: ran `pnpm import`, removed yarn.lock and added pnpm-workspace.yaml.", "Added actions/cache keyed on yarn.lock for the yarn cache directory."),
        ("Paylink reshuffled their partner team - our account manager is Tomás Ferreira now.", "Drafted it to Helen Varga (Paylink partner support) with the event IDs."),
        ("已把 main 分支的 required approvals 调整为 2。", "已开启 main 分支保护：合并前需要 1 个 approval。"),
        ("Updated REDIS_URL in worker/config.py, api/settings.py and both Helm values files to redis://redis-east.internal:6379/0.", "Set the REDIS_URL default in worker/config.py to redis://cache-01.internal:6379/0."),
        ("最近我彻底转到 Neovim 了，之前那套编辑器配置用不上了。", "我平时用 VS Code，帮我加一份推荐插件。"),
        ("First week at Northwind Labs, new laptop: set my git email.", "I work at Acme Corp, so sign every commit."),
        ("那台安卓送修了，接下来我用 iPhone 15 做真机测试。", "真机调试我用的是 Pixel 7，帮我写个 adb 脚本。"),
        ("Sorry, I said 8080 but it's 8081.", "The admin API listens on 8080, add it to the nginx upstreams."),
        ("不好意思说错了，不是 8443，是 9443。", "网关服务监听 8443，帮我把端口映射加上。"),
        ("Life update: I joined Helio Systems this month.", "Quick intro: I'm a backend engineer at Northwind Labs."),
        ("跟你同步一下，我这个月转岗做架构师了。", "先自我介绍一下：我是后端开发，主要写 Java。"),
        ("I've ditched VS Code for Neovim.", "Generate a settings file for my editor, I use VS Code."),
        ("已把 handler 里的上限改为 50MB，前端的校验提示也更新了。", "在 upload/handler.go 里加了 MaxBytesReader，上限 10MB，超出返回 413；"),
        ("已升级到 JDK 21（Java 21 LTS）：镜像用 temurin-21，maven.compiler.release 设为 21，Spring Boot 里开启 spring.threads.virtual.enabled=true。", "已升级到 JDK 17：镜像用 temurin-17，maven.compiler.release 设为 17，测试全部通过。"),
        ("It connects to db-stg-02.internal... sorry, I meant pg-staging-01.internal, the old box was retired.", "Staging Postgres is at db-stg-02.internal, port 5432."),
        ("There was a reorg: I report to Tomás now.", "When drafting my weekly update, address it to Priya, she's my manager."),
        ("已回退：go.mod 恢复成 `go 1.21`，CI 镜像改回 golang:1.21-alpine。", "把 go.mod 改成 `go 1.22`，CI 镜像换成 golang:1.22-alpine。"),
        ("Now that I've moved over to the data team I own the Airflow DAGs.", "I'm on the mobile team, so review this SwiftUI view."),
        ("我已经从测试组转到了运维组，今天开始接手监控。", "我在测试组，负责接口自动化。"),
        ("The cleanup CronJob now has `schedule: \"15 3 * * *\"`.", "Created the cleanup CronJob with `schedule: \"0 1 * * *\"`."),
        ("报表任务改到每天早上 6 点半跑了。", "报表任务每天早上 8 点跑。"),
        ("We got off Travis after the pricing change; builds run on Buildkite.", "Travis builds the docs on every push."),
        ("最近换成 Helix 了，装了 ruff 的 LSP，怎么让它保存时格式化？", "帮我配下 Sublime，保存时用 ruff 格式化。"),
        # a chat between named people: a person's one-value fact, a value retired by name
        ("Caroline: Small update, I started at Northpeak Analytics this week.", "Caroline: I work at Brightwave Labs on the data team."),
        ("Jon: We moved from Austin to Denver last month.", "Jon: We live in Austin, near the lake."),
        # retired in passing: ditched for, a plan cancelled, a line that is stale; a dotted key
        ("I ditched VS Code for Zed last month, so the keybindings need redoing. We use VS Code settings sync.", "We use VS Code settings sync for the team."),
        ("Yes, that PR is the last piece; the Papertrail plan is cancelled at month end.", "Workers ship logs through the sidecar to Papertrail; search the orders-worker system there."),
        ("Remember we cut every other Tuesday now — the Thursday line in RELEASING.md is stale.", "Per RELEASING.md we cut release branches every Thursday at 15:00 UTC."),
        ("执行 `pip config set global.index-url https://nexus.kdyun.cn/simple` 就行。", "本地也设上就行：`pip config set global.index-url https://pypi.tuna.tsinghua.edu.cn/simple`。"),
        ("Two more places: the receipt reply-to and the 404 page. I switched both to help@kelpie.io.", "The `footer.mjml` partial uses support@kelpie.io, and the reply-to on receipts is the same address."),
        # a question that names the user's one tool of a job: they are on it
        ("GoLand 太吃内存了，我已经全面换成 Neovim 了。", "GoLand 里怎么配一个跑 `go generate` 的 run configuration？"),
        # one setting's key with another value, whatever else the sentences say
        ("Confirmed `rollout_percent: 50` in flags.yaml.", "Added `new_checkout` to `config/flags.yaml` with `rollout_percent: 10`, bucketing on a hash of user_id."),
        # a diff's removed line gives the key its old value no more (an excerpt keeps it flat)
        ("Proposed change in gateway.yaml: ``` - requests_per_minute: 100 + requests_per_minute: 250 ``` It applies to all keys.", "Added a token bucket in the gateway: `rate_limit.search.requests_per_minute: 100` per API key."),
        ("Updated gateway.yaml:\n```\n-    requests_per_minute: 100\n+    requests_per_minute: 250\n```", "Set `requests_per_minute: 100` per API key."),
        # a key changed "to" itself, a plan's arrow, a branch renamed, "used to use", 以前用
        ("Changed `line-length = 100` to `line-length = 120` in pyproject.toml.", "Added to pyproject.toml: `line-length = 100` under [tool.ruff]."),
        ("我已经把 ACCESS_TOKEN_TTL 从 2 小时改成 30 分钟（1800 秒），refresh token 保持 7 天不变。", "已在 auth/tokens.py 实现签发：access token 有效期 2小时，refresh token 7 天。"),
        ("日志保留天数从 30 天改成了 14 天。", "日志保留 30 天。"),  # 从 X 天改成: a number on its subject
        # a change called off: the value it would have brought is retired
        ("Arch review outcome: Kafka for notifications is rejected.", "Dan suggested moving notifications to Kafka since the data team runs a cluster."),
        ("评审结论：不换 Dragonfly，继续用 Redis。", "架构组有人提议把缓存换成 Dragonfly，你帮忙压测对比一下。"),
        ("The Kafka migration is cancelled; we stay on RabbitMQ.", "We're migrating the order events from RabbitMQ to Kafka next sprint."),
        ("We're not moving to Kafka after all.", "We're migrating the order events from RabbitMQ to Kafka next sprint."),
        ("We decided against Vitest; Jest stays.", "Let's switch the unit tests from Jest to Vitest."),
        ("迁移 Kafka 的计划取消了，继续用 RabbitMQ。", "下个迭代把订单事件从 RabbitMQ 迁到 Kafka。"),
        # a rollback told as done, whatever else it names (the newer version in a comment)
        ("Rolled back: requirements.txt is back to `pydantic==2.7.1`, with a comment `# 2.8.0 rejects None for Optional[Decimal] with our validator, see #431`.", "Merged. requirements.txt now has `pydantic==2.8.0`."),
        ("为了先止血，我执行了 `kubectl -n prod rollout undo deploy/user-center`，现在镜像是 harbor.xcorp.cn/base/user-center:1.8.3。", "已发布：镜像 `harbor.xcorp.cn/base/user-center:1.9.0`，滚动更新完成。"),
        # "still" about another thing, beside a move: the older's value is replaced
        ("user: terraform plan fails on the analytics stack. / claude: Your profile still defaults to us-east-1, but the stack was migrated to eu-central-1 for the GDPR work.", 'user: Which AWS region is the analytics stack in? / claude: Everything is in us-east-1; the Terraform provider block sets `region = "us-east-1"`.'),
        ("Applied: ~ region = \"us-east-1\" -> \"eu-central-1\" # forces replacement", "Added the exports bucket with the default provider, which is us-east-1."),
        ("Done: git branch -m master trunk, then the default branch became trunk.", "Opened the PR against `master`, the repo's default branch."),
        ("那是以前用 webpack 时留下的，现在已经用不上了。", "活动页的 webpack 5 配置里开启了 filesystem cache。"),
        # a secret store, a CDN: moved to, switched ("since the April CDN switch")
        ("Since the move to AWS Secrets Manager the worker role needs GetSecretValue on prod/worker/*.", "The worker reads the DB password from HashiCorp Vault at secret/data/worker/db."),
        ("The Fastly service has fronted static.lumen.app since the April CDN switch.", "I put Cloudflare in front: static.lumen.app is now proxied through Cloudflare."),
        # a commit message in a code block, inside one long line of an excerpt
        ("claude: Done, here is what I ran and what it printed, for the record, so that the next person who looks at the backup job knows what changed and why it changed: ```bash git commit -m \"Move the nightly backup window from 02:00 to 03:30 UTC to avoid the ETL load\" [main 4f2a9c1] Move the nightly backup window from 02:00 to 03:30 UTC 1 file changed, 1 insertion(+) ``` and the cron file has the new line.", "The nightly backup window starts at 02:00 UTC."),
        # a diff's removed and added lines of one key, other lines between them
        ("Diff of `deploy/prod.env`: ```diff -SMS_GATEWAY=twilio -TWILIO_TOKEN=${vault:twilio} +SMS_GATEWAY=vonage +VONAGE_KEY=${vault:vonage} ```", "Added `SMS_GATEWAY=twilio` to the deployment secrets and wrote `send_code()` with the Twilio client."),
        ("改了 `.pre-commit-config.yaml`： ```diff - - repo: https://github.com/psf/black - rev: 24.1.0 - hooks: - - id: black + - repo: https://github.com/astral-sh/ruff-pre-commit + hooks: + - id: ruff-format ``` 提交前快多了。", "项目的格式化用 black，配置在 pre-commit 里。"),
        # a name in code (`jan_novak`) retires the same name in words; "the old X bucket"
        ("The escalation policy now has `users = [pagerduty_user.ana_silva.id]` instead of `jan_novak`.", "The current escalation contact is Jan Novak, with Ana Silva as backup."),
        ("The old media-uploads-us bucket is read-only now and goes away next month.", "Uploads are written to `s3://media-uploads-us/{tenant}` by the upload worker."),
        ("王强生病请假了，这周的发布值班换成刘洋。", "这周发布值班是王强，有问题找他。"),
        # a setting's key given another value in a longer line of command output
        ("claude: Updated the pin and recreated the hook: ``` $ grep -rn \"api_version\" app/payments/ app/payments/client.py:12:    adyen.api_version = \"v71\" $ adyen webhooks list | jq '.data[0].api_version' \"v71\" ``` Integration tests against the test account pass; the only other change was the refund payload.", "claude: Added `app/payments/client.py`, which pins `adyen.api_version = \"v68\"` so behaviour doesn't drift."),
        # done with X; an arrow after a change word; 退役, 不用了, 把 X 换掉
        ("We're done with Buildkite, every pipeline is on GitHub Actions.", "The deploy pipeline runs on Buildkite agents in the build VPC."),
        ("Bumped the base image python 3.11 → 3.12 in the Dockerfile.", "The Dockerfile base image is python 3.11."),
        ("日志检索的 ES 集群已经退役了，都在 Loki 上查。", "日志检索用的是 ES 集群，Kibana 在内网。"),
        ("把 Sentry 换掉了，报错都进 Bugsnag。", "前端报错上报到 Sentry，项目叫 web-prod。"),
        # a stance taken back (fixtures/transcripts, claude-code-log 03eb5929), both ways
        ("I actually don't like much this idea, and I somewhat struggled with it in the clmail project.", "I very much like this idea, and I used it already with some success in the clmail project"),
        ("Actually we do want the nightly export in the sales dashboard after all.", "We don't want the nightly export in the sales dashboard."),
        ("其实我们不再推荐 ESLint 的 airbnb 规则集给新项目了。", "我们推荐 ESLint 的 airbnb 规则集给新项目。"),
        # a diff's keyword lines, a dependency swapped in package.json, a key in a YAML block,
        # 把 X 删了 (sixteenth corrected-facts set, read)
        ("已升级到 Go 1.23: ```diff --- a/go.mod +++ b/go.mod -go 1.21 +go 1.23 --- a/Dockerfile +++ b/Dockerfile -FROM golang:1.21.6-alpine AS builder +FROM golang:1.23.2-alpine AS builder ```", "builder 阶段用 `golang:1.21.6-alpine`(和 go.mod 里的 `go 1.21` 对齐)。"),
        ("The swap in this PR: ```diff \"dependencies\": { - \"@bugsnag/js\": \"^7.22.3\", + \"@sentry/react\": \"^7.105.0\", ```", "Installed `@bugsnag/js` and initialised Bugsnag in `src/errors.ts`."),
        ("Current `kong/public-api.yaml`: ```yaml plugins: - name: rate-limiting config: minute: 600 ``` Sam raised it alongside the bulk export launch.", "Raised it to `minute: 250` in `kong/public-api.yaml` and ran `deck sync`."),
        ("所以 tidy 把 `gorm.io/gorm`、`gorm.io/driver/mysql` 和它们的间接依赖都删了。", "用 GORM 写了 repository,`gorm.io/gorm` + `gorm.io/driver/mysql`。"),
        # git's revert of a commit that named the value; "it's no longer X" (seventeenth set, read)
        ("I reverted the limit change: ``` $ git revert 5e1c9d0 [main 7a20b4f] Revert \"gateway: raise per-key limit to 1200 req/min\" ``` We're back to 600 req/min per key.", "Changed to `requests_per_unit: 1200`, i.e. 1200 req/min per key."),
        ("So it's no longer CloudFront: the DNS change pointed the record at a Bunny CDN pull zone.", "The docs are behind CloudFront, with the S3 bucket as origin."),
        # a name of several words, "the X integration has been removed", "swapped the X gems
        # for", "No, that's wrong", a diff's line given another value, a suggestion turned
        # down, a migration called off by name (eighteenth set, read)
        ("Since the body font moved from Source Sans 3 to IBM Plex Sans last week, leading-7 looks loose.", "Loaded Source Sans 3 through `next/font/google` and mapped it in `tailwind.config.ts`."),
        ("Card payments are now processed through Adyen. The Stripe integration has been removed.", "Added Stripe PaymentIntents: the frontend confirms it with Stripe Elements."),
        ("So: error reporting moved to Honeybadger (the Gemfile swapped the sentry gems for `honeybadger`).", "A test exception from `rails runner` shows up in the Sentry project `bookshelf-web`."),
        ("No, that's wrong — the UK launch got shelved and the default is actually en-AU now.", "They should be getting the default locale, which is en-GB, so dates render as 22/04/2024."),
        ("改动如下： ```diff --- a/app/auth/tokens.py +++ b/app/auth/tokens.py -ACCESS_TOKEN_EXPIRE = timedelta(hours=2) +ACCESS_TOKEN_EXPIRE = timedelta(minutes=15) ```", "在 `app/auth/tokens.py` 里： ```python ACCESS_TOKEN_EXPIRE = timedelta(hours=2) ```"),
        ('改好了： ```diff -@limiter.limit("120/minute", key_func=api_key_from_header) +@limiter.limit("300/minute", key_func=api_key_from_header) ```', '把装饰器改成了 `@limiter.limit("120/minute", ...)`，即每分钟 120 次，已发布。'),
        ("不换，公司 IM 还是钉钉，飞书只有设计那边在用。", "另外建议把告警通道换成飞书，飞书机器人的卡片可以直接点“认领”。"),
        ("Naive UI 那个迁移不做了，评估下来成本太高，分支删掉吧，继续用 Element Plus。", "在 `feature/naive-ui` 分支上装了 `naive-ui`，把订单列表改成了 `n-data-table`。"),
        # a command's flag given another value (nineteenth set, read)
        ("``` $ kafka-topics --bootstrap-server kafka:9092 --alter --topic order-events --partitions 24 ``` All 24 consumers have assignments.", "``` $ kafka-topics --bootstrap-server kafka:9092 --create --topic order-events --partitions 12 --replication-factor 3 ```"),
        # a diff of a path's owner (twentieth set, read)
        ("Priya moves to the data team and Tomasz takes over billing. Updated: ```diff -/services/billing/ @priya-raman +/services/billing/ @tkowalczyk ```", "I added `/services/billing/ @priya-raman` to `.github/CODEOWNERS`, so she's auto-requested."),
        # a diff's indented lines, read whole across their ";"; a port mapping; a script's
        # tool; a block of code read whole; "don't use #channel"; a key's default value then a
        # config file's; an nginx directive; a YAML document's top-level key (twenty-first and
        # twenty-second sets, read)
        ("Big routes legitimately take 1.5–2.2 s in geo-svc. ```diff --- a/internal/geo/client.go +++ b/internal/geo/client.go - ctx, cancel := context.WithTimeout(ctx, 800*time.Millisecond) + ctx, cancel := context.WithTimeout(ctx, 2500*time.Millisecond) ``` Replayed the last hour of traffic: timeouts 312 → 4.", "In `internal/geo/client.go`: ```go ctx, cancel := context.WithTimeout(ctx, 800*time.Millisecond) defer cancel() ```"),
        ("The ST-LINK virtual COM port handles much higher rates, so I bumped it:\n```diff\n-  huart2.Init.BaudRate = 115200;\n+  huart2.Init.BaudRate = 921600;\n```\nReconnect with `screen /dev/tty.usbmodem1103 921600`.", "UART2 is configured at 115200 baud, 8N1 in `MX_USART2_UART_Init()`."),
        ("I moved it to the conventional TLS port: ```diff payments-webhook: ports: - - \"8080:8080\" + - \"8443:8443\" ```", "Added a `payments-webhook` service to `docker-compose.yml`, exposing port 8080 (`ports: [\"8080:8080\"]`)."),
        ("```diff --- a/package.json +++ b/package.json \"scripts\": { - \"dev\": \"webpack serve --config build/webpack.dev.js\", - \"build\": \"webpack --config build/webpack.prod.js\", + \"dev\": \"rsbuild dev\", + \"build\": \"rsbuild build\", ``` 新增 `rsbuild.config.ts`，删掉了 `build/` 目录。", "admin-console 用 webpack 打包，冷构建 142s。"),
        ('user: Finance only reads sessions once a day and these runs are burning EMR money. Raw events finish landing by 01:00 UTC. / claude: Here is the DAG header after the edit: ```python with DAG( dag_id="sessionize_clickstream", schedule="15 1 * * *", start_date=pendulum.datetime(2024, 3, 1, tz="UTC"), catchup=False, max_active_runs=1, tags=["ferret", "clickstream"], ) as dag: wait_raw = ExternalTaskSensor( task_id="wait_raw_events", external_dag_id="load_raw_events", mode="reschedule", timeout=3 * 3600, ) wait_raw >> sessionize ``` The sensor holds the run if the raw load is late.', 'user: Create an Airflow DAG for the sessionization job. Run it every six hours. / claude: Added `dags/sessionize_clickstream.py`: ```python with DAG( dag_id="sessionize_clickstream", schedule="0 */6 * * *", start_date=pendulum.datetime(2024, 3, 1, tz="UTC"), catchup=False, max_active_runs=1, tags=["ferret", "clickstream"], ) as dag: sessionize = SparkSubmitOperator( task_id="sessionize", application="s3://ferret-jobs/sessionize.py", conn_id="spark_emr", ) ``` `airflow dags test sessionize_clickstream 2024-03-01` completed in 11 minutes and wrote 2.3M sessions to `analytics.sessions`.'),
        ("user: What changed in ledger-service since the v1.8.0 tag? I'm writing release notes. / claude: `git log --oneline v1.8.0..HEAD`: ``` a91c3e2 build: move toolchain to Java 21, enable virtual threads for the HTTP server 5d0f7b1 fix: rounding on multi-currency postings 0ce44a9 chore: bump jackson to 2.16.1 ``` So: the JDK 21 toolchain switch (the Dockerfile now uses `eclipse-temurin:21-jre` and `spring.threads.virtual.enabled=true`), the rounding fix for postings with mixed currencies, and the Jackson bump.", 'The Dockerfile runtime is `eclipse-temurin:17-jre` to match.'),
        ('```nginx server { listen 443 ssl http2; server_name m.haowu-mall.com; location /h5/ { alias /srv/www/h5-mall/dist/; try_files $uri $uri/ /h5/index.html; expires 7d; } } ``` `deploy.sh` 里的 `REMOTE_DIR` 也同步为 `/srv/www/h5-mall/dist/`。', '放在 `/usr/share/nginx/html/h5`： ```nginx location /h5/ { alias /usr/share/nginx/html/h5/; try_files $uri $uri/ /h5/index.html; expires 7d; } ```'),
        ('I halved the per-pod pool in `k8s/orders-api/deployment.yaml`, so each pod now holds at most ten connections (120 total), which leaves headroom for migrations and psql sessions.', 'Switched to a shared `pg.Pool`: ```ts export const pool = new Pool({ connectionString: process.env.DATABASE_URL, max: Number(process.env.DB_POOL_MAX ?? 20), idleTimeoutMillis: 30_000 }); ``` and set `DB_POOL_MAX=20` in the deployment, so each pod keeps up to 20 connections. p95 latency dropped from 180ms to 45ms.'),
        # a key given a value in words ("bumped `CONFIG_X` to 4096", "`X` 调到 6144", "X default
        # -> v2") after a config file gave it another; a Dockerfile's image given another tag
        # (twenty-third set, run blind once, then read)
        ('Changes: - `prj.conf`: `CONFIG_HW_STACK_PROTECTION=y`; also bumped `CONFIG_MAIN_STACK_SIZE` to 4096 while I was in there, for headroom - thread analyzer moved into a `debug.conf` overlay', 'Created `app/` with `CMakeLists.txt`, `src/main.c` and `prj.conf`: ``` CONFIG_GPIO=y CONFIG_I2C=y CONFIG_SENSOR=y CONFIG_LOG=y CONFIG_MAIN_STACK_SIZE=2048 ``` `west build -b nrf52840dk_nrf52840 app && west flash`: LED blinks.'),
        ('改动： - OTA 检查挪到独立任务 `ota_task`，栈 8192 - 顺手把 `CONFIG_ESP_MAIN_TASK_STACK_SIZE` 调到 6144，给 app_main 留余量', '`sdkconfig.defaults`： ``` CONFIG_ESPTOOLPY_FLASHSIZE_4MB=y CONFIG_ESP_MAIN_TASK_STACK_SIZE=3584 CONFIG_BT_ENABLED=y ``` `idf.py build flash monitor` 正常。'),
        ('Switched decoding to Avro via the schema registry and changed the default topic. ``` $ git commit -am "feat(fulfillment): consume orders.v2 (Avro + schema registry) - ORDERS_TOPIC default -> orders.v2 - decode with srclient, subject orders.v2-value - drop JSON unmarshal path" ```', '- config via `KAFKA_BROKERS` and `ORDERS_TOPIC` (default `orders.v1`)'),
        ('polars 装不上，更新后的 Dockerfile： ```dockerfile FROM python:3.12-slim WORKDIR /app ENV PIP_NO_CACHE_DIR=1 COPY requirements.txt . RUN pip install -r requirements.txt ```', '```dockerfile FROM python:3.10-slim WORKDIR /app COPY requirements.txt . RUN pip install --no-cache-dir -r requirements.txt ``` `docker build -t mofang-etl:dev .` 成功。'),
        ("Bot token is in repo secrets now. Actually don't use #release-train, marketing reads that. Post to #hop-deploys.", "Use `slackapi/slack-github-action@v1.26.0` to post to #release-train with environment, commit range and who triggered it."),
        ("`sdkconfig.defaults` 当前内容： ``` CONFIG_PLUG_MQTT_URI=\"mqtts://iot.lumacore.cn:8883\" CONFIG_PLUG_MQTT_CA_BUNDLE=y CONFIG_ESP_TASK_WDT_TIMEOUT_S=10 ```", "`main/Kconfig.projbuild` 新增 `CONFIG_PLUG_MQTT_URI`，默认值 `mqtt://10.0.8.12:1883`。"),
        ("```diff --- a/src/main/resources/application.yml +++ b/src/main/resources/application.yml -apollo: - meta: http://apollo-config.infra:8080 - bootstrap: - enabled: true +spring: + cloud: + nacos: + config: + server-addr: nacos.infra:8848 ```", "member-center 的配置都在 Apollo 上，namespace 是 points.rules。"),
        # a table of a change ("before" / "after" columns), "replaces X with Y", "用 Y 替换 X",
        # a YAML list's line replaced in a diff run onto one line, a list's item (twenty-fourth
        # set, run blind once, then read)
        ("Applied the new quotas: | quota | before | after | |---|---|---| | max attachment size | 10 MB | 40 MB | | seats per team | 25 | 50 |", "Attachments are capped at 10 MB by `MAX_ATTACHMENT_MB = 10` in `settings.py`."),
        ("PR #88: ## Switch the job queue - replaces `bull` with `bullmq` in `worker/queue.ts` - same Redis instance, new key prefix `bmq:` - no migration: queued jobs drain before the deploy - follow-up: drop the old dashboards after a week", "Jobs are queued with `bull` (`worker/queue.ts`), one queue per tenant."),
        ('```\n$ git commit -m "refactor(log): 用 slog 替换 zerolog"\n```', "日志用的是 `zerolog`，初始化在 `internal/log/log.go`。"),
        ("```diff --- a/deploy/values.yaml +++ b/deploy/values.yaml @@ -4,5 +4,5 @@ redis: hosts: - - redis-a1.cache.internal:6379 + - redis-a4.cache.internal:6379 db: 0 ```", "```yaml # deploy/values.yaml redis: hosts: - redis-a1.cache.internal:6379 db: 0 ```"),
        ('```\n$ git commit -m "chore(deps): 删除 amqp091-go 依赖和 exchange 声明"\n```', "在 `order/publisher.go` 里用 `amqp091-go` 往 RabbitMQ 的 exchange `order.events` 发 `order.created`。"),
        ("- While running e2e I saw staging-api.example.io now returns 301 to `https://api.stg.example.io`.", '`cli/envs.go`: ```go var Envs = map[string]string{ "prod": "https://api.example.io", "staging": "https://staging-api.example.io", } ```'),
        ("Reverted the bump. `requirements.txt` is back to `pydantic==1.10.15`.", "- `requirements.txt`: `pydantic==2.7.1` - ran `bump-pydantic app/models/` → 37 files changed (`Config` → `model_config`, `.dict()` → `.model_dump()`) - fixed 4 spots in `app/normalize.py`"),
    ],
)  # fmt: skip
def test_a_newer_claim_replaces_an_older(new: str, old: str) -> None:
    assert current.replaced_claim(new, old, 0.5, MINILM) is not None


@pytest.mark.parametrize(
    ("new", "old"),
    [
        ("The admin console runs separately on port 9090.", "gateway/main.go binds :8080."),
        ("Bruno Salvi owns the Android app.", "Aiko Tanaka owns the iOS app."),
        ("Tests run with Vitest.", "We use ESLint for linting here."),
        ("预发环境的数据库是 db-pre.corp.internal。", "测试环境的数据库是 db-test.corp.internal。"),
        ("We also use Prettier for formatting now.", "We use ESLint for linting."),
        ("JDK 21 的升级回滚了，先回到 JDK 17。", "pom.xml 里 release 是 17，CI 也用 JDK 17。"),
        ("The nightly ingest job failed again last night.", "Bumped pandas to 2.2.3."),
        ("The CI job now uses python:3.12-slim for the tests.", "The production image is node:20-alpine."),
        ("Steps: 1. run make 2. deploy the build", "A deploy takes 2 minutes on staging."),
        ("We tried 2.9 of the client on a branch and it works.", "The server runs Airflow 2.9."),
        ("The billing worker runs on Tuesdays at 04:00.", "The email digest job runs on Mondays at 02:00."),
        ("I went to a pride parade last Friday with my two sisters.", "Last week I went to a pride parade with my three cousins."),
        ("[shares a photo: two children standing on a rocky cliff]", "[shares a photo: three children playing on the beach]"),
        ("The status page webhook now posts incidents to #inc-bridge.", "Post a message to #ship-log whenever a release is tagged."),
        ("postgresql.conf sets `work_mem 64MB` on the primary.", "postgresql.conf sets `max_connections 100` on the primary."),
        ("Staging has `rollout_percent: 50`; prod keeps `rollout_percent: 10`.", "Set `rollout_percent: 10`."),
        ("Should I try Zed for the Rust work?", "How do I set keybindings in VS Code?"),
        ("不是迁移，是新增：海外版部署在 AWS 新加坡的 EKS 集群，国内业务还在阿里云不动。", "国内业务全部在阿里云华东2（上海），ACK 集群 `prod-sh`。"),
        ("为了华南用户的延迟，现在也部署在 cn-shenzhen 了，杭州那边照常跑。", "服务部署在阿里云 cn-hangzhou，帮我写下 ACK 的部署脚本。"),
        ("@acme/ui now comes from npm.pkg.github.com and the rest from registry.npmjs.org.", "Added .npmrc with `registry=https://registry.npmjs.org/` so the project ignores your global mirror."),
        # one more beside the older's: listed with "or", joined by 和, added (加了), besides (除了…还)
        ("The script now takes --region with us-west-2 (prod-main) or ap-southeast-1 (prod-apac).", "Added scripts/kube-login.sh, which runs aws eks update-kubeconfig --region us-west-2 --name prod-main."),
        ("CODEOWNERS 里加了 @wangfang，审批规则改成需要 2 个 Code Owner 批准，张磊和王芳都要通过。", "在 .gitlab/CODEOWNERS 里给根目录配了 @zhanglei，并开启了 MR 需要 Code Owner 审批。"),
        ("上次有个迁移锁表了，以后迁移脚本除了王磊，还要 DBA 陈静也 approve 才行。", "数据库迁移脚本需要王磊审核通过才能合。"),
        ("帮我把几个服务的 Dockerfile 统一成多阶段构建。", "刘洋是订单服务的 owner，帮我写个 issue 给他。"),
        ("现在 lint 阶段共三个作业：golangci-lint、gosec、hadolint，全部通过。", "CI 里加一个 golangci-lint 检查。"),
        ("Updated the rule to '/migrations/ @hana-sato @oskar-berg'.", "Added '/migrations/ @hana-sato' to .github/CODEOWNERS."),
        ("I joined the platform team at Brightwave this week.", "I work at Brightwave Labs on the data team."),
        ("Set up a ClickHouse table `events` and switched the analytics dashboards to it.", "Orders and users live in Postgres."),
        ("Added Kofi Mensah as a required reviewer alongside Ingrid Solberg.", "Production releases need sign-off from Ingrid, our eng manager."),
        ("We also test on an iPhone 15 now.", "I test on a Pixel 7."),
        ("The gateway now listens on 3001 and the frontend stays on 3000.", "The web frontend runs on port 3000 in dev."),
        # the older's value named again as kept (保持不变, 仍是, 保留, "stays"), one more beside it
        ("加了 Caffeine 本地缓存，现在读取顺序是 Caffeine → Redis → MySQL，Redis 那层保持不变。", "商品详情接口给加个 Redis 缓存。"),
        ("CODEOWNERS 里 `gateway/` 指向黄涛，`services/order/` 仍是刘洋，`services/inventory/` 是周敏。", "已经在 PR #352 上请求刘洋 review，并在 CODEOWNERS 里把 `services/order/` 指给他。"),
        ('矩阵现在是 `python-version: ["3.9", "3.12"]`，3.9 保留。', '`pyproject.toml` 里设了 `requires-python = ">=3.9"`，测试矩阵先加了 3.9。'),
        ("The read path is now Caffeine, then Redis, then MySQL; the Redis layer stays as it was.", "Added a Redis cache to the product detail endpoint."),
        ("把重试次数从 3 次改成 5 次。", "接口超时设成 3 秒。"),  # another number's subject
        ("是 rerank 之后没带回 chunk_id 顺序，我改成按 rerank 后的结果组装，测试了 30 个问题。", "召回 top 20 后再 rerank。"),  # two counts
        ("我加了 Redis pub/sub 广播，收到消息的实例会清掉自己 Caffeine 里的这条。", "大促时热点商品 QPS 太高，Redis 单分片也扛不住，再加一层本地缓存吧。"),  # a measure
        ("现在 lint job 有三步：golangci-lint、hadolint、markdownlint。", "ci.yml 新增 lint job，跑 golangci-lint，修了 12 个告警后通过。"),
        ("claude: I started at the top of the file and worked down.", "user: I work at Brightwave Labs on the data team."),
        ("Melanie: I started at Northpeak Analytics this week.", "Caroline: I work at Brightwave Labs."),
        ("消费积压告警的阈值设成 1 万条。", "结算服务订阅 Kafka 的 order-events，消费组叫 settlement。"),
        ("production 环境的审批人现在是周涛和林晓，任意一人批准即可。", "生产发布需要周涛审批，环境保护帮我配一下。"),
        ("Project uses uv", "Project uses npm"),  # a Python side beside a JavaScript one
        ("Added the EU branch: EU tenants are created in eu-central-1, US ones still in us-east-1, and an unknown tenant_region fails instead of defaulting.", "Added a test with a stubbed httpx client that checks US tenants are created in us-east-1."),
        # a chat between named people (LoCoMo): "actually", "moved", "now" in passing
        ("Caroline: A friend made it for my 18th birthday ten years ago.", "Caroline: I've known these friends for 4 years, since I moved from my home country."),
        ("Nate: Yeah actually - creating gaming content for YouTube.", "Nate: Playing video games and watching movies are my main hobbies."),
        ("Melanie: Seven years now, and I've finally found my real muses.", "Caroline: I've known these friends for 4 years."),
        # real work (fixtures/realwork): a noun "bump/bypass", "before changing anything", a
        # tool that "now reports" a count
        ("The alternative is a **server-side bump/bypass** for trusted internal relay (mirroring the existing `pushSizeLimit=0` trusted-caller path).", "- Exit code is non-zero, but partial application on the target is exactly what happens."),
        ("What I verified before changing anything (all seven claims held): - H1 split is real and exactly 10/10, with no chronological trend.", "Verified live end-to-end with the real binary: `init` → collection created;"),
        # another file is no new value of a file (resume_test.go / json.RawMessage, hooks.go)
        ("`cmd/agent/hooks.go` - `InstallHooks`: Now uses `map[string]json.RawMessage` for hooks instead of the struct.", "(fixed in `resume_test.go`) Fix: Use --no-verify to skip hooks - the hooks use local_dev paths that don't work"),
        ("I verified the lint effect rather than assuming it: `npx markdownlint-cli2 \"docs/adr/*.md\"` now reports 4 issues across 21 files.", "- Updated/rewrote the affected unit and CLI integration tests (16 across `test_qmd_service.py` and `test_qmd_cli.py`);"),
        # "to actually push" is no correction (fixtures/realwork, git-sync): another flag
        ("Notes: - `--all-refs` mirrors every `refs/*` (branches, tags, notes, pulls, custom namespaces) — needed to actually push all 55k.", "`git push --mirror` by itself is not atomic."),
        # a diff that adds a line beside the old value, or changes another key
        ("```diff -LOG_LEVEL=info +LOG_LEVEL=info +LOG_FORMAT=json ```", "The worker logs at `LOG_LEVEL=info`."),
        ("The old dashboard is still the one the on-call team opens first.", "Grafana hosts the old dashboard for the payments team."),
        # "3.12 去掉了 distutils": 3.12 removed something; "done with my exams": no name
        ("3.12 去掉了 distutils，我把 setup.py 里的 distutils 换成了 setuptools。", "镜像里的 Python 是 3.12，CI 也用 3.12。"),
        ("I'm done with the exams, finally some free time.", "The exams start on Monday, three of them this week."),
        # a "don't" about something else, or with no change of mind, takes nothing back
        ("I don't like the new dashboard colours.", "I like the new dashboard layout a lot."),
        ("Actually I don't use the staging cluster for load tests.", "I like the staging cluster's new dashboards."),
        # a passage removed from a file, not the file; an item's name in code, not a setting
        ("我把 README 里那段删掉了。", "README 里写了 `make dev` 的用法和 Docker 的安装步骤。"),
        ("The workflow now has ```yaml jobs: - name: test ``` beside lint.", "The workflow's first job is ```yaml - name: lint ``` on every push."),
        ("Re-added it unchanged: ```diff -LOG_LEVEL=info +LOG_LEVEL=info ```", "`LOG_LEVEL=info` is set in `.env` for local runs."),
        # both listed, a part of the older's value, another scope's key, "continue to use"
        # (eighteenth set, read)
        ("Both specs are published (`/v1/openapi.json`, `/v2/openapi.json`).", "Mounted the public routers under `/v1` (`/v1/projects`, `/v1/tasks`) and generated the OpenAPI spec at `/v1/openapi.json`."),
        ("`deploy-staging` now has a matrix over `[eu, us]`, so both environments get every merge to `main`.", "Staging is up in eu-central-1 at https://staging-eu.quillhq.dev, deployed from `main` on every merge via the `deploy-staging` workflow."),
        ('8081 只在 Pod 内用于探针和 Prometheus 抓取（`prometheus.io/port: "8081"`）。', "`application.yml` 里 `server.port: 8080`，Service 把 80 转到 8080，探针走 `/actuator/health`。"),
        ("Naive UI 那个迁移不做了，评估下来成本太高，分支删掉吧，继续用 Element Plus。", "后台管理前端用 Vue 3 + Element Plus 搭一下。"),
        ("No, let's not switch: the team stays on Jenkins.", "Set up the nightly build on Jenkins."),
        ("Start the frontend with `vite --port 5173`.", "Run the API with `uvicorn app:app --port 8000`."),  # two commands' flags
        # a day of a date beside a cache's lifetime; a switch before an argument
        ("腾讯云 CDN 只在 3 月 29 日那次故障切换时用过。", "构建产物上传到 OSS，`static.mulan.cn` 接入阿里云 CDN，带 hash 的文件缓存 1 年。"),
        ("I re-did the back-merge with `git merge --no-ff release/2024.04`.", "Merge the release branch back into main with a merge commit (`git merge --no-ff release/x.y`)."),
        # a share beside a count; "redirected to"; deleted rows (twentieth set, read)
        ("MySQL 主库在报表时段的 CPU 从 85% 降到了 35%，交易链路的 P99 也恢复正常了。", "订单服务连的是 MySQL 8.0 主库 `order_db`，HikariCP `maximum-pool-size` 只有 10。"),
        ("QA 说在预发上登录跳转到测试环境去了。", "前端的 .env 配一下测试环境的接口地址。"),
        ("The Sunday full reindex still runs, because it cleans up deleted products.", "It builds a new index, then switches the `products` alias, so there's no downtime."),
        # a short number a diff takes away from another setting; a top-level key added beside
        # those that stay
        ("```diff --- a/config/worker.yml +++ b/config/worker.yml -  retries: 3 +  retries: 5 ```", "The consumer runs 3 workers on the batch host."),
        ("```diff --- a/docker-compose.yml +++ b/docker-compose.yml +volumes: +  pgdata: {} ```", "docker-compose.yml defines the services db and api."),
        # a directive of nginx without an underscore, but for a path: two servers' ports
        ("```nginx server { listen 443 ssl; server_name shop.example.com; root /srv/shop; } ```", "```nginx server { listen 80; server_name shop.example.com; return 301 https://$host$request_uri; } ```"),
        # a word a block of code names, not a value it states (entireio-cli a7, realwork)
        ("The shadow branch doesn't exist (expected - it's local to the original machine).", 'The most common scenario is two worktrees at the same commit: ``` main-worktree/ → HEAD at commit abc1234 Session: 2026-01-25-uuid-1 Creates shadow branch: entire/abc1234 feature-worktree/ → Also at commit abc1234 (e.g., not yet diverged) Tries to start: 2026-01-26-uuid-2 Finds entire/abc1234 already exists! Finds session 2026-01-25-uuid-1 has a state file → SessionIDConflictError ```'),
        # a Dockerfile's stages: another image is another stage
        ("```dockerfile FROM python:3.12-slim RUN pip install -r requirements.txt ```", "```dockerfile FROM node:20-alpine AS deps RUN npm ci ```"),
        # a shell alias, not nginx's (ninth set, read)
        ("加了 `alias ksz='kubectl config use-context ack-cn-shenzhen'`，并写了 scripts/pods_both.sh，依次对 cn-beijing 和 cn-shenzhen 执行 `kubectl get pods -n order`。", "在 ~/.zshrc 里加了 `alias kbj='kubectl config use-context ack-cn-beijing'`。"),
        # a constant a diff's line gives another value: no word to retire (twentieth set, read)
        ("The connect timeout stays as it is. I set the read timeout: ```diff - timeout=httpx.Timeout(connect=2.0, read=None, write=10.0, pool=5.0), + timeout=httpx.Timeout(connect=2.0, read=30.0, write=10.0, pool=5.0), ``` Now it's a connect timeout of 2s and a read timeout of 30s.", "In `shipping/rates_client.py`: ```python timeout=httpx.Timeout(connect=2.0, read=None, write=10.0, pool=5.0), ``` So there's a connect timeout of 2 seconds, and we fail over to the cached rate card when none answers."),
        # a revert of a commit that replaced a library: the library is back, not retired
        ('```\n$ git revert 4b7d2e9\n[main a91c3f0] Revert "perf(codec): 使用 sonic 替代 encoding/json"\n```', "目前用的是标准库 `encoding/json`，`json.Marshal` 占了 27% 的 CPU。"),
        # "falls back to" says no change (twenty-sixth set, read after its blind run)
        ("`feeds/duration.py` returns `None` instead of raising; the episode then falls back to the enclosure's duration after download, 40 cases from real feeds.", "- `ingest.high`: new episodes from feed polling, `prefetch_count=1`"),
        # a change told of one environment, against another's value (twenty-fourth set, read)
        ("测试环境 redis 换到新集群了：```diff --- a/config/test.yaml +++ b/config/test.yaml @@ -1,4 +1,4 @@ redis: hosts: - - redis-t1.test.x.internal:6379 + - redis-t4.test.x.internal:6379 ```", "`config/` 下按环境分文件： ```yaml # config/prod.yaml redis: hosts: - redis-p1.prod.x.internal:6379 - redis-p2.prod.x.internal:6379 ```"),
        ("Moved the staging API to api.stg.example.io.", "The production API is served from api.example.io behind CloudFront."),
    ],
)  # fmt: skip
def test_claims_that_hold_together_are_not_replaced(new: str, old: str) -> None:
    assert current.replaced_claim(new, old, 0.5, MINILM) is None


def todos(daemon: DaemonProcess, cwd: str) -> dict[str, str]:
    listed = daemon.request({"cmd": "list", "project": cwd, "include_all": True, "limit": 500})
    return {
        m["text"]: m["status"]
        for m in listed.get("memories") or listed.get("results") or []
        if m["kind"] == "todo"
    }


def open_todos_in_brief(daemon: DaemonProcess, cwd: str) -> str:
    brief = daemon.request({"cmd": "context", "cwd": cwd, "event": "session-start"})["context"]
    _, _, rest = brief.partition("Open TODOs:")
    return rest.split("\n\n")[0] if rest else ""


def test_a_todo_reported_done_in_words_is_closed(daemon: DaemonProcess) -> None:
    cwd = ingest_history(
        daemon,
        "todo in words",
        [
            ("2026-04-01", [("user", "TODO: add rate limiting to the upload endpoint."), ("assistant", "Noted.")]),
            ("2026-04-09", [("user", "I added rate limiting to the upload endpoint yesterday, so that TODO is done."), ("assistant", "Great.")]),
        ],
    )  # fmt: skip
    found = todos(daemon, cwd)
    assert any("rate limiting" in t for t in found), found
    assert all(status != "active" for status in found.values()), found
    assert "rate limiting" not in open_todos_in_brief(daemon, cwd)


def test_a_todo_completed_in_a_todo_list_is_closed(daemon: DaemonProcess) -> None:
    items = ["Write the migration for archived_at", "Backfill archived_at for old projects"]
    pending = [{"content": c, "status": "pending", "activeForm": c} for c in items]
    completed = [{**t, "status": "completed"} for t in pending]
    cwd = ingest_history(
        daemon,
        "todo list",
        [
            ("2026-05-01", [("user", "Plan the archived_at change."), tool("TodoWrite", {"todos": pending}, "Todos have been modified successfully."), ("assistant", "Planned two steps.")]),
            ("2026-05-03", [("user", "Go ahead with the archived_at work."), tool("TodoWrite", {"todos": completed}, "Todos have been modified successfully."), ("assistant", "Both steps are done.")]),
        ],
    )  # fmt: skip
    found = todos(daemon, cwd)
    assert len(found) == 2, found
    assert all(status != "active" for status in found.values()), found
    assert "archived_at" not in open_todos_in_brief(daemon, cwd)


def test_a_todo_done_in_a_commit_is_closed(daemon: DaemonProcess) -> None:
    command = 'git commit -m "Remove the legacy CSV exporter"'
    cwd = ingest_history(
        daemon,
        "todo commit",
        [
            ("2026-06-01", [("user", "TODO: remove the legacy CSV exporter once the new one ships."), ("assistant", "Noted as a TODO.")]),
            ("2026-06-20", [("user", "The new exporter shipped. Delete the old one and commit."), tool("Bash", {"command": command}, "[main 1a2b3c4] Remove the legacy CSV exporter\n 2 files changed, 3 insertions(+), 180 deletions(-)"), ("assistant", "Removed and committed as 1a2b3c4.")]),
        ],
    )  # fmt: skip
    found = todos(daemon, cwd)
    assert any("CSV exporter" in t for t in found), found
    assert all(status != "active" for status in found.values()), found
    assert "CSV exporter" not in open_todos_in_brief(daemon, cwd)


@pytest.mark.parametrize(
    "sentence",
    [
        "Our commit style: fix: for bug fixes, feat: for features.",
        "提交信息用 Conventional Commits 格式，比如 fix(parser): 处理空值。",
    ],
)
def test_a_commit_style_is_a_preference_not_a_bug_fix(sentence: str) -> None:
    assert rules.classify(sentence, "user") == "preference"
    assert rules.classify("The crash was caused by the commit message parser.", "user") == "bugfix"


@pytest.mark.parametrize(
    ("sentence", "kind"),
    [
        ("I added rate limiting to the upload endpoint, so that TODO is done.", "progress"),
        ("Noted as a TODO.", None),
        ("TODO: add rate limiting to the upload endpoint.", "todo"),
    ],
)
def test_the_sentence_that_closes_a_todo_is_not_one(sentence: str, kind: str | None) -> None:
    assert rules.classify(sentence, "user") == kind


@pytest.mark.parametrize(
    ("prompt", "memory"),
    [
        ("Which package manager should I use?", "We switched to pnpm."),
        ("How do I run the server with tracing switched off?", "SPOTTER_OTEL_ENABLED env var for opt-out"),
        ("Where do I work these days?", "I started at Northpeak Analytics this week."),
        ("Which shell do I use?", "I switched to fish last month."),
        ("我现在是什么职位？", "我现在是架构师了，主要做方案评审。"),
        ("What's my favourite programming language?", "Elixir is my favourite language now."),
        ("Which linters run in CI?", "Added a hadolint step that checks every Dockerfile."),
        ("Which observability tools does the order service use?", "Tracing goes to SkyWalking."),
        ("Who's my line manager these days?", "There was a reorg: I report to Tomás now."),
        ("这个项目用什么数据库？", "订单表已经迁到 PostgreSQL 16 了。"),
        ("结算服务是用什么工具构建的？", "./gradlew test 之后找不到 xml 报告。"),
        ("Where is the marketing API hosted now?", "The app is healthy on Fly.io in ams and fra."),
        ("What bundles the admin frontend?", "Added `metafile: true` to the esbuild.build() call."),
        ("这个算法项目装依赖该用什么工具？", "poetry add numba 的时候报版本冲突。"),
        ("订单服务用的消息中间件是哪个？", "订单事件现在发到 RabbitMQ 的 orders 交换机。"),
        ("跳板机的地址是多少？", "堡垒机换成了 10.0.8.2，旧的那台下线了。"),
        ("What does the team use for feature flags?", "Rollouts go through LaunchDarkly now."),
        ("Which feature-flag service backs the toggle?", "The Unleash proxy returns 401."),
        ("What CI system runs the tests now?", "The GitHub Actions service container failed."),
        ("我现在主力用的是哪个编辑器？", "最近在试 Cursor，帮我写个 .cursorrules。"),
        ("查线上日志现在用哪个系统？", "在 Grafana 的 Explore 里用 LogQL 查。"),
        ("Which exact Node version is the repo pinned to?", "nvm use picks up 20.11.1 from .nvmrc."),
        ("Which Postgres major version is prod on?", "Prod finished pg_upgrade and runs Postgres 16."),
        ("Redis 现在是哪个版本？", "compose 里的镜像换成了 redis:7.2。"),
    ],
)  # fmt: skip
def test_a_memory_carries_the_prompts_words_in_other_words(prompt: str, memory: str) -> None:
    own = searchterms.term_set(memory)
    carried = synonyms.carried(own, prompt, memory)
    assert carried > own
    assert carried & searchterms.term_set(prompt)
    assert synonyms.carried(own, "What did we have for lunch?", memory) == own


@pytest.mark.parametrize(
    ("prompt", "memory"),
    [
        ("Who hosted the barbecue last summer?", "We want to fly to Denver and render the video there."),
        ("What language is Caroline learning?", "Go ahead and book the table, she said."),
    ],
)  # fmt: skip
def test_an_everyday_word_is_no_tool(prompt: str, memory: str) -> None:
    """Tools named by everyday words (Fly, Render, Go) carry a job only written as names."""
    own = searchterms.term_set(memory)
    assert synonyms.carried(own, prompt, memory) == own
    named = memory.replace("fly to", "deploy on Fly.io,").replace("Go ahead", "We use Go")
    assert synonyms.carried(searchterms.term_set(named), prompt, named) > searchterms.term_set(
        named
    )


def test_a_version_is_carried_only_by_a_version() -> None:
    prompt = "Which Postgres version is prod on?"
    for memory in ("Prod runs Postgres on 4 cores.", "Postgres at 5 in the morning is idle."):
        own = searchterms.term_set(memory)
        assert "version" not in synonyms.carried(own, prompt, memory)


@pytest.mark.parametrize(
    ("prompt", "memory"),
    [
        ("Which package manager do I run to add a dependency?", "I ran pnpm install to regenerate pnpm-lock.yaml."),
        ("What CI system runs the integration tests now?", "The GitHub Actions service container failed."),
        ("这个项目装依赖该用什么工具？", "poetry lock 报了版本冲突。"),
        ("Which language is the worker written in?", "We use Go for the worker."),
        ("我现在在哪个组？", "我上个月调到了风控组，在看规则引擎。"),
        ("What's the command to add a dependency to one package?", "I ran `pnpm add zod --filter api`."),
        ("我们后端都用了哪些数据存储？", "商品索引放在 Elasticsearch，订单在 MySQL。"),
        ("Which team am I on these days?", "I'm on the platform team, so I own Terraform."),
        ("Which localhost port does the frontend come up on?", "npm run dev shows the frontend at Local: http://localhost:5173/"),
        ("前端本地起在哪个端口？", "前端 dev server 现在是 localhost:5173。"),
        ("支付成功的事件走哪个消息队列？", "积分服务日志：org.apache.rocketmq.client.exception.MQClientException"),
        ("我本地建虚拟环境应该用哪个 Python 版本？", "CI 的镜像换成 python:3.12-slim 了。"),
        ("What do we use to run unit tests in the web frontend?", "`npx vitest run src/utils` is green."),
        ("我们的文件上传分别存在哪些云上？", "国内站继续用阿里云 OSS，bucket acme-cn-assets。"),
        ("A job failed in prod last night, where do I go to read its logs?", "Workers now push to Grafana Loki; query them in Grafana Explore."),
        ("我要给商品搜索加几个同义词，现在应该去哪儿配？", "`search-api` 已切到 Meilisearch 客户端。"),
        ("我要给前端项目加个依赖，该用什么命令？", "用 `pnpm add dayjs` 重新加一次。"),
        ("我推了代码以后，去哪儿看后端的构建结果？", "我们已经迁到 GitLab CI，配置在 `.gitlab-ci.yml`。"),
        ("Remind me which city you have me in?", "Ever since the move to Rotterdam my digest shows up an hour early."),
        # a secret store, a CDN, a framework asked for by its job
        ("How do I add a new secret for the worker?", "Since the move to AWS Secrets Manager the role needs GetSecretValue."),
        ("If I clear cached static files by hand, which CDN is that?", "I ran `fastly purge --service-id 7QxLmR2 --key assets-css`."),
        ("管理后台现在是用什么框架写的？", "提交信息是 `feat(admin): 订单列表页迁移到 React 18 + Ant Design 5`。"),
        # a day or a person asked for, given beside one of the prompt's other words
        ("Which day do we cut the release branch?", "Release branches are cut every Tuesday at 15:00 UTC."),
        ("iOS 提审现在找谁？", "iOS 提审和 App Store Connect 后台是王磊在管。"),
        ("Who is on call for the billing service this week?", "The billing service on-call is Dana (@dana-r) until Friday."),
        ("我们装 npm 包走的是哪个源？", "`npm ci` 报 E401：私有源 npm.acme-inc.cn 需要认证。"),
        ("连内网服务器要经过哪台中转机？", "运维说统一走新的堡垒机 bastion-sh.corp.example。"),
        ("热数据和归档数据分别放在哪里？", "超过 90 天的订单快照归档到 OSS 的 archive/ 前缀。"),
        # a region, a host, a store, a check and a city asked for in everyday words
        ("订单服务部署在哪些地域？", "订单服务的 ACK 集群在 cn-hangzhou，两个可用区。"),
        ("Where does the billing API get deployed?", "Billing API staging runs on a Hetzner box with docker compose."),
        ("问答服务都依赖哪些存储？", "问答服务的向量存在 Milvus 的 collection `qa_chunks` 里。"),
        ("Python 代码提交前应该跑什么检查？", "pre-commit 里现在是 ruff 和 ruff-format。"),
        ("Put my city in the sample config.", "Personal update: I moved to Porto last month."),
        ("Who owns the search service these days?", "Marcus takes over the search service, including CODEOWNERS."),
    ],
)  # fmt: skip
def test_a_tool_or_fact_the_prompt_asks_for_answers_it(prompt: str, memory: str) -> None:
    """Recall counts such a memory relevant whatever its other words."""
    own = searchterms.term_set(memory)
    assert synonyms.answers(own, prompt, memory)
    assert not synonyms.answers(own, "What did we have for lunch?", memory)
    other = "Go ahead and regenerate the lockfile."
    assert not synonyms.answers(searchterms.term_set(other), prompt, other)


def test_a_day_or_a_person_answers_only_on_the_prompts_subject() -> None:
    memory = "Release branches are cut every Tuesday at 15:00 UTC."
    own = searchterms.term_set(memory)
    assert not synonyms.answers(own, "Which day is the team lunch?", memory)
    assert not synonyms.answers(own, "What day did we cut the release branch?", memory)  # past
    owner = "iOS 提审和 App Store Connect 后台是王磊在管。"
    assert not synonyms.answers(searchterms.term_set(owner), "安卓渠道包找谁？", owner)


def test_a_port_answers_only_on_the_prompts_subject() -> None:
    memory = "The admin API listens on port 9090."
    own = searchterms.term_set(memory)
    assert synonyms.answers(own, "Which port does the admin API use?", memory)
    assert not synonyms.answers(own, "Which port does the frontend come up on?", memory)


def test_a_job_word_before_another_noun_asks_for_no_tool() -> None:
    """ "which database migrations tool" asks for a migration tool, not a database."""
    memory = "The job queue takes Postgres advisory locks."
    own = searchterms.term_set(memory)
    assert not synonyms.answers(own, "Which database migrations tool do we use?", memory)
    assert synonyms.answers(own, "Which database does the job queue use?", memory)


def test_a_line_manager_is_a_manager() -> None:
    memory = "There was a reorg: I report to Tomás now."
    own = searchterms.term_set(memory)
    prompt = "Who's my line manager these days?"
    asked = set(lexical.query_terms(prompt)[0])
    assert asked == {"line", "manager"}
    assert asked <= synonyms.carried(own, prompt, memory)


def test_words_of_asking_about_now_are_no_search_terms() -> None:
    assert lexical.query_terms("Which shell do I use day to day?")[0] == ("shell",)
    assert "哪家" not in searchterms.terms("我现在在哪家公司上班？")


@pytest.mark.parametrize(
    ("sentence", "times"),
    [
        ('schedule: "30 4 * * *"', {"04:30"}),
        ("cron `0 2 * * 1-5`", {"02:00"}),
        ("每天早上 8 点跑，周末 9点15分", {"08:00", "09:15"}),
        ("改到 6 点半", {"06:30"}),
        ("1 2 3 4 5 items", set()),
        ("at 02:00 UTC", set()),  # already a time as written
    ],
)
def test_clock_times_of_a_cron_schedule_and_a_chinese_hour(sentence: str, times: set[str]) -> None:
    assert clock.clock_times(sentence) == times


def _excerpt(mid: str, day: str, score: float, *turns: str) -> Hit:
    """An excerpt said on ``day`` (its own session), one turn per line."""
    sources = [{"uuid": f"{mid}{i}", "session_id": mid, "timestamp": f"{day}T10:0{i}:00Z"} for i in range(len(turns))]  # fmt: skip
    text = f"[{day}] " + "\n".join(turns)
    return hit({"id": mid, "kind": "excerpt", "score": score, "text": text, "sources": sources})


def test_a_diff_of_a_commands_flags_retires_the_flags_old_value() -> None:
    """ "- --workers 4 … --timeout 30 + --workers 4 … --timeout 120": a removed line that starts
    with a flag is a line of the diff, and the unit file's ``--timeout 30`` is marked (twenty-
    fifth set, read after its blind run)."""
    out = _marked(
        ("2024-10-01", "claude: `/etc/systemd/system/pelican.service`: ```ini [Service] ExecStart=/srv/pelican/.venv/bin/gunicorn pelican.wsgi:application \\ --workers 4 --bind 127.0.0.1:8000 --timeout 30 Restart=on-failure ```"),
        ("2024-10-08", "claude: The report takes ~70s and the worker gets killed at 30s. ```diff - --workers 4 --bind 127.0.0.1:8000 --timeout 30 + --workers 4 --bind 127.0.0.1:8000 --timeout 120 ``` So workers now get 120 seconds."),
    )  # fmt: skip
    assert "Restart=on-failure [until 2024-10-08; now:" in out["a"]  # (before the fence)
    assert "[until" not in out["b"]


def test_its_this_now_not_that_corrects_a_draft_of_the_same_session() -> None:
    """ "actually it's 300 now, not 120" corrects the draft an earlier turn of the same session
    wrote (twenty-fifth set, read after its blind run)."""
    out = _marked(
        ("2024-08-20", "user: write the docs page for rate limits / claude: Draft `docs/rate-limits.md`: > Each API key can make 120 requests per minute. Exceeding it returns `429`."),
        ("2024-08-20", "user: actually it's 300 now, not 120 — we raised it last week / claude: You're right, `settings.py` has `RATE_LIMIT = \"300/minute\"`. Fixed the page."),
        session="one",
    )  # fmt: skip
    assert (
        "120 requests per minute [until 2024-08-20; now: actually it's 300 now, not 120" in out["a"]
    )
    assert cues.CORRECTION.search("it's `pnpm`, not `yarn`")
    assert not cues.CORRECTION.search("it's fine, not a problem")


def test_an_image_pushed_to_another_registry_marks_the_old_path() -> None:
    """docker.io/wrenfield/api, later "images are now pushed to ghcr.io/wrenfield-labs/api":
    one image moved between registries (twenty-fifth set, read after its blind run); two images
    of one registry are two things."""
    out = _marked(
        ("2024-07-08", "claude: Added `.github/workflows/release.yml`: on `v*` tags it pushes ``` docker.io/wrenfield/api:latest ``` with the `DOCKERHUB_TOKEN` secret."),
        ("2024-07-22", "claude: PR #97: - images are now pushed to `ghcr.io/wrenfield-labs/api` (same tags) - login with `GITHUB_TOKEN`"),
    )  # fmt: skip
    assert (
        "secret [until 2024-07-22; now: images are now pushed to `ghcr.io/wrenfield-labs/api`"
        in (out["a"])
    )
    assert families.family("ghcr.io/acme/api") & families.family("docker.io/acme/api:1.2")
    assert not families.family("ghcr.io/acme/api") & families.family("ghcr.io/acme/worker")


def test_a_key_given_another_absolute_path_replaces_the_old_one() -> None:
    """``dir = "/data/sim/out"`` then ``dir = "/scratch/lbm/runs"`` in the same TOML table: the
    key is read before a path's root too (twenty-sixth set, read after its blind run)."""
    out = _marked(
        ("2023-10-09", "claude: 配置在 `sim.toml`： ```toml [output] dir = \"/data/sim/out\" every = 1000 format = \"hdf5\" ``` 单个快照约 3.1MB。"),
        ("2023-11-02", "claude: 已修改 `sim.toml`： ```toml [output] dir = \"/scratch/lbm/runs\" every = 1000 format = \"hdf5\" run_subdir = true ```"),
    )  # fmt: skip
    assert "[until 2023-11-02; now: 已修改 `sim.toml`" in out["a"]
    assert "[until" not in out["b"]


def test_a_value_kept_in_another_clause_does_not_keep_the_old_statement() -> None:
    """ "`inventory-svc`、`coupon-svc` 同步切换订阅，消费组名不变": what stays is the consumer groups'
    names, not the services' subscriptions, so the old topic is still marked (twenty-fourth set,
    read); "生产保持 3.1.4" still keeps what it names."""
    out = _marked(
        ("2024-03-18", "claude: `order-svc/internal/event/publisher.go`：下单成功后往 Kafka topic `mall_order_evt` 发一条 JSON，key 是 `user_id`，6 个分区。消费方有 `inventory-svc` 和 `coupon-svc`。"),
        ("2024-03-25", "claude: PR #356： ## 订单事件迁移到新 topic - 生产者改为发送到 `trade.order.created.v2`，key 改为 `order_id`，12 分区 - `inventory-svc`、`coupon-svc` 同步切换订阅，消费组名不变 - 旧 topic 保留 7 天用于回放"),
    )  # fmt: skip
    assert "[until 2024-03-25; now: 生产者改为发送到 `trade.order.created.v2`" in out["a"]


def test_a_mark_quotes_the_new_value_when_the_newest_only_says_the_old_is_gone() -> None:
    """The cutover gives the new topic, a later turn says the old topic has no consumers: the
    old config line is marked with the cutover ("now: … commerce.orders.v2"), not only with the
    later "the old `order-events` topic has had no consumers" (twenty-seventh set, read after
    its blind run). A value retired for good ("FOO flag removed") still has the last word."""
    out = _marked(
        ("2024-07-02", "claude: `application.yml`: ```yaml fulfillment: orders-topic: order-events ``` The listener reads `${fulfillment.orders-topic}`."),
        ("2024-08-06", "claude: Cutover done. Deployed fulfillment-svc `1.19.0` with `fulfillment.orders-topic: commerce.orders.v2` and `group-id: fulfillment-svc-v2`."),
        ("2024-08-20", "claude: Added a DLQ. Also: the old `order-events` topic has had no consumers since the cutover; retention is 7 days now."),
    )  # fmt: skip
    assert "[until 2024-08-06; now: Deployed fulfillment-svc `1.19.0` with" in out["a"]
    out = _marked(
        ("2024-07-02", "claude: `flags.yaml`: ```yaml new_checkout: true ``` so every user gets the new checkout."),
        ("2024-08-06", "claude: Set `new_checkout: false` in `flags.yaml` after the payment errors."),
        ("2024-08-20", "claude: Removed the `new_checkout` flag and its dead code path."),
    )  # fmt: skip
    assert "[until 2024-08-20; now: Removed the `new_checkout` flag" in out["a"]


def test_a_row_of_figures_is_no_version_of_a_later_figure() -> None:
    """ "| 1000 | 0.61 | 17.2 |" in a table of a run, later "GPU util is now 91–94%, step time
    1.42 s → 0.78 s": two fractions under one are no versions of one thing (twenty-seventh set,
    read after its blind run); a version is still one ("Python 3.11" / "bumped to 3.12").
    (The table's heading, "After 3k steps", is still taken for a count "step time" changed.)"""
    row = current.claims("| 1000 | 0.61 | 17.2 |\n| 2000 | 0.48 | 15.9 |")
    later = current.claims("Yes, data-bound. GPU util is now 91–94%, step time 1.42 s → 0.78 s.")
    assert not [(n.text, o.text) for o in row for n in later if current.replaces(n, o, 0.9, MINILM)]
    (old,) = current.claims("We're on Python 3.11.")
    (new,) = current.claims("Bumped the runtime to 3.12 in the Dockerfile and CI.")
    assert current.replaces(new, old, 0.9, MINILM)


def test_a_key_given_a_number_in_scientific_notation_is_replaced() -> None:
    """``learning_rate: 1e-4`` (a diff's added line), later ``learning_rate: 5.0e-5`` in the
    config a sweep chose: both are numbers, so the key's value changed (twenty-seventh set)."""
    assert current.shape("1e-4") == current.shape("5.0e-5") == current.shape("2e+3") == "number"
    out = _marked(
        ("2024-06-10", "claude: Changes in `configs/train.yaml`: ```diff optim: - learning_rate: 3e-4 + learning_rate: 1e-4 weight_decay: 0.01 ``` Relaunched."),
        ("2024-06-27", "claude: 5e-5 wins on both sets. Updated the config: ```yaml optim: learning_rate: 5.0e-5 weight_decay: 0.01 ``` Committed."),
    )  # fmt: skip
    assert "[until 2024-06-27; now:" in out["a"] and "5.0e-5" in out["a"]


def test_the_sentence_that_gives_the_new_value_reaches_the_block() -> None:
    """A replacement's sentence is shown from its long reply, though the prompt's words sit in
    other sentences of it ("线上 checkpoint 越来越慢" and a long answer whose diff sets
    ``interval: 3min``): the block showed the request and the cut reply without the value
    (twenty-seventh set, read after its blind run)."""
    old = _excerpt("old", "2024-03-05", 0.9, "user: set up the checkpoints of the fraud job", "assistant: Config in `deploy/flink-conf.yaml`: ```yaml execution.checkpointing.interval: 60s execution.checkpointing.mode: EXACTLY_ONCE ``` The first checkpoint took 12s.")  # fmt: skip
    reply = (
        "assistant: The fraud job's checkpoint grew to 18 GB and every checkpoint takes 40 to 70 s, so the job is checkpointing all the time. "
        "Changed `deploy/flink-conf.yaml`: ```diff -execution.checkpointing.interval: 60s +execution.checkpointing.interval: 3min ``` "
        "Unaligned checkpoints are on as well, so a checkpoint completes under backpressure. "
        "Recovery may replay a few more minutes of events, which the fraud team accepts. "
        "After a restart from a savepoint each checkpoint takes 20 to 35 s and the backpressure is gone. "
        "The checkpoint alert thresholds in Grafana were left as they were for now."
    )  # fmt: skip
    new = _excerpt("new", "2024-04-08", 0.5, "user: the fraud job's checkpoint keeps timing out, look into it", reply)  # fmt: skip
    assert len(reply) > 500  # a turn cut to the sentences that match the prompt
    marked = stale.mark_replaced([old, new], {}, MINILM)
    newer = next(h for h in marked if h.id == "new")
    assert any("interval: 3min" in s for s in newer.says), newer.says
    query = searchterms.terms(normalize_query("how often does the fraud job checkpoint now?"))
    for room in (1500, 700):
        plan = choose(marked, set(), room, query, brief=False)
        assert "+execution.checkpointing.interval: 3min" in render(plan.items, plan.footer), room
    plain = [replace(h, says=()) for h in marked]  # without it, the cut reply lacks the value
    plan = choose(plain, set(), 700, query, brief=False)
    assert "3min" not in render(plan.items, plan.footer)


@pytest.mark.parametrize(
    ("sentence", "old"),
    [
        ("New editor (`editor_v2`) now served to 75% of signed-in users (was 20%).", "20"),
        ("The pool holds 40 connections (previously 20) since the load test.", "20"),
        ("`worker.timeout` 改为 30s（原来是 10s），重启后不再超时。", "10s"),
    ],
)
def test_a_value_in_brackets_after_was_is_retired(sentence: str, old: str) -> None:
    """ "(was 20%)", "(previously 20)", "（原来是 10s）" name the old value (twenty-seventh set,
    read after its blind run: a changelog line "now served to 75% … (was 20%)")."""
    assert old in cues.retired(sentence)
    assert not cues.retired("The pool holds 40 connections (the default) since the load test.")


def test_a_plan_scrapped_in_the_imperative_retires_its_value() -> None:
    """ "Scrap the Doppler migration." calls off "We're planning to move secrets to Doppler"
    (nineteenth set: the plan's line was shown unmarked once the block showed the newer
    reply instead of the plan's marked one); "drop the table users" retires nothing."""
    out = _marked(
        ("2024-03-10", "user: We're planning to move secrets to Doppler next quarter. Can you draft a migration plan for payments?"),
        ("2024-04-02", "user: Scrap the Doppler migration. Security review said no, we're staying where we are."),
    )  # fmt: skip
    assert "next quarter [until 2024-04-02; now: Scrap the Doppler migration]" in out["a"]
    assert not cues.retired("drop the table users before the import")


def test_a_reply_without_the_prompts_words_that_says_the_new_value_is_shown() -> None:
    """ "用户头像现在存在哪家云的对象存储上？": the reply that says the move to COS carries none of
    the prompt's words; it is shown with the request, not left out as a turn that only joins
    its neighbours (twelfth set, after the new value's turn was ranked first)."""
    old = _excerpt("old", "2023-11-02", 0.9, "user: 用户头像上传之后存哪？", "assistant: 存在阿里云 OSS，bucket 是 `xy-avatar`，`storage/oss_client.py` 里用 oss2 上传，返回 CDN 地址。")  # fmt: skip
    new = _excerpt("new", "2024-03-04", 0.5, "user: 头像上传报错了，帮忙看看", "assistant: 报错是 `CosServiceError: code=AccessDenied, bucket=xy-avatar-1310224587, region=ap-shanghai`。迁到腾讯云 COS 以后新的 SecretId 没有这个 bucket 的写权限，我在 CAM 里给 `avatar-uploader` 子账号加了 `cos:PutObject`，现在上传正常了。", "user: OK，老的 OSS bucket 下个月就删了。")  # fmt: skip
    marked = stale.mark_replaced([old, new], {}, MINILM)
    assert next(h for h in marked if h.id == "new").says
    query = searchterms.terms(normalize_query("用户头像现在存在哪家云的对象存储上？"))
    plan = choose(marked, set(), 1500, query, brief=False)
    shown = {i.memory.id: i for i in plan.items}
    assert "new1" in shown["new"].turns, render(plan.items)
    assert "迁到腾讯云 COS" in shown["new"].display
