"""Fixtures the service tests share: a fake clock and the in-memory fakes behind every port."""
from __future__ import annotations

import pytest

from tests.support.fakes import FakeClock, fake_deps


@pytest.fixture()
def clock():
    return FakeClock()


@pytest.fixture()
def deps(clock):
    return fake_deps(clock)
