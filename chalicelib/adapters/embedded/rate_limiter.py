"""``ports.RateLimiter`` shared by the processes of one embedded server: the tenants' ``tat`` in a
memory-mapped file, taken under a file lock.

The embedded server hands ingest's requests to child processes (``local/ingest.py``) while it
serves the other routes itself; a tenant's bucket must be one across all of them, or each process
would grant a full rate. Every process maps the same small file: a table of fixed slots, each the
tenant's 64-bit hash and its ``tat`` (µs). A tenant lives in one of ``WINDOW`` slots from its hash's
home slot; an acquire reads the window and writes one slot, under ``flock`` (between processes) and a
thread lock (``flock`` does not exclude the threads of one process, which share the descriptor).

A slot whose ``tat`` is not after now is a full bucket, the same as no entry: another tenant may take
it. When a tenant's whole window holds buckets still refilling (more than ``WINDOW`` tenants limited
at once in one window: 65,536 slots make that rare below tens of thousands of busy tenants), the one
closest to full is given up, and that tenant starts again with a full bucket: the limit errs on the
side of admitting, never locks a tenant out.
"""
from __future__ import annotations

import fcntl
import hashlib
import mmap
import os
import struct
import threading
from datetime import datetime

from chalicelib.domain.ratelimit import RatePolicy, decide, epoch_us

SLOTS = 65_536
WINDOW = 16
_SLOT = struct.Struct("<Qq")  # tenant hash (0: empty), tat in µs
_WINDOW = struct.Struct("<" + "Qq" * WINDOW)
SIZE = (SLOTS + WINDOW) * _SLOT.size  # the last window runs past the last home slot: no wrapping


def tenant_hash(tenant_id: str) -> int:
    """A 64-bit hash of the tenant id, never 0 (an empty slot), the same in every process."""
    return int.from_bytes(hashlib.blake2b(tenant_id.encode(), digest_size=8).digest(), "little") or 1


class SharedFileRateLimiter:
    """Token buckets (``domain.ratelimit``) kept in the file at ``path``, created if missing."""

    def __init__(self, policy: RatePolicy, path: str) -> None:
        self.policy = policy
        self.path = path
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            if os.fstat(fd).st_size < SIZE:
                os.ftruncate(fd, SIZE)  # zeros: every slot empty (a no-op for the other processes' table)
            self._map = mmap.mmap(fd, SIZE)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        self._lock = threading.Lock()

    def acquire(self, tenant_id: str, now: datetime, cost: int = 1) -> float:
        if not self.policy.enabled:
            return 0.0
        key = tenant_hash(tenant_id)
        now_us = epoch_us(now)
        home = key % SLOTS
        offset = home * _SLOT.size
        with self._lock:
            fcntl.flock(self._fd, fcntl.LOCK_EX)
            try:
                window = _WINDOW.unpack_from(self._map, offset)
                keys, tats = window[0::2], window[1::2]
                mine = keys.index(key) if key in keys else None
                decision = decide(self.policy, None if mine is None else tats[mine], now_us, cost)
                if not decision.admitted:
                    return decision.wait_us / 1_000_000
                if mine is None:
                    # a free slot (empty, or a full bucket, which is the same), else the nearest to full
                    mine = min(range(WINDOW), key=lambda i: (tats[i] > now_us and keys[i] != 0, tats[i]))
                _SLOT.pack_into(self._map, offset + mine * _SLOT.size, key, decision.tat_us)
            finally:
                fcntl.flock(self._fd, fcntl.LOCK_UN)
        return 0.0

    def close(self) -> None:
        self._map.close()
        os.close(self._fd)
