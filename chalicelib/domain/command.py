"""A shell tool's call named by its command: ``Bash(curl)``, ``Bash(git push)``, not ``Bash``.

A coding agent runs most of what it does through one shell tool (Claude Code's ``Bash``, a
``shell`` or ``run_terminal_cmd`` tool elsewhere), so the tool's name says nothing of what the call
did: a lesson keyed on it would read "Call `Bash` before `get_weather`", and the failure of one
command would warn before every other. A call of a shell tool with a command is therefore named by
the tool and the command's key, the program and, for a program that has them, its subcommand (the
form of Claude Code's permission rules): ``curl -s ipinfo.io/city`` is ``Bash(curl)``, ``cd app &&
git push --force-with-lease origin main`` is ``Bash(git push)``, ``python -m pytest -q`` is
``Bash(python -m pytest)``. What changed within the command between a failed call and the call
that worked (the flag that mattered) is the ``command`` argument's change, as for any tool.

``Event.tool`` reads a call's name through ``call_name``, so the review, advise and credit all see
the same names; advise names the call it is asked about the same way.
"""
from __future__ import annotations

import re
import shlex
from typing import Any, Mapping

SHELL_TOOLS = frozenset({
    "bash", "shell", "sh", "zsh", "terminal", "run_shell_command", "run_terminal_cmd", "execute_command",
    "local_shell", "exec_command", "run_command", "command",
})  # fmt: skip
COMMAND_PARAMS = ("command", "cmd")
# programs whose first word after them is a subcommand that says what the call does
WITH_SUBCOMMANDS = frozenset({
    "git", "gh", "docker", "podman", "kubectl", "helm", "npm", "pnpm", "yarn", "npx", "bun", "deno", "pip", "pip3",
    "uv", "poetry", "conda", "cargo", "go", "dotnet", "mvn", "gradle", "make", "bundle", "rails", "rake", "composer",
    "terraform", "aws", "gcloud", "az", "brew", "apt", "apt-get", "systemctl", "hindsight-xp", "alembic", "django-admin",
})  # fmt: skip
PREFIXES = frozenset({"sudo", "env", "time", "nohup", "exec", "command", "nice", "xargs"})
SETUP = frozenset({"cd", "pushd", "popd", "export", "source", ".", "set", "unset", "true", ":"})
SEPARATORS = frozenset({"&&", "||", ";", "|", "&", ";;", "|&", "(", ")"})
_WORD = re.compile(r"^[a-z][a-z0-9_-]*$")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
MAX_KEY = 60


def _tokens(command: str) -> list[str]:
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        return list(lexer)
    except ValueError:  # an unclosed quote: words as they stand
        return command.split()


def _segments(tokens: list[str]) -> list[list[str]]:
    out: list[list[str]] = [[]]
    for token in tokens:
        if token in SEPARATORS:
            out.append([])
        else:
            out[-1].append(token)
    return [s for s in out if s]


def command_key(command: str) -> str | None:
    """The program of the command's first simple command that does something (not ``cd`` or
    ``export``), with its subcommand when it has them, or ``python -m`` and the module; None for
    no command."""
    for words in _segments(_tokens(command)):
        i, prefixed = 0, False
        # VAR=value, sudo, env and their options (``sudo -E``) come before the program
        while i < len(words) and (_ASSIGNMENT.match(words[i]) or words[i] in PREFIXES or (prefixed and words[i].startswith("-"))):
            prefixed = prefixed or words[i] in PREFIXES
            i += 1
        if i >= len(words):
            continue
        program = words[i].rsplit("/", 1)[-1]
        if not program or program in SETUP:
            continue
        rest = words[i + 1:]
        if program.startswith("python") and len(rest) >= 2 and rest[0] == "-m":
            return f"{program} -m {rest[1]}"[:MAX_KEY]
        if program in WITH_SUBCOMMANDS and rest and _WORD.match(rest[0]):
            return f"{program} {rest[0]}"[:MAX_KEY]
        return program[:MAX_KEY]
    return None


def shell_command(tool: str | None, params: Any) -> str | None:
    """The command a shell tool's call runs (a string, or a list of words), else None."""
    if not tool or tool.lower() not in SHELL_TOOLS or not isinstance(params, Mapping):
        return None
    for name in COMMAND_PARAMS:
        value = params.get(name)
        if isinstance(value, list) and value and all(isinstance(w, str) for w in value):
            words: list[str] = value
            # ["bash", "-lc", "git push"]: the script a shell is given, else the words themselves
            if len(words) >= 3 and words[0].rsplit("/", 1)[-1] in ("bash", "sh", "zsh") and words[1] in ("-c", "-lc"):
                return words[2]
            return shlex.join(words)
        if isinstance(value, str) and value.strip():
            return value
    return None


def call_name(tool: str | None, params: Any) -> str | None:
    """``tool(key)`` for a shell tool's call with a command (``Bash(git push)``), else the tool."""
    command = shell_command(tool, params)
    key = command_key(command) if command is not None else None
    return f"{tool}({key})" if key else tool
