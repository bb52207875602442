"""Changes told in code and beside it: a diff that rewraps a line, Ruby's ``ENV.fetch``, a YAML
list's items, a diff that only adds, the words after a block of output, a value said beside
its successor, and "next to the existing …" (the twenty-eighth corrections set, read after its
blind run: each case here is one of its misses, rewritten)."""

from __future__ import annotations

from hitdata import MINILM, hit, marked, pairs

from memd.recall import disputed, stale
from memd.store import cues, current, diffs

REDIS_BEFORE = 'claude: ```ruby # config/initializers/sidekiq.rb redis = { url: ENV.fetch("REDIS_URL", "redis://redis-01.internal:6379/0"), pool_timeout: 5 } Sidekiq.configure_server { |c| c.redis = redis } ```'  # fmt: skip
REDIS_AFTER = 'claude: ```diff -redis = { url: ENV.fetch("REDIS_URL", "redis://redis-01.internal:6379/0"), pool_timeout: 5 } +redis = { url: ENV.fetch("REDIS_URL", "rediss://cache-prod.x8k2ab.use1.cache.amazonaws.com:6379/0"), + pool_timeout: 5, ssl_params: { verify_mode: OpenSSL::SSL::VERIFY_PEER } } ``` Updated the `REDIS_URL` secret too.'  # fmt: skip


def test_a_diff_that_wraps_the_new_line_onto_two_still_takes_the_old_value_away() -> None:
    """``-redis = { url: …old…, pool_timeout: 5 }`` then ``+redis = { url: …new…,`` and
    ``+  pool_timeout: 5, ssl_params: …``: what the second added line keeps is not gone, so
    the old URL is what the diff takes away, and the older config is marked."""
    assert diffs.diff_removed(REDIS_AFTER) == {"redis://redis-01.internal:6379/0"}
    out = marked(("2023-10-09", REDIS_BEFORE), ("2023-11-13", REDIS_AFTER))
    assert "[until 2023-11-13; now:" in out["a"]
    assert "[until" not in out["b"]


def test_a_ruby_env_fetch_default_is_keyed_by_its_variable() -> None:
    """``ENV.fetch("REDIS_URL", "…")`` in two configs gives one variable two defaults."""
    old = 'claude: ```ruby url = ENV.fetch("REDIS_URL", "redis://redis-01.internal:6379/0") ```'
    new = 'claude: Pointed it at the cluster: ```ruby url = ENV.fetch("REDIS_URL", "rediss://cache-prod.internal:6379/0") ```'  # fmt: skip
    assert pairs(old, new)
    other = 'claude: ```ruby url = ENV.fetch("SESSION_URL", "rediss://cache-prod.internal:6379/2") ```'  # fmt: skip
    assert not pairs(old, other)


def test_a_store_named_before_its_code_is_retired_by_name() -> None:
    """ "Used BoltDB (…), single file at …: ```go …```" is long for its code, but names BoltDB in
    its words: "Replaced BoltDB with SQLite" retires it. A word only inside the code does
    not count ("Finds entire/abc1234 …", a branch)."""
    old = "claude: Used BoltDB (`go.etcd.io/bbolt v1.3.7`), single file at `~/.tasker/tasks.db`: ```go db, err := bbolt.Open(filepath.Join(home, \".tasker\", \"tasks.db\"), 0o600, &bbolt.Options{Timeout: time.Second}) err = db.Update(func(tx *bbolt.Tx) error { for _, b := range []string{\"tasks\", \"tags\"} { if _, err := tx.CreateBucketIfNotExists([]byte(b)); err != nil { return err } } return nil }) ```"  # fmt: skip
    new = "claude: Replaced BoltDB with SQLite via `modernc.org/sqlite` (no cgo)."
    assert len(current.claims(old)[0].text) > current.MAX_CLAIM
    assert "retires 'boltdb'" in pairs(old, new)
    in_code = "claude: Layout: ```go // the store keeps every task in one bucket per tag, opened with bbolt, and BoltDB's single writer is why we batch writes into a transaction of at most a hundred tasks, flushed every second or when the queue fills up, whichever comes first; readers never block on the writer, and a crash loses at most the last second of tasks```"  # fmt: skip
    assert len(current.claims(in_code)[0].text) > current.MAX_CLAIM
    assert not pairs(in_code, new)


