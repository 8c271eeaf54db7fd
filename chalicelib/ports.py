"""Ports: the typed interfaces the services need. Adapters implement them.

Every backend of a port passes the same contract suite in ``tests/contract``.
Stores raise ``domain.errors.NotFound`` / ``Conflict``; they never leak SDK exceptions.
"""
from __future__ import annotations

import builtins
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Iterable, Mapping, Protocol, Sequence

if TYPE_CHECKING:  # types of annotations only: the DynamoDB stores import this module on the first request
    import numpy as np

    from .domain.models import Candidate, Event, Experience, ExperienceStatus, Tenant, Trajectory
    from .domain.review import Review
    from .domain.vectors import Vector


class Clock(Protocol):
    def now(self) -> datetime:
        """The current time, timezone-aware UTC."""


@dataclass(frozen=True)
class TenantPage:
    items: list[Tenant]
    cursor: str | None


class TenantStore(Protocol):
    def create_tenant(self, tenant: Tenant, key_hash: str) -> None:
        """Store a tenant and the hash of its first API key.

        Names are unique per deployment, compared by ``domain.tenant_names.name_key`` (case, width,
        normalization and invisible characters aside): a name already taken raises
        ``TenantNameTaken`` naming the tenant that has it, and nothing is stored. An id or key hash
        in use raises Conflict.
        """

    def tenant_for_key(self, key_hash: str) -> str | None:
        """The tenant id a key hash belongs to, or None for an unknown or revoked key."""

    def add_key(self, tenant_id: str, key_hash: str, now: datetime) -> None:
        """Another key for the tenant (rotation). Raises NotFound for an unknown tenant."""

    def revoke_keys(self, tenant_id: str, keep: str | None = None) -> int:
        """Revoke every key of the tenant except ``keep``; returns how many were revoked."""

    def get_tenant(self, tenant_id: str) -> Tenant:
        """The tenant, with its ``event_retention_days``. Raises NotFound."""

    def set_event_retention(self, tenant_id: str, days: int | None) -> Tenant:
        """Set (None: clear, back to the deployment's default) the days the tenant's trajectories
        started from now on keep their events; returns the tenant as stored. Raises NotFound."""

    def list_tenants(self) -> list[Tenant]:
        """Every tenant, oldest first: for tools and tests over a handful; the API lists tenants a
        page at a time (``list_tenants_page``)."""

    def list_tenants_page(self, limit: int, cursor: str | None = None) -> TenantPage:
        """At most ``limit`` tenants, oldest first (then by id), following the page ``cursor``
        came with (None: from the first); the page's ``cursor`` is None after the last page.
        Reads that page only, whatever the number of tenants. A cursor the store did not make
        raises InvalidInput."""


class Meter(Protocol):
    """Where a deployment's usage and operational counts go (``domain.usage`` names them)."""

    def record(self, tenant_id: str | None, counts: Mapping[str, float]) -> None:
        """Add ``counts`` (name -> amount) for the tenant (None: counts of no tenant). Never
        raises: a count that cannot be written is lost, the work it counts is not."""


class RateLimiter(Protocol):
    """One token bucket per tenant (``domain.ratelimit``), its rate and burst fixed at construction."""

    def acquire(self, tenant_id: str, now: datetime, cost: int = 1) -> float:
        """Take a request of ``cost`` tokens (``domain.ratelimit.charged``) from the tenant's
        bucket at ``now``.

        Returns 0.0 when the request is admitted; otherwise the seconds (> 0) until it would be,
        and the refused request takes nothing. Tenants never share a bucket. A policy with a rate
        or burst of 0 admits everything.
        """


@dataclass(frozen=True)
class AppendResult:
    accepted: int
    duplicates: int
    accepted_ids: tuple[str, ...] = ()  # the event ids newly stored, in order


@dataclass(frozen=True)
class TrajectorySummary:
    """A trajectory read without reading all its events: what advise holds a call against.

    ``tools_ok``: every tool that had a call that worked, over the whole trajectory, kept by the
    store as events are appended; ``recent``: the last events (at most the ``tail`` asked for),
    oldest first; ``event_count``: how many events the trajectory holds."""

    tools_ok: frozenset[str]
    recent: tuple[Event, ...]
    event_count: int


def tools_that_worked(events: Iterable[Event]) -> set[str]:
    """The tools of the calls among ``events`` that worked: what an append adds to ``tools_ok``."""
    return {e.tool for e in events if e.succeeded and e.tool}


