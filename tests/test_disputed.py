"""Two answers to one question (:mod:`memd.recall.disputed`): the older is marked with the
newer's date and value when the prompt asks for one value, and left alone otherwise."""

from __future__ import annotations

from typing import Any

import pytest
from hashseed import outputs_by_seed
from hitdata import hit

from memd.recall import disputed

REGION_OLD = "user: Terraform for prod should use eu-west-1 as the primary region."
REGION_NEW = "user: The migration is finished: the primary is eu-central-1 now."


def results(old: str, new: str, same_session: bool = False, **extra: Any) -> list[Any]:
    rows = [
        {"id": "old", "kind": "excerpt", "score": 0.9, "text": old,
         "sources": [{"timestamp": "2026-01-07T10:00:00Z", "session_id": "s1"}]},
        {"id": "new", "kind": "excerpt", "score": 0.5, "text": new,
         "sources": [{"timestamp": "2026-02-12T10:00:00Z", "session_id": "s1" if same_session else "s2"}]},
    ]  # fmt: skip
    rows += extra.get("more", [])
    return [hit(r) for r in rows]


def marked(out: list[Any]) -> dict[str, str]:
    return {r.id: r.text for r in out}


def test_an_older_answer_is_marked_with_the_newer_date_and_value() -> None:
    out = disputed.mark_disputed(
        results(REGION_OLD, REGION_NEW), "Which AWS region hosts the primary production stack?"
    )
    texts = marked(out)
    assert texts["old"] == (
        "user: Terraform for prod should use eu-west-1 as the primary region "
        "[may be outdated: 2026-02-12 says eu-central-1]."
    )
    assert texts["new"] == REGION_NEW
    scores = {r.id: r.score for r in out}
    assert scores["new"] > scores["old"]  # the newer comes first


@pytest.mark.parametrize(
    "question",
    [
        "Which AWS regions is the stack deployed in?",
        "Which region do prod and staging use?",
        "我们的服务部署在哪些地域？",
        "生产和预发分别在哪个地域？",
        "When did we first pick the primary region?",  # the past: the older value answers
        "What was the primary region before?",
        "以前主区域是哪个？",
        "who's on the prod region's on-call rotation?",  # people on a rotation: several
    ],
)
def test_a_question_for_several_values_or_the_past_marks_nothing(question: str) -> None:
    out = disputed.mark_disputed(results(REGION_OLD, REGION_NEW), question)
    assert marked(out) == {"old": REGION_OLD, "new": REGION_NEW}


def test_one_sessions_sentences_are_one_account() -> None:
    out = disputed.mark_disputed(
        results(REGION_OLD, REGION_NEW, same_session=True), "Which region is the primary?"
    )
    assert marked(out)["old"] == REGION_OLD


def test_a_value_said_again_as_late_still_holds() -> None:
    again = {"id": "again", "kind": "excerpt", "score": 0.4,
             "text": "user: Keep eu-west-1 as the primary for the EU API too.",
             "sources": [{"timestamp": "2026-02-12T11:00:00Z", "session_id": "s3"}]}  # fmt: skip
    out = disputed.mark_disputed(
        results(REGION_OLD, REGION_NEW, more=[again]), "Which region is the primary?"
    )
    assert marked(out)["old"] == REGION_OLD


def test_a_url_named_again_without_its_scheme_still_holds() -> None:
    """Eighteenth corrected-facts set (read): a second staging stack beside the first."""
    old = "claude: Staging is up in eu-central-1 at https://staging-eu.quillhq.dev."
    new = ("claude: Created a second staging stack at https://staging-us.quillhq.dev. "
           "staging-eu.quillhq.dev is unchanged.")  # fmt: skip
    for question in ("Which staging URL should QA use?", "What staging URLs can I test against?"):
        assert marked(disputed.mark_disputed(results(old, new), question))["old"] == old


