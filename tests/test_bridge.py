"""The zh<->en term bridge (memd.text.bridge): unit tests of the glossary and of what a translation
may carry, then a real daemon with the default (English-only) model recalling across languages."""

from __future__ import annotations

import json
from collections.abc import Iterator
from importlib import resources

import pytest
from daemon_process import DaemonProcess, add_project, served

from memd.models import Memory
from memd.recall import lexical, retrieve
from memd.text import bridge, crossterms, searchterms


def coverage(query: str, text: str) -> float:
    """The lexical coverage of ``text`` for ``query`` as recall computes it, without idf."""
    whole, segments = lexical.query_terms(query)
    have = bridge.bridge(query).extend(text, searchterms.term_set(text))
    return lexical.coverage_of(whole, segments)(have)


def test_the_packaged_glossary_loads_whole_and_has_no_repeated_word() -> None:
    text = resources.files("memd").joinpath("data", bridge.GLOSSARY).read_text(encoding="utf-8")
    words = [line.split("\t")[0] for line in text.splitlines() if line and line[0] != "#"]
    assert len(words) == len(set(words))
    g = bridge.glossary()
    assert len(g.zh) == len(words) >= 500
    assert g.zh["数据库"] == ("database", "db")
    assert "数据库" in g.en[("database",)]


def test_a_malformed_glossary_line_is_refused() -> None:
    with pytest.raises(bridge.GlossaryError, match="line 2"):
        bridge.parse("# header\n数据库 database\n")
    with pytest.raises(bridge.GlossaryError, match="stop word"):
        bridge.parse("登录\tlog in\n")  # "in" is a stop word: "log" alone would mean 日志
    with pytest.raises(bridge.GlossaryError):
        bridge.parse("库\tlibrary\n")  # one character is too ambiguous


def test_a_chinese_word_is_carried_by_its_english_translation() -> None:
    query = "数据库备份保留多久？"
    assert coverage(query, "Weather is nice today.") == 0.0
    full = coverage(query, "Database backups are kept for 30 days.")
    part = coverage(query, "The database is PostgreSQL 16.")
    # 6 terms: 数据 据库 库备 备份 份保 保留; 多久 (how long) is a question word, no term.
    assert full == 1.0
    # 数据, 据库 only: 库备 (across 数据库|备份) needs both words' translations.
    assert part == pytest.approx(2 / 6)


def test_an_english_word_is_carried_by_its_chinese_translation() -> None:
    query = "How do I deploy the service to production?"
    assert coverage(query, "生产环境部署只走 GitHub Actions 的 release 工作流") == pytest.approx(
        2 / 3
    )  # deploy, production; not service
    assert coverage(query, "线上服务的部署由运维负责") == 1.0
    assert coverage(query, "周末去爬山，记得带水") == 0.0


def test_inflections_meet_the_glossary_form() -> None:
    # lexical.terms stems "caching" to "cach" but "cache" to itself: both carry 缓存.
    for text in ("Caching is off in tests.", "The cache is Redis.", "Results are cached."):
        assert coverage("缓存", text) == 1.0, text
    assert coverage("Which queries are cached?", "慢查询的结果缓存五分钟") == 1.0


def test_translations_never_add_to_what_the_prompt_asks() -> None:
    """The denominator is the prompt's own terms: a memory holding a term and all of its
    translations covers no more than one holding the term alone."""
    query = "接口报错怎么处理"
    alone = coverage(query, "接口报错处理")
    both = coverage(query, "接口报错处理 api error handler interface endpoint exception")
    assert alone == both == 1.0
    assert coverage("database", "database 数据库 db") == 1.0


def test_no_bridge_for_words_outside_the_glossary_but_the_dictionary_s() -> None:
    for query in (
        "What did we eat for dinner?",
        "我们晚饭吃了什么？",
        "Explain photosynthesis in plants.",
    ):
        alone = bridge._bridge(query, None)  # the glossary alone
        assert not alone.alternatives and alone.search_text(query) == query
    # Everyday words come from the dictionary (memd.text.dictionary, tests/test_dictionary.py).
    assert "晚饭" in bridge.bridge("What did we eat for dinner?").words
    assert "dinner" in bridge.bridge("我们晚饭吃了什么？").words


