"""What the heuristic extractor knows about tools and tech stacks: names, commands, files."""

from __future__ import annotations

import re

from memd.text import stopwords

TECH: dict[str, str] = {
    # name: display. Only a name as written in a turn is ever stored (never a role or purpose):
    # "Project uses Redis", not "Project uses Redis for caching" when Redis was the job broker.
    "python": "Python", "typescript": "TypeScript", "javascript": "JavaScript", "node": "Node.js",
    "rust": "Rust", "go": "Go", "java": "Java", "ruby": "Ruby", "pytest": "pytest", "jest": "Jest",
    "vitest": "Vitest", "mocha": "Mocha", "rspec": "RSpec", "ruff": "ruff", "black": "black",
    "isort": "isort", "prettier": "Prettier", "eslint": "ESLint", "flake8": "flake8",
    "pylint": "pylint", "mypy": "mypy", "pyright": "pyright", "npm": "npm", "pnpm": "pnpm",
    "yarn": "yarn", "bun": "Bun", "poetry": "Poetry", "uv": "uv", "cargo": "Cargo",
    "docker": "Docker", "kubernetes": "Kubernetes", "terraform": "Terraform",
    "postgres": "PostgreSQL", "mysql": "MySQL", "sqlite": "SQLite", "redis": "Redis",
    "mongodb": "MongoDB", "lancedb": "LanceDB", "fastapi": "FastAPI", "django": "Django",
    "flask": "Flask", "react": "React", "vue": "Vue", "nextjs": "Next.js", "express": "Express",
    "sqlalchemy": "SQLAlchemy", "alembic": "Alembic", "pydantic": "pydantic",
    "github_actions": "GitHub Actions",
}  # fmt: skip

_TEXT_ALIASES: dict[str, str] = {
    "postgresql": "postgres", "postgres": "postgres", "node.js": "node", "nodejs": "node",
    "k8s": "kubernetes", "kubernetes": "kubernetes", "next.js": "nextjs", "nextjs": "nextjs",
    "github actions": "github_actions", "mongo": "mongodb", "golang": "go", "ts": "typescript",
}  # fmt: skip
_AMBIGUOUS = {"go", "black", "express", "bun", "uv", "node", "ts", "react", "java", "ruby"}
"""Words too common in prose to count without a capital or a stack statement."""

_TEXT_RX = re.compile(
    r"(?<![\w.-])("
    + "|".join(
        re.escape(w) for w in sorted({*TECH, *_TEXT_ALIASES} - {"github_actions"}, key=len)[::-1]
    )
    + r"|github actions)(?![\w-])",
    re.IGNORECASE,
)


_SPELLINGS: dict[str, list[str]] = {}
for _alias, _name in [*((n, n) for n in TECH), *_TEXT_ALIASES.items()]:
    _SPELLINGS.setdefault(_name, []).append(_alias)
for _name, _display in TECH.items():
    if _display.lower() not in _SPELLINGS[_name]:
        _SPELLINGS[_name].append(_display.lower())
_SPELLINGS["github_actions"] = ["github actions"]

_REPLACED_BEFORE = re.compile(
    r"(?:instead of|rather than|\bover|\bfrom|\bnot|\bno longer|\baway from|\breplac\w*"
    r"|\bdrop\w*|\bremov\w*|\bwithout|\bnever|\bditch\w*|不再|不用|别用|不要|弃用|替换|替代"
    r"|代替|取代|从|把|而不是)\s*(?:the |using |use |用)?$",
    re.IGNORECASE,
)
_REPLACED_AFTER = re.compile(r"^\s*(?:改成|改为|换成|迁移到|切换到|替换成)")
"""A name that is replaced or refused ("Postgres instead of MySQL"): the project does not use it."""


def shown_name(name: str, text: str) -> str | None:
    """How ``text`` writes the tech ``name`` (the display form when written so), or None."""
    low = text.lower()
    display = TECH[name]
    found = None
    for spelling in sorted(_SPELLINGS.get(name, [name]), key=len, reverse=True):
        if len(spelling) < 3 and spelling != display.lower():
            continue  # "ts" in "vite.config.ts" names a file type, not a tool
        m = re.search(rf"(?<![a-z0-9]){re.escape(spelling)}(?![a-z0-9])", low)
        if m:
            if spelling == display.lower():
                return display
            found = found or text[m.start() : m.end()]
    return found


def tech_in_text(sentence: str) -> list[str]:
    """Tech names a sentence says the project uses ("we use X", "基于 X"), never one it replaces
    or refuses ("X instead of Y": only X)."""
    out = []
    for m in _TEXT_RX.finditer(sentence):
        word = m.group(1)
        name = _TEXT_ALIASES.get(word.lower(), word.lower())
        if name in _AMBIGUOUS and word.islower() and name not in ("uv",):
            continue
        before = sentence[max(0, m.start() - 30) : m.start()]
        if _REPLACED_BEFORE.search(before) or _REPLACED_AFTER.match(sentence[m.end() :]):
            continue
        if name in TECH and name not in out:
            out.append(name)
    return out