class TrajectoryStore(Protocol):
    def create(self, traj: Trajectory) -> tuple[Trajectory, bool]:
        """Store a new trajectory; if (tenant, id) exists, return the stored one and False."""

    def get(self, tenant_id: str, trajectory_id: str) -> Trajectory:
        """Raises NotFound, also for another tenant's id."""

    def append_events(
        self, tenant_id: str, trajectory_id: str, events: Sequence[Event], now: datetime, max_events: int | None = None
    ) -> AppendResult:
        """Append in order, atomically. An event_id already stored counts as a duplicate.

        Raises NotFound, or Conflict once the trajectory is finalized, or Conflict (storing none
        of the batch) when its new events would take the trajectory past ``max_events``.
        """

    def events(self, tenant_id: str, trajectory_id: str) -> list[Event]:
        """All events in arrival order (``seq`` ascending)."""

    def events_page(self, tenant_id: str, trajectory_id: str, after_seq: int, limit: int) -> list[Event]:
        """The events whose ``seq`` follows ``after_seq``, in order, at most ``limit``: one page,
        without reading the others. Unknown trajectories have none."""

    def events_around(self, tenant_id: str, trajectory_id: str, event_ids: Sequence[str], before: int) -> list[Event]:
        """The windows of the listed events: each one and the ``before`` events preceding it, each
        event once, in ``seq`` order. Unknown ids are ignored. Reads only those windows."""

    def trajectory_summary(self, tenant_id: str, trajectory_id: str, tail: int) -> TrajectorySummary:
        """The tools that worked over the whole trajectory and its last ``tail`` events, without
        reading the others. Raises NotFound, also for another tenant's id."""

    def finalize(self, tenant_id: str, trajectory_id: str, outcome: str, feedback: str | None, now: datetime) -> Trajectory:
        """Open -> finalized. Raises NotFound, or Conflict if it is not open."""

    def save_review(
        self,
        tenant_id: str,
        trajectory_id: str,
        status: str,
        experience_ids: list[str],
        review: dict,
        now: datetime,
    ) -> Trajectory:
        """Record the outcome of a review (reviewed or review_failed)."""

    def add_local_review(
        self, tenant_id: str, trajectory_id: str, experience_ids: list[str], summary: dict, now: datetime
    ) -> Trajectory:
        """Append a local review's summary to ``review["local"]`` and add its experience ids,
        atomically, leaving the status as it is. Raises NotFound."""

    def purge_expired_events(self, now: datetime, limit: int) -> int:
        """Delete at most ``limit`` events of trajectories whose ``events_expire_at`` is at or
        before ``now``; returns how many were deleted (0: none left to delete now). The
        trajectories stay. A store whose database expires items by itself (DynamoDB's TTL on each
        event's ``expires``) may answer 0 and leave it the work; readers go by
        ``Trajectory.events_expired``, never by what a store still holds."""

    def finalized_unreviewed(self, limit: int = 1000) -> list[tuple[str, str]]:
        """(tenant_id, trajectory_id) of finalized trajectories: the outbox swept at start-up."""

    def count_by_status(self, tenant_id: str) -> dict[str, int]:
        """How many trajectories of the tenant are in each status (absent statuses omitted)."""

    def statuses_page(self, tenant_id: str, limit: int, cursor: str | None = None) -> tuple[dict[str, int], str | None]:
        """How many of the tenant's next ``limit`` trajectories (by id, after ``cursor``; None: from
        the first) are in each status, and the next page's cursor (None after the last). Reads
        that page only: a count of a tenant of any size is a pass of bounded pages (the stats
        job). A cursor the store did not make raises InvalidInput."""


@dataclass(frozen=True)
class Page:
    items: list[Experience]
    cursor: str | None