def test_no_bridge_across_a_word_boundary() -> None:
    # 数据库|存储: the "库存" (inventory) spanning the two words is not a word of the prompt.
    found = bridge.bridge("数据库存储用什么？")
    assert "inventory" not in found.words and "stock" not in found.words
    assert coverage("数据库存储用什么？", "Inventory is counted nightly.") == 0.0
    # English: "log" is 日志, never 登录 (login) or 登出 (logout).
    assert coverage("What format do the logs use?", "登录页的按钮") == 0.0
    assert coverage("What format do the logs use?", "日志统一用 JSON 格式输出") == 1.0


def test_a_mixed_language_prompt_bridges_both_ways() -> None:
    query = "帮我 fix 一下 cache 的 bug"
    found = bridge.bridge(query)
    assert {"fix", "cache", "bug"} <= set(found.alternatives)
    assert coverage(query, "修复了缓存失效的缺陷") == 1.0
    assert "缓存" in found.search_text(query)
    assert {"缓存", "修复", "缺陷"} <= set(found.search_terms)  # bigrams, as lexical.terms cuts


def test_chinese_function_words_are_stop_words_like_their_english_counterparts() -> None:
    # "应该", "在", "哪里" go like "should", "where"; "功能" (feature) holds the stop character
    # "能" but is a glossary word, so it is kept whole.
    assert searchterms.terms("功能开关应该在哪里配置？") == ("功能", "能开", "开关", "配置")
    assert searchterms.terms("Where should feature flags be configured?") == (
        "feature",
        "flag",
        "configur",
    )


def test_glossary_words_holding_a_stop_character_are_kept_whole() -> None:
    """ "能", "请", "上", "会", "用" are function words on their own, but not inside 性能
    (performance), 请求 (request), 上传 (upload), 会话 (session), 用户 (user)."""
    assert searchterms.terms("性能") == ("性能",)
    assert searchterms.terms("请求超时") == ("请求", "求超", "超时")
    assert searchterms.terms("我会话过期了") == ("会话", "话过", "过期")
    assert searchterms.terms("用户上传的图片") == ("用户", "户上", "上传", "图片")
    # ... and each carries its translation.
    assert coverage("性能", "Performance dropped after the upgrade.") == 1.0
    assert coverage("上传图片", "Image uploads go to S3.") == 1.0
    assert coverage("会话", "Sessions expire after an hour.") == 1.0
    # Outside such words they still cut: "用" (use), "里" (in), "只" (only), "做" (do).
    assert searchterms.terms("日志里只用 JSON 格式") == ("日志", "json", "格式")
    assert searchterms.terms("后端框架决定用 FastAPI") == (
        "后端",
        "端框",
        "框架",
        "架决",
        "决定",
        "fastapi",
    )


def test_the_bridge_and_lexical_terms_cut_chinese_runs_alike() -> None:
    """The bridge reads a run's pieces (lexical.cjk_pieces) to know which bigrams the prompt
    has; lexical.terms takes a faster path for runs without a kept word: both must agree."""
    for run in (
        "数据库备份保留多久",
        "我会话过期了怎么办",
        "用户上传的图片统一存到对象存储",
        "以后台任务为准",
        "日志里只用格式化输出",
        "一下单元测试",
        "的的的",
    ):
        pieces = [run[i : i + 2] for a, b in searchterms.cjk_pieces(run) for i in range(a, b - 1)]
        assert tuple(pieces) == searchterms.terms(run), run


def test_colloquial_function_words_are_stop_words() -> None:
    # 啥 = 什么 (what), 咋 = 怎么 (how), 弄 / 搞 (do, make): no term of their own.
    assert searchterms.terms("缓存咋配置") == searchterms.terms("缓存怎么配置") == ("缓存", "配置")
    assert (
        searchterms.terms("日志用的啥格式")
        == searchterms.terms("日志用的什么格式")
        == ("日志", "格式")
    )
    assert searchterms.terms("部署搞好了吗") == searchterms.terms("部署弄好了吗") == ("部署",)
    assert coverage("缓存咋配置", "How is the cache configured?") == 1.0
    # 多久 / 多长 (how long) go like 多少 (how many): a question word, no term.
    assert searchterms.terms("备份保留多久") == searchterms.terms("备份保留多长时间")[:3]
    assert "多久" not in searchterms.terms("备份保留多久")