def test_values_of_other_kinds_or_other_subjects_are_no_dispute() -> None:
    old = "user: The access-logs bucket keeps 400 days of logs."
    new = "user: Deploy previews now expire after 14 days."
    out = disputed.mark_disputed(results(old, new), "How long are access logs kept?")
    assert marked(out)["old"] == old
    old = "user: The upload limit is 10 MB per file."
    new = "user: The upload limit is 50 requests per minute."
    out = disputed.mark_disputed(results(old, new), "What is the upload limit?")
    assert marked(out)["old"] == old


def test_sizes_of_one_unit_next_to_the_older_words() -> None:
    old = "user: 头像和附件上传加个大小限制，单个文件最大 10 MB。"
    new = "user: 客户要传设计稿，单个文件上限调到 50 MB。"
    out = disputed.mark_disputed(results(old, new), "单个文件最大能传多大？")
    assert "单个文件最大 10 MB [may be outdated: 2026-02-12 says 50]。" in marked(out)["old"]


def test_two_stores_for_one_thing_are_two_answers() -> None:
    old = "assistant: auth/session.py keeps login sessions in Redis with a 24h TTL."
    new = "assistant: Login sessions now live in the DynamoDB table auth-sessions."
    out = disputed.mark_disputed(results(old, new), "Where are login sessions persisted?")
    assert "[may be outdated: 2026-02-12 says DynamoDB]" in marked(out)["old"]


def test_numbers_in_words_are_no_answers() -> None:
    """Chat says "two dogs" and "three dogs" about different photos and different times."""
    old = "user: Audrey: here's a photo of me with two dogs in the park."
    new = "user: Audrey: a photo of three dogs sitting on the floor with leashes."
    out = disputed.mark_disputed(results(old, new), "How many dogs does Audrey walk?")
    assert marked(out)["old"] == old


def test_a_job_the_prompt_names_is_the_subject() -> None:
    """A prompt asking "What CI ...?": two CI services are two answers, whatever the words."""
    old = "user: Our builds run on Jenkins (ci.acme.local). Add an integration stage."
    new = "assistant: Added an integration job to the GitHub Actions workflow."
    out = disputed.mark_disputed(results(old, new), "What CI do our builds run on now?")
    assert (
        "Jenkins (ci.acme.local) [may be outdated: 2026-02-12 says GitHub Actions]"
        in (marked(out)["old"])
    )
    out = disputed.mark_disputed(results(old, new), "Where do the builds run?")
    assert marked(out)["old"] == old  # no job named, and the two share no word


def test_a_tool_named_by_an_everyday_word_counts_as_a_name() -> None:
    """ "Drone" written as a name is a CI; "drone" in a path is spelled as the name in the mark."""
    old = "user: 我们用 GitLab CI，帮我在 .gitlab-ci.yml 里加个 lint 阶段。"
    new = (
        "assistant: .drone.yml 里的 test 步骤要配 image_pull_secrets，Drone 的仓库设置里加 secret。"
    )
    out = disputed.mark_disputed(results(old, new), "咱们的流水线现在跑在哪个 CI 上？")
    assert "[may be outdated: 2026-02-12 says Drone]" in marked(out)["old"]
    plain = new.replace("Drone 的仓库", "我们的仓库").replace(".drone.yml", "pipeline.yml")
    assert marked(disputed.mark_disputed(results(old, plain), "现在跑在哪个 CI 上？"))["old"] == old


def test_editions_of_one_named_thing_are_two_answers() -> None:
    """A credential rotated from sms-ak-2024 to sms-ak-2025q3: the name's serial part changed."""
    old = "user: 短信服务的 AccessKey 放在 KMS 里，凭据名叫 sms-ak-2024，应用启动时读取。"
    new = "assistant: 做完了：新凭据 sms-ak-2025q3 已在 KMS 创建，读取的凭据名已改过来。"
    out = disputed.mark_disputed(results(old, new), "notify-service 现在从 KMS 读的是哪个凭据？")
    assert "读取 [may be outdated: 2026-02-12 says sms-ak-2025q3]" in marked(out)["old"]
    other = new.replace("sms-ak-2025q3", "push-key-2025")  # another name: another credential
    assert marked(disputed.mark_disputed(results(old, other), "现在读的是哪个凭据？"))["old"] == old


