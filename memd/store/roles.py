"""What a well-known tool is for: two tools for different jobs are not two answers to one question.

"Project uses ruff" and "Project uses uv" both hold (a linter and a package manager); "we use
black" and "we use ruff format" answer the same question. :func:`memd.store.similar.conflict`
and :mod:`memd.store.current` ask :func:`different_jobs` before calling two names rivals.
"""

from __future__ import annotations

import re
from functools import lru_cache

from memd.text.chinese import RANGES


def _listed(words: str) -> tuple[str, ...]:
    return tuple(words.split())


ROLES: dict[str, tuple[str, ...]] = {
    "package manager": _listed(
        "npm pnpm yarn bun pip pipenv poetry uv pip-tools conda cargo composer bundler gradle "
        "maven nuget"
    ),
    "linter": _listed(
        "ruff eslint flake8 pylint golangci-lint rubocop clippy biome stylelint hadolint "
        "shellcheck markdownlint yamllint buf gosec"
    ),
    "formatter": _listed("ruff black isort prettier gofmt rustfmt biome yapf autopep8"),
    "type checker": _listed("mypy pyright pyre pytype tsc flow"),
    "test runner": _listed("pytest jest vitest mocha rspec unittest playwright cypress nose2"),
    "database": _listed(
        "postgres postgresql mysql mariadb sqlite mongodb cassandra dynamodb clickhouse tidb "
        "cockroachdb lancedb milvus qdrant weaviate pinecone chroma pgvector"
    ),
    "cache": _listed("redis memcached valkey"),
    "message queue": _listed("rabbitmq kafka sqs nats pulsar redis rocketmq activemq"),
    "task queue": _listed("celery sidekiq dramatiq rq huey arq bullmq resque"),
    # (a task queue runs on a broker: "move celery to SQS" keeps celery)
    "ci": _listed("jenkins circleci travis github-actions gitlab buildkite drone"),
    "containers": _listed("docker podman kubernetes helm nomad"),
    "bundler": _listed("vite webpack esbuild rollup parcel turbopack rsbuild rspack vue-cli"),
    "build tool": _listed("gradle gradlew maven mvn mvnw bazel sbt cmake"),
    "hosting": _listed(
        "heroku fly fly.io render vercel netlify railway digitalocean fargate ecs hetzner"
        " ec2 eks gke aks"
    ),
    "merge method": _listed("squash rebase"),
    "monitoring": _listed(
        "sentry datadog prometheus grafana rollbar newrelic loki jaeger tempo zipkin skywalking "
        "opentelemetry elk kibana papertrail splunk graylog logdna"
    ),
    "web framework": _listed("fastapi django flask express rails nextjs nuxt"),
    "ui library": _listed("react vue angular svelte solid"),
    "language": _listed(
        "python typescript javascript rust go java ruby kotlin swift php elixir scala"
    ),
    "feature flags": _listed("launchdarkly unleash flagsmith growthbook configcat"),
    "mobile device": _listed("pixel iphone ipad galaxy oneplus xiaomi"),
    "shell": _listed("bash zsh fish nushell powershell pwsh"),
    "operating system": _listed("windows wsl wsl2 macos linux ubuntu debian fedora"),
    "editor": _listed(
        "vscode vim neovim nvim emacs helix sublime zed intellij pycharm webstorm goland nano "
        "cursor windsurf"
    ),
    "naming style": _listed("snake_case camelcase kebab-case pascalcase"),
    "search engine": _listed("elasticsearch opensearch meilisearch typesense solr algolia"),
    "object storage": _listed("s3 oss gcs minio r2 cos"),
    "container registry": _listed("dockerhub ghcr ecr acr gcr harbor quay"),
    "runtime": _listed(
        "supervisor supervisord supervisorctl systemd systemctl pm2 kubernetes kubectl k8s nomad"
    ),
    "secrets": _listed("vault secretsmanager secretmanager keyvault doppler infisical sops"),
    "cdn": _listed("cloudflare fastly akamai cloudfront bunnycdn"),
    "http client": _listed(
        "axios ofetch fetch got ky superagent node-fetch undici requests httpx aiohttp urllib3 "
        "okhttp retrofit alamofire guzzle faraday reqwest resty"
    ),
    "email provider": _listed(
        "sendgrid postmark mailgun ses mandrill sparkpost resend mailjet brevo sendinblue "
        "mailchimp smtp2go"
    ),
    "analytics": _listed(
        "posthog mixpanel amplitude segment plausible umami matomo heap "
        "google-analytics ga4 sensorsdata umeng growingio"
    ),
    "component library": _listed(
        "element-plus element-ui naive-ui antd ant-design-vue vuetify quasar primevue "
        "primereact mui chakra mantine shadcn vant arco-design tdesign headlessui radix"
    ),
    "icons": _listed(
        "font-awesome fontawesome heroicons lucide lucide-react feather tabler phosphor iconify "
        "remixicon ionicons material-icons bootstrap-icons"
    ),
    "dns": _listed("dnspod cloudflare route53 alidns godaddy namecheap gandi ns1 porkbun"),
    "auth provider": _listed("auth0 okta cognito keycloak clerk authing casdoor"),
    "payments": _listed("stripe paddle braintree adyen paypal alipay wechatpay"),
    "orm": _listed(
        "sqlalchemy prisma typeorm sequelize drizzle gorm ent hibernate mybatis activerecord "
        "peewee tortoise mikro-orm kysely sqlc sqlx sqlmodel mybatis-plus jooq diesel sqlboiler knex"
    ),
    "state management": _listed("redux zustand mobx pinia vuex recoil jotai valtio xstate"),
    "json library": _listed(
        "jackson fastjson fastjson2 gson moshi orjson ujson simplejson serde_json jsoniter sonic"
    ),
    "garbage collector": _listed(
        "g1gc zgc shenandoah useg1gc usezgc useshenandoahgc useparallelgc useserialgc"
    ),
    "alerting": _listed("pagerduty opsgenie flashduty victorops grafana-oncall"),
    "sms provider": _listed("twilio vonage nexmo messagebird plivo"),
    "logging library": _listed(
        "pino winston bunyan loguru structlog zap zerolog logrus slf4j log4j logback"
    ),
    "chat": _listed("slack discord teams mattermost feishu lark dingtalk wecom rocketchat zulip"),
    "rich text editor": _listed(
        "tiptap wangeditor quill tinymce ckeditor prosemirror slate lexical draft-js editorjs"
    ),
    "pdf library": _listed(
        "weasyprint pdfkit wkhtmltopdf reportlab xhtml2pdf fpdf pdfmake jspdf gotenberg"
    ),
    "api docs": _listed(
        "springfox springdoc swagger-ui redoc swashbuckle drf-spectacular drf-yasg flasgger"
    ),
}
"""Each job and the tools commonly used for it (lower case, as :mod:`similar` folds them)."""

