"""What the thirty-first corrections set missed, each rewritten: a host swapped with ``sed``, an
old name that "gets deleted", a task queue moved onto another broker, a broker dropped from a
YAML list, a server taken offline in Chinese, a second Terraform provider, two linters that
both run, an owner joined by a second one, a build tool asked for in Chinese and a config key
asked for with other joiners."""

from __future__ import annotations

from hitdata import MINILM, hit, marked, pairs

from memd.recall import stale
from memd.store import cues, current, diffs, restated, roles
from memd.text.searchterms import term_set, terms

SED = """claude: ```bash
$ grep -rl "stg-eu.tideline.dev" . | xargs sed -i 's/stg-eu\\.tideline\\.dev/api-stg.tideline.internal/g'
$ grep -rn "api-stg.tideline.internal" .
./Makefile:1:STAGING_HOST ?= api-stg.tideline.internal
```"""  # fmt: skip


def test_a_sed_substitution_retires_the_value_it_replaces() -> None:
    """``sed -i 's/stg-eu\\.tideline\\.dev/api-stg.tideline.internal/g'`` puts one host in the
    other's place: the old host is retired, and the ``.dev/`` inside the expression names no
    dev environment. A pattern (``s/v[0-9]+/v2/``) swaps no value."""
    old = "claude: ```diff -STAGING_HOST ?= staging.tideline.dev +STAGING_HOST ?= stg-eu.tideline.dev ```"  # fmt: skip
    assert "retires 'stg-eu.tideline.dev'" in pairs(old, SED)
    assert current.environments(SED) == frozenset()
    assert diffs.sed_swaps('sed -i "s/PORT=8080/PORT=9090/" .env')[0][1:] == ("8080", "9090")
    assert diffs.sed_swaps("sed -E 's/v[0-9]+/v2/' f; sed -i 's/^#//' x") == []


def test_a_name_that_gets_deleted_is_retired() -> None:
    """ "the public stg-eu name gets deleted friday": stg-eu goes, not Friday; "Travis is
    turned off" beside the tool switched to."""
    new = "user: staging's behind the VPN now. host is api-stg.tideline.internal, the public stg-eu name gets deleted friday"  # fmt: skip
    old = "user: we moved staging to the EU box, it's stg-eu.tideline.dev now."
    assert "retires 'stg-eu'" in pairs(old, new)
    assert cues.retired("the public stg-eu name gets deleted friday") == {"stg-eu"}
    off = "user: We switched to GitHub Actions last week and Travis is turned off."
    assert "retires 'travis'" in pairs("user: Our Travis CI builds take forever.", off)


def test_a_task_queue_moved_to_another_broker_keeps_the_task_queue() -> None:
    """ "move celery to SQS": the broker (RabbitMQ) is replaced; Celery, the task queue that
    runs on it, stays."""
    new = "user: we're killing the rabbit cluster. move celery to SQS, queue name mailforge-digests, us-east-1"  # fmt: skip
    assert pairs("user: broker is our rabbitmq in the cluster", new)
    assert not pairs("user: add a celery worker that sends the weekly digests.", new)
    assert roles.different_jobs({"celery"}, {"sqs"})


def test_an_item_dropped_from_a_yaml_list_in_a_diff_is_retired() -> None:
    """ "-  - kfk-hz-02…" with "+  - kfk-hz-06…" in a list whose other items are context
    lines: the dropped broker goes, the items left as they were stay."""
    diff = """```diff
 bootstrap_servers:
   - kfk-hz-01.shuju.internal:9092
-  - kfk-hz-02.shuju.internal:9092
   - kfk-hz-03.shuju.internal:9092
+  - kfk-hz-06.shuju.internal:9092
```"""
    assert diffs.diff_removed(diff) == {"kfk-hz-02.shuju.internal:9092"}
    assert diffs.diff_removed(" ".join(diff.split())) == {"kfk-hz-02.shuju.internal:9092"}
    only_added = "```diff\n enable:\n   - errcheck\n+  - revive\n```"
    assert diffs.diff_removed(only_added) == set()


def test_a_server_taken_offline_in_chinese_is_retired() -> None:
    """ "kfk-hz-02 那台机器硬件故障下线了": the server, not "件故障"; "Drone 服务器月底下线":
    Drone, not "器月底"."""
    said = "kfk-hz-02 那台机器硬件故障下线了，运维新上了 kfk-hz-06 顶替它，分区已经迁完。"
    assert cues.retired(said) == {"kfk-hz-02"}
    assert cues.retired("Elasticsearch 集群已下线") == {"Elasticsearch"}
    assert cues.retired("公司统一用 GitLab CI 了，Drone 服务器月底下线。") == {"Drone"}


