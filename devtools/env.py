"""The process environment changed for the length of a block."""
from __future__ import annotations

import os
from contextlib import contextmanager
from typing import Iterator, Mapping


def _apply(values: Mapping[str, str | None]) -> None:
    for k, v in values.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


@contextmanager
def changed_env(**changes: str | None) -> Iterator[None]:
    """``os.environ`` with ``changes`` (None removes a variable) inside the block, as it was after."""
    saved = {k: os.environ.get(k) for k in changes}
    try:
        _apply(changes)
        yield
    finally:
        _apply(saved)