_RUNNERS = re.compile(
    r"^(?:(?:python3?|py) -m |uv run |poetry run |pipenv run |npx |pnpm exec |pnpm dlx |"
    r"yarn dlx |bunx |bundle exec |time |(?:GOOS|GOARCH)=\S+ )+"
)
_COMMAND_TECH = {
    "pytest": ["pytest"], "py.test": ["pytest"], "jest": ["jest"], "vitest": ["vitest"],
    "mocha": ["mocha"], "rspec": ["rspec", "ruby"], "ruff": ["ruff"], "black": ["black"],
    "isort": ["isort"], "prettier": ["prettier"], "eslint": ["eslint"], "flake8": ["flake8"],
    "pylint": ["pylint"], "mypy": ["mypy"], "pyright": ["pyright"], "npm": ["npm"],
    "pnpm": ["pnpm"], "yarn": ["yarn"], "bun": ["bun"], "poetry": ["poetry"], "uv": ["uv"],
    "cargo": ["cargo", "rust"], "docker": ["docker"], "docker-compose": ["docker"],
    "kubectl": ["kubernetes"], "helm": ["kubernetes"], "terraform": ["terraform"],
    "psql": ["postgres"], "pg_dump": ["postgres"], "mysql": ["mysql"], "redis-cli": ["redis"],
    "sqlite3": ["sqlite"], "alembic": ["alembic"], "tsc": ["typescript"], "node": ["node"],
    "python": ["python"], "python3": ["python"], "go": ["go"], "mvn": ["java"],
    "gradle": ["java"], "./gradlew": ["java"],
}  # fmt: skip


def _program(cmd: str) -> tuple[str, str]:
    """(program, rest) of a command, with runners like ``uv run`` and ``python -m`` removed."""
    stripped = _RUNNERS.sub("", cmd.strip())
    head, _, rest = stripped.partition(" ")
    return head.rsplit("/", 1)[-1] if head.startswith("/") else head, rest


_RUNNER_TECH = (
    ("python -m ", "python"), ("python3 -m ", "python"), ("uv run ", "uv"),
    ("poetry run ", "poetry"), ("pnpm exec ", "pnpm"), ("bunx ", "bun"),
)  # fmt: skip


def tech_of_command(cmd: str) -> list[str]:
    program, _ = _program(cmd)
    names = list(_COMMAND_TECH.get(program, []))
    for runner, name in _RUNNER_TECH:
        if cmd.startswith(runner) and name not in names:
            names.append(name)
    return names


_FAMILIES: list[tuple[str, re.Pattern[str]]] = [
    (family, re.compile(rx))
    for family, rx in (
        ("typecheck", r"^(?:mypy|pyright|tsc\b.*--noEmit|(?:npm|pnpm|yarn|bun) (?:run )?type-?check)"),
        ("format", r"^(?:ruff format|black|isort|prettier|cargo fmt|gofmt|go fmt|(?:npm|pnpm|yarn) (?:run )?format)"),
        ("lint", r"^(?:ruff(?: check)?\b|eslint|flake8|pylint|cargo clippy|golangci-lint|(?:npm|pnpm|yarn|bun) (?:run )?lint)"),
        ("test", r"^(?:pytest|py\.test|jest|vitest|mocha|rspec|tox|unittest|cargo test|go test|(?:npm|pnpm|yarn|bun) (?:run )?test|make test)"),
        ("build", r"^(?:cargo build|go build|docker build|docker compose build|build\b|make build$|(?:(?:npm|pnpm|yarn|bun) )?(?:(?:run|turbo|turbo run|nx|nx run) )?build\b)"),
        ("migrate", r"^(?:alembic upgrade|(?:python3? )?\S*manage\.py migrate|prisma migrate|(?:bin/)?rails db:migrate|rake db:migrate|mix ecto\.migrate|knex migrate|sequelize db:migrate|goose\b.*\bup\b|flyway migrate|dbmate up|diesel migration run|sqlx migrate run|make migrate$|(?:npm|pnpm|yarn|bun) (?:run )?(?:db:)?migrat)"),
        ("deploy", r"^(?:kubectl apply|helm (?:upgrade|install)|terraform apply|flyctl deploy|fly deploy|vercel deploy|vercel\b.*--prod|netlify deploy|serverless deploy|sls deploy|gcloud (?:app|run|functions) deploy|cap \S+ deploy|cdk deploy|wrangler (?:deploy|publish)|make deploy$|(?:npm|pnpm|yarn|bun) (?:run )?deploy)"),
        ("ci", r"^act(?: |$)"),
    )
]  # fmt: skip
FAMILY_TEXT = {
    "test": "Tests run",
    "lint": "Linting runs",
    "format": "Formatting runs",
    "typecheck": "Type checks run",
    "build": "The build runs",
    "migrate": "Migrations run",
    "deploy": "Deploys run",
    "ci": "The CI workflow runs locally",
    "test:integration": "Integration tests run",
    "test:e2e": "End-to-end tests run",
    "test:smoke": "Smoke tests run",
    "build:cross": "Builds for another platform run",
}
_CROSS = re.compile(r"\b(?:GOOS|GOARCH)=|\s--target[= ]")
"""A build for another platform (``GOOS=windows go build``, ``cargo build --target …``): a
check of its own beside the project's build."""
_TEST_KIND = re.compile(r"\b(?:integration|(e2e|end-to-end)|(smoke))\b", re.I)
"""A test command that runs one kind of tests (``mise run test:integration``, ``go test
-tags=integration``, ``npm run test:e2e``): a check of its own beside the unit tests."""