def test_a_second_terraform_provider_adds_a_region() -> None:
    """A provider block with an ``alias`` is a second region beside the first, not its
    replacement ("深圳再部署一套做双活，北京继续跑")."""
    first = 'claude: ```hcl provider "alicloud" { region = "cn-beijing" } module "api_bj" { source = "./modules/api" name = "huoyun-api-bj" } ```'  # fmt: skip
    second = 'claude: ```hcl provider "alicloud" { alias = "sz" region = "cn-shenzhen" } module "api_sz" { source = "./modules/api" name = "huoyun-api-sz" } ```'  # fmt: skip
    assert not pairs(first, second)
    moved = 'claude: ```hcl provider "alicloud" { region = "cn-shanghai" } ```'
    assert pairs(first, moved)


def test_a_second_region_is_brought_in_beside_the_first() -> None:
    """Asked which regions serve, the block that shows the first provider's region also gets
    the later one's second provider, unmarked, though its own score was under the threshold."""
    first = 'claude: ```hcl provider "aws" { region = "us-west-2" } module "origin_usw2" { source = "./modules/origin" } ```'  # fmt: skip
    second = 'user: APAC latency is bad. add a second origin in ap-southeast-1 / claude: ```hcl provider "aws" { alias = "apse1" region = "ap-southeast-1" } module "origin_apse1" { source = "./modules/origin" } ``` From a Singapore probe it now resolves to the apse1 ALB.'  # fmt: skip
    (a,) = current.claims(first)
    assert any(restated.another_item(b, a) for b in current.claims(second))
    results = [
        hit({"id": "a", "text": first, "kind": "excerpt", "score": 0.8,
             "sources": [{"session_id": "s1", "timestamp": "2025-01-20T10:00:00Z"}]}),
        hit({"id": "b", "text": second, "kind": "excerpt", "score": 0.3, "relevant": False,
             "sources": [{"session_id": "s2", "timestamp": "2025-03-03T10:00:00Z"}]}),
    ]  # fmt: skip
    out = {r.id: r for r in stale.mark_replaced(results, {}, MINILM)}
    assert out["b"].relevant and 0.79 < out["b"].score < 0.8
    assert "[until" not in out["a"].text
    (moved,) = current.claims('claude: ```hcl provider "aws" { region = "eu-west-1" } ```')
    assert restated.same_key(moved, a) and not restated.another_item(moved, a)


def test_two_tools_that_both_run_keep_the_first() -> None:
    """ "现在提交时 ESLint 和 Stylelint 都会跑": "X 和 Y 都…" says both hold; a flag is no
    name of a tool (``--fix`` is not replaced by ``vue``)."""
    old = "user: guanli-fe 加 husky + lint-staged，提交前跑 eslint --fix"
    new = "claude: 现在提交时 ESLint 和 Stylelint 都会跑，`.vue` 文件两个都过。"
    assert not pairs(old, new)
    assert current.shape("--fix") == "flag"
    out = marked(("2024-03-18", old), ("2024-04-08", new))
    assert "[until" not in out["a"]


def test_an_owner_joined_by_a_second_one_stays() -> None:
    """The newer lists the first owner beside the second and says both own the module
    ("模块整体两人共同负责"); an owner handed over is still a change."""
    old = "user: 在对账模块的 README 和 CODEOWNERS 里登记：负责人王磊（wanglei）"
    new = "claude: ```diff -/reconcile/ @wanglei +/reconcile/ @wanglei @zhaomin +/reconcile/ledger/ @zhaomin ``` README「负责人」改成： - 王磊（@wanglei）：渠道对账 - 赵敏（@zhaomin）：内部账务核对 模块整体两人共同负责，公共代码任意一人 review 即可。"  # fmt: skip
    assert not pairs(old, new)
    handed = "user: 对账模块负责人改成赵敏（zhaomin）了，王磊转岗"
    assert pairs(old, handed)


def test_a_build_tool_asked_for_in_chinese() -> None:
    """ "构建用的啥": the bundler and the build tool are asked for."""
    jobs = {role for role, _tools, _asked in roles.asked("官网前端本地怎么起？构建用的啥")}
    assert {"bundler", "build tool"} <= jobs


def test_a_config_key_is_found_with_other_joiners() -> None:
    """A prompt's ``bootstrap.servers`` (Kafka's Java name) is carried by a config's
    ``bootstrap_servers``; ``max_poll_records`` by ``max.poll.records``."""
    (key,) = (t for t in terms("新写的消费者 bootstrap.servers 该填哪几个？") if "." in t)
    assert key in term_set("```yaml bootstrap_servers: - kfk-hz-01.shuju.internal:9092 ```")
    (snake,) = terms("what is max_poll_records set to")[:1]
    assert snake in term_set("set max.poll.records=100 in consumer.properties")
    assert "config_yaml" not in term_set("it reads the config. yaml is next")