class ExperienceStore(Protocol):
    """The source of truth for every experience, archived and forgotten ones included."""

    def put(self, exp: Experience) -> None:
        """Insert or replace by (tenant_id, experience_id), whatever is stored, keeping
        ``exp.revision``: for seeding and imports only. A lesson that changes is written by
        ``put_if`` (a blind replace undid an acknowledged forget with the copy read before it)."""

    def put_all(self, exps: Sequence[Experience]) -> None:
        """``put`` of each, atomically: all of them are stored or none (at most 100)."""

    def put_if(self, exp: Experience) -> Experience | None:
        """Compare-and-set: store ``exp`` only if the stored copy's revision is still
        ``exp.revision``, the one it was read with (0: none is stored, or one stored before
        revisions). The copy stored, returned, has ``revision + 1``. None when another write came
        first (nothing is written): the writer reads again and applies its change again."""

    def put_all_if(self, exps: Sequence[Experience]) -> builtins.list[Experience] | None:
        """``put_if`` of each, atomically (at most 100): all of them are stored, or none and None
        when any one's revision moved."""

    def get(self, tenant_id: str, experience_id: str) -> Experience:
        """Raises NotFound, also for another tenant's id."""

    def get_many(self, tenant_id: str, ids: Sequence[str]) -> dict[str, Experience]:
        """The ones that exist in this tenant, by id."""

    def recall_candidates(self, tenant_id: str, ids: Sequence[str]) -> dict[str, Candidate]:
        """``Candidate.of`` each of the ones that exist in this tenant, by id: what recall ranks
        them by, without the rest of each lesson unless the store read it anyway (``whole``)."""

    def list(
        self,
        tenant_id: str,
        *,
        agent_id: str | None = None,
        status: ExperienceStatus | None = None,
        limit: int = 50,
        cursor: str | None = None,
    ) -> Page:
        """Newest first; ``cursor`` is opaque and comes from the previous page."""

    def find_active_by_fingerprint(
        self, tenant_id: str, fingerprint: str, agent_id: str | None, user_id: str | None
    ) -> Experience | None:
        """The active experience with this lesson fingerprint in exactly this scope."""

    def find_active_by_situation(
        self, tenant_id: str, situation_key: str, agent_id: str | None, user_id: str | None
    ) -> builtins.list[Experience]:  # ``list`` names a method here
        """Active experiences with this situation key in exactly this scope (the candidates a new
        lesson about the same situation may contradict)."""

    def find_forgotten_by_fingerprint(
        self, tenant_id: str, fingerprint: str, agent_id: str | None, user_id: str | None
    ) -> Experience | None:
        """A forgotten experience (a tombstone) with this lesson fingerprint in exactly this scope:
        a review that would learn it again adds its support to the tombstone instead."""

    def scan_active(self, limit: int = 500, cursor: str | None = None) -> Page:
        """Active experiences of every tenant, for maintenance; resumable with ``cursor``."""

    def archive_if_unchanged(self, read: Experience, archived: Experience) -> bool:
        """Replace ``read`` by ``archived`` (the same lesson, archived) only if the stored lesson is
        still active and unchanged since ``read`` was read; returns whether it was written. The one
        write decay makes: a lesson that feedback, a merge or a forget changed in between is left
        as that write made it."""

    def count_by_status(self, tenant_id: str) -> dict[str, int]:
        """How many experiences of the tenant are in each status (absent statuses omitted)."""


class Checkpoints(Protocol):
    """Named progress of maintenance work that outlasts one invocation (decay's pass over every
    tenant, admin jobs): small JSON objects, read at the start of a run and written at its end."""

    def load(self, name: str) -> dict | None:
        """The state last saved under ``name``, or None."""

    def save(self, name: str, state: dict) -> None:
        """Replace the state kept under ``name`` (a JSON object)."""

    def delete(self, name: str) -> None:
        """Forget the state kept under ``name`` (nothing happens when there is none)."""


class TenantData(Protocol):
    """What deleting and exporting a whole tenant needs of the stores, beside their own ports:
    the tenant's record, its trajectories by id, and a bounded, resumable purge of everything the
    tenant owns in every table (``services.tenant_jobs``)."""

    def tenant(self, tenant_id: str) -> Tenant | None:
        """The tenant's record (no key, no key hash), or None once it is gone or never was."""

    def trajectory_ids(self, tenant_id: str, after: str | None, limit: int) -> builtins.list[str]:
        """The tenant's trajectory ids in ascending order, those after ``after`` (from the first
        without it), at most ``limit``: one page, without reading the others."""

    def purge(self, tenant_id: str, limit: int) -> int:
        """Delete up to ``limit`` items the tenant owns (events, trajectories, lessons, review jobs
        and turns, served recalls and credit markers, the rate-limit bucket, API keys), the
        tenant's record last, once nothing else of it is left; returns how many went. 0: nothing
        of the tenant is left (its name may be taken again). Idempotent and resumable: each call
        goes on from what the last one left; another tenant's items are never touched."""