def test_irregular_past_forms_meet_the_glossary_form() -> None:
    # "paid", "built", "sent", "written": no suffix for lexical.terms or inflections to match.
    assert coverage("支付", "Orders that were never paid expire.") == 1.0
    assert coverage("构建", "The frontend is built by Vite.") == 1.0
    assert coverage("邮件", "The welcome email is sent by a worker.") == 1.0
    assert coverage("发送", "The welcome email is sent by a worker.") == 1.0
    assert "paid" in bridge.inflections("pay") and "written" in bridge.inflections("write")
    assert coverage("What was paid?", "未支付的订单") == 1.0


def test_common_developer_words_cross_both_ways() -> None:
    for zh, en in (
        ("打包工具", "Which bundler do we use?"),
        ("线程池", "The thread pool has 8 workers."),
        ("拦截器", "An axios interceptor adds the token."),
        ("跳过", "Skip the flaky test."),
        ("取消订单", "Cancel the order."),
        ("内存泄漏", "A memory leak in the worker."),
        ("单测", "Unit tests use a real SQLite database."),
        ("文件名", "Filenames are lower-case."),
        ("安卓", "The Android build is signed in CI."),
    ):
        assert coverage(zh, en) >= 0.5, (zh, en)
    assert coverage("Which bundler builds the frontend?", "打包构建改用 Vite") == pytest.approx(
        2 / 3
    )


def test_everyday_developer_chinese_crosses_to_english() -> None:
    """The glossary's 2026-12-01 additions (gloss version 2): words of chats and tickets that the
    first glossary lacked and the dictionary reads literally (联调 "joint tuning", 踩坑 "step in a
    pit") carry their meaning, so an English memory says all a Chinese prompt asks."""
    for zh, en in (
        ("组件里不要写死颜色", "Do not hardcode colors in components."),
        ("一键部署", "One-click deploy from the admin page."),
        ("联调", "Integration testing with the payments team starts Monday."),
        ("线上必现", "The bug is reproducible in production."),
        ("踩坑", "Pitfalls of the new router."),
        ("兜底", "A fallback when the cache is down."),
        ("跑起来", "How do I run the service locally?"),
    ):
        assert coverage(zh, en) == 1.0, (zh, en)


def lexical_of(query: str, text: str) -> float:
    """The lexical signal ``rank`` gives ``text`` for ``query`` (no idf, no semantic signal)."""
    memory = Memory(text=text, kind="fact", project="p", id="m1")
    found = retrieve.rank(
        [(memory, 0.0)], [], query, {"m1": 0.0}, calibration=retrieve.Calibration()
    )
    return float(found[0].breakdown.lexical)


def test_across_languages_a_memory_said_in_full_by_the_prompt_is_covered() -> None:
    """A Chinese statement covers few of its terms in a short English question, but every
    term of the question is in the statement: across languages the larger share counts."""
    statement = "后端框架决定用 FastAPI，不用 Flask"
    question = "Which web framework does the backend use?"
    forward = coverage(statement, question)
    assert forward < 0.5
    # web, framework, backend: the statement carries framework (框架) and backend (后端).
    reach = frozenset(searchterms.terms(statement)).union(bridge.bridge(statement).reach_terms)
    assert crossterms.reverse_coverage(searchterms.terms(question), reach) == pytest.approx(2 / 3)
    assert lexical_of(statement, question) == pytest.approx(2 / 3, abs=1e-3)
    # The other way round too: an English statement, a Chinese question. Its 6 terms: 数据 据库
    # 备份 保留 through the translations, 库备 and 份保 (across two words) as the words on both
    # sides are carried.
    english = "Database backups are kept for 30 days in S3."
    assert lexical_of(english, "数据库备份保留多久？") == 1.0
    assert lexical_of(english, "数据库备份保留了吗") == 1.0
    # Without the bigrams on both sides, a bigram across two words is not carried.
    reach = frozenset(searchterms.terms(english)).union(bridge.bridge(english).reach_terms)
    assert crossterms.reverse_coverage(("数据", "据库", "库表", "表结"), reach) == pytest.approx(
        2 / 4
    )
    # A memory of fewer than three terms is not covered by a shared word or two.
    assert crossterms.reverse_coverage(("backend", "fastapi"), reach) == 0.0
    # An unrelated memory stays uncovered.
    assert lexical_of(statement, "We went hiking last weekend and the weather was great.") == 0.0


