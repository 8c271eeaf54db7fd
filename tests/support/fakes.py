"""In-memory implementations of every port, for service tests.

Small and honest: plain dicts behind one lock, objects copied in and out (so a caller mutating
what it got back never changes the store), and the behaviour the docstrings of
``chalicelib.ports`` promise. Each fake passes the same contract suite as the real adapters
(``tests/contract``), which is what makes a service test against them worth something.
"""
from __future__ import annotations

import copy
import json
import threading
from collections import Counter
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from chalicelib.adapters.cursors import decode_parts, encode_cursor
from chalicelib.adapters.embedders.hash import HashEmbedder
from chalicelib.adapters.fair_claim import in_turns
from chalicelib.adapters.reviewers.rules import DeterministicReviewer
from chalicelib.domain.errors import Conflict, NotFound, TenantNameTaken, TrajectoryFull, expired_message
from chalicelib.domain.tenant_names import same_name
from chalicelib.domain.lexical import Bm25Params, idf, terms
from chalicelib.domain.models import (
    Candidate,
    Event,
    Experience,
    ExperienceStatus,
    ReviewSummary,
    Tenant,
    Trajectory,
    TrajectoryStatus,
    match_key,
    match_keys,
)
from chalicelib.ports import (
    MAX_TRIGGERS,
    AppendResult,
    DeadJob,
    IndexEntry,
    IndexFilter,
    Page,
    ReviewJob,
    TenantPage,
    TrajectorySummary,
    hybrid_by_parts,
    tools_that_worked,
)
from chalicelib.services.deps import Deps, policies
from chalicelib.settings import Settings

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
DEFAULT_START = datetime(2026, 1, 1, tzinfo=timezone.utc)


def _us(dt: datetime) -> int:
    """Exact integer microseconds since the epoch (no float rounding)."""
    return (dt - _EPOCH) // timedelta(microseconds=1)




class FakeClock:
    """``ports.Clock`` that only moves when told to."""

    def __init__(self, start: datetime | None = None) -> None:
        start = start or DEFAULT_START
        if start.tzinfo is None:
            raise ValueError("FakeClock needs a timezone-aware start")
        self._now = start.astimezone(timezone.utc)
        self._lock = threading.Lock()

    def now(self) -> datetime:
        with self._lock:
            return self._now

    def advance(self, **kwargs: float) -> datetime:
        """Move forward by ``timedelta(**kwargs)``; returns the new time."""
        with self._lock:
            self._now += timedelta(**kwargs)
            return self._now


class InMemoryTenantStore:
    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._tenants: dict[str, Tenant] = {}
        self._keys: dict[str, dict[str, Any]] = {}  # key_hash -> {"tenant_id", "revoked"}

    def create_tenant(self, tenant: Tenant, key_hash: str) -> None:
        with self._lock:
            if tenant.tenant_id in self._tenants:
                raise Conflict(f"tenant {tenant.tenant_id} already exists")
            if key_hash in self._keys:
                raise Conflict("key already in use")
            for other in self._tenants.values():
                if same_name(other.name, tenant.name):
                    raise TenantNameTaken(tenant.name, other.tenant_id, other.name)
            self._tenants[tenant.tenant_id] = copy.deepcopy(tenant)
            self._keys[key_hash] = {"tenant_id": tenant.tenant_id, "revoked": False}

    def tenant_for_key(self, key_hash: str) -> str | None:
        with self._lock:
            key = self._keys.get(key_hash)
            return None if key is None or key["revoked"] else key["tenant_id"]

    def add_key(self, tenant_id: str, key_hash: str, now: datetime) -> None:
        with self._lock:
            if tenant_id not in self._tenants:
                raise NotFound("tenant not found")
            if key_hash in self._keys:
                raise Conflict("key already in use")
            self._keys[key_hash] = {"tenant_id": tenant_id, "revoked": False}

    def revoke_keys(self, tenant_id: str, keep: str | None = None) -> int:
        with self._lock:
            revoked = 0
            for key_hash, key in self._keys.items():
                if key["tenant_id"] == tenant_id and not key["revoked"] and key_hash != keep:
                    key["revoked"] = True
                    revoked += 1
            return revoked

    def get_tenant(self, tenant_id: str) -> Tenant:
        with self._lock:
            if tenant_id not in self._tenants:
                raise NotFound("tenant not found")
            return copy.deepcopy(self._tenants[tenant_id])

    def set_event_retention(self, tenant_id: str, days: int | None) -> Tenant:
        with self._lock:
            if tenant_id not in self._tenants:
                raise NotFound("tenant not found")
            self._tenants[tenant_id].event_retention_days = days
            return copy.deepcopy(self._tenants[tenant_id])

    def list_tenants(self) -> list[Tenant]:
        with self._lock:
            return [copy.deepcopy(t) for t in sorted(self._tenants.values(), key=lambda t: (t.created_at, t.tenant_id))]

    def list_tenants_page(self, limit: int, cursor: str | None = None) -> TenantPage:
        after = decode_parts(cursor, (int, str)) if cursor else None
        with self._lock:
            ordered = sorted(self._tenants.values(), key=lambda t: (_us(t.created_at), t.tenant_id))
            rest = [t for t in ordered if after is None or (_us(t.created_at), t.tenant_id) > tuple(after)]
            items = [copy.deepcopy(t) for t in rest[:limit]]
        last = items[-1] if len(rest) > limit and items else None
        return TenantPage(items, encode_cursor([_us(last.created_at), last.tenant_id]) if last is not None else None)