_TASK_RUNNER = re.compile(
    r"^(?:mise (?:run |r )?|just |make |task |npm run |pnpm (?:run )?|yarn (?:run )?|bun run )"
    r"(?P<task>[\w-]+)(?::[\w:-]+)?(?:\s|$)"
)
"""A task runner's task (``mise run lint:go``, ``just test``, ``make fmt``): its name says
which check it is."""
_TASKS = {
    "test": "test", "tests": "test", "lint": "lint", "fmt": "format", "format": "format",
    "typecheck": "typecheck", "type-check": "typecheck", "types": "typecheck",
    "build": "build", "migrate": "migrate", "deploy": "deploy",
}  # fmt: skip


def command_family(cmd: str) -> str | None:
    program, rest = _program(cmd)
    line = f"{program} {rest}".strip()
    for family, rx in _FAMILIES:
        if rx.search(line):
            return family
    task = _TASK_RUNNER.match(line)
    return _TASKS.get(task.group("task")) if task else None


def check_of(cmd: str) -> str | None:
    """The check ``cmd`` runs: its :func:`command_family`, with integration, end-to-end and
    smoke tests told apart from the other tests (a key of :data:`FAMILY_TEXT`)."""
    family = command_family(cmd)
    if family == "build" and _CROSS.search(cmd):
        return "build:cross"
    kind = _TEST_KIND.search(cmd) if family == "test" else None
    if kind is None:
        return family
    return "test:e2e" if kind.group(1) else "test:smoke" if kind.group(2) else "test:integration"


_EXT_TECH = {
    ".py": "python", ".pyi": "python", ".ts": "typescript", ".tsx": "typescript",
    ".rs": "rust", ".go": "go", ".java": "java", ".rb": "ruby", ".js": "javascript",
    ".jsx": "javascript", ".vue": "vue",
}  # fmt: skip
_FILE_TECH = {
    "pyproject.toml": ["python"], "setup.py": ["python"], "requirements.txt": ["python"],
    "package.json": ["node"], "tsconfig.json": ["typescript"], "cargo.toml": ["cargo", "rust"],
    "go.mod": ["go"], "dockerfile": ["docker"], "docker-compose.yml": ["docker"],
    "docker-compose.yaml": ["docker"], "compose.yaml": ["docker"], "pnpm-lock.yaml": ["pnpm"],
    "yarn.lock": ["yarn"], "poetry.lock": ["poetry"], "uv.lock": ["uv"], "gemfile": ["ruby"],
    "alembic.ini": ["alembic"], "conftest.py": ["pytest", "python"], "pytest.ini": ["pytest"],
    ".eslintrc.json": ["eslint"], ".prettierrc": ["prettier"], "mypy.ini": ["mypy"],
}  # fmt: skip


def tech_of_path(path: str) -> list[str]:
    base = path.rsplit("/", 1)[-1].lower()
    names = list(_FILE_TECH.get(base, []))
    if "/.github/workflows/" in f"/{path}" and "github_actions" not in names:
        names.append("github_actions")
    dot = base.rfind(".")
    ext = base[dot:] if dot > 0 else ""
    if ext in _EXT_TECH and _EXT_TECH[ext] not in names:
        names.append(_EXT_TECH[ext])
    return names


STOPWORDS = stopwords.EXTRACTION

CJK_TRIGGERS = (
    "决定", "采用", "改成", "改为", "定为", "选用", "不要", "统一", "必须", "偏好", "一律", "待办",
    "还没", "下次", "以后", "需要", "原因", "修复", "问题出", "已经", "我们", "一下", "这个", "那个",
)  # fmt: skip
"""Chinese marker and filler words: never keywords on their own."""
