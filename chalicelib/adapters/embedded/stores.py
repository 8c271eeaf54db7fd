"""SQLite implementations of the tenant, trajectory, experience stores and the review queue."""
from __future__ import annotations

import builtins
import json
import sqlite3
from dataclasses import fields, replace
from datetime import datetime
from typing import Any, Sequence

from chalicelib.adapters.codec import event_from_doc, experience_from_doc, to_doc, trajectory_from_doc
from chalicelib.adapters.cursors import decode_parts, encode_cursor
from chalicelib.adapters.embedded.db import SqliteDatabase, dumps, fast_dumps, from_us, rows_in, to_us
from chalicelib.adapters.embedded.event_tails import EventTails
from chalicelib.adapters.fair_claim import in_turns
from chalicelib.domain.anomaly import CONTEXT, seq_windows
from chalicelib.domain.errors import Conflict, NotFound, TenantNameTaken, TrajectoryFull, expired_message
from chalicelib.domain.models import Candidate, Event, Experience, ExperienceStatus, ReviewSummary, Tenant, Trajectory, TrajectoryStatus
from chalicelib.domain.tenant_names import name_key
from chalicelib.ports import MAX_TRIGGERS, AppendResult, DeadJob, Page, ReviewJob, TenantPage, TrajectorySummary, tools_that_worked

_TENANT_COLUMNS = "tenant_id, name, created_us, event_retention_days"


def _tenant(row: sqlite3.Row) -> Tenant:
    return Tenant(row["tenant_id"], row["name"], from_us(row["created_us"]), row["event_retention_days"])


class SqliteTenantStore:
    def __init__(self, db: SqliteDatabase) -> None:
        self.db = db

    def create_tenant(self, tenant: Tenant, key_hash: str) -> None:
        try:
            key = name_key(tenant.name)
            with self.db.write() as conn:  # rolled back as a whole if either row exists
                # tenants made before names had keys get theirs (once: they are few, and in this transaction)
                for row in conn.execute("SELECT tenant_id, name FROM tenants WHERE name_key IS NULL").fetchall():
                    conn.execute("UPDATE tenants SET name_key=? WHERE tenant_id=?", (name_key(row["name"]), row["tenant_id"]))
                # one writer at a time: no other create can slip between this read and the insert
                taken = conn.execute(
                    "SELECT tenant_id, name FROM tenants WHERE name_key=? ORDER BY created_us LIMIT 1", (key,)
                ).fetchone()
                if taken is not None:
                    raise TenantNameTaken(tenant.name, taken["tenant_id"], taken["name"])
                conn.execute(
                    "INSERT INTO tenants(tenant_id, name, created_us, name_key) VALUES (?,?,?,?)",
                    (tenant.tenant_id, tenant.name, to_us(tenant.created_at), key),
                )
                conn.execute(
                    "INSERT INTO api_keys(key_hash, tenant_id, created_us) VALUES (?,?,?)",
                    (key_hash, tenant.tenant_id, to_us(tenant.created_at)),
                )
        except sqlite3.IntegrityError as exc:
            raise Conflict("tenant or key already exists") from exc

    def tenant_for_key(self, key_hash: str) -> str | None:
        row = self.db.read().execute(
            "SELECT tenant_id FROM api_keys WHERE key_hash=? AND revoked=0", (key_hash,)
        ).fetchone()
        return row["tenant_id"] if row else None

    def add_key(self, tenant_id: str, key_hash: str, now: datetime) -> None:
        try:
            with self.db.write() as conn:
                if conn.execute("SELECT 1 FROM tenants WHERE tenant_id=?", (tenant_id,)).fetchone() is None:
                    raise NotFound("tenant not found")
                conn.execute(
                    "INSERT INTO api_keys(key_hash, tenant_id, created_us) VALUES (?,?,?)",
                    (key_hash, tenant_id, to_us(now)),
                )
        except sqlite3.IntegrityError as exc:
            raise Conflict("key already in use") from exc

    def revoke_keys(self, tenant_id: str, keep: str | None = None) -> int:
        with self.db.write() as conn:
            cur = conn.execute(
                "UPDATE api_keys SET revoked=1 WHERE tenant_id=? AND revoked=0 AND key_hash IS NOT ?",
                (tenant_id, keep),
            )
            return cur.rowcount

    def get_tenant(self, tenant_id: str) -> Tenant:
        row = self.db.read().execute(f"SELECT {_TENANT_COLUMNS} FROM tenants WHERE tenant_id=?", (tenant_id,)).fetchone()
        if row is None:
            raise NotFound("tenant not found")
        return _tenant(row)

    def set_event_retention(self, tenant_id: str, days: int | None) -> Tenant:
        with self.db.write() as conn:
            if conn.execute("UPDATE tenants SET event_retention_days=? WHERE tenant_id=?", (days, tenant_id)).rowcount == 0:
                raise NotFound("tenant not found")
            return _tenant(conn.execute(f"SELECT {_TENANT_COLUMNS} FROM tenants WHERE tenant_id=?", (tenant_id,)).fetchone())

    def list_tenants(self) -> list[Tenant]:
        rows = self.db.read().execute(f"SELECT {_TENANT_COLUMNS} FROM tenants ORDER BY created_us, tenant_id")
        return [_tenant(r) for r in rows]

    def list_tenants_page(self, limit: int, cursor: str | None = None) -> TenantPage:
        where, args = "", []
        if cursor:
            created_us, last_id = decode_parts(cursor, (int, str))
            where, args = " WHERE created_us > ? OR (created_us = ? AND tenant_id > ?)", [created_us, created_us, last_id]
        rows = self.db.read().execute(
            f"SELECT {_TENANT_COLUMNS} FROM tenants{where} ORDER BY created_us, tenant_id LIMIT ?", (*args, limit + 1)
        ).fetchall()
        items = [_tenant(r) for r in rows[:limit]]
        last = rows[limit - 1] if len(rows) > limit else None
        return TenantPage(items, encode_cursor([last["created_us"], last["tenant_id"]]) if last is not None else None)


