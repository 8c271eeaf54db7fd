"""``ports.TenantData`` on the embedded database, and ``ports.ExportStore`` as files in the data
directory (``<data>/exports/<tenant>/<export>/part-00001.jsonl``, 0600 in 0700 folders)."""
from __future__ import annotations

import os
from pathlib import Path

from chalicelib.adapters.embedded.db import SqliteDatabase, from_us
from chalicelib.domain.errors import NotFound
from chalicelib.domain.models import Tenant

# What a tenant owns in the database, purged in this order (the tenant's record last: its name is
# free again only once nothing else of it is left). The index's rows are the index's to purge.
_OWNED = ("events", "experiences", "review_jobs", "recalls", "credits", "review_turns", "trajectories", "api_keys")


class SqliteTenantData:
    def __init__(self, db: SqliteDatabase) -> None:
        self.db = db

    def tenant(self, tenant_id: str) -> Tenant | None:
        row = self.db.read().execute("SELECT tenant_id, name, created_us FROM tenants WHERE tenant_id=?", (tenant_id,)).fetchone()
        return Tenant(row["tenant_id"], row["name"], from_us(row["created_us"])) if row else None

    def trajectory_ids(self, tenant_id: str, after: str | None, limit: int) -> list[str]:
        rows = self.db.read().execute(
            "SELECT trajectory_id FROM trajectories WHERE tenant_id=? AND trajectory_id > ? ORDER BY trajectory_id LIMIT ?",
            (tenant_id, after if after is not None else "", limit))
        return [r[0] for r in rows]

    def purge(self, tenant_id: str, limit: int) -> int:
        gone = 0
        with self.db.write() as conn:
            for table in _OWNED:
                if gone >= limit:
                    return gone
                cur = conn.execute(
                    f"DELETE FROM {table} WHERE rowid IN (SELECT rowid FROM {table} WHERE tenant_id=? LIMIT ?)",
                    (tenant_id, limit - gone))
                gone += cur.rowcount
            if gone < limit:
                gone += conn.execute("DELETE FROM tenants WHERE tenant_id=?", (tenant_id,)).rowcount
        return gone


def _private_dirs(root: Path, path: Path) -> None:
    """Every folder from ``root`` down to ``path``'s, made 0700."""
    for folder in [*reversed(path.parents)]:
        if folder == root or root in folder.parents:
            folder.mkdir(mode=0o700, exist_ok=True)


class FileExportStore:
    """Export parts as files under ``root`` (the data directory's ``exports`` folder)."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)

    def _path(self, key: str) -> Path:
        path = (self.root / key).resolve()
        if self.root.resolve() not in path.parents:
            raise NotFound(f"export part {key} not found")
        return path

    def write(self, key: str, data: bytes) -> None:
        path = self._path(key)
        self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
        _private_dirs(self.root.resolve(), path)
        tmp = path.with_name(path.name + ".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)  # a reader sees the whole part or none of it

    def read(self, key: str) -> bytes:
        path = self._path(key)
        if not path.is_file():
            raise NotFound(f"export part {key} not found")
        return path.read_bytes()

    def delete_prefix(self, prefix: str) -> int:
        folder = self._path(prefix.rstrip("/"))
        if not folder.exists():
            return 0
        files = [p for p in folder.rglob("*") if p.is_file()]
        for p in files:
            p.unlink()
        for d in sorted((p for p in folder.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True):
            d.rmdir()
        folder.rmdir()
        return len(files)

    def location(self, key: str) -> str:
        return str(self._path(key))
