"""The /remember, /recall and /forget commands for Claude Code, as Markdown command files.

Each command asks the model to call one of memd's MCP tools (``memd mcp``), whose names depend on
how the server is registered: ``mcp__memd__`` for `memd install --mcp`, and
``mcp__plugin_memd_memd__`` inside the memd plugin. The arguments go to the tool as data, never
through a shell, so quotes and ``$`` in what the user types are harmless.
"""

from __future__ import annotations

PLUGIN_TOOL_PREFIX = "mcp__plugin_memd_memd__"

COMMANDS: dict[str, str] = {
    "remember": """---
description: Remember something in memd (this project; --pin pins it, --global keeps it for every project)
argument-hint: "[--pin] [--global] TEXT"
allowed-tools: {p}memory_add
---
Store this in memd with the `{p}memory_add` tool, then confirm in one line what was stored (kind and the first 8 characters of its id).

Arguments: $ARGUMENTS

- text: the arguments without the flags `--pin` and `--global`, word for word.
- `--pin` given: pin=true. `--global` given: user_wide=true.
- kind: the one of the tool's kinds that says what the text is (the tool describes each); "fact" when none fits.
""",
    "recall": """---
description: Show what memd remembers about a topic (this project and user-wide)
argument-hint: "TOPIC"
allowed-tools: {p}memory_search
---
Search memd with the `{p}memory_search` tool, query: $ARGUMENTS

Show the results as a short list: kind, text, date, and the first 8 characters of the id. If nothing was found, say so plainly.
""",
    "forget": """---
description: Forget a memd memory (archive it; `memd restore ID` undoes it) by its id, or find the one to forget
argument-hint: "ID or DESCRIPTION"
allowed-tools: {p}memory_forget
---
Arguments: $ARGUMENTS

Forgetting archives a memory: memd stops offering it, and `memd restore ID` brings it back. Nothing is deleted for good.

- If the arguments are a memory id (4 or more hex characters), forget it with the `{p}memory_forget` tool (id=the arguments), then say in one line what was forgotten and that `memd restore ID` undoes it.
- Otherwise they describe the memory: call `{p}memory_forget` with query=the arguments. That forgets nothing; it returns the candidates. Show them to the user as a numbered list (text and the first 8 characters of the id) and ask which one to forget. Call `{p}memory_forget` with the chosen id only after the user has named it in their reply. Never choose for the user, even when only one candidate matches.
""",
}


def render(name: str, tool_prefix: str) -> str:
    """The command file ``name``.md with memd's tools under ``tool_prefix``."""
    return COMMANDS[name].replace("{p}", tool_prefix)