def _count_by_status(db: SqliteDatabase, table: str, tenant_id: str) -> dict[str, int]:
    rows = db.read().execute(f"SELECT status, COUNT(*) AS n FROM {table} WHERE tenant_id=? GROUP BY status", (tenant_id,))
    return {r["status"]: r["n"] for r in rows}


def _stored_ids(conn: sqlite3.Connection, tenant_id: str, trajectory_id: str, event_ids: list[str]) -> set[str]:
    sql = "SELECT event_id FROM events WHERE tenant_id=? AND trajectory_id=? AND event_id IN ({marks})"
    return {r["event_id"] for r in rows_in(conn, sql, (tenant_id, trajectory_id), event_ids)}


# rows of one INSERT: 5 parameters each, under SQLite's oldest limit of 999 per statement
_ROWS_PER_INSERT = 150


def _with_seq(event: Event, seq: int) -> Event:
    """A copy of every field but ``seq`` (``dataclasses.replace`` costs several times more, per event)."""
    copy = object.__new__(Event)
    copy.__dict__.update(event.__dict__)
    copy.seq = seq
    return copy


def _event_doc(event: Event) -> str:
    """The event's stored doc (``to_doc`` order: ``seq`` is its last field) up to the seq's value:
    the store appends the seq it assigns and the closing brace."""
    doc = {"event_id": event.event_id, "type": event.type, "timestamp": event.timestamp.isoformat(), "content": event.content,
           "node_id": event.node_id, "parent_id": event.parent_id, "context": event.context}
    return fast_dumps(doc)[:-1] + ',"seq":'