PHRASES = {
    "github actions": "github-actions",
    "gitlab ci": "gitlab",
    "circle ci": "circleci",
    "ruff format": "ruff",
    "type script": "typescript",
    "vs code": "vscode",
    "visual studio code": "vscode",
    "sublime text": "sublime",
    "docker hub": "dockerhub",
    "camel case": "camelcase",
    "snake case": "snake_case",
    "驼峰": "camelcase",
    "下划线命名": "snake_case",
    "蛇形命名": "snake_case",
    "secrets manager": "secretsmanager",
    "secret manager": "secretmanager",
    "key vault": "keyvault",
    "element plus": "element-plus",
    "element ui": "element-ui",
    "naive ui": "naive-ui",
    "ant design": "antd",
    "font awesome": "font-awesome",
    "material icons": "material-icons",
    "google analytics": "google-analytics",
    "route 53": "route53",
    "microsoft teams": "teams",
    "神策": "sensorsdata",
    "友盟": "umeng",
    "飞书": "feishu",
    "钉钉": "dingtalk",
    "企业微信": "wecom",
    "支付宝": "alipay",
    "微信支付": "wechatpay",
    "阿里云解析": "alidns",
}
"""Tools written as two words, and the name :data:`ROLES` knows them by."""

_BY_TOOL: dict[str, frozenset[str]] = {}
for _role, _tools in ROLES.items():
    for _tool in _tools:
        _BY_TOOL[_tool] = _BY_TOOL.get(_tool, frozenset()) | {_role}