def test_a_merge_method_is_one_answer() -> None:
    old = "user: 仓库的合并方式统一用 rebase merge，保持历史线性。"
    new = "user: 以后主干只允许 squash 合并，PR 标题就是提交信息。"
    out = disputed.mark_disputed(results(old, new), "PR 现在应该用什么方式合并进主干？")
    assert "[may be outdated: 2026-02-12 says squash]" in marked(out)["old"]
    out = disputed.mark_disputed(results(old, new), "Which CI runs on PRs?")
    assert marked(out)["old"] == old  # not asked about merging


def test_a_kind_the_prompt_names_is_the_subject() -> None:
    """ "Which region?" or "哪个端口？": every value of that kind answers, whatever its words."""
    old = "user: Everything of ours lives in us-east-1. Write me a terraform S3 bucket."
    new = 'user: terraform plan shows region = "eu-central-1" on the aws provider.'
    out = disputed.mark_disputed(results(old, new), "Which AWS region is our stack deployed in?")
    assert "[may be outdated: 2026-02-12 says eu-central-1]" in marked(out)["old"]
    old = "user: admin 后台本地跑在 8081 端口，帮我配一下 vite 的代理。"
    new = "user: 后端日志显示 `Tomcat started on port(s): 9090 (http)`。"
    out = disputed.mark_disputed(results(old, new), "admin 后端在本地监听哪个端口？")
    assert "[may be outdated: 2026-02-12 says 9090]" in marked(out)["old"]
    out = disputed.mark_disputed(results(old, new), "admin 后台用的是什么代理？")
    assert marked(out)["old"] == old  # not asked for a port


def test_versions_of_two_majors_are_two_answers_when_a_version_is_asked() -> None:
    old = "user: I added an .nvmrc with 18.19.0 so everyone is on the same Node."
    new = "user: Fresh clone: nvm use picks up 20.11.1 from .nvmrc, but npm ci warns."
    out = disputed.mark_disputed(results(old, new), "Which Node version is the repo pinned to?")
    assert "[may be outdated: 2026-02-12 says 20.11.1]" in marked(out)["old"]
    out = disputed.mark_disputed(results(old, new), "Why does npm ci warn about the engine?")
    assert marked(out)["old"] == old  # no version asked: 18.x and 20.x are other things


def test_a_time_asked_for_compares_a_cron_schedule_with_a_time() -> None:
    old = "user: The nightly export runs from cron `0 2 * * *` and uploads to S3."
    new = "user: The nightly export log shows it started at 04:30 UTC and failed."
    for question in ("When does the nightly export start?", "每晚的导出任务几点开始？"):
        out = disputed.mark_disputed(results(old, new), question)
        assert "[may be outdated: 2026-02-12 says 04:30]" in marked(out)["old"]
    out = disputed.mark_disputed(results(old, new), "Why did the nightly export fail?")
    assert marked(out)["old"] == old  # no time asked


def test_two_shares_of_users_are_two_answers() -> None:
    old = "user: 新推荐算法先给 5% 的用户灰度。"
    new = "user: 效果不错，灰度已经调到 30% 了，帮我在埋点里区分一下新旧算法。"
    out = disputed.mark_disputed(results(old, new), "新版推荐算法目前放量到多少用户了？")
    assert "[may be outdated: 2026-02-12 says 30]" in marked(out)["old"]


def test_two_handles_are_two_answers_to_who() -> None:
    old = "assistant: Added `.github/CODEOWNERS` with `/services/search/ @ana-k` for review."
    new = "user: My PR in services/search waits on a review from @tom-b. Right?"
    out = disputed.mark_disputed(results(old, new), "Who has to approve search changes?")
    assert "[may be outdated: 2026-02-12 says @tom-b]" in marked(out)["old"]
    out = disputed.mark_disputed(results(old, new), "Who reviews search and ranking changes?")
    assert marked(out)["old"] == old  # two things asked: both may hold