class SqliteTrajectoryStore:
    def __init__(self, db: SqliteDatabase, tails: EventTails | None = None) -> None:
        self.db = db
        self.tails = tails or EventTails(keep=CONTEXT)

    @staticmethod
    def _head(conn: sqlite3.Connection, tenant_id: str, trajectory_id: str, columns: str) -> sqlite3.Row:
        """The trajectory's row, ``columns`` of it; NotFound when there is none."""
        row = conn.execute(
            f"SELECT {columns} FROM trajectories WHERE tenant_id=? AND trajectory_id=?", (tenant_id, trajectory_id)
        ).fetchone()
        if row is None:
            raise NotFound(f"trajectory {trajectory_id} not found")
        return row

    @classmethod
    def _row(cls, conn: sqlite3.Connection, tenant_id: str, trajectory_id: str) -> Trajectory:
        row = cls._head(conn, tenant_id, trajectory_id, "doc, status, event_count")
        traj = trajectory_from_doc(json.loads(row["doc"]))
        return replace(traj, status=TrajectoryStatus(row["status"]), event_count=row["event_count"])

    @staticmethod
    def _save(conn: sqlite3.Connection, traj: Trajectory) -> None:
        conn.execute(
            "UPDATE trajectories SET status=?, event_count=?, doc=?, updated_us=? WHERE tenant_id=? AND trajectory_id=?",
            (traj.status.value, traj.event_count, dumps(to_doc(traj)), to_us(traj.updated_at), traj.tenant_id, traj.trajectory_id),
        )

    def create(self, traj: Trajectory) -> tuple[Trajectory, bool]:
        doc = dumps(to_doc(traj))

        def insert(conn: sqlite3.Connection) -> tuple[Trajectory, bool]:
            cur = conn.execute(
                "INSERT OR IGNORE INTO trajectories(tenant_id, trajectory_id, status, event_count, doc, updated_us, purge_after_us)"
                " VALUES (?,?,?,?,?,?,?)",
                (traj.tenant_id, traj.trajectory_id, traj.status.value, 0, doc, to_us(traj.updated_at),
                 to_us(traj.events_expire_at) if traj.events_expire_at is not None else None),
            )
            if cur.rowcount == 1:
                return traj, True
            return self._row(conn, traj.tenant_id, traj.trajectory_id), False

        return self.db.group_write(insert)

    def get(self, tenant_id: str, trajectory_id: str) -> Trajectory:
        return self._row(self.db.read(), tenant_id, trajectory_id)

    def append_events(
        self, tenant_id: str, trajectory_id: str, events: Sequence[Event], now: datetime, max_events: int | None = None
    ) -> AppendResult:
        # serialized before the commit is joined: the leader's thread runs only the statements
        docs = [(event.event_id, _event_doc(event)) for event in events]

        def append(conn: sqlite3.Connection) -> tuple[AppendResult, int, list[int]]:
            row = self._head(conn, tenant_id, trajectory_id,  # the doc is not parsed
                             "status, event_count, tools_ok, json_extract(doc, '$.events_expire_at') AS expire_at")
            if row["status"] != TrajectoryStatus.OPEN.value:
                raise Conflict(f"trajectory {trajectory_id} is {row['status']}; it takes no more events")
            if row["expire_at"] is not None and datetime.fromisoformat(row["expire_at"]) <= now:
                raise Conflict(expired_message(trajectory_id, row["expire_at"]))
            count_before = row["event_count"]
            # the first of each new id, in batch order: an id stored before, or earlier in the batch, is a duplicate
            seen = _stored_ids(conn, tenant_id, trajectory_id, [event_id for event_id, _ in docs])
            kept: list[int] = []  # positions in the batch of the events stored
            for i, (event_id, _) in enumerate(docs):
                if event_id not in seen:
                    seen.add(event_id)
                    kept.append(i)
            if max_events is not None and count_before + len(kept) > max_events:
                raise TrajectoryFull(trajectory_id, count_before, len(kept), max_events)
            if kept:
                # a statement per chunk of rows, not per row: each statement lets another thread take the
                # GIL while the commit's leader waits to get it back
                for start in range(0, len(kept), _ROWS_PER_INSERT):
                    chunk = kept[start : start + _ROWS_PER_INSERT]
                    values: list[object] = []
                    for seq, i in enumerate(chunk, count_before + start + 1):
                        event_id, doc = docs[i]
                        # the seq is the last key of the doc: written in place, not serialized again
                        values += (tenant_id, trajectory_id, seq, event_id, f"{doc}{seq}}}")
                    conn.execute(
                        "INSERT INTO events(tenant_id, trajectory_id, seq, event_id, doc) VALUES "
                        + ",".join(["(?,?,?,?,?)"] * len(chunk)),
                        values,
                    )
                # the doc's updated_at too, or the stored one would never move; the tools that worked
                # so far, for advise to read without the events
                known = set(json.loads(row["tools_ok"] or "[]"))
                tools = known | tools_that_worked(events[i] for i in kept)
                conn.execute(
                    "UPDATE trajectories SET event_count=?, updated_us=?, doc=json_set(doc, '$.updated_at', ?), tools_ok=?"
                    " WHERE tenant_id=? AND trajectory_id=?",
                    (count_before + len(kept), to_us(now), now.isoformat(), dumps(sorted(tools)), tenant_id, trajectory_id),
                )
            accepted = tuple(docs[i][0] for i in kept)
            return AppendResult(accepted=len(kept), duplicates=len(docs) - len(kept), accepted_ids=accepted), count_before, kept

        result, count_before, kept = self.db.group_write(append)
        self.tails.appended(  # committed: what the tail holds is in the database
            (tenant_id, trajectory_id),
            count_before,
            [_with_seq(events[i], count_before + n) for n, i in enumerate(kept, 1)],
            [len(docs[i][1]) for i in kept],
        )
        return result

    def events(self, tenant_id: str, trajectory_id: str) -> list[Event]:
        rows = self.db.read().execute(
            "SELECT doc FROM events WHERE tenant_id=? AND trajectory_id=? ORDER BY seq", (tenant_id, trajectory_id)
        ).fetchall()
        return [event_from_doc(json.loads(r["doc"])) for r in rows]

    def events_page(self, tenant_id: str, trajectory_id: str, after_seq: int, limit: int) -> list[Event]:
        rows = self.db.read().execute(
            "SELECT doc FROM events WHERE tenant_id=? AND trajectory_id=? AND seq > ? ORDER BY seq LIMIT ?",
            (tenant_id, trajectory_id, after_seq, limit),
        ).fetchall()
        return [event_from_doc(json.loads(r["doc"])) for r in rows]

    def events_around(self, tenant_id: str, trajectory_id: str, event_ids: Sequence[str], before: int) -> list[Event]:
        cached = self.tails.around((tenant_id, trajectory_id), event_ids, before)
        if cached is not None:
            return cached
        conn = self.db.read()
        sql = "SELECT seq FROM events WHERE tenant_id=? AND trajectory_id=? AND event_id IN ({marks})"
        seqs = [r["seq"] for r in rows_in(conn, sql, (tenant_id, trajectory_id), event_ids)]
        out: list[Event] = []
        for lo, hi in seq_windows(seqs, before):
            rows = conn.execute(
                "SELECT doc FROM events WHERE tenant_id=? AND trajectory_id=? AND seq BETWEEN ? AND ? ORDER BY seq",
                (tenant_id, trajectory_id, lo, hi),
            )
            out += [event_from_doc(json.loads(r["doc"])) for r in rows]
        return out

    def trajectory_summary(self, tenant_id: str, trajectory_id: str, tail: int) -> TrajectorySummary:
        conn = self.db.read()
        row = self._head(conn, tenant_id, trajectory_id, "event_count, tools_ok")
        count = row["event_count"]
        recent: tuple[Event, ...] = ()
        if tail > 0:
            rows = conn.execute(
                "SELECT doc FROM events WHERE tenant_id=? AND trajectory_id=? AND seq > ? ORDER BY seq",
                (tenant_id, trajectory_id, max(0, count - tail)),
            ).fetchall()
            recent = tuple(event_from_doc(json.loads(r["doc"])) for r in rows)[-tail:]
        return TrajectorySummary(frozenset(json.loads(row["tools_ok"] or "[]")), recent, count)

    def finalize(self, tenant_id: str, trajectory_id: str, outcome: str, feedback: str | None, now: datetime) -> Trajectory:
        def close(conn: sqlite3.Connection) -> Trajectory:
            traj = self._row(conn, tenant_id, trajectory_id)
            if traj.status is not TrajectoryStatus.OPEN:
                raise Conflict(f"trajectory {trajectory_id} is already {traj.status.value}")
            traj = replace(
                traj, status=TrajectoryStatus.FINALIZED, outcome=outcome, feedback=feedback, finalized_at=now, updated_at=now
            )
            self._save(conn, traj)
            return traj

        return self.db.group_write(close)  # fsynced, as the appends it closes

    def save_review(
        self, tenant_id: str, trajectory_id: str, status: str, experience_ids: list[str], review: dict, now: datetime
    ) -> Trajectory:
        with self.db.write() as conn:
            traj = self._row(conn, tenant_id, trajectory_id)
            traj = replace(
                traj, status=TrajectoryStatus(status), experience_ids=list(experience_ids), review=review, updated_at=now
            )
            self._save(conn, traj)
            return traj

    def add_local_review(
        self, tenant_id: str, trajectory_id: str, experience_ids: list[str], summary: dict, now: datetime
    ) -> Trajectory:
        with self.db.write() as conn:
            traj = self._row(conn, tenant_id, trajectory_id)
            review = ReviewSummary.with_local_review(traj.review, summary)
            ids = list(dict.fromkeys([*traj.experience_ids, *experience_ids]))
            traj = replace(traj, review=review, experience_ids=ids, updated_at=now)
            self._save(conn, traj)
            return traj

    def finalized_unreviewed(self, limit: int = 1000) -> list[tuple[str, str]]:
        rows = self.db.read().execute(
            "SELECT tenant_id, trajectory_id FROM trajectories WHERE status=? LIMIT ?",
            (TrajectoryStatus.FINALIZED.value, limit),
        ).fetchall()
        return [(r["tenant_id"], r["trajectory_id"]) for r in rows]

    def purge_expired_events(self, now: datetime, limit: int) -> int:
        """Trajectories past their expiry, the oldest expiry first, each emptied of its events
        (a statement of at most ``limit`` rows at a time) and then taken off the purge index."""
        deleted = 0
        while deleted < limit:
            with self.db.write() as conn:
                row = conn.execute(
                    "SELECT tenant_id, trajectory_id FROM trajectories WHERE purge_after_us IS NOT NULL AND purge_after_us <= ?"
                    " ORDER BY purge_after_us LIMIT 1", (to_us(now),)
                ).fetchone()
                if row is None:
                    break
                key = (row["tenant_id"], row["trajectory_id"])
                room = limit - deleted
                gone = conn.execute(
                    "DELETE FROM events WHERE rowid IN (SELECT rowid FROM events WHERE tenant_id=? AND trajectory_id=? LIMIT ?)",
                    (*key, room),
                ).rowcount
                deleted += gone
                if gone < room:  # fewer than there was room for: none left
                    conn.execute("UPDATE trajectories SET purge_after_us=NULL WHERE tenant_id=? AND trajectory_id=?", key)
            self.tails.forget(key)
        return deleted

    def count_by_status(self, tenant_id: str) -> dict[str, int]:
        return _count_by_status(self.db, "trajectories", tenant_id)

    def statuses_page(self, tenant_id: str, limit: int, cursor: str | None = None) -> tuple[dict[str, int], str | None]:
        after = decode_parts(cursor, (str,))[0] if cursor else ""
        rows = self.db.read().execute(
            "SELECT trajectory_id, status FROM trajectories WHERE tenant_id=? AND trajectory_id > ? ORDER BY trajectory_id LIMIT ?",
            (tenant_id, after, limit + 1),
        ).fetchall()
        counts: dict[str, int] = {}
        for r in rows[:limit]:
            counts[r["status"]] = counts.get(r["status"], 0) + 1
        return counts, encode_cursor([rows[limit - 1]["trajectory_id"]]) if len(rows) > limit else None