class ExportStore(Protocol):
    """Where tenant exports are written: named parts (JSON Lines) under a folder per export."""

    def write(self, key: str, data: bytes) -> None:
        """Store ``data`` under ``key`` (``<tenant>/<export>/part-00001.jsonl``), replacing it."""

    def read(self, key: str) -> bytes:
        """The part stored under ``key``; NotFound when there is none."""

    def delete_prefix(self, prefix: str) -> int:
        """Delete every part whose key starts with ``prefix`` (a tenant's folder); returns how many."""

    def location(self, key: str) -> str:
        """Where an operator finds the part outside the API (a path, or an s3:// URL)."""

class WorkQueue(Protocol):
    """Where maintenance fans its work out (decay's per-tenant messages): small JSON objects, each
    delivered at least once to a consumer (the cloud's decay worker), in no promised order."""

    def send(self, messages: Sequence[dict], delay_seconds: int = 0) -> None:
        """Enqueue every message (each a JSON object), visible to consumers ``delay_seconds`` later;
        raises when any of them could not be enqueued (a retry may enqueue the others twice)."""


@dataclass(frozen=True)
class TokenVectors:
    """The token vectors late interaction reads for a lesson (``domain.interaction``): one unit row
    per content token, made by the pass that embedded its text, and ``key``, the
    ``domain.interaction.text_key`` of that text (a lesson whose text changed is not read with them)."""

    key: str
    vectors: "np.ndarray"


@dataclass(frozen=True)
class IndexEntry:
    experience_id: str
    vector: "np.ndarray"
    agent_id: str | None = None
    user_id: str | None = None
    tools: tuple[str, ...] = ()
    task_type: str | None = None
    tags: tuple[str, ...] = ()
    text: str = ""  # what lexical search matches
    intent: str | None = None  # last, so positional calls written before it still fit
    # its token vectors, kept with the entry by an index that keeps them (``TokenVectorIndex``)
    late: TokenVectors | None = None


@dataclass(frozen=True)
class IndexFilter:
    """Scope rules of recall: a reader sees its own agent/user and the shared (None) ones.

    ``tools``: when given, entries that name tools must share at least one with it.
    ``task_type``: when given, entries with another task type are left out (none: any).
    ``intent``: the same rule for intents, compared case-insensitively and whitespace-trimmed.
    ``all_scopes``: the scope rules are lifted (``agent_id`` and ``user_id`` are not read): every
    agent's and user's entries of the tenant pass. Only recall's count of the lessons its scope hid
    (``hidden_by_scope``) searches this way; nothing it finds is served.
    """

    agent_id: str | None = None
    user_id: str | None = None
    tools: tuple[str, ...] = field(default_factory=tuple)
    task_type: str | None = None  # when given, entries of another task type are left out
    intent: str | None = None  # when given, entries of another intent are left out
    all_scopes: bool = False


class VectorIndex(Protocol):
    """k-NN over active experiences, partitioned by tenant. Higher score = more similar (cosine)."""

    def upsert(self, tenant_id: str, entries: Sequence[IndexEntry]) -> None: ...

    def delete(self, tenant_id: str, experience_ids: Sequence[str]) -> None:
        """Ids not in the index are ignored."""

    def search(self, tenant_id: str, vector: "np.ndarray", flt: IndexFilter, k: int) -> list[tuple[str, float]]:
        """At most k (id, cosine) pairs matching the filter, best first."""

    def lexical_search(self, tenant_id: str, text: str, flt: IndexFilter, k: int) -> list[tuple[str, float]]:
        """At most k (id, BM25 score > 0) pairs matching the filter, best first, over entry texts
        tokenized by ``domain.lexical.terms``."""

    def similarities(self, tenant_id: str, vector: "np.ndarray", experience_ids: Sequence[str]) -> dict[str, float]:
        """Cosine similarity of the vector to each listed entry that is in the index."""

    def hybrid_search(
        self, tenant_id: str, vector: "np.ndarray", text: str, flt: IndexFilter, k: int
    ) -> tuple[dict[str, float], dict[str, float]]:
        """Both searches of recall at once: (cosine of every candidate, BM25 score of the lexical hits).

        The candidates are the k-NN hits and the lexical hits, with the same values as
        ``hybrid_by_parts``, which defines the result: a backend may only answer it in fewer
        round trips.
        """

    def count(self, tenant_id: str) -> int: ...

    def purge_tenant(self, tenant_id: str, limit: int) -> int:
        """Remove up to ``limit`` entries of the tenant (with what the index keeps beside them);
        returns how many went. 0: none of the tenant is left. Another tenant's are never touched.
        Deleting a tenant calls it until it answers 0."""


