"""Where the SDK, the CLI and the MCP server read the environment: here and nowhere else."""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Mapping

DEFAULT_URL = "http://127.0.0.1:8000"  # what `make run` serves


@dataclass(frozen=True)
class Config:
    url: str = DEFAULT_URL
    api_key: str | None = None
    admin_key: str | None = None
    timeout: float = 10.0
    agent_id: str | None = None  # the MCP server's default agent id

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Config:
        """HINDSIGHT_URL, HINDSIGHT_API_KEY (a tenant key), HINDSIGHT_ADMIN_KEY, HINDSIGHT_TIMEOUT,
        HINDSIGHT_AGENT_ID."""
        env = os.environ if env is None else env
        return cls(
            url=env.get("HINDSIGHT_URL") or DEFAULT_URL,
            api_key=env.get("HINDSIGHT_API_KEY") or None,
            admin_key=env.get("HINDSIGHT_ADMIN_KEY") or None,
            timeout=float(env.get("HINDSIGHT_TIMEOUT") or 10.0),
            agent_id=env.get("HINDSIGHT_AGENT_ID") or None,
        )