@pytest.mark.parametrize(
    ("old", "new", "question", "says"),
    [
        # a tool named only in a Java package or a URL's host
        ("assistant: Wrote the producer with `segmentio/kafka-go`, Kafka topic `order-paid`.",
         "user: 积分服务报错 org.apache.rocketmq.client.exception.MQClientException: No route info of this topic",
         "支付成功的事件现在走哪个消息队列？", "rocketmq"),
        ("assistant: The worker consumes the RabbitMQ queue `email-jobs`.",
         "assistant: The worker now resolves https://sqs.eu-west-1.amazonaws.com/1/email-jobs and long-polls.",
         "What message broker are the email jobs going through?", "sqs"),
        # a naming style, a runtime, an image registry, a Chinese owner
        ("user: 返回字段按规范用下划线命名，json tag 用 snake_case。",
         "user: API 规范 v2 出来了，新接口字段一律用驼峰。",
         "写新接口的时候，字段名按什么风格来？", "驼峰"),
        ("assistant: deploy.sh rsyncs the build and runs `supervisorctl restart report-svc`.",
         "assistant: Ran `kubectl rollout undo deployment/report-svc -n prod`; 3 pods are Ready.",
         "report-svc 现在跑在什么上面？", "kubectl"),
        ("assistant: The docker-push job pushes acmecn/order-api to Docker Hub.",
         "user: The push refers to repository [registry.cn-hangzhou.aliyuncs.com/acmecn/order-api] denied",
         "镜像打完现在推到哪个镜像仓库？", "registry.cn-hangzhou.aliyuncs.com"),
        ("user: 支付网关的回调验签老是失败，王磊是这块的负责人。",
         "user: 又告警了：pay-gateway 5xx 比例 12%，负责人：陈思远",
         "支付网关出问题现在该找谁？", "陈思远"),
    ],
)  # fmt: skip
def test_values_told_in_passing_are_answers(old: str, new: str, question: str, says: str) -> None:
    out = marked(disputed.mark_disputed(results(old, new), question))
    assert f"[may be outdated: 2026-02-12 says {says}" in out["old"], out["old"]
    assert out["new"] == new


def test_a_package_or_a_host_that_names_no_tool_is_no_answer() -> None:
    old = "assistant: The worker consumes the RabbitMQ queue `email-jobs`."
    new = "assistant: The client is org.apache.http.impl.client, calling https://api.example.com/q."
    out = disputed.mark_disputed(results(old, new), "Which message queue do the email jobs use?")
    assert marked(out)["old"] == old


def test_code_calling_into_the_older_tool_does_not_name_it() -> None:
    old = "assistant: Added `slugify.test.ts`; `npx jest src/utils` passes."
    new = (
        "assistant: Replaced a leftover `jest.useFakeTimers()` with `vi.useFakeTimers()`. "
        "`npx vitest run src/utils` is green."
    )
    out = marked(disputed.mark_disputed(results(old, new), "What do we use to run unit tests?"))
    assert "[may be outdated: 2026-02-12 says vitest]" in out["old"], out["old"]
    both = "assistant: Jest runs the unit tests and `npx vitest run` the component tests."
    out = marked(disputed.mark_disputed(results(old, both), "What do we use to run unit tests?"))
    assert out["old"] == old  # the newer names Jest as a runner: both hold