def test_within_one_language_only_the_prompt_s_own_terms_count() -> None:
    statement = "The backend framework is FastAPI, not Flask; we picked it after the load tests."
    question = "Which web framework does the backend use?"
    assert lexical_of(statement, question) == pytest.approx(coverage(statement, question))
    assert lexical_of(statement, question) < 0.5
    zh = "后端框架决定用 FastAPI，不用 Flask，压测之后定的"
    assert lexical_of(zh, "后端用什么框架？") == pytest.approx(coverage(zh, "后端用什么框架？"))


def test_a_chinese_word_is_carried_by_its_synonyms_in_the_glossary() -> None:
    """Two glossary words whose first English forms are each other's ("上线" and "发版", both
    "release") are one concept: a memory says 发版 where the prompt says 上线."""
    assert "发版" in bridge.synonyms("上线") and "上线" in bridge.synonyms("发版")
    assert "部署" not in bridge.synonyms("上线")  # "deploy" first: a word of its own
    assert "释放" not in bridge.synonyms("发版")  # "free" first: a memory's release
    assert bridge.synonyms("不在词表里") == ()
    assert "例会" in bridge.synonyms("周会") and "堡垒机" in bridge.synonyms("跳板机")
    question = "这周的版本哪天上线？"
    assert coverage(question, "新流程是每周二发版。") > coverage(question, "新流程是每周二部署。")
    assert coverage(question, "我们去爬山了。") == 0.0


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DaemonProcess]:
    with served(tmp_path_factory.mktemp("bridge")) as proc:
        yield proc


ENGLISH = [
    "Database backups are kept for 30 days in the S3 bucket.",
    "Production deploys go through the GitHub Actions release workflow only.",
    "The frontend uses Pinia for state management.",
    "We went hiking last weekend and the weather was great.",
    "Lunch orders are collected on Fridays before noon.",
    "Which web framework does the backend use?",
]
CHINESE = [
    "接口报错时统一用 ElMessage 弹窗提示用户",
    "缓存失效时间设为十分钟，用 Redis 存储",
    "周末我们去爬山了，天气很好",
    "午饭订单每周五中午之前收集",
]


def test_the_default_model_recalls_across_languages_through_the_bridge(
    daemon: DaemonProcess,
) -> None:
    """MiniLM (the default) knows no Chinese: the bridge's lexical signal alone finds these."""
    status = daemon.request({"cmd": "status"})
    assert "MiniLM" in json.dumps(status), status
    en_project, en_ids = add_project(daemon, "english", ENGLISH)
    zh_project, zh_ids = add_project(daemon, "chinese", CHINESE)
    cases = [
        ("数据库备份保留多久？", en_project, en_ids[ENGLISH[0]]),
        ("生产环境怎么部署？", en_project, en_ids[ENGLISH[1]]),
        # A statement finds the question it answers: every term of the memory is in it.
        ("后端框架决定用 FastAPI，不用 Flask", en_project, en_ids[ENGLISH[5]]),
        ("How should API errors be shown to the user?", zh_project, zh_ids[CHINESE[0]]),
        ("When does the cache expire, and where is it stored?", zh_project, zh_ids[CHINESE[1]]),
    ]
    for prompt, cwd, gold in cases:
        reply = daemon.request({"cmd": "search", "query": prompt, "cwd": cwd, "limit": 5})
        assert reply["ok"], reply
        found = {r["id"]: r for r in reply["results"]}
        assert gold in found, (prompt, reply["results"])
        assert found[gold]["score_breakdown"]["lexical"] > 0.5, found[gold]
        chosen = daemon.request({"cmd": "context", "cwd": cwd, "prompt": prompt})["chosen"]
        assert gold in [c["id"] for c in chosen], (prompt, chosen)
    # An English prompt about nothing the glossary links still finds nothing in Chinese.
    reply = daemon.request(
        {"cmd": "search", "query": "Which bundler builds the mobile app?", "cwd": zh_project}
    )
    assert reply["results"] == [], reply["results"]


