"""Installing a test's ``Deps`` in the process-wide container, and putting back what was there."""
from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

from chalicelib import container
from chalicelib.services.deps import Deps
from chalicelib.settings import Settings


@contextmanager
def installed(deps: Deps | None, settings: Settings | None) -> Iterator[Deps | None]:
    """``deps`` serve every route and handler inside the block (None: built lazily from the settings;
    settings None: the current ones kept); the previous deps and settings are restored on the way
    out, whether the block passed, failed or raised."""
    # the container offers set_deps() but no getter that would not build: read what it holds
    saved = container._deps, container._settings
    container.set_deps(deps, settings)
    try:
        yield deps
    finally:
        container._deps, container._settings = saved