def _count_by_status(items) -> dict[str, int]:
    counts: dict[str, int] = {}
    for item in items:
        counts[item.status.value] = counts.get(item.status.value, 0) + 1
    return counts


class InMemoryTrajectoryStore:
    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._trajs: dict[tuple[str, str], Trajectory] = {}
        self._events: dict[tuple[str, str], list[Event]] = {}
        self._event_ids: dict[tuple[str, str], set[str]] = {}

    def _stored(self, tenant_id: str, trajectory_id: str) -> Trajectory:
        traj = self._trajs.get((tenant_id, trajectory_id))
        if traj is None:
            raise NotFound(f"trajectory {trajectory_id} not found")
        return traj

    def create(self, traj: Trajectory) -> tuple[Trajectory, bool]:
        key = (traj.tenant_id, traj.trajectory_id)
        with self._lock:
            if key in self._trajs:
                return copy.deepcopy(self._trajs[key]), False
            stored = copy.deepcopy(replace(traj, event_count=0))
            self._trajs[key] = stored
            self._events[key] = []
            self._event_ids[key] = set()
            return copy.deepcopy(stored), True

    def get(self, tenant_id: str, trajectory_id: str) -> Trajectory:
        with self._lock:
            return copy.deepcopy(self._stored(tenant_id, trajectory_id))

    def append_events(
        self, tenant_id: str, trajectory_id: str, events: Sequence[Event], now: datetime, max_events: int | None = None
    ) -> AppendResult:
        key = (tenant_id, trajectory_id)
        with self._lock:
            traj = self._stored(tenant_id, trajectory_id)
            if traj.status is not TrajectoryStatus.OPEN:
                raise Conflict(f"trajectory {trajectory_id} is {traj.status.value}; it takes no more events")
            if traj.events_expired(now):
                raise Conflict(expired_message(trajectory_id, traj.events_expire_at))
            stored, seen = self._events[key], self._event_ids[key]
            new = {e.event_id for e in events if e.event_id not in seen}
            if max_events is not None and len(stored) + len(new) > max_events:
                raise TrajectoryFull(trajectory_id, len(stored), len(new), max_events)
            accepted: list[str] = []
            for event in events:
                if event.event_id in seen:
                    continue
                seen.add(event.event_id)
                stored.append(copy.deepcopy(replace(event, seq=len(stored) + 1)))
                accepted.append(event.event_id)
            if accepted:
                traj.event_count = len(stored)
                traj.updated_at = now
            return AppendResult(len(accepted), len(events) - len(accepted), tuple(accepted))

    def events(self, tenant_id: str, trajectory_id: str) -> list[Event]:
        with self._lock:
            return copy.deepcopy(self._events.get((tenant_id, trajectory_id), []))

    def events_page(self, tenant_id: str, trajectory_id: str, after_seq: int, limit: int) -> list[Event]:
        with self._lock:
            stored = self._events.get((tenant_id, trajectory_id), [])
            return copy.deepcopy([e for e in stored if e.seq > after_seq][:max(0, limit)])

    def events_around(self, tenant_id: str, trajectory_id: str, event_ids: Sequence[str], before: int) -> list[Event]:
        with self._lock:
            stored = self._events.get((tenant_id, trajectory_id), [])
            wanted = set(event_ids)
            seqs = {s for e in stored if e.event_id in wanted for s in range(e.seq - before, e.seq + 1)}
            return copy.deepcopy([e for e in stored if e.seq in seqs])

    def trajectory_summary(self, tenant_id: str, trajectory_id: str, tail: int) -> TrajectorySummary:
        with self._lock:
            traj = self._stored(tenant_id, trajectory_id)
            stored = self._events[(tenant_id, trajectory_id)]
            recent = tuple(copy.deepcopy(stored[-tail:])) if tail > 0 else ()
            return TrajectorySummary(frozenset(tools_that_worked(stored)), recent, traj.event_count)

    def finalize(self, tenant_id: str, trajectory_id: str, outcome: str, feedback: str | None, now: datetime) -> Trajectory:
        with self._lock:
            traj = self._stored(tenant_id, trajectory_id)
            if traj.status is not TrajectoryStatus.OPEN:
                raise Conflict(f"trajectory {trajectory_id} is already {traj.status.value}")
            traj.status = TrajectoryStatus.FINALIZED
            traj.outcome = outcome
            traj.feedback = feedback
            traj.finalized_at = now
            traj.updated_at = now
            return copy.deepcopy(traj)

    def save_review(
        self, tenant_id: str, trajectory_id: str, status: str, experience_ids: list[str], review: dict, now: datetime
    ) -> Trajectory:
        with self._lock:
            traj = self._stored(tenant_id, trajectory_id)
            traj.status = TrajectoryStatus(status)
            traj.experience_ids = list(experience_ids)
            traj.review = copy.deepcopy(review)
            traj.updated_at = now
            return copy.deepcopy(traj)

    def add_local_review(
        self, tenant_id: str, trajectory_id: str, experience_ids: list[str], summary: dict, now: datetime
    ) -> Trajectory:
        with self._lock:
            traj = self._stored(tenant_id, trajectory_id)
            review = ReviewSummary.with_local_review(copy.deepcopy(traj.review), copy.deepcopy(summary))
            traj.review = review
            traj.experience_ids = list(dict.fromkeys([*traj.experience_ids, *experience_ids]))
            traj.updated_at = now
            return copy.deepcopy(traj)

    def purge_expired_events(self, now: datetime, limit: int) -> int:
        deleted = 0
        with self._lock:
            for key, traj in sorted(self._trajs.items(), key=lambda kv: (kv[1].events_expire_at or now, kv[0])):
                if deleted >= limit or not traj.events_expired(now):
                    continue
                gone = self._events[key][: limit - deleted]
                del self._events[key][: len(gone)]
                deleted += len(gone)
        return deleted

    def finalized_unreviewed(self, limit: int = 1000) -> list[tuple[str, str]]:
        with self._lock:
            found = [key for key, t in self._trajs.items() if t.status is TrajectoryStatus.FINALIZED]
            return found[:limit]

    def count_by_status(self, tenant_id: str) -> dict[str, int]:
        with self._lock:
            return _count_by_status(t for (tid, _), t in self._trajs.items() if tid == tenant_id)

    def statuses_page(self, tenant_id: str, limit: int, cursor: str | None = None) -> tuple[dict[str, int], str | None]:
        after = decode_parts(cursor, (str,))[0] if cursor else ""
        with self._lock:
            rest = sorted((t for (tid, i), t in self._trajs.items() if tid == tenant_id and i > after), key=lambda t: t.trajectory_id)
            counts = _count_by_status(rest[:limit])
        return counts, encode_cursor([rest[limit - 1].trajectory_id]) if len(rest) > limit else None


