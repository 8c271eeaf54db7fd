"""The embedded store keeps what recall ranks a lesson by in a column of its own, written with the
doc; a row without it (written before the column existed) is read from its doc, with the same
candidate."""
from __future__ import annotations

import sqlite3
from dataclasses import replace
from datetime import timedelta

from chalicelib.adapters.embedded.db import SqliteDatabase, dumps
from chalicelib.adapters.embedded.stores import SqliteExperienceStore
from chalicelib.adapters.codec import to_doc
from chalicelib.domain.models import Candidate, ExperienceStatus
from tests.support.builders import T0, experience

RICH = experience(experience_id="x1", tags=["db", "net"], tools=["psql", "pg_dump"], intent="back up", anchors=["main"],
                  agent_id="a1", user_id="u1", confidence=0.75, freshness=0.5, utility=0.625, fingerprint="fp-1",
                  advice="dump \u00e9 before \"migrating\"", renewed_at=T0 + timedelta(microseconds=7),
                  examples=["an example"], history=[{"event": "restored"}])


def candidate(store: SqliteExperienceStore, experience_id: str) -> Candidate:
    return store.recall_candidates("t1", [experience_id])[experience_id]


def test_the_ranking_column_follows_every_write_and_a_row_without_it_reads_the_same(tmp_path):
    db = SqliteDatabase(str(tmp_path / "hindsight.db"))
    store = SqliteExperienceStore(db)
    store.put(RICH)
    assert candidate(store, "x1") == Candidate.of(RICH, keep_whole=False)
    changed = replace(RICH, utility=0.9, status=ExperienceStatus.ARCHIVED, tools=["psql"], situation="Another one.")
    store.put(changed)
    assert candidate(store, "x1") == Candidate.of(changed, keep_whole=False)
    with db.write() as conn:
        conn.execute("UPDATE experiences SET ranking=NULL")
    assert candidate(store, "x1") == Candidate.of(changed, keep_whole=False)


def test_a_database_made_before_the_column_gets_it_and_its_rows_read_from_their_docs(tmp_path):
    path = str(tmp_path / "hindsight.db")
    with sqlite3.connect(path) as conn:  # the table as it was, and a row as the put of then wrote it
        conn.execute("CREATE TABLE experiences (tenant_id TEXT NOT NULL, experience_id TEXT NOT NULL, agent_id TEXT,"
                     " user_id TEXT, status TEXT NOT NULL, fingerprint TEXT, situation_key TEXT, created_us INTEGER NOT NULL,"
                     " doc TEXT NOT NULL, PRIMARY KEY (tenant_id, experience_id))")
        conn.execute("INSERT INTO experiences VALUES (?,?,?,?,?,?,?,?,?)",
                     ("t1", "x1", "a1", "u1", "active", "fp-1", None, 0, dumps(to_doc(RICH))))
    store = SqliteExperienceStore(SqliteDatabase(path))
    assert candidate(store, "x1") == Candidate.of(RICH, keep_whole=False)
    store.put(replace(RICH, experience_id="x2"))
    assert candidate(store, "x2") == Candidate.of(replace(RICH, experience_id="x2"), keep_whole=False)


def test_rows_with_and_without_the_column_read_together(tmp_path):
    db = SqliteDatabase(str(tmp_path / "hindsight.db"))
    store = SqliteExperienceStore(db)
    lessons = [replace(RICH, experience_id=f"x{i}", utility=i / 10, advice=f"advice {i}") for i in range(6)]
    for lesson in lessons:
        store.put(lesson)
    with db.write() as conn:
        conn.execute("UPDATE experiences SET ranking=NULL WHERE experience_id IN ('x1', 'x4')")
    got = store.recall_candidates("t1", [f"x{i}" for i in range(6)] + ["missing", "x1"])
    assert got == {lesson.experience_id: Candidate.of(lesson, keep_whole=False) for lesson in lessons}
    assert store.recall_candidates("other", ["x1"]) == {}