def hybrid_by_parts(
    index: VectorIndex, tenant_id: str, vector: "np.ndarray", text: str, flt: IndexFilter, k: int
) -> tuple[dict[str, float], dict[str, float]]:
    """``VectorIndex.hybrid_search`` from the three other searches: k-NN, BM25, then the cosine of
    the lexical hits the k-NN did not return (one that gets none stays out of the first dict)."""
    semantic = dict(index.search(tenant_id, vector, flt, k))
    lexical = dict(index.lexical_search(tenant_id, text, flt, k))
    missing = [i for i in lexical if i not in semantic]
    if missing:
        semantic.update(index.similarities(tenant_id, vector, missing))
    return semantic, lexical


class TokenVectorIndex(Protocol):
    """A ``VectorIndex`` that keeps each entry's ``IndexEntry.late`` with it: written in the same
    write as the entry, replaced when the entry is written again (dropped when it comes without
    them), dropped when the entry is deleted."""

    def token_vectors(self, tenant_id: str, keys: Mapping[str, str]) -> dict[str, "np.ndarray"]:
        """Per listed experience id of the tenant, the token vectors kept with its entry (float32
        unit rows; a compact copy may differ from what was written by about 1e-2 per component),
        if they were made from the text of the given ``TokenVectors.key``; ids with none kept, or
        with another text's, are left out."""

    def token_vectors_of_texts(self, tenant_id: str, keys: Iterable[str]) -> dict[str, "np.ndarray"]:
        """Per listed ``TokenVectors.key``, the token vectors kept with any entry of the tenant that
        were made from that text (a lesson learned again, in another scope, has the same text);
        keys no entry of the tenant has are left out. Never another tenant's."""


@dataclass(frozen=True)
class ServedRecall:
    """What one recall or advise answer served, kept until ``expires_at`` for the review that
    credits its lessons (``domain.credit``)."""

    tenant_id: str
    recall_id: str
    experience_ids: tuple[str, ...]
    created_at: datetime
    expires_at: datetime
    kind: str = "recall"  # recall | advise
    tool: str | None = None  # the tool an advise was about
    # the scope it served: only a trajectory of this agent and user (when named) earns its credit
    agent_id: str | None = None
    user_id: str | None = None
    # the one trajectory it credits: the advise's own, else the first that attached it (``attach``)
    trajectory_id: str | None = None


class RecallLedger(Protocol):
    """Served recalls and credit markers, per tenant, each with an expiry."""

    def record(self, served: ServedRecall) -> None:
        """Keep what a recall served, durably and visible to every process before it returns
        (the review that credits it may run in another one). Recall ids are unique; a repeat of
        one changes nothing."""

    def served(self, tenant_id: str, recall_ids: Sequence[str], now: datetime) -> dict[str, ServedRecall]:
        """The listed recalls of this tenant that have not expired at ``now``, by id (another
        tenant's, unknown and expired ids are left out)."""

    def attach(self, tenant_id: str, recall_id: str, trajectory_id: str) -> bool:
        """Bind the recall to the trajectory unless another one holds it: the first trajectory to
        attach an id is the only one it credits (one id replayed in 20 runs credited 20 times).
        True if it is bound to this trajectory (now, or already); False if to another, or if the
        recall is unknown."""

    def mark_credited(self, tenant_id: str, trajectory_id: str, experience_id: str, expires_at: datetime) -> bool:
        """Mark the lesson credited for the trajectory; True only for the call that marked it."""

    def is_credited(self, tenant_id: str, trajectory_id: str, experience_id: str) -> bool:
        """Whether the lesson was credited for the trajectory (marker not yet expired or purged)."""

    def purge_expired(self, now: datetime) -> int:
        """Drop what expired before ``now``; returns how many (a store with its own TTL may
        answer 0 and let it do the work)."""


class Embedder(Protocol):
    dim: int
    # the cosine of two unrelated texts under this model (0 for most; e5's is about 0.7): cosines
    # are rebased on it wherever they meet a fixed scale (``domain.vectors.rebased``)
    similarity_floor: float

    def embed(self, texts: Sequence[str], query: bool = False) -> "np.ndarray | Sequence[Vector]":
        """One L2-normalised row per text, each of ``dim`` floats: a float32 array (len(texts), dim),
        or a list of ``domain.vectors.Vector`` where numpy is not installed (the Lambda functions).
        Callers use only ``len``, indexing, ``sum``, ``@`` and ``/`` on them. ``query``: the texts
        are searches (a recall's situation), not documents; models trained with both sides
        prefixed embed them differently, the others ignore it."""