_CANDIDATE_PATHS = ("experience_id", "status", "agent_id", "user_id", "tools", "tags", "task_type", "intent", "anchors",
                    "freshness", "renewed_at", "utility", "confidence", "advice", "fingerprint", "situation", "lesson")
# a row's ranking column holds these values, written with its doc; a row written before it had one
# (NULL) has them taken out of the doc by SQLite's JSON parser
_CANDIDATE_FIELDS = "COALESCE(ranking, json_extract(doc, " + ", ".join(f"'$.{name}'" for name in _CANDIDATE_PATHS) + "))"
_DEFAULTS: dict[str, Any] = {f.name: f.default for f in fields(Experience)}  # of the scalars a doc written before them lacks
_STATUSES = {s.value: s for s in ExperienceStatus}  # by value, looked up without ``ExperienceStatus(value)``'s call


def _candidate(tenant_id: str, values: list) -> Candidate:
    """A ``Candidate`` of the values of ``_CANDIDATE_PATHS`` (null where a doc lacks one)."""
    (experience_id, status, agent_id, user_id, tools, tags, task_type, intent, anchors, freshness, renewed_at,
     utility, confidence, advice, fingerprint, situation, lesson) = values
    return Candidate(
        tenant_id, experience_id, _STATUSES.get(status) or ExperienceStatus(status),
        agent_id, user_id, tools or [], tags or [], task_type, intent, anchors or [],
        _DEFAULTS["freshness"] if freshness is None else freshness, datetime.fromisoformat(renewed_at),
        _DEFAULTS["utility"] if utility is None else utility,
        _DEFAULTS["confidence"] if confidence is None else confidence, advice, fingerprint, situation, lesson,
    )


