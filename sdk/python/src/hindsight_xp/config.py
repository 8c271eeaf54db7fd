"""Where the SDK, the CLI and the MCP server read the environment: here and nowhere else."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from ._env import DEFAULT_URL, read_env


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
        return cls(**read_env(env))
