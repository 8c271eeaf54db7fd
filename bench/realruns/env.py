"""A tool environment: tools that are real code over JSON data, and tasks with gold actions.

An ``Environment`` is what the harness replays runs against. Its tools are plain functions
``tool(data, **params) -> str`` that change ``data`` in place and answer ``"Error: ..."`` on bad
input, as the environment's own code does (an exception a tool raises is answered as
``"Error: <exception>"``, as the environment's own runner does). Two are loaded here: the retail
environment of tau-bench, read at run time from the folder ``bench.realruns.fetch`` fills (never
committed), and ``bench.realruns.smallshop``, the project's own, which tests use.
"""
from __future__ import annotations

import copy
import hashlib
import importlib
import json
import re
import sys
import types
from collections.abc import MutableMapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

from .fetch import DEFAULT_DEST

ERROR_PREFIX = "Error:"


@dataclass(frozen=True)
class Action:
    tool: str
    params: Mapping[str, Any]


@dataclass(frozen=True)
class Task:
    """One task: who asks, what they ask (``instruction``, as a simulated user is told it) and the
    gold actions that solve it (the calls that change the data; a split may list the lookups too)."""

    split: str
    index: int
    user_id: str
    instruction: str
    actions: tuple[Action, ...]

    @property
    def id(self) -> str:
        return f"{self.split}{self.index}"


@dataclass
class Environment:
    name: str
    tools: dict[str, Callable[..., str]]
    load: Callable[[], dict[str, Any]]
    tasks: dict[str, list[Task]]
    escape_tools: tuple[str, ...] = ()  # a call that ends the task or hands it off (never a fix)
    scratch_tools: tuple[str, ...] = ()  # a call that changes nothing (a scratchpad)
    policy: str = ""
    _data: dict[str, Any] | None = field(default=None, repr=False)

    def fresh_data(self) -> dict[str, Any]:
        """The environment's data for one run to change: each table copies a record the first time
        the run reads it, so that a run costs the records it touches, not the whole data set."""
        if self._data is None:
            self._data = self.load()
        return {k: Table(v) if isinstance(v, dict) else copy.deepcopy(v) for k, v in self._data.items()}

    def call(self, data: dict[str, Any], tool: str, params: Mapping[str, Any]) -> str:
        fn = self.tools.get(tool)
        if fn is None:
            return f"Unknown action {tool}"
        try:
            return fn(data, **dict(params))
        except Exception as exc:  # the environment's runner answers a crash as an error too
            return f"{ERROR_PREFIX} {exc}"


def is_error(answer: str) -> bool:
    return answer.startswith(ERROR_PREFIX) or answer.startswith("Unknown action")