class SqliteExperienceStore:
    def __init__(self, db: SqliteDatabase) -> None:
        self.db = db

    def put(self, exp: Experience) -> None:
        with self.db.write() as conn:
            self._put(conn, exp)

    def put_all(self, exps: Sequence[Experience]) -> None:
        with self.db.write() as conn:  # one transaction: all of them or none
            for exp in exps:
                self._put(conn, exp)

    def archive_if_unchanged(self, read: Experience, archived: Experience) -> bool:
        """Read and write in one write transaction: the stored document must still decode to
        ``read`` and be active."""
        if archived.status is ExperienceStatus.ACTIVE or (archived.tenant_id, archived.experience_id) != (read.tenant_id, read.experience_id):
            raise ValueError("archive_if_unchanged takes the same lesson, archived")
        with self.db.write() as conn:
            row = conn.execute(
                "SELECT doc FROM experiences WHERE tenant_id=? AND experience_id=? AND status='active'",
                (read.tenant_id, read.experience_id),
            ).fetchone()
            if row is None or experience_from_doc(json.loads(row["doc"])) != read:
                return False
            self._put(conn, replace(archived, revision=read.revision + 1))  # the next revision, as any write
            return True

    def put_if(self, exp: Experience) -> Experience | None:
        with self.db.write() as conn:  # BEGIN IMMEDIATE: no other process writes between the check and the write
            if not self._current(conn, exp):
                return None
            written = replace(exp, revision=exp.revision + 1)
            self._put(conn, written)
            return written

    def put_all_if(self, exps: Sequence[Experience]) -> builtins.list[Experience] | None:
        written = [replace(e, revision=e.revision + 1) for e in exps]
        docs = [to_doc(e) for e in written]  # what cannot be written fails before anything is
        with self.db.write() as conn:
            if not all(self._current(conn, e) for e in exps):
                return None
            for exp, doc in zip(written, docs):
                self._put(conn, exp, doc)
            return written

    @staticmethod
    def _current(conn: sqlite3.Connection, exp: Experience) -> bool:
        """Whether the stored copy's revision is still the one ``exp`` was read with."""
        row = conn.execute(
            "SELECT rev FROM experiences WHERE tenant_id=? AND experience_id=?", (exp.tenant_id, exp.experience_id)
        ).fetchone()
        return (row[0] if row is not None else 0) == exp.revision

    @staticmethod
    def _put(conn: sqlite3.Connection, exp: Experience, doc: dict[str, Any] | None = None) -> None:
        doc = doc if doc is not None else to_doc(exp)
        conn.execute(
            "INSERT OR REPLACE INTO experiences(tenant_id, experience_id, agent_id, user_id, status, fingerprint,"
            " situation_key, created_us, doc, ranking, rev) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
            (
                exp.tenant_id,
                exp.experience_id,
                exp.agent_id,
                exp.user_id,
                exp.status.value,
                exp.fingerprint,
                exp.situation_key,
                to_us(exp.created_at),
                dumps(doc),
                # what recall_candidates reads of every candidate, apart: parsing whole docs for
                # it cost more than reading them
                dumps([doc[name] for name in _CANDIDATE_PATHS]),
                exp.revision,
            ),
        )

    def get(self, tenant_id: str, experience_id: str) -> Experience:
        row = self.db.read().execute(
            "SELECT doc FROM experiences WHERE tenant_id=? AND experience_id=?", (tenant_id, experience_id)
        ).fetchone()
        if row is None:
            raise NotFound(f"experience {experience_id} not found")
        return experience_from_doc(json.loads(row["doc"]))

    def get_many(self, tenant_id: str, ids: Sequence[str]) -> dict[str, Experience]:
        out: dict[str, Experience] = {}
        sql = "SELECT doc FROM experiences WHERE tenant_id=? AND experience_id IN ({marks})"
        for row in rows_in(self.db.read(), sql, (tenant_id,), ids):
            exp = experience_from_doc(json.loads(row["doc"]))
            out[exp.experience_id] = exp
        return out

    def recall_candidates(self, tenant_id: str, ids: Sequence[str]) -> dict[str, Candidate]:
        # the fields out of the doc by SQLite's JSON parser, in one array: decoding every doc whole
        # (examples, literals, history...) and building each lesson was most of a recall's time
        # outside the embedding and the search
        out: dict[str, Candidate] = {}
        sql = f"SELECT {_CANDIDATE_FIELDS} FROM experiences WHERE tenant_id=? AND experience_id IN ({{marks}})"
        for row in self.db.read_in(sql, (tenant_id,), ids):
            c = _candidate(tenant_id, json.loads(row[0]))
            out[c.experience_id] = c
        return out

    def list(
        self,
        tenant_id: str,
        *,
        agent_id: str | None = None,
        status: ExperienceStatus | None = None,
        limit: int = 50,
        cursor: str | None = None,
    ) -> Page:
        where, args = ["tenant_id=?"], [tenant_id]
        if agent_id is not None:
            where.append("agent_id=?")
            args.append(agent_id)
        if status is not None:
            where.append("status=?")
            args.append(status.value)
        if cursor:
            created_us, last_id = decode_parts(cursor, (int, str))
            where.append("(created_us < ? OR (created_us = ? AND experience_id < ?))")
            args += [created_us, created_us, last_id]
        rows = self.db.read().execute(
            f"SELECT created_us, experience_id, doc FROM experiences WHERE {' AND '.join(where)}"
            " ORDER BY created_us DESC, experience_id DESC LIMIT ?",
            (*args, limit + 1),
        ).fetchall()
        items = [experience_from_doc(json.loads(r["doc"])) for r in rows[:limit]]
        next_cursor = encode_cursor([rows[limit - 1]["created_us"], rows[limit - 1]["experience_id"]]) if len(rows) > limit else None
        return Page(items, next_cursor)

    def find_active_by_fingerprint(
        self, tenant_id: str, fingerprint: str, agent_id: str | None, user_id: str | None
    ) -> Experience | None:
        row = self.db.read().execute(
            "SELECT doc FROM experiences WHERE tenant_id=? AND fingerprint=? AND status='active'"
            " AND agent_id IS ? AND user_id IS ? LIMIT 1",
            (tenant_id, fingerprint, agent_id, user_id),
        ).fetchone()
        return experience_from_doc(json.loads(row["doc"])) if row else None

    def find_forgotten_by_fingerprint(
        self, tenant_id: str, fingerprint: str, agent_id: str | None, user_id: str | None
    ) -> Experience | None:
        row = self.db.read().execute(
            "SELECT doc FROM experiences WHERE tenant_id=? AND fingerprint=? AND status='forgotten'"
            " AND agent_id IS ? AND user_id IS ? ORDER BY created_us, experience_id LIMIT 1",
            (tenant_id, fingerprint, agent_id, user_id),
        ).fetchone()
        return experience_from_doc(json.loads(row["doc"])) if row else None

    def find_active_by_situation(
        self, tenant_id: str, situation_key: str, agent_id: str | None, user_id: str | None
    ) -> builtins.list[Experience]:  # ``list`` names a method here
        rows = self.db.read().execute(
            "SELECT doc FROM experiences WHERE tenant_id=? AND situation_key=? AND status='active'"
            " AND agent_id IS ? AND user_id IS ? ORDER BY created_us, experience_id",
            (tenant_id, situation_key, agent_id, user_id),
        ).fetchall()
        return [experience_from_doc(json.loads(r["doc"])) for r in rows]

    def scan_active(self, limit: int = 500, cursor: str | None = None) -> Page:
        after = decode_parts(cursor, (str, str)) if cursor else ("", "")
        rows = self.db.read().execute(
            "SELECT tenant_id, experience_id, doc FROM experiences WHERE status='active'"
            " AND (tenant_id > ? OR (tenant_id = ? AND experience_id > ?)) ORDER BY tenant_id, experience_id LIMIT ?",
            (after[0], after[0], after[1], limit),
        ).fetchall()
        items = [experience_from_doc(json.loads(r["doc"])) for r in rows]
        next_cursor = encode_cursor([rows[-1]["tenant_id"], rows[-1]["experience_id"]]) if len(rows) == limit else None
        return Page(items, next_cursor)

    def count_by_status(self, tenant_id: str) -> dict[str, int]:
        return _count_by_status(self.db, "experiences", tenant_id)