def test_a_weekday_asked_for_is_one_answer_and_devices_asked_for_are_several() -> None:
    old = "user: 我们每周几发版？ / claude: 按 release 流程是每周四下午发版，周三中午代码冻结。"
    new = "claude: 新流程是每周二发版，所以提醒放在周一 12:00。"
    out = marked(disputed.mark_disputed(results(old, new), "这周的版本哪天上线？"))
    assert "[may be outdated: 2026-02-12 says 周二]" in out["old"], out["old"]
    old = (
        "user: Which phone should QA use for the Android smoke test? / claude: Use the Pixel 7"
        " on the device shelf; it's on Android 14."
    )
    new = (
        "user: We need a low-end device in the smoke tests. / claude: Ordered a Galaxy A14 and"
        " registered it in the device matrix; the smoke test now runs on it every release."
    )
    question = "Which Android device does the smoke test run on?"
    out = marked(disputed.mark_disputed(results(old, new), question))
    assert "[may be outdated: 2026-02-12 says Galaxy" in out["old"], out["old"]
    question = "Which Android devices does the smoke test run on?"
    assert marked(disputed.mark_disputed(results(old, new), question)) == {"old": old, "new": new}
    old = "claude: Added .npmrc with `registry=https://registry.npmjs.org/` for the frontend."
    new = "claude: The frontend's .npmrc now sets `registry=https://npm.pkg.github.com`."
    question = "Which npm registry does the frontend install packages from?"
    assert (
        "[may be outdated: 2026-02-12 says"
        in marked(disputed.mark_disputed(results(old, new), question))["old"]
    )
    question = "Which npm registries does the frontend install packages from?"
    assert marked(disputed.mark_disputed(results(old, new), question)) == {"old": old, "new": new}


@pytest.mark.parametrize(
    ("old", "new", "question", "says"),
    [
        ("user: Priya's on call for payments this week - draft the incident message to her.",
         "claude: The payments rotation in PagerDuty shows Marcus as on-call through Sunday.",
         "Who should I loop in if payments breaks right now?", "Marcus"),
        ("claude: 写了 docs/incident_template.md，默认抄送 gateway 负责人老周，包含时间线。",
         "claude: CODEOWNERS 里 services/gateway/ 的 owner 是 @linxiaoyu（林晓宇）。",
         "gateway 服务现在归谁管？", "@linxiaoyu"),
        ("user: 支付服务现在是刘洋负责，线上问题直接 @ 他。 / claude: 已在 README 的「负责人」一栏写上刘洋。",
         "user: 陈静下周开始接手支付服务。 / claude: README 的负责人和 on-call 配置也更新成了陈静。",
         "支付服务出了线上问题应该找谁？", "陈静"),
        ("user: Priya owns search-service, loop her in on the reindex PR.",
         "user: Heads up: Priya is going on parental leave and won't come back to search. Marcus"
         " takes over search-service, including CODEOWNERS and the on-call rotation.",
         "Who should I ping about search-service relevance problems?", "Marcus"),
        ("claude: CI 里加了 `npm config set registry https://registry.npmmirror.com`。",
         "claude: 私有源 npm.acme-inc.cn 需要认证，我在 CI 变量里加了 NPM_TOKEN。",
         "我们装 npm 包走的是哪个源？", "npm.acme-inc.cn"),
    ],
)  # fmt: skip
def test_an_owner_or_a_registry_named_in_words_is_an_answer(
    old: str, new: str, question: str, says: str
) -> None:
    out = marked(disputed.mark_disputed(results(old, new), question))
    assert f"[may be outdated: 2026-02-12 says {says}" in out["old"], out["old"]


def test_a_reviewer_added_beside_the_first_is_one_more() -> None:
    old = "claude: 在 .gitlab/CODEOWNERS 里给根目录配了 @zhanglei，并开启了 Code Owner 审批。"
    new = "claude: CODEOWNERS 里加了 @wangfang，审批规则改成需要 2 个 Code Owner 批准。"
    out = marked(disputed.mark_disputed(results(old, new), "payment-core 的 MR 要谁审批才能合？"))
    assert out == {"old": old, "new": new}
    assert [
        (m.group("before"), m.group("after"))
        for m in disputed._OWNER_EN.finditer("The owner is Marcus.")
    ] == [("The", None), (None, "Marcus")]  # "The" is no name: left out where it is read