WORDS = frozenset(
    _listed(
        "go rust swift flow solid express drone helm nano react bun arch nats pulsar ruby nose2 "
        "uv pip tsc npm fly render railway cursor r2 cos oss vault fetch got ky ses segment "
        "heap plausible amplitude resend feather phosphor zap teams slack discord lark stripe "
        "paddle clerk chakra quasar radix drizzle ent recoil requests"
    )
)
"""Tools whose name is also an everyday word (or too short to tell): a value only when
written as a name (capitalised, in code), as :mod:`memd.store.similar` finds it."""
_TOOL_WORD = re.compile(r"(?<![\w./-])[a-z][\w-]*[a-z0-9](?![\w/-])")


_ALL_WORDS = tuple(sorted(WORDS))


def named_as_tool(text: str, names: tuple[str, ...] | None = None) -> bool:
    """Whether ``text`` writes one of ``names`` (everyday words; all of :data:`WORDS` when
    None) as a tool's name: capitalised or in capitals inside a sentence, or after Chinese, or
    in code ("on Fly.io", "，Drone 的", "阿里云 OSS", "`uv sync`"), not "fly to Paris" or "Go
    ahead"."""
    if names == ():
        return False
    return _as_names(names or _ALL_WORDS).search(text) is not None


_NAME_BEFORE = rf"(?:(?<=[\w,;:] )|(?<=[\u3000-\u303f{RANGES}\uff01-\uff1f]))"
"""What comes before a capitalised name that is not a sentence's first word."""


@lru_cache(maxsize=256)
def _as_names(names: tuple[str, ...]) -> re.Pattern[str]:
    forms = (f for n in names for f in dict.fromkeys((n.capitalize(), n.upper())))
    capitalised = "|".join(re.escape(f) for f in forms)
    coded = "|".join(re.escape(n) for n in names)
    return re.compile(rf"(?:{_NAME_BEFORE}(?:{capitalised})|`(?:{coded}))(?![A-Za-z0-9_-])")


def tools_named(folded: str) -> set[str]:
    """The tools a lower-cased sentence names in plain words ("switched to fish"), as a part of
    a Java-style package ("org.apache.rocketmq.client.exception" names RocketMQ) or as the
    first part of a URL's host ("https://sqs.eu-west-1.amazonaws.com/..." names SQS)."""
    found = {w for w in _TOOL_WORD.findall(folded) if w in _BY_TOOL and w not in WORDS}
    for package in _PACKAGE.findall(folded):
        found.update(p for p in package.split(".")[1:] if p in _BY_TOOL and p not in WORDS)
    found.update(h for h in _HOST_TOOL.findall(folded) if h in _BY_TOOL and h not in WORDS)
    return found


_PACKAGE = re.compile(r"(?<![\w./-])(?:org|com|io|net)(?:\.[a-z]\w*){2,}")
_HOST_TOOL = re.compile(r"://([a-z][\w-]*)\.")
"""A URL's host named after the service it is (``https://sqs.eu-west-1.amazonaws.com``)."""


ONE_AT_A_TIME = frozenset(
    ["package manager", "ci", "editor", "shell", "operating system", "bundler", "web framework"]
)
"""Jobs a project or a person has one tool for at a time: a new one replaces the old even
when the two sentences share no other word ("I use Sublime Text" / "I've been on Helix")."""


ECOSYSTEMS = {
    tool: ecosystem
    for ecosystem, tools in {
        "javascript": "npm pnpm yarn bun",
        "python": "pip pipenv poetry uv pip-tools conda",
        "jvm": "gradle maven",
    }.items()
    for tool in tools.split()
}
"""The package managers of one language: npm and uv serve a frontend and a backend side by
side, npm and pnpm are one choice (the others are each their language's own)."""


def one_at_a_time(name: str) -> bool:
    """Whether ``name`` is a tool for a job done by one tool at a time."""
    return any(role.split(" (")[0] in ONE_AT_A_TIME for role in roles(name))


def roles(name: str) -> frozenset[str]:
    """The jobs ``name`` is known for (empty for a name memd does not know); a package
    manager's job is its language's ("package manager (python)" for uv)."""
    found = _BY_TOOL.get(name.lower(), frozenset())
    if "package manager" in found:
        language = ECOSYSTEMS.get(name.lower(), name.lower())
        found = found - {"package manager"} | {f"package manager ({language})"}
    return found