def test_two_items_of_a_yaml_list_are_two_things() -> None:
    """``- alert: NodeCPUHigh … for: 5m`` and later ``- alert: NodeDiskWillFillIn4h … for:
    30m``: two alerts, each with its own ``for:``; the CPU alert given ``for: 10m`` later is one
    alert changed."""
    cpu = "claude: ```yaml - alert: NodeCPUHigh expr: cpu_busy > 80 for: 5m labels: severity: warning ```"  # fmt: skip
    disk = "claude: ```yaml - alert: NodeDiskWillFillIn4h expr: predict_linear(avail[6h], 4 * 3600) < 0 for: 30m labels: severity: critical ```"  # fmt: skip
    assert not pairs(cpu, disk)
    cpu_later = "claude: ```yaml - alert: NodeCPUHigh expr: cpu_busy > 80 for: 10m labels: severity: warning ```"  # fmt: skip
    assert pairs(cpu, cpu_later)


def test_a_diff_that_only_adds_a_block_replaces_nothing() -> None:
    """``users = [dana]`` then a diff that adds marcus to the list and a ``data`` block for
    him: the list grew and Dana's ``email`` stays hers."""
    old = 'claude: ```hcl layer { users = [data.pagerduty_user.dana.id] } data "pagerduty_user" "dana" { email = "dana.okafor@acme.io" } ```'  # fmt: skip
    new = 'claude: ```diff - users = [data.pagerduty_user.dana.id] + users = [data.pagerduty_user.dana.id, data.pagerduty_user.marcus.id] + +data "pagerduty_user" "marcus" { email = "marcus.lindqvist@acme.io" } ```'  # fmt: skip
    assert not pairs(old, new)
    out = marked(("2024-08-05", old), ("2024-09-02", new))
    assert "[until" not in out["a"]


def test_next_to_the_existing_one_adds_a_second() -> None:
    """ "Added a mypy hook next to the existing ruff hook: ```yaml …```": ruff stays."""
    old = "claude: ```yaml repos: - repo: https://github.com/astral-sh/ruff-pre-commit rev: v0.0.278 hooks: - id: ruff args: [--fix] ```"  # fmt: skip
    new = "claude: Added a mypy hook next to the existing ruff hook: ```yaml - repo: https://github.com/pre-commit/mirrors-mypy rev: v1.4.1 hooks: - id: mypy args: [--strict] ```"  # fmt: skip
    assert not pairs(old, new)
    assert marked(("2023-07-10", old), ("2023-08-14", new))["a"] == old
    assert cues.existing("在现有的 ruff 之外加了 mypy") == {"ruff"}
    assert cues.existing("Replaced the existing ruff hook with a mypy one") == frozenset()


def test_words_after_a_block_of_output_are_a_statement_of_their_own() -> None:
    """ "``` $ promtool check rules … ``` 现在是 CPU 超过 90% 持续 5 分钟才告警。" says the new
    threshold, though it follows the output's block."""
    old = "user: 写个节点 cpu 使用率告警，超过 80% 持续 5 分钟就告警"
    new = "claude: ``` $ promtool check rules rules/node.yml Checking rules/node.yml SUCCESS: 2 rules found ``` 现在是 CPU 超过 90% 持续 5 分钟才告警。"  # fmt: skip
    assert "现在是 CPU 超过 90% 持续 5 分钟才告警。" in [c.text for c in current.claims(new)]
    out = marked(("2024-09-02", old), ("2024-10-08", new))
    assert "[until 2024-10-08; now:" in out["a"] and "90%" in out["a"]


def test_stopped_delivering_retires_a_topic() -> None:
    """ "TOPIC_ORDER_PAY 已停止投递" in a commit's subject retires the topic."""
    old = "user: 写个支付结果的消费者，topic 用 TOPIC_ORDER_PAY"
    new = "claude: ``` $ git log --oneline -1 a3f09b2 feat(mq): 订阅改为 TOPIC_PAY_RESULT，TOPIC_ORDER_PAY 已停止投递 ```"  # fmt: skip
    assert "retires 'topic_order_pay'" in pairs(old, new)