class TokenEmbedder(Embedder, Protocol):
    """An embedder that also gives the vectors of a text's content tokens before pooling (late
    interaction, ``domain.interaction``): unit rows, stopwords and punctuation out.

    Capabilities are stated where the adapters are chosen (``services.deps.Deps.token_embedder``,
    ``token_pass``, ``token_index``), never probed for."""

    def token_vectors(self, texts: Sequence[str]) -> "list[np.ndarray]":
        """Per text, its content tokens' vectors (may be cached by text)."""


class TokenPassEmbedder(TokenEmbedder, Protocol):
    """A ``TokenEmbedder`` that gives the token vectors from the pass that embeds the texts: a
    query's come with its vector, a lesson's are made as it is indexed (and kept by a
    ``TokenVectorIndex``)."""

    def embed_with_tokens(self, texts: Sequence[str], query: bool = False) -> "tuple[np.ndarray, list[np.ndarray]]":
        """``embed`` and ``token_vectors`` of the texts from one pass of the model."""


class Reviewer(Protocol):
    def review(self, traj: Trajectory, events: Sequence[Event], kind: str) -> Review:
        """The lessons of ``events`` (``kind``: the ``ReviewKind.scope``, ``full`` or ``local``)."""


class ReviewNotifier(Protocol):
    def notify(self) -> None:
        """A review job was queued: wake whoever runs reviews. Never blocks, never raises."""


@dataclass(frozen=True)
class ReviewJob:
    tenant_id: str
    trajectory_id: str
    kind: str
    attempts: int
    triggers: tuple[str, ...] = ()  # of a local review: the events whose windows it reviews


@dataclass(frozen=True)
class DeadJob:
    """A review job given up on after its last attempt, kept for an operator to see and redrive."""

    tenant_id: str
    trajectory_id: str
    kind: str
    attempts: int
    error: str | None
    failed_at: datetime | None  # when it was given up (the end of its last lease if not told)


MAX_TRIGGERS = 32  # events whose windows one local review reviews


class ReviewQueue(Protocol):
    """Job kinds are the text of a ``domain.models.ReviewKind``; the queue only stores them."""

    def enqueue(self, tenant_id: str, trajectory_id: str, kind: str, now: datetime) -> None:
        """Idempotent per (tenant, trajectory, kind) while the job is pending."""

    def enqueue_local(
        self, tenant_id: str, trajectory_id: str, triggers: Sequence[str], now: datetime, max_jobs: int,
        max_triggers: int = MAX_TRIGGERS,
    ) -> bool:
        """Queue a local review of the windows of ``triggers`` (event ids), coalesced: while a local
        job of the trajectory is pending (not claimed), the triggers join it (up to
        ``max_triggers`` in a job); otherwise a new job ``local:<first trigger>`` is queued, unless
        the trajectory already had ``max_jobs`` local jobs. Returns whether anything was queued."""

    def claim(self, now: datetime, lease_seconds: float, limit: int = 10) -> list[ReviewJob]:
        """Lease due jobs; a job whose lease runs out (crashed worker) is claimed again.

        Fair across tenants: the tenants with due jobs take turns, least recently served first,
        each tenant's oldest due job first; a tenant's backlog never holds back another's job
        by more than one job per other tenant."""

    def complete(self, job: ReviewJob) -> None: ...

    def retry_later(self, job: ReviewJob, error: str, now: datetime, delay_seconds: float) -> None: ...

    def dead(self, job: ReviewJob, error: str, now: datetime | None = None) -> None:
        """Give up on the job at ``now``; it is kept, with the error, for ``dead_jobs`` and ``redrive``."""

    def dead_jobs(self, tenant_id: str | None = None, limit: int = 100) -> list[DeadJob]:
        """Jobs given up on, of one tenant or of all, the oldest failure first."""

    def redrive(self, jobs: Sequence[DeadJob], now: datetime) -> int:
        """Make each listed job that is still dead pending, due at ``now``, with a fresh set of
        attempts. A listed job in any other state (pending, leased, done, unknown) is left alone.
        Returns how many were sent round again."""

    def pending(self) -> int: ...

    def release_leases(self, now: datetime) -> int:
        """Make leased jobs due now. Only for the start-up of the single consumer of a local queue,
        whose previous process died holding them; returns how many were released."""

    def adopt_earlier_jobs(self) -> int:
        """Move jobs that an earlier version of the storage layout holds where ``claim`` does not
        read to where it does, keeping their due time; returns how many. The outbox sweep runs it
        (every minute in the cloud, at start-up locally), so claims never pay for the old layout."""