class Table(MutableMapping):
    """A table of records (id -> record) over the environment's data: a record read is a deep copy
    made once, which the run may change; the shared data is never changed."""

    def __init__(self, base: Mapping[str, Any]) -> None:
        self._base = base
        self._copies: dict[str, Any] = {}
        self._gone: set[str] = set()

    def __getitem__(self, key: str) -> Any:
        if key in self._gone:
            raise KeyError(key)
        if key not in self._copies:
            self._copies[key] = copy.deepcopy(self._base[key])
        return self._copies[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self._gone.discard(key)
        self._copies[key] = value

    def __delitem__(self, key: str) -> None:
        self[key]  # noqa: B018  (KeyError when it is not there)
        self._gone.add(key)
        self._copies.pop(key, None)

    def __iter__(self) -> Iterator[str]:
        yield from (k for k in self._base if k not in self._gone)
        yield from (k for k in self._copies if k not in self._base)

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __contains__(self, key: object) -> bool:
        return key not in self._gone and (key in self._copies or key in self._base)

    def changed(self) -> dict[str, Any]:
        """The records that differ from the shared data (None: taken out)."""
        out: dict[str, Any] = {k: v for k, v in self._copies.items() if self._base.get(k) != v}
        out.update({k: None for k in self._gone})
        return out


def state_digest(data: Mapping[str, Any], keys: Sequence[str]) -> str:
    """What a run changed in the data it may change: a run succeeded when this equals the gold
    run's."""
    changed = {k: data[k].changed() if isinstance(data[k], Table) else data[k] for k in keys}
    return hashlib.sha256(json.dumps(changed, sort_keys=True).encode()).hexdigest()


# --- tau-bench retail, read from the fetched folder ------------------------------------------------

RETAIL_TOOLS = (
    "calculate", "cancel_pending_order", "exchange_delivered_order_items", "find_user_id_by_email",
    "find_user_id_by_name_zip", "get_order_details", "get_product_details", "get_user_details",
    "list_all_product_types", "modify_pending_order_address", "modify_pending_order_items",
    "modify_pending_order_payment", "modify_user_address", "return_delivered_order_items", "think",
    "transfer_to_human_agents",
)


class _Loose:
    """Stands in for the environment's pydantic task types: keeps what it is given."""

    def __init__(self, **kw: Any) -> None:
        self.__dict__.update(kw)


def _package(name: str, path: Path | None) -> types.ModuleType:
    mod = types.ModuleType(name)
    if path is not None:
        mod.__path__ = [str(path)]  # a package whose __init__ is not run (it imports the agent runner)
    sys.modules[name] = mod
    return mod


def _install_shims(root: Path) -> None:
    """The environment's modules import ``tau_bench.envs.tool`` and ``tau_bench.types``: the first is
    fetched with the environment, the second holds pydantic models and is replaced by ``_Loose``.
    The packages above the tools are created empty, so that nothing but the tools, data and task
    lists is executed."""
    base = root / "tau_bench"
    if "tau_bench.envs.retail" in sys.modules:
        return
    _package("tau_bench", base)
    _package("tau_bench.envs", base / "envs")
    _package("tau_bench.envs.retail", base / "envs" / "retail")
    types_mod = _package("tau_bench.types", None)
    types_mod.Task = type("Task", (_Loose,), {})  # type: ignore[attr-defined]
    types_mod.Action = type("Action", (_Loose,), {})  # type: ignore[attr-defined]


def retail_available(root: Path = DEFAULT_DEST) -> bool:
    return (root / "tau_bench" / "envs" / "retail" / "tools" / "__init__.py").exists()


_SPLITS = {"train": "TASKS_TRAIN", "dev": "TASKS_DEV", "test": "TASKS_TEST"}


def load_retail(root: Path = DEFAULT_DEST) -> Environment:
    """tau-bench's retail environment from ``root`` (``python -m bench.realruns.fetch`` fills it)."""
    if not retail_available(root):
        raise FileNotFoundError(f"{root}: no tau-bench retail environment (python -m bench.realruns.fetch)")
    _install_shims(root)
    tools_mod = importlib.import_module("tau_bench.envs.retail.tools")
    tools = {}
    for cls in tools_mod.ALL_TOOLS:
        name = cls.get_info()["function"]["name"]
        tools[name] = cls.invoke
    data_mod = importlib.import_module("tau_bench.envs.retail.data")
    tasks: dict[str, list[Task]] = {}
    for split, attr in _SPLITS.items():
        raw = getattr(importlib.import_module(f"tau_bench.envs.retail.tasks_{split}"), attr)
        tasks[split] = [
            Task(split, i, t.user_id, t.instruction, tuple(Action(a.name, dict(a.kwargs)) for a in t.actions))
            for i, t in enumerate(raw)
        ]
    policy = (root / "tau_bench" / "envs" / "retail" / "wiki.md").read_text()
    return Environment("retail", tools, data_mod.load_data, tasks, escape_tools=("transfer_to_human_agents",),
                       scratch_tools=("think",), policy=policy)


# --- what a task says ------------------------------------------------------------------------------

_PERSONA = re.compile(
    r"^(?:Your name is [^.]*\.|You are [A-Z][a-z]+ [A-Z][a-z]+(?: in \d{5})?\.|You are (?:[a-z]+(?:, | and |,? and )?)+\.)\s*")
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def request_of(instruction: str) -> str:
    """What the user asks, without the simulated user's persona (name, zip code, temperament): the
    task as an agent is told it."""
    kept = [s for s in _SENTENCE.split(instruction.strip()) if s and not _PERSONA.match(s)]
    return " ".join(kept).strip() or instruction.strip()