def different_jobs(a: set[str] | frozenset[str], b: set[str] | frozenset[str]) -> bool:
    """Whether the names in ``a`` and in ``b`` are all known tools and none of ``a`` does a job
    one of ``b`` does (ruff / uv), so the two statements cannot be rivals."""
    ra = [roles(x) for x in a]
    rb = [roles(x) for x in b]
    if not ra or not rb or not all(ra) or not all(rb):
        return False
    return frozenset().union(*ra).isdisjoint(frozenset().union(*rb))


_ASKED = {
    "package manager": (
        r"package[- ]?managers?|dependency managers?|install(?:ing)? (?:the )?dependencies"
        r"|add(?:ing)? (?:a |new )?dependenc(?:y|ies)|加(?:个|一个)?依赖|添加依赖"
        r"|包管理|装依赖|安装依赖|依赖管理|管依赖|依赖.{0,8}管理"
    ),
    "linter": r"linters?|linting|lint|(?:跑|做)(?:什么|哪些)检查|代码检查",
    "formatter": r"formatters?|formatting|code style|格式化",
    "type checker": r"type[- ]?check(?:er|ers|ing)?|typing|type checks|类型检查",
    "test runner": (
        r"test (?:runner|framework|suite runner)s?|testing framework|测试框架|单测框架"
        r"|use to run (?:the |our )?(?:unit |integration |e2e )?tests|用什么(?:跑|运行)(?:单测|测试)"
    ),
    "database": (
        r"(?:databases?|\bdb\b)(?! (?:migrations?|schemas?|backups?|connections?|urls?|dumps?"
        r"|tables?|queries|query|credentials|passwords?|users?|pool|drivers?|tests?|locks?))"
        r"|data ?stores?|数据库|数据存储|(?:放|存)在哪(?:里|儿)?|哪些存储|什么存储|存储依赖"
    ),
    "cache": r"cach(?:e|es|ing)|缓存|(?:放|存)在哪(?:里|儿)?",
    "message queue": (
        r"message (?:queue|broker|bus)(?:es|s)?|queues?|brokers?|消息队列|消息中间件|消息总线"
        r"|background (?:jobs?|tasks?|workers?)|async(?:hronous)? tasks?|后台任务|异步任务|任务队列"
    ),
    "task queue": (
        r"task (?:queue|runner)s?|job queues?|background (?:jobs?|tasks?|workers?)"
        r"|async(?:hronous)? tasks?|后台任务|异步任务|任务队列"
    ),
    "ci": r"\bci\b|continuous integration|持续集成|流水线|构建结果|build (?:results?|status)",
    "containers": r"containers?|container runtime|orchestrat(?:ion|or)|容器|编排",
    "feature flags": r"feature[- ](?:flags?|toggles?)|功能开关|灰度开关",
    "bundler": (
        r"bundlers?|bundl(?:es|ed|ing)|build tool|打包工具|构建工具"
        r"|(?:构建|打包)用(?:的)?(?:啥|什么|哪个)|用(?:啥|什么)(?:构建|打包)"
    ),
    "build tool": (
        r"build (?:tool|system)s?|构建工具|构建系统|什么工具构建|用(?:啥|什么)构建"
        r"|构建用(?:的)?(?:啥|什么|哪个)"
    ),
    "hosting": (
        r"hosted|hosting|host(?:ed)? on|deployed (?:on|to)|(?:gets?|is|are) deployed|deploys? to"
        r"|部署在|部署到|托管"
    ),
    "merge method": (
        r"merge (?:method|strategy|policy|button)s?|(?:prs?|pull requests?|branch(?:es)?) "
        r"(?:get |are |be )?merged|合并方式|合并策略|什么方式合并|怎么合并"
    ),
    "monitoring": (
        r"monitoring|error tracking|observability|logs? search|search(?:ing)? (?:the )?logs"
        r"|(?:read|find|see|check) (?:the |its |their )?logs|监控|可观测|日志系统|日志平台|查日志"
        r"|查.{0,4}日志|看.{0,4}日志"
    ),
    "web framework": r"web framework|backend framework|web ?框架|后端框架|(?:which|what) framework|什么框架|哪个框架",
    "ui library": (
        r"(?:ui|frontend|front-end) (?:library|framework)|前端框架|(?:which|what) framework"
        r"|什么框架|哪个框架"
    ),
    "language": r"(?:programming )?languages?|编程语言",
    "editor": r"editors?|\bides?\b|编辑器",
    "shell": r"shells?",
    "search engine": r"search engines?|full[- ]text search|搜索引擎|全文检索|商品搜索|搜索服务",
    "object storage": (
        r"object stor(?:age|es?)|(?:s3|storage) buckets?|对象存储|云存储|存储桶|存在哪(?:些|个)?云"
        r"|(?:放|存)在哪(?:里|儿)?"
    ),
    "container registry": r"(?:image|container|docker) registr(?:y|ies)|镜像仓库|镜像.{0,12}仓库",
    "runtime": (
        r"跑在(?:什么|哪)|运行在(?:什么|哪)|runs? on what|(?:what|where) does [\w-]+ run\b"
    ),
    "naming style": (
        r"naming (?:style|convention|case)s?|case style|命名(?:风格|规范|方式)|什么风格|哪种风格"
    ),
    "operating system": r"operating systems?|\bos\b|操作系统|什么系统",
    "secrets": r"secrets?(?: manag(?:er|ement)| stores?)?|密钥|凭据|凭证",
    "cdn": r"cdns?|content delivery|边缘缓存",
    "http client": r"http (?:client|library|lib)s?|request librar(?:y|ies)|请求库|http ?库",
    "email provider": (
        r"e-?mail (?:provider|service|vendor|api|gateway)s?|transactional e-?mails?"
        r"|邮件服务|邮件推送|发(?:送)?邮件(?:用|走|通过)"
    ),
    "analytics": r"(?:product |web |event )?analytics|event tracking|埋点|(?:数据)?分析工具|统计工具",
    "component library": r"component librar(?:y|ies)|ui kit|组件库",
    "icons": r"icon (?:librar(?:y|ies)|sets?|packs?|fonts?)|(?:which|what) icons|图标",
    "dns": r"\bdns\b|name ?servers?|域名解析|解析记录",
    "auth provider": (
        r"auth(?:entication)? (?:provider|service)s?|identity provider|\bsso\b|单点登录|认证服务"
    ),
    "payments": r"payment (?:provider|processor|gateway|service)s?|支付(?:渠道|服务|网关|通道)",
    "orm": r"\borms?\b|data(?:base)? access(?: layer)?|query builder|数据(?:库)?访问(?:层|框架)?",
    "state management": r"state (?:management|manager|library)|状态管理",
    "json library": r"json (?:librar(?:y|ies)|lib|serializ\w*|pars(?:er|ing))|json ?(?:序列化|解析)",
    "garbage collector": r"garbage collect(?:or|ion)|\bgc\b|垃圾回收",
    "alerting": (
        r"on-?call (?:tool|platform|schedul\w*|rotation)s?|paging|incident management"
        r"|alert(?:ing)? (?:platform|tool|routing)s?|告警(?:平台|系统|工具|通道)|值班|排班"
    ),
    "sms provider": r"\bsms\b|短信(?:服务|通道|平台)?",
    "logging library": r"logging (?:library|framework|lib)s?|日志库",
    "chat": r"chat (?:tool|app|platform)s?|team chat|notification channel|通知渠道|办公(?:软件|IM)",
    "rich text editor": r"rich[- ]text(?: editor)?|wysiwyg|富文本",
    "pdf library": r"\bpdfs?\b",
    "api docs": r"swagger|openapi|api (?:docs|documentation)|接口文档",
}


_ASKED_WORDS = {
    role: re.compile(rf"(?<![a-z0-9_-])(?:{pattern})(?![a-z0-9_-])")
    for role, pattern in _ASKED.items()
}
""":data:`_ASKED` compiled, as whole words."""


@lru_cache(maxsize=1024)
def asked(query: str) -> tuple[tuple[str, tuple[str, ...], str], ...]:
    """The jobs a query asks about by name ("Which package manager...?"), each with its
    tools and the words it asks with: a memory naming one of them ("We use pnpm") answers
    it. Remembered: one recall asks it of a prompt four times (its synonyms, the jobs it
    names, whether it asks for a tool, whether two answers dispute), ~0.2 ms each."""
    folded = query.casefold()
    found = ((role, pattern.search(folded)) for role, pattern in _ASKED_WORDS.items())
    return tuple((role, ROLES[role], m.group(0)) for role, m in found if m)