def test_a_compound_term_is_carried_by_the_translations_of_its_words() -> None:
    """An identifier or hyphenated word says what it is about in words the other language
    translates: "report-generation", "api/export", "test_upload_resume"."""
    assert crossterms.parts("report-generation") == ("report", "generation")
    assert crossterms.parts("test_upload_resume") == ("test", "upload", "resume")
    assert crossterms.parts("icon-only") == ("icon",)  # "only" is a stop word
    assert crossterms.parts("deploy") == () and crossterms.parts("v0.5.0") == ()
    # An English prompt's compound term is carried by a Chinese memory holding both words.
    question = "Which queue should a report-generation job go on?"
    assert "report-generation" in bridge.bridge(question).alternatives
    have = bridge.bridge(question).extend("报表生成放到 low 队列", frozenset())
    assert "report-generation" in have
    assert "report-generation" not in bridge.bridge(question).extend("报表放到队列", frozenset())
    # A Chinese prompt meets an English memory's identifier through its words ...
    memory = "TODO: add rate limiting to /api/export"
    assert coverage("导出接口", memory) == 1.0
    # ... and a memory's compound term counts for the reverse coverage when half its words do.
    reach = frozenset(searchterms.terms("报表生成放到队列")).union(
        bridge.bridge("报表生成放到队列").reach_terms
    )
    assert crossterms.reverse_coverage(searchterms.terms(question), reach) >= 0.5
    # Within one language terms stay whole: an English prompt does not meet "api/export"
    # through "export".
    assert "export" not in bridge.bridge("export").extend(memory, searchterms.term_set(memory))


def test_across_languages_the_lexical_signal_is_read_on_the_model_s_scale() -> None:
    """e5's calibration counts 0.6 of a prompt's terms carried across languages as full
    coverage; within one language, and with a model without that scale, coverage is as is."""
    memory = Memory(text="Database backups are kept for 30 days in S3.", kind="fact", id="m1")
    same = Memory(text="数据库备份保留三十天，另外每周做一次演练", kind="fact", id="m2")
    query = "数据库备份保留多久？每周演练吗？"
    plain = retrieve.Calibration()
    scaled = retrieve.Calibration(cross=(0.17, 0.5), cross_lexical=0.6)
    cosines = {"m1": 0.0, "m2": 0.0}
    by = {
        c: {
            r.id: r.breakdown.lexical
            for r in retrieve.rank([(memory, 0.0), (same, 0.0)], [], query, cosines, calibration=c)
        }
        for c in (plain, scaled)
    }
    assert 0 < by[plain]["m1"] < by[scaled]["m1"]
    assert by[scaled]["m1"] == pytest.approx(min(1.0, by[plain]["m1"] / 0.6), abs=1e-3)
    assert by[scaled]["m2"] == by[plain]["m2"]
    from memd.embedding.models import E5_MODEL, MINILM_MODEL, cross_lexical_for

    assert cross_lexical_for(E5_MODEL) == 0.6 and cross_lexical_for(MINILM_MODEL) == 1.0


def test_a_chinese_prompt_finds_an_english_memory_by_the_words_of_its_identifier(
    daemon: DaemonProcess,
) -> None:
    """Through a real daemon (MiniLM: the words alone decide across languages): the memory
    names its subject only inside a compound term, "report-generation"."""
    texts = [*ENGLISH, "The report-generation jobs go on the low-priority Celery queue."]
    project, ids = add_project(daemon, "identifiers", texts)
    gold = ids[texts[-1]]
    prompt = "报表生成的任务放哪个队列？"
    reply = daemon.request({"cmd": "search", "query": prompt, "cwd": project, "limit": 5})
    found = {r["id"]: r for r in reply["results"]}
    assert gold in found, reply["results"]
    assert found[gold]["score_breakdown"]["lexical"] >= 0.6, found[gold]
    chosen = daemon.request({"cmd": "context", "cwd": project, "prompt": prompt})["chosen"]
    assert [c["id"] for c in chosen] == [gold], chosen