class SqliteReviewQueue:
    """The review outbox: jobs live in the same database as the trajectories they review."""

    def __init__(self, db: SqliteDatabase) -> None:
        self.db = db

    def enqueue(self, tenant_id: str, trajectory_id: str, kind: str, now: datetime) -> None:
        with self.db.write() as conn:
            conn.execute(
                "INSERT INTO review_jobs(tenant_id, trajectory_id, kind, state, due_us) VALUES (?,?,?,'pending',?)"
                " ON CONFLICT(tenant_id, trajectory_id, kind) DO UPDATE SET state='pending', due_us=excluded.due_us, attempts=0"
                " WHERE review_jobs.state IN ('done', 'dead')",
                (tenant_id, trajectory_id, kind, to_us(now)),
            )

    def enqueue_local(
        self, tenant_id: str, trajectory_id: str, triggers: Sequence[str], now: datetime, max_jobs: int,
        max_triggers: int = MAX_TRIGGERS,
    ) -> bool:
        if not triggers:
            return False
        with self.db.write() as conn:
            rows = conn.execute(
                "SELECT kind, state, attempts, triggers FROM review_jobs"
                " WHERE tenant_id=? AND trajectory_id=? AND kind LIKE 'local:%'",
                (tenant_id, trajectory_id),
            ).fetchall()
            pending = next((r for r in rows if r["state"] == "pending" and r["attempts"] == 0), None)
            if pending is not None:  # not claimed yet: the new triggers join it
                known = json.loads(pending["triggers"] or "[]")
                merged = list(dict.fromkeys([*known, *triggers]))[:max_triggers]
                conn.execute(
                    "UPDATE review_jobs SET triggers=? WHERE tenant_id=? AND trajectory_id=? AND kind=?",
                    (json.dumps(merged), tenant_id, trajectory_id, pending["kind"]),
                )
                return len(merged) > len(known)
            if len(rows) >= max_jobs:
                return False
            cur = conn.execute(
                "INSERT OR IGNORE INTO review_jobs(tenant_id, trajectory_id, kind, state, due_us, triggers)"
                " VALUES (?,?,?,'pending',?,?)",
                (tenant_id, trajectory_id, f"local:{triggers[0]}", to_us(now), json.dumps(list(dict.fromkeys(triggers))[:max_triggers])),
            )
            return cur.rowcount == 1

    def claim(self, now: datetime, lease_seconds: float, limit: int = 10) -> list[ReviewJob]:
        now_us = to_us(now)
        if limit <= 0:
            return []
        with self.db.write() as conn:
            # each tenant's oldest due jobs (at most ``limit``), tenants by their oldest due job
            rows = conn.execute(
                "SELECT tenant_id, trajectory_id, kind, attempts, triggers FROM ("
                " SELECT *, ROW_NUMBER() OVER (PARTITION BY tenant_id ORDER BY due_us, trajectory_id, kind) AS n,"
                " MIN(due_us) OVER (PARTITION BY tenant_id) AS first_due"
                " FROM review_jobs WHERE state IN ('pending', 'leased') AND due_us <= ?)"
                " WHERE n <= ? ORDER BY first_due, tenant_id, n",
                (now_us, limit),
            ).fetchall()
            due: dict[str, list] = {}
            for r in rows:
                due.setdefault(r["tenant_id"], []).append(r)
            tenants = list(due)
            served = {
                r["tenant_id"]: r["served"]
                for r in rows_in(conn, "SELECT tenant_id, served FROM review_turns WHERE tenant_id IN ({marks})", (), tenants)
            }
            turn = conn.execute("SELECT COALESCE(MAX(served), 0) AS n FROM review_turns").fetchone()["n"]
            jobs = []
            for r in in_turns(due, served, limit):
                conn.execute(
                    "UPDATE review_jobs SET state='leased', attempts=attempts+1, due_us=?"
                    " WHERE tenant_id=? AND trajectory_id=? AND kind=?",
                    (now_us + int(lease_seconds * 1_000_000), r["tenant_id"], r["trajectory_id"], r["kind"]),
                )
                turn += 1
                conn.execute(
                    "INSERT INTO review_turns(tenant_id, served) VALUES (?, ?)"
                    " ON CONFLICT(tenant_id) DO UPDATE SET served=excluded.served",
                    (r["tenant_id"], turn),
                )
                triggers = tuple(json.loads(r["triggers"])) if r["triggers"] else ()
                jobs.append(ReviewJob(r["tenant_id"], r["trajectory_id"], r["kind"], r["attempts"] + 1, triggers))
            return jobs

    def _set(self, job: ReviewJob, state: str, error: str | None, due_us: int | None = None) -> None:
        with self.db.write() as conn:
            conn.execute(
                "UPDATE review_jobs SET state=?, last_error=?, due_us=COALESCE(?, due_us)"
                " WHERE tenant_id=? AND trajectory_id=? AND kind=?",
                (state, error, due_us, job.tenant_id, job.trajectory_id, job.kind),
            )

    def complete(self, job: ReviewJob) -> None:
        self._set(job, "done", None)

    def retry_later(self, job: ReviewJob, error: str, now: datetime, delay_seconds: float) -> None:
        self._set(job, "pending", error, to_us(now) + int(delay_seconds * 1_000_000))

    def dead(self, job: ReviewJob, error: str, now: datetime | None = None) -> None:
        # a dead job is never due again: its due time records when it was given up
        self._set(job, "dead", error, to_us(now) if now is not None else None)

    def dead_jobs(self, tenant_id: str | None = None, limit: int = 100) -> list[DeadJob]:
        rows = self.db.read().execute(
            "SELECT tenant_id, trajectory_id, kind, attempts, last_error, due_us FROM review_jobs"
            " WHERE state='dead' AND (? IS NULL OR tenant_id=?) ORDER BY due_us, tenant_id, trajectory_id, kind LIMIT ?",
            (tenant_id, tenant_id, limit),
        ).fetchall()
        return [
            DeadJob(r["tenant_id"], r["trajectory_id"], r["kind"], r["attempts"], r["last_error"], from_us(r["due_us"]))
            for r in rows
        ]

    def redrive(self, jobs: Sequence[DeadJob], now: datetime) -> int:
        with self.db.write() as conn:
            return sum(
                conn.execute(
                    "UPDATE review_jobs SET state='pending', attempts=0, due_us=?"
                    " WHERE tenant_id=? AND trajectory_id=? AND kind=? AND state='dead'",
                    (to_us(now), j.tenant_id, j.trajectory_id, j.kind),
                ).rowcount
                for j in jobs
            )

    def release_leases(self, now: datetime) -> int:
        with self.db.write() as conn:
            return conn.execute("UPDATE review_jobs SET state='pending', due_us=? WHERE state='leased'", (to_us(now),)).rowcount

    def adopt_earlier_jobs(self) -> int:
        return 0  # one layout so far: claims read every job's row

    def pending(self) -> int:
        row = self.db.read().execute("SELECT COUNT(*) AS n FROM review_jobs WHERE state IN ('pending','leased')").fetchone()
        return int(row["n"])