def test_a_value_said_beside_its_successor_holds_with_it() -> None:
    """A second region's Terraform, then "现在是杭州（cn-hangzhou）和新加坡（ap-southeast-1）两套集群":
    both regions hold, so the first config is not marked; a sentence that moves to the new
    region marks it."""
    first = 'claude: ```hcl provider "alicloud" { region = "cn-hangzhou" } module "ack_hz" { source = "./modules/ack" } ```'  # fmt: skip
    second = 'claude: ```hcl provider "alicloud" { alias = "sg" region = "ap-southeast-1" } module "ack_sg" { source = "./modules/ack" } ``` plan 只新增 sg 相关资源，`module.ack_hz` 无变更。现在是杭州（cn-hangzhou）和新加坡（ap-southeast-1）两套集群。'  # fmt: skip
    assert "[until" not in marked(("2024-01-15", first), ("2024-02-19", second))["a"]
    moved = 'claude: ```hcl provider "alicloud" { region = "ap-southeast-1" } module "ack_hz" { source = "./modules/ack" } ``` plan 只改了 region。集群从杭州迁到新加坡了，cn-hangzhou 那套已下线。'  # fmt: skip
    assert "[until 2024-02-19" in marked(("2024-01-15", first), ("2024-02-19", moved))["a"]


def test_terraform_blocks_of_two_labels_are_two_things() -> None:
    """``worker_count = 6`` in ``module "ack_hz"``, later ``worker_count = 3`` in ``module
    "ack_sg"``: two clusters' sizes."""
    hz = 'claude: ```hcl module "ack_hz" { source = "./modules/ack" worker_count = 6 } ```'
    sg = 'claude: ```hcl module "ack_sg" { source = "./modules/ack" worker_count = 3 } ```'
    assert not pairs(hz, sg)
    hz_later = 'claude: ```hcl module "ack_hz" { source = "./modules/ack" worker_count = 8 } ```'
    assert pairs(hz, hz_later)


def test_who_all_is_a_question_for_many() -> None:
    """ "payment 目录的 code owner 有谁", "who are the reviewers": many values answer it."""
    assert not disputed.asks_for_one("payment 目录的 code owner 有谁")
    assert not disputed.asks_for_one("who are the reviewers of the api?")
    assert disputed.asks_for_one("who owns the vendor relationship?")


# The twenty-ninth set, read after its blind run.


def test_a_url_taken_away_retires_its_host_said_in_words() -> None:
    """ "we have a redis box at cache-01.internal", later a diff that takes
    ``REDIS_URL=redis://cache-01.internal:6379/0`` away: the host is retired too."""
    old = "user: add a redis cache. we have a redis box at cache-01.internal, default port, db 0 is fine"
    new = "claude: ```diff --- a/.env.example +++ b/.env.example -REDIS_URL=redis://cache-01.internal:6379/0 +REDIS_URL=rediss://shop-cache.x1y2z3.use1.cache.amazonaws.com:6379/0 ```"  # fmt: skip
    assert "retires 'cache-01.internal'" in pairs(old, new)


def test_a_key_renamed_in_place_takes_its_value_away() -> None:
    """``- node-version: '18.19'`` / ``+ node-version-file: '.nvmrc'``: the version is gone."""
    old = "claude: ```yaml steps: - uses: actions/setup-node@v4 with: node-version: '18.19' cache: npm ```"  # fmt: skip
    new = "claude: I aligned CI with local: ```diff --- a/.github/workflows/ci.yml +++ b/.github/workflows/ci.yml - uses: actions/setup-node@v4 with: - node-version: '18.19' + node-version-file: '.nvmrc' cache: npm ```"  # fmt: skip
    assert "18.19" in diffs.diff_removed(new)
    assert "retires '18.19'" in pairs(old, new)


def test_a_command_moved_to_a_script_of_its_own_stays() -> None:
    """``-"lint": "eslint ."`` / ``+"lint": "npm run lint:js && npm run lint:css"``,
    ``+"lint:js": "eslint ."``: ESLint still runs, beside Stylelint."""
    new = 'claude: ```diff --- a/package.json +++ b/package.json "scripts": { - "lint": "eslint ." + "lint": "npm run lint:js && npm run lint:css", + "lint:js": "eslint .", + "lint:css": "stylelint \\"src/**/*.{css,scss}\\"" }, ```'  # fmt: skip
    assert "eslint" not in diffs.diff_removed(new)
    swapped = 'claude: ```diff - "build": "webpack --config webpack.prod.js" + "build": "rsbuild build" ```'  # fmt: skip
    assert "webpack" in diffs.diff_removed(swapped)


def test_a_file_moved_with_mv_is_no_longer_where_it_was() -> None:
    """ "$ sudo mv /etc/nginx/conf.d/mall.conf /etc/nginx/sites-available/mall-api.conf"."""
    old = "claude: 放在 `/etc/nginx/conf.d/mall.conf`： ```nginx upstream mall_api { server 10.0.1.11:8080; } ```"  # fmt: skip
    new = "claude: ``` $ sudo mv /etc/nginx/conf.d/mall.conf /etc/nginx/sites-available/mall-api.conf $ sudo nginx -t ```"  # fmt: skip
    assert "retires 'etc/nginx/conf.d/mall.conf'" in pairs(old, new)


