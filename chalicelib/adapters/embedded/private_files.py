"""The embedded backend's data is its owner's alone: the data folder 0700, each file in it 0600.

Tenants' trajectories and lessons, and the keys' hashes, sit in SQLite files; under the usual umask
(022) they would be created 0644 in a 0755 folder, readable by every local user. Each file the
backend writes is created 0600 (SQLite gives its WAL and shared-memory files the mode of their
database), and files and a folder left by an earlier version are narrowed when the backend opens
them.
"""
from __future__ import annotations

import os
import stat
from pathlib import Path

DIR_MODE = 0o700
FILE_MODE = 0o600
# what SQLite and ``SqliteDatabase`` keep beside a database file
SIDECARS = ("", "-wal", "-shm", "-journal", "-writer")


def private_dir(path: str | Path) -> Path:
    """``path`` created (with its parents) or narrowed to 0700; a folder shared by design (sticky,
    such as /tmp) or another user's is left as it is: its files are narrowed one by one."""
    folder = Path(path)
    folder.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
    info = folder.stat()
    if not info.st_mode & stat.S_ISVTX and info.st_uid == os.geteuid() and stat.S_IMODE(info.st_mode) != DIR_MODE:
        os.chmod(folder, DIR_MODE)
    return folder


def private_file(path: str | Path) -> None:
    """``path`` created empty if missing, and 0600 either way."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, FILE_MODE)
    try:
        narrow(fd)
    finally:
        os.close(fd)


def narrow(fd: int) -> None:
    if stat.S_IMODE(os.fstat(fd).st_mode) & ~FILE_MODE:
        os.fchmod(fd, FILE_MODE)


def private_database(path: str) -> None:
    """A database file 0600 before SQLite opens it (SQLite creates its WAL and shared memory with
    the database's mode), and any WAL, shared memory or journal an earlier run left, 0600 too."""
    private_file(path)
    for suffix in SIDECARS[1:]:
        try:
            fd = os.open(path + suffix, os.O_RDONLY | os.O_NOFOLLOW)
        except FileNotFoundError:
            continue
        try:
            narrow(fd)
        finally:
            os.close(fd)