@pytest.mark.parametrize(
    ("old", "new", "question", "says"),
    [
        (
            "assistant: Added `src/lib/api.ts`: `export const api = axios.create({ baseURL })`.",
            "assistant: `api` is the shared `ofetch.create({ baseURL, retry: 3 })` instance.",
            "Which HTTP library is the storefront's shared API client built on?",
            "ofetch",
        ),
        (
            "assistant: Used SendGrid via `@sendgrid/mail` for the password reset email.",
            "assistant: The notifier sends through Postmark; staging used its test token.",
            "Which email provider does the notifier send password reset emails through?",
            "Postmark",
        ),
        (
            "assistant: 用了 Element Plus，配合 `ElementPlusResolver` 按需引入。",
            "assistant: 3 月份的 PR #412 换成了 Naive UI，`ProTable.vue` 已重写。",
            "管理端用的 UI 组件库是哪个？",
            "Naive UI",
        ),
        (
            "assistant: 用 `tencentcloud` provider 管理 DNSPod 上 `quanshu.com` 的记录。",
            "assistant: 域名的 NS 已经切到 Cloudflare 了，solver 也改了。",
            "主域名的 DNS 解析现在托管在哪家？",
            "Cloudflare",
        ),
        (
            'assistant: The Dockerfile sets `ENV JAVA_OPTS="-Xms1g -Xmx2g"` and a healthcheck.',
            "assistant: `docker inspect` shows `JAVA_OPTS=-Xms2g -Xmx6g`: a 6 GB max heap.",
            "What max heap size is reporting-service running with?",
            "Xmx6g",
        ),
    ],
)
def test_tools_of_a_common_job_the_prompt_names_are_two_answers(
    old: str, new: str, question: str, says: str
) -> None:
    """An HTTP client, an email provider, a component library, a DNS host: jobs a developer asks
    about by name, whose tools memd knows; and a JVM's maximum heap."""
    out = marked(disputed.mark_disputed(results(old, new), question))
    assert f"[may be outdated: 2026-02-12 says {says}]" in out["old"]
    several = f"{question} 分别" if "？" in question else f"{question} And the admin app's?"
    assert marked(disputed.mark_disputed(results(old, new), several))["old"] == old


def test_a_shell_session_an_excerpt_ran_together_gives_its_commands_values() -> None:
    """An excerpt folds a code block's lines into one: each command is read on its own, so the
    heap ``kubectl set env`` gave is an answer (twentieth set, read)."""
    old = "assistant: 在 `deploy/order-service.yaml` 里：`JAVA_OPTS` 是 `-Xms2g -Xmx2g -XX:+UseG1GC`。"
    new = (
        "assistant: 已执行： ``` $ kubectl -n prod set resources deploy/order-service"
        " --limits=memory=4Gi --requests=memory=4Gi deployment.apps/order-service resource"
        ' requirements updated $ kubectl -n prod set env deploy/order-service JAVA_OPTS="-Xms3g'
        ' -Xmx3g -XX:+UseG1GC -XX:MaxGCPauseMillis=200 -XX:+HeapDumpOnOutOfMemoryError"'
        " deployment.apps/order-service env updated $ kubectl -n prod rollout status"
        " deploy/order-service ```"
    )
    out = marked(
        disputed.mark_disputed(results(old, new), "订单服务生产环境 JVM 最大堆现在是多少？")
    )
    assert "[may be outdated: 2026-02-12 says Xmx3g]" in out["old"]


def test_the_mark_is_the_same_whatever_the_hash_seed() -> None:
    """Two values of one kind said on one day: which one the mark quotes was the order of a
    set, so it changed from one daemon start to the next (nineteenth set, c19-en-08)."""
    code = (
        "import sys; sys.path.insert(0, 'tests')\n"
        "from test_disputed import results\n"
        "from memd.recall import disputed\n"
        "old = 'assistant: Upgraded with `helm upgrade ingress-nginx --version 4.8.3` (controller 1.9.4).'\n"
        "new = 'assistant: `helm list` shows CHART ingress-nginx-4.10.0, APP VERSION 1.10.0; "
        "upgraded on May 2 to 4.10.0.'\n"
        "q = 'Which ingress-nginx Helm chart version is deployed in the prod cluster?'\n"
        "print([r.text for r in disputed.mark_disputed(results(old, new), q)][0])\n"
    )
    outs = outputs_by_seed(code)
    assert len(outs) == 1
    assert "[may be outdated: 2026-02-12 says" in outs.pop()