class InMemoryExperienceStore:
    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._exps: dict[tuple[str, str], Experience] = {}

    def put(self, exp: Experience) -> None:
        with self._lock:
            self._exps[(exp.tenant_id, exp.experience_id)] = copy.deepcopy(exp)

    def put_all(self, exps: Sequence[Experience]) -> None:
        for exp in exps:  # what a real store cannot write fails the whole call, before anything is stored
            ExperienceStatus(exp.status)
        with self._lock:
            for exp in exps:
                self.put(exp)

    def archive_if_unchanged(self, read: Experience, archived: Experience) -> bool:
        if archived.status is ExperienceStatus.ACTIVE or (archived.tenant_id, archived.experience_id) != (read.tenant_id, read.experience_id):
            raise ValueError("archive_if_unchanged takes the same lesson, archived")
        with self._lock:
            stored = self._exps.get((read.tenant_id, read.experience_id))
            if stored is None or stored.status is not ExperienceStatus.ACTIVE or stored != read:
                return False
            self.put(replace(archived, revision=read.revision + 1))
            return True

    def _current(self, exp: Experience) -> bool:
        stored = self._exps.get((exp.tenant_id, exp.experience_id))
        return (stored.revision if stored is not None else 0) == exp.revision

    def put_if(self, exp: Experience) -> Experience | None:
        with self._lock:
            if not self._current(exp):
                return None
            written = replace(exp, revision=exp.revision + 1)
            self.put(written)
            return written

    def put_all_if(self, exps: Sequence[Experience]) -> list[Experience] | None:
        for exp in exps:
            ExperienceStatus(exp.status)
        with self._lock:
            if not all(self._current(e) for e in exps):
                return None
            written = [replace(e, revision=e.revision + 1) for e in exps]
            for exp in written:
                self.put(exp)
            return written

    def get(self, tenant_id: str, experience_id: str) -> Experience:
        with self._lock:
            exp = self._exps.get((tenant_id, experience_id))
            if exp is None:
                raise NotFound(f"experience {experience_id} not found")
            return copy.deepcopy(exp)

    def get_many(self, tenant_id: str, ids: Sequence[str]) -> dict[str, Experience]:
        with self._lock:
            return {
                i: copy.deepcopy(self._exps[(tenant_id, i)]) for i in dict.fromkeys(ids) if (tenant_id, i) in self._exps
            }

    def recall_candidates(self, tenant_id: str, ids: Sequence[str]) -> dict[str, Candidate]:
        return {i: Candidate.of(e) for i, e in self.get_many(tenant_id, ids).items()}

    def list(
        self,
        tenant_id: str,
        *,
        agent_id: str | None = None,
        status: ExperienceStatus | None = None,
        limit: int = 50,
        cursor: str | None = None,
    ) -> Page:
        after = decode_parts(cursor, (int, str)) if cursor else None

        def key(e: Experience) -> tuple[int, str]:
            return (_us(e.created_at), e.experience_id)

        with self._lock:
            matching = [
                e
                for (t, _), e in self._exps.items()
                if t == tenant_id
                and (agent_id is None or e.agent_id == agent_id)
                and (status is None or e.status is status)
                and (after is None or key(e) < after)
            ]
            matching.sort(key=key, reverse=True)
            items = [copy.deepcopy(e) for e in matching[:limit]]
        more = len(matching) > limit and limit > 0
        return Page(items, encode_cursor(list(key(items[-1]))) if more else None)

    def find_active_by_fingerprint(
        self, tenant_id: str, fingerprint: str, agent_id: str | None, user_id: str | None
    ) -> Experience | None:
        with self._lock:
            for (t, _), e in self._exps.items():
                if (
                    t == tenant_id
                    and e.fingerprint == fingerprint
                    and e.status is ExperienceStatus.ACTIVE
                    and e.agent_id == agent_id
                    and e.user_id == user_id
                ):
                    return copy.deepcopy(e)
            return None

    def find_forgotten_by_fingerprint(
        self, tenant_id: str, fingerprint: str, agent_id: str | None, user_id: str | None
    ) -> Experience | None:
        with self._lock:
            found = sorted(
                (e for (t, _), e in self._exps.items()
                 if t == tenant_id and e.fingerprint == fingerprint and e.status is ExperienceStatus.FORGOTTEN
                 and e.agent_id == agent_id and e.user_id == user_id),
                key=lambda e: (e.created_at, e.experience_id),
            )
            return copy.deepcopy(found[0]) if found else None

    def find_active_by_situation(
        self, tenant_id: str, situation_key: str, agent_id: str | None, user_id: str | None
    ) -> list[Experience]:
        with self._lock:
            found = [
                copy.deepcopy(e)
                for (t, _), e in self._exps.items()
                if t == tenant_id and e.situation_key == situation_key and e.status is ExperienceStatus.ACTIVE
                and e.agent_id == agent_id and e.user_id == user_id
            ]
        return sorted(found, key=lambda e: (e.created_at, e.experience_id))

    def scan_active(self, limit: int = 500, cursor: str | None = None) -> Page:
        after = decode_parts(cursor, (str, str)) if cursor else ("", "")
        with self._lock:
            keys = sorted(k for k, e in self._exps.items() if e.status is ExperienceStatus.ACTIVE and k > after)
            items = [copy.deepcopy(self._exps[k]) for k in keys[:limit]]
        last_page = len(items) < limit or not items
        return Page(items, None if last_page else encode_cursor([items[-1].tenant_id, items[-1].experience_id]))

    def count_by_status(self, tenant_id: str) -> dict[str, int]:
        with self._lock:
            return _count_by_status(e for (tid, _), e in self._exps.items() if tid == tenant_id)


