"""Forget requests in conversation (issue 31, point 5): which sentences are requests, and what
the pipeline archives for them, on a real store (the real daemon: tests/test_forget_daemon.py)."""

from __future__ import annotations

import pytest

from memd.daemon.app import App
from memd.daemon.pipeline import Pipeline
from memd.extract.forget_requests import (
    ForgetRequest,
    request_sentences,
    requests_in,
    without_requests,
)
from memd.models import Segment, Turn
from memd.store.filters import match
from memd.store.forget_said import statement_values

PROJECT = "/home/dev/shop"

REQUESTS = [
    ("Actually, please forget my social security number", "national_id", False),
    ("Please forget that password immediately", "password", False),
    ("forget my home address", "address", False),
    ("Can you forget my phone number?", "phone", False),
    ("Please delete my address from your memory.", "address", False),
    ("forget the password I gave you", "password", False),
    ("don't remember that", "", True),
    ("Forget that.", "", True),
    ("Thanks! Also please forget that, it was private.", "", True),
    ("forget what I just said", "", True),
    ("Oh and forget that thing I told you", "", True),
    ("忘掉刚才那个地址", "address", False),
    ("把我的手机号忘了", "phone", False),
    ("不要记住我的密码", "password", False),
    ("别记这个", "", True),
    ("Could you forget my email address?", "email", False),
    ("please forget I told you my address", "address", False),
    ("Scratch that, don't remember it.", "", True),
    ("Never mind, forget the address I gave you.", "address", False),
    ("forget everything about my address", "address", False),
    ("Remove my phone number from memory.", "phone", False),
    ("Please don't store my credit card number.", "card", False),
    ("请忘记我的地址", "address", False),
    ("删除关于我地址的记忆", "address", False),
    ("把刚才说的忘掉", "", True),
]
NOT_REQUESTS = [
    "forget about the retry logic for now, focus on the parser",
    "forget about the retry logic",
    "I forgot to add tests",
    "don't forget to run the migrations",
    "Forget it, let's use Redis.",
    "forget that the API changed",
    "delete the old migration",
    "Remove the password field from the form",
    "I don't remember the flag name",
    "We should never store passwords in plain text",
    "Don't save the file yet",
    "don't keep the old branch around",
    "the forget-password flow sends an email",
    "Forgot password link is broken",
    "别忘了跑迁移",
    "我忘了加测试",
    "我把测试忘了",
    "不要记录敏感信息",
    "不用记下来，直接跑",
    "忘记密码的页面要重做",
    "把这个文件删掉",
    "Don't store the password in plain text.",
    "Never store my password in plain text.",
    "don't save my password in the config file",
    "don't keep my terminal open",
    "Forget the old API, we use v2 now.",
    "Let's forget the cache for now.",
    "don't remember why we did this",
    "forget the tests, just ship it",
    "I'll never forget that trip",
    "Did you forget my address?",
    "Don't forget my birthday!",
    "the forget() method drops the key",
    "Please remember my address.",
    "忘了告诉你，测试过了",
    "我差点忘了密码",
]


@pytest.mark.parametrize(("text", "subject", "bare"), REQUESTS)
def test_forget_requests_are_found(text: str, subject: str, bare: bool) -> None:
    [(_, found, _, is_bare)] = request_sentences(text)
    assert (found, is_bare) == (subject, bare)


@pytest.mark.parametrize("text", NOT_REQUESTS)
def test_other_uses_of_forget_are_not_requests(text: str) -> None:
    assert request_sentences(text) == []


def test_an_unknown_subject_keeps_its_words() -> None:
    [(_, subject, words, bare)] = request_sentences("Forget my dog's name please")
    assert (subject, words, bare) == ("", ("dog", "name"), False)


def turns(sid: str, day: int, *said: tuple[str, str]) -> list[Turn]:
    return [
        Turn(
            uuid=f"{sid}-{i}",
            session_id=sid,
            role=role,
            text=text,
            timestamp=f"2026-11-{day:02d}T10:00:{i:02d}.000Z",
            cwd=PROJECT,
        )
        for i, (role, text) in enumerate(said)
    ]


def session(sid: str, day: int, *said: tuple[str, str]) -> Segment:
    return Segment(sid, PROJECT, turns(sid, day, *said), reason="session-end")


def test_a_bare_request_points_at_the_statement_before_it() -> None:
    seg = session(
        "b1",
        1,
        ("user", "My locker code is 4411 and the locker is on floor 3."),
        ("assistant", "Noted: locker code 4411, floor 3."),
        ("user", "Hmm, forget that."),
        ("assistant", "OK."),
        ("user", "Now fix the flaky login test."),
    )
    [req] = requests_in(seg)
    assert req.bare and req.said_uuids == ("b1-0",) and "4411" in req.said
    out = without_requests(seg, [req])
    assert [t.text for t in out.turns][2:] == ["", "", "Now fix the flaky login test."]


def texts(app: App, status: str = "active") -> str:
    return "\n".join(m.text for m in app.store.query(match(status=status)))


