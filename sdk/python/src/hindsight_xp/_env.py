"""The environment the SDK, the CLI, the MCP server and the hooks read: these variables, here only.

Standard library and nothing else (``os``): the hook commands read their settings through this
module without importing ``config`` (dataclasses) or typing.
"""
from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Mapping

DEFAULT_URL = "http://127.0.0.1:8000"  # what `make run` serves


def read_env(env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """HINDSIGHT_URL, HINDSIGHT_API_KEY (a tenant key), HINDSIGHT_ADMIN_KEY, HINDSIGHT_TIMEOUT,
    HINDSIGHT_AGENT_ID, as ``Config``'s fields."""
    env = os.environ if env is None else env
    return {
        "url": env.get("HINDSIGHT_URL") or DEFAULT_URL,
        "api_key": env.get("HINDSIGHT_API_KEY") or None,
        "admin_key": env.get("HINDSIGHT_ADMIN_KEY") or None,
        "timeout": float(env.get("HINDSIGHT_TIMEOUT") or 10.0),
        "agent_id": env.get("HINDSIGHT_AGENT_ID") or None,
    }