def term_score(tf: float, df: int, n_docs: int, doc_len: float, avg_len: float, p: Bm25Params = Bm25Params()) -> float:
    """BM25 contribution of one query term to one document, the textbook way (the numpy index
    computes the same for many documents at once)."""
    norm = tf + p.k1 * (1 - p.b + p.b * doc_len / max(avg_len, 1e-9))
    return idf(df, n_docs) * tf * (p.k1 + 1) / norm


class InMemoryVectorIndex:
    """Exact cosine k-NN, with the filter semantics of ``NumpyVectorIndex``."""

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self._lock = threading.RLock()
        self._parts: dict[str, dict[str, IndexEntry]] = {}  # insertion-ordered per tenant

    def _checked(self, vector: np.ndarray) -> np.ndarray:
        vec = np.asarray(vector, dtype=np.float32).reshape(-1)
        if vec.shape[0] != self.dim:
            raise ValueError(f"vector has {vec.shape[0]} dimensions, the index {self.dim}")
        norm = float(np.linalg.norm(vec))
        return vec / norm if norm > 0 else vec

    def upsert(self, tenant_id: str, entries: Sequence[IndexEntry]) -> None:
        checked = [replace(e, vector=self._checked(e.vector), tools=tuple(sorted(match_keys(e.tools)))) for e in entries]
        with self._lock:
            part = self._parts.setdefault(tenant_id, {})
            for e in checked:
                part[e.experience_id] = e  # a replaced entry keeps its place (tie order)

    def delete(self, tenant_id: str, experience_ids: Sequence[str]) -> None:
        with self._lock:
            part = self._parts.get(tenant_id, {})
            for i in experience_ids:
                part.pop(i, None)

    def purge_tenant(self, tenant_id: str, limit: int) -> int:
        with self._lock:
            part = self._parts.get(tenant_id, {})
            ids = list(part)[:limit]
            for i in ids:
                del part[i]
            if not part:
                self._parts.pop(tenant_id, None)
            return len(ids)

    def token_vectors(self, tenant_id: str, keys: Mapping[str, str]) -> dict[str, np.ndarray]:
        with self._lock:
            part = self._parts.get(tenant_id, {})
            late = {i: part[i].late for i in keys if i in part}
        return {i: np.asarray(t.vectors, dtype=np.float32) for i, t in late.items() if t and t.key == keys[i]}

    def token_vectors_of_texts(self, tenant_id: str, keys: Iterable[str]) -> dict[str, np.ndarray]:
        wanted = set(keys)
        with self._lock:
            kept = [e.late for e in self._parts.get(tenant_id, {}).values() if e.late and e.late.key in wanted]
        out: dict[str, np.ndarray] = {}
        for late in kept:
            out.setdefault(late.key, np.asarray(late.vectors, dtype=np.float32))
        return out

    @staticmethod
    def _matches(e: IndexEntry, flt: IndexFilter, tools: set[str]) -> bool:
        if not flt.all_scopes and e.agent_id is not None and e.agent_id != flt.agent_id:
            return False
        if not flt.all_scopes and e.user_id is not None and e.user_id != flt.user_id:
            return False
        for want, have in ((match_key(flt.task_type), match_key(e.task_type)), (match_key(flt.intent), match_key(e.intent))):
            if want and have and want != have:
                return False
        return not tools or not e.tools or bool(tools.intersection(e.tools))

    def search(self, tenant_id: str, vector: np.ndarray, flt: IndexFilter, k: int) -> list[tuple[str, float]]:
        if k <= 0:
            return []
        q = self._checked(vector)
        tools = match_keys(flt.tools)
        with self._lock:
            found = [e for e in self._parts.get(tenant_id, {}).values() if self._matches(e, flt, tools)]
        scored = [(e.experience_id, float(e.vector @ q)) for e in found]
        scored.sort(key=lambda pair: -pair[1])  # stable: ties keep insertion order
        return scored[:k]

    def lexical_search(self, tenant_id: str, text: str, flt: IndexFilter, k: int) -> list[tuple[str, float]]:
        """BM25 the slow, obvious way: every document, every query term."""
        if k <= 0:
            return []
        tools = match_keys(flt.tools)
        with self._lock:
            entries = list(self._parts.get(tenant_id, {}).values())
        docs = {e.experience_id: Counter(terms(e.text)) for e in entries}
        n_docs = len(docs)
        avg_len = sum(sum(c.values()) for c in docs.values()) / n_docs if n_docs else 0.0
        scored = []
        for e in entries:
            if not self._matches(e, flt, tools):
                continue
            counts, length = docs[e.experience_id], sum(docs[e.experience_id].values())
            score = sum(
                term_score(counts[t], sum(1 for c in docs.values() if t in c), n_docs, length, avg_len)
                for t in dict.fromkeys(terms(text)) if counts[t]
            )
            if score > 0:
                scored.append((e.experience_id, score))
        scored.sort(key=lambda pair: -pair[1])
        return scored[:k]

    def similarities(self, tenant_id: str, vector: np.ndarray, experience_ids: Sequence[str]) -> dict[str, float]:
        q = self._checked(vector)
        with self._lock:
            part = self._parts.get(tenant_id, {})
            return {i: float(part[i].vector @ q) for i in experience_ids if i in part}

    def hybrid_search(
        self, tenant_id: str, vector: np.ndarray, text: str, flt: IndexFilter, k: int
    ) -> tuple[dict[str, float], dict[str, float]]:
        return hybrid_by_parts(self, tenant_id, vector, text, flt, k)  # in process: round trips cost nothing

    def count(self, tenant_id: str) -> int:
        with self._lock:
            return len(self._parts.get(tenant_id, {}))