def test_a_json_library_swapped_in_chinese() -> None:
    """ "用 fastjson 就行", later "全部去掉，统一换成 Jackson" (a capitalised name after 换成)."""
    old = "user: 微信支付回调的报文解析一下，用 fastjson 就行，项目里已经有依赖了"
    new = "user: 安全扫描又报 fastjson 反序列化漏洞了，架构组要求全部去掉，统一换成 Jackson"
    assert pairs(old, new)
    assert cues.changed_to("统一换成 Jackson", "jackson")


def test_a_team_handle_and_code_owner_are_no_person() -> None:
    """``* @acme/backend`` is a team's handle, "Code owner approval" names no owner: neither
    is a person a later second reviewer would mark "may be outdated"."""
    assert (
        "@acme/backend" in current.claim("```* @acme/backend +/db/migrations/ @priya-r```").values
    )  # type: ignore[union-attr]
    results = [
        hit({"id": "a", "project": "p", "kind": "excerpt", "score": 0.9, "text": "claude: ``` [DB] /db/migrations/ @wanglei ``` 给 master 勾上了 “Code owner approval”，需要 @wanglei 批准。", "sources": [{"session_id": "s0", "timestamp": "2024-08-12T10:00:00Z"}]}),
        hit({"id": "b", "project": "p", "kind": "excerpt", "score": 0.8, "text": "claude: ```diff [DB] -/db/migrations/ @wanglei +/db/migrations/ @wanglei @chenjing ``` 王磊和陈静都要批。", "sources": [{"session_id": "s1", "timestamp": "2024-09-09T10:00:00Z"}]}),
    ]  # fmt: skip
    out = disputed.mark_disputed(results, "改数据库表结构的 PR 要谁 review")
    assert not any("may be outdated" in r.text for r in out)


def test_a_replacement_replaced_in_turn_is_followed() -> None:
    """qwen-turbo, then qwen-max, then deepseek-chat: only the first is about the prompt, yet
    the block's chain reaches the newest, and a diff is a change to look at."""
    old = "user: 做个售后客服机器人。先用通义的 qwen-turbo，走 DashScope 的 OpenAI 兼容接口"
    mid = 'claude: ```diff -MODEL = os.environ.get("BOT_MODEL", "qwen-turbo") +MODEL = os.environ.get("BOT_MODEL", "qwen-max") ``` 准确率提升明显。'  # fmt: skip
    new = 'claude: ```diff -MODEL = os.environ.get("BOT_MODEL", "qwen-max") +MODEL = os.environ.get("BOT_MODEL", "deepseek-chat") ``` 同一评测集：deepseek-chat 准确率 89%。'  # fmt: skip
    assert current.may_replace(new)
    texts = [("2024-09-02", old), ("2024-09-16", mid), ("2024-11-04", new)]
    results = [
        hit({"id": chr(97 + i), "project": "p", "kind": "excerpt", "score": 0.9 - i / 10, "relevant": i == 0, "text": t,
             "sources": [{"session_id": f"s{i}", "timestamp": f"{day}T10:00:00Z"}]})
        for i, (day, t) in enumerate(texts)
    ]  # fmt: skip
    out = {r.id: r for r in stale.mark_replaced(results, {}, MINILM)}
    assert "[until 2024-09-16" in out["a"].text
    assert out["b"].relevant and "[until 2024-11-04" in out["b"].text and out["c"].relevant


def test_an_item_added_to_a_yaml_list_keeps_the_others() -> None:
    """ "+ - name: feishu-ops" beside the context line "- name: dingtalk-ops", run together on
    one line: a second receiver, DingTalk's stays. A changed item's line still replaces it."""
    added = "claude: 两边都发： ```diff receivers: - name: dingtalk-ops webhook_configs: - url: http://dingtalk-webhook:8060/send + - name: feishu-ops + webhook_configs: + - url: http://feishu-webhook:8086/send ```"  # fmt: skip
    assert not {"dingtalk-ops", "http://dingtalk-webhook:8060/send"} & diffs.diff_removed(added)
    changed = "claude: ```diff receivers: - - name: dingtalk-ops + - name: feishu-ops ```"
    assert "dingtalk-ops" in diffs.diff_removed(changed)