def test_the_pipeline_archives_what_was_said_earlier_and_in_the_same_session(
    app: App, pipeline: Pipeline
) -> None:
    pipeline.process(
        session(
            "s1",
            1,
            ("user", "My home address is 42 Elm Street, Springfield. Use it for the test orders."),
            ("assistant", "Done: test orders now ship to 42 Elm Street, Springfield."),
            ("user", "We decided to use Postgres for the order service."),
            ("assistant", "Noted, Postgres it is."),
        )
    )
    assert "42 Elm Street" in texts(app)
    pipeline.process(
        session(
            "s2",
            2,
            ("user", "我的手机号是 13812345678，联系人字段用它。"),
            ("assistant", "好的，联系人字段默认 13812345678。"),
            ("user", "Actually, please forget my home address."),
            ("assistant", "Understood."),
            ("user", "把我的手机号忘了"),
            ("assistant", "好的。"),
            ("user", "Please add the retry to the order client."),
            ("assistant", "Added the retry to the order client."),
        )
    )
    active = texts(app)
    for gone in ("42 Elm Street", "13812345678", "forget", "忘了"):
        assert gone not in active, gone
    assert "Postgres" in active and "retry" in active
    archived = texts(app, "archived")
    assert "42 Elm Street" in archived and "13812345678" in archived
    assert pipeline.stats["forgotten"] >= 3


def test_a_new_value_said_after_the_request_is_kept(app: App, pipeline: Pipeline) -> None:
    pipeline.process(
        session(
            "n1",
            3,
            ("user", "My home address is 42 Elm Street, Springfield."),
            ("assistant", "Noted."),
            ("user", "Please forget my home address."),
            ("assistant", "OK."),
            ("user", "My home address is now 7 Oak Lane, Shelbyville."),
            ("assistant", "Noted the new one."),
        )
    )
    active = texts(app)
    assert "42 Elm Street" not in active and "7 Oak Lane" in active


def test_a_fact_read_after_the_request_to_forget_it_stays_forgotten(
    app: App, pipeline: Pipeline
) -> None:
    """Two sessions read out of order (a backfill, or a session still open elsewhere): the
    request of the 21st archives the address said on the 20th when that session comes in
    later; an address said on the 22nd, after the request, is kept."""
    pipeline.process(
        session("later", 21, ("user", "Please forget my home address."), ("assistant", "OK."))
    )
    assert pipeline.state.get("forget_requests")[0]["subject"] == "address"
    assert "forget" not in repr(pipeline.state.get("forget_requests"))  # no sentence kept
    pipeline.process(
        session(
            "earlier",
            20,
            ("user", "My home address is 42 Elm Street, Springfield."),
            ("assistant", "Noted: 42 Elm Street."),
            ("user", "The order service uses Postgres 16."),
            ("assistant", "Right."),
        )
    )
    active = texts(app)
    assert "42 Elm Street" not in active and "Postgres" in active
    pipeline.process(
        session(
            "moved",
            22,
            ("user", "My home address is 7 Oak Lane, Shelbyville."),
            ("assistant", "Noted."),
        )
    )
    assert "7 Oak Lane" in texts(app)


@pytest.mark.parametrize(
    ("subject", "text", "states", "values"),
    [
        (
            "address",
            "The user's home address is 42 Elm Street, Springfield.",
            True,
            ["42 Elm Street"],
        ),
        ("address", "I live at 42 Elm Street", True, ["42 Elm Street"]),
        ("address", "我住在北京市朝阳区建国路 88 号", True, ["北京市朝阳区建国路 88 号"]),
        (
            "phone",
            "user: Also my phone number is 555-201-7788 for the form.",
            True,
            ["555-201-7788"],
        ),
        ("phone", "我的手机号是 13812345678，联系人字段默认用它。", True, ["13812345678"]),
        ("national_id", "My SSN: [REDACTED:national_id]", True, []),
        ("password", "My password for the VPN is [REDACTED:password].", True, []),
        # Mentions of the subject that state no value of the user's own: kept.
        ("password", "We set the password to expire after 90 days.", False, []),
        ("password", "Passwords are hashed with argon2 in auth/hash.py.", False, []),
        ("address", "[2026-11-20] user: the shipping address field is required", False, []),
        ("address", "My email address is a@b.com", False, []),
        ("phone", "We call the phone API with a 5s timeout", False, []),
    ],
)
def test_what_carries_a_subject(subject: str, text: str, states: bool, values: list[str]) -> None:
    request = ForgetRequest("forget it", subject=subject)
    assert statement_values(text, request) == (states, values)


def test_a_bare_request_in_chinese_archives_the_statement_before_it(
    app: App, pipeline: Pipeline
) -> None:
    pipeline.process(
        session(
            "zh",
            4,
            ("user", "我家的门牌号是 3-502，快递地址写这个。"),
            ("assistant", "好的，快递地址用 3-502。"),
            ("user", "别记这个"),
            ("assistant", "好的。"),
            ("user", "订单服务的重试次数改成 5 次。"),
            ("assistant", "已改成 5 次。"),
        )
    )
    active = texts(app)
    assert "3-502" not in active and "别记" not in active
    assert "重试次数" in active
    assert "3-502" in texts(app, "archived")