class InMemoryReviewQueue:
    """Jobs keyed by (tenant, trajectory, kind); states pending, leased, done, dead."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._jobs: dict[tuple[str, str, str], dict[str, Any]] = {}
        self._served: dict[str, int] = {}  # tenant -> the turn it was last served
        self._turn = 0

    def enqueue(self, tenant_id: str, trajectory_id: str, kind: str, now: datetime) -> None:
        key = (tenant_id, trajectory_id, kind)
        with self._lock:
            job = self._jobs.get(key)
            if job is None:
                self._jobs[key] = {"state": "pending", "attempts": 0, "due": now, "error": None}
            elif job["state"] in ("done", "dead"):
                job.update(state="pending", due=now, attempts=0)  # a redrive starts a fresh set of retries
            # pending or leased: already on its way, nothing to do

    def enqueue_local(
        self, tenant_id: str, trajectory_id: str, triggers: Sequence[str], now: datetime, max_jobs: int,
        max_triggers: int = MAX_TRIGGERS,
    ) -> bool:
        if not triggers:
            return False
        with self._lock:
            local = {k: j for k, j in self._jobs.items() if k[:2] == (tenant_id, trajectory_id) and k[2].startswith("local:")}
            pending = next((j for j in local.values() if j["state"] == "pending" and j["attempts"] == 0), None)
            if pending is not None:
                merged = list(dict.fromkeys([*pending["triggers"], *triggers]))[:max_triggers]
                added = len(merged) > len(pending["triggers"])
                pending["triggers"] = merged
                return added
            if len(local) >= max_jobs:
                return False
            key = (tenant_id, trajectory_id, f"local:{triggers[0]}")
            if key in local:
                return False
            self._jobs[key] = {"state": "pending", "attempts": 0, "due": now, "error": None,
                               "triggers": list(dict.fromkeys(triggers))[:max_triggers]}
            return True

    def claim(self, now: datetime, lease_seconds: float, limit: int = 10) -> list[ReviewJob]:
        with self._lock:
            due_jobs = sorted(
                ((job["due"], key) for key, job in self._jobs.items()
                 if job["state"] in ("pending", "leased") and job["due"] <= now),
                key=lambda pair: pair[0],
            )
            by_tenant: dict[str, list[tuple[str, str, str]]] = {}
            for _, key in due_jobs:
                by_tenant.setdefault(key[0], []).append(key)
            claimed = []
            for key in in_turns(by_tenant, self._served, max(limit, 0)):
                job = self._jobs[key]
                job.update(state="leased", attempts=job["attempts"] + 1, due=now + timedelta(seconds=lease_seconds))
                claimed.append(ReviewJob(key[0], key[1], key[2], job["attempts"], tuple(job.get("triggers", ()))))
                self._turn += 1
                self._served[key[0]] = self._turn
            return claimed

    def _set(self, job: ReviewJob, state: str, error: str | None, due: datetime | None = None) -> None:
        with self._lock:
            stored = self._jobs.get((job.tenant_id, job.trajectory_id, job.kind))
            if stored is None:
                return
            stored.update(state=state, error=error)
            if due is not None:
                stored["due"] = due

    def complete(self, job: ReviewJob) -> None:
        self._set(job, "done", None)

    def retry_later(self, job: ReviewJob, error: str, now: datetime, delay_seconds: float) -> None:
        self._set(job, "pending", error, now + timedelta(seconds=delay_seconds))

    def dead(self, job: ReviewJob, error: str, now: datetime | None = None) -> None:
        self._set(job, "dead", error, now)

    def dead_jobs(self, tenant_id: str | None = None, limit: int = 100) -> list[DeadJob]:
        with self._lock:
            dead = sorted(
                (job["due"], key) for key, job in self._jobs.items()
                if job["state"] == "dead" and tenant_id in (None, key[0])
            )
            return [
                DeadJob(*key, self._jobs[key]["attempts"], self._jobs[key]["error"], due) for due, key in dead[: max(limit, 0)]
            ]

    def redrive(self, jobs: Sequence[DeadJob], now: datetime) -> int:
        with self._lock:
            redriven = 0
            for j in jobs:
                stored = self._jobs.get((j.tenant_id, j.trajectory_id, j.kind))
                if stored is not None and stored["state"] == "dead":
                    stored.update(state="pending", due=now, attempts=0)
                    redriven += 1
            return redriven

    def release_leases(self, now: datetime) -> int:
        with self._lock:
            leased = [job for job in self._jobs.values() if job["state"] == "leased"]
            for job in leased:
                job.update(state="pending", due=now)
            return len(leased)

    def adopt_earlier_jobs(self) -> int:
        return 0

    def pending(self) -> int:
        with self._lock:
            return sum(1 for job in self._jobs.values() if job["state"] in ("pending", "leased"))

    def last_error(self, tenant_id: str, trajectory_id: str, kind: str) -> str | None:
        """For tests: the error recorded by ``retry_later`` or ``dead``."""
        with self._lock:
            job = self._jobs.get((tenant_id, trajectory_id, kind))
            return None if job is None else job["error"]

    def state(self, tenant_id: str, trajectory_id: str, kind: str) -> str | None:
        """For tests: pending, leased, done, dead, or None for a job never enqueued."""
        with self._lock:
            job = self._jobs.get((tenant_id, trajectory_id, kind))
            return None if job is None else job["state"]


def fake_deps(clock: FakeClock | None = None, embedder: Any = None, **overrides: Any) -> Deps:
    """``Deps`` wired with the in-memory fakes; keyword overrides go straight to ``Deps``."""
    embedder = embedder if embedder is not None else HashEmbedder()
    kwargs: dict[str, Any] = dict(
        **policies(Settings.model_construct()),  # the defaults, whatever the environment says
        tenants=InMemoryTenantStore(),
        trajectories=InMemoryTrajectoryStore(),
        experiences=InMemoryExperienceStore(),
        index=InMemoryVectorIndex(embedder.dim),
        embedder=embedder,
        reviewer=DeterministicReviewer(),
        queue=InMemoryReviewQueue(),
        clock=clock if clock is not None else FakeClock(),
        admin_key="admin-test-key",
        recalls=InMemoryRecallLedger(),
        checkpoints=InMemoryCheckpoints(),
    )
    kwargs.update(overrides)
    deps = Deps(**kwargs)
    if "tenant_data" not in overrides and isinstance(deps.tenants, InMemoryTenantStore):
        deps.tenant_data = InMemoryTenantData(deps.tenants, deps.trajectories, deps.experiences, deps.queue,  # type: ignore[arg-type]
                                              deps.recalls)  # type: ignore[arg-type]
    if "exports" not in overrides:
        deps.exports = InMemoryExportStore()
    return deps


class InMemoryRecallLedger:
    """``ports.RecallLedger`` in dicts: served recalls and credit markers with their expiry."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._served: dict[tuple[str, str], Any] = {}
        self._credits: dict[tuple[str, str, str], datetime] = {}

    def record(self, served: Any) -> None:
        with self._lock:
            self._served.setdefault((served.tenant_id, served.recall_id), served)

    def served(self, tenant_id: str, recall_ids: Sequence[str], now: datetime) -> dict[str, Any]:
        with self._lock:
            found = (self._served.get((tenant_id, i)) for i in dict.fromkeys(recall_ids))
            return {s.recall_id: s for s in found if s is not None and s.expires_at > now}

    def attach(self, tenant_id: str, recall_id: str, trajectory_id: str) -> bool:
        with self._lock:
            served = self._served.get((tenant_id, recall_id))
            if served is None:
                return False
            if served.trajectory_id is None:
                served = self._served[(tenant_id, recall_id)] = replace(served, trajectory_id=trajectory_id)
            return bool(served.trajectory_id == trajectory_id)

    def mark_credited(self, tenant_id: str, trajectory_id: str, experience_id: str, expires_at: datetime) -> bool:
        with self._lock:
            key = (tenant_id, trajectory_id, experience_id)
            if key in self._credits:
                return False
            self._credits[key] = expires_at
            return True

    def is_credited(self, tenant_id: str, trajectory_id: str, experience_id: str) -> bool:
        with self._lock:
            return (tenant_id, trajectory_id, experience_id) in self._credits

    def purge_expired(self, now: datetime) -> int:
        with self._lock:
            gone = [k for k, s in self._served.items() if s.expires_at <= now]
            for k in gone:
                del self._served[k]
            marks = [k for k, at in self._credits.items() if at <= now]
            for k in marks:
                del self._credits[k]
            return len(gone) + len(marks)


class InMemoryCheckpoints:
    """``ports.Checkpoints`` in a dict (each state copied through JSON, as a store keeps it)."""

    def __init__(self) -> None:
        self._states: dict[str, str] = {}

    def load(self, name: str) -> dict | None:
        raw = self._states.get(name)
        return json.loads(raw) if raw is not None else None

    def save(self, name: str, state: dict) -> None:
        self._states[name] = json.dumps(state)

    def delete(self, name: str) -> None:
        self._states.pop(name, None)


class InMemoryTenantData:
    """``ports.TenantData`` over the in-memory stores it is given (any may be None: nothing of it)."""

    def __init__(self, tenants: InMemoryTenantStore, trajectories: InMemoryTrajectoryStore | None = None,
                 experiences: InMemoryExperienceStore | None = None, queue: InMemoryReviewQueue | None = None,
                 recalls: InMemoryRecallLedger | None = None) -> None:
        self.stores = (tenants, trajectories, experiences, queue, recalls)

    def tenant(self, tenant_id: str) -> Tenant | None:
        tenants = self.stores[0]
        with tenants._lock:
            found = tenants._tenants.get(tenant_id)
            return copy.deepcopy(found) if found is not None else None

    def trajectory_ids(self, tenant_id: str, after: str | None, limit: int) -> list[str]:
        trajs = self.stores[1]
        if trajs is None:
            return []
        with trajs._lock:
            ids = sorted(t for (tenant, t) in trajs._trajs if tenant == tenant_id and (after is None or t > after))
        return ids[:limit]

    def purge(self, tenant_id: str, limit: int) -> int:
        tenants, trajs, exps, queue, recalls = self.stores
        gone = 0

        def drop(mapping: dict, keys: list) -> None:
            nonlocal gone
            for key in keys[: limit - gone]:
                del mapping[key]
                gone += 1

        if exps is not None:
            with exps._lock:
                drop(exps._exps, [k for k in exps._exps if k[0] == tenant_id])
        if queue is not None:
            with queue._lock:
                drop(queue._jobs, [k for k in queue._jobs if k[0] == tenant_id])
                if gone < limit and tenant_id in queue._served:
                    drop(queue._served, [tenant_id])
        if recalls is not None:
            with recalls._lock:
                drop(recalls._served, [k for k in recalls._served if k[0] == tenant_id])
                drop(recalls._credits, [k for k in recalls._credits if k[0] == tenant_id])
        if trajs is not None:
            with trajs._lock:
                for key in [k for k in trajs._trajs if k[0] == tenant_id]:
                    if gone >= limit:
                        break
                    events = trajs._events.pop(key, [])
                    trajs._event_ids.pop(key, None)
                    del trajs._trajs[key]
                    gone += 1 + len(events)  # a trajectory and its events go together here
        with tenants._lock:
            drop(tenants._keys, [k for k, v in tenants._keys.items() if v["tenant_id"] == tenant_id])
            if gone < limit and tenant_id in tenants._tenants:
                del tenants._tenants[tenant_id]
                gone += 1
        return gone


class InMemoryExportStore:
    """``ports.ExportStore`` in a dict."""

    def __init__(self) -> None:
        self._parts: dict[str, bytes] = {}

    def write(self, key: str, data: bytes) -> None:
        self._parts[key] = bytes(data)

    def read(self, key: str) -> bytes:
        if key not in self._parts:
            raise NotFound(f"export part {key} not found")
        return self._parts[key]

    def delete_prefix(self, prefix: str) -> int:
        gone = [k for k in self._parts if k.startswith(prefix)]
        for k in gone:
            del self._parts[k]
        return len(gone)

    def location(self, key: str) -> str:
        return f"memory://{key}"
