"""The experience index on OpenSearch: k-NN with in-query filters, and BM25, in one index.

Implements ``ports.VectorIndex`` for Amazon OpenSearch Service (faiss or lucene), Amazon OpenSearch
Serverless (faiss, ``serverless=True``) and a local node (lucene). Request bodies come from
``opensearch_queries``; this module does the I/O and nothing else.

    IndexUnavailable(RuntimeError)   every failure of the client or the cluster, raised ``from`` the
                                     client's exception (``opensearch_http``: connection, timeout,
                                     HTTP status, serialization), or a failed bulk item

Routing: every request about a tenant's documents carries ``routing=<tenant_id>`` from one
function (``queries.routing``; not on Serverless, nor with ``IndexSpec.routing`` off), so a
tenant's documents sit on one shard, its searches and counts visit that shard alone, and its
deletes find what its writes placed. ``ensure_index`` refuses an index of several shards that was
created without routing (its documents were placed by id, where a routed delete would miss them).

Consistency: on a managed domain or a local node a search right after a write sees it. A small
write (at most ``SMALL_WRITE`` documents: a review's lessons, a manual write, a forget) refreshes
the shards it touched at once (``refresh=true``, a few ms); a larger one (a reindex) waits for the
index's periodic refresh (``refresh="wait_for"``, up to ``refresh_interval``, 1 s by default),
which a review would otherwise pay on every lesson it stores. The price of the immediate refresh is
one small segment per small write and shard, merged away by the index's merge policy: at the
review function's reserved concurrency (8 invocations, 0.2-1 review/s each with an LLM) up to
about 8 refreshes a second instead of at most one, each costing the node a searcher reopen and,
later, a merge (for k-NN segments, re-inserting their few vectors into the merged graph). A
deployment that writes far faster than that passes ``refresh="wait_for"``. Serverless has no refresh and makes a
write searchable some seconds later; it also chooses document ids itself, so a write first looks
up the documents it replaces -- a write repeated within that window can leave a duplicate, which
searches drop, ``count`` includes, and the next write or delete of the id removes. The experience
store stays the source of truth (``services.maintenance.reindex_tenant`` rewrites from it).

The client (``opensearch_http.OpenSearchHttp``, JSON over urllib3) is built outside
(``build_client``, called by the composition root) and passed in.
"""
from __future__ import annotations

import logging
import math
import threading
from contextlib import contextmanager
from typing import TYPE_CHECKING, Iterator, Sequence
from urllib.parse import urlsplit

from chalicelib.adapters.opensearch import queries as q
from chalicelib.adapters.opensearch.http import NotFoundError, OpenSearchError, OpenSearchHttp, RequestError, SigV4Signer
from chalicelib.domain.errors import Unavailable
from chalicelib.ports import IndexEntry, IndexFilter

if TYPE_CHECKING:
    import numpy as np

    # a numpy array (embedded embedders) or a domain.vectors.Vector (the Lambda's): a float sequence
    Vector = Sequence[float] | np.ndarray


log = logging.getLogger(__name__)

SMALL_WRITE = 16  # documents of a write refreshed at once under the default policy


class IndexUnavailable(Unavailable, RuntimeError):
    """The OpenSearch index could not serve the request; ``__cause__`` holds the client's error."""


def build_client(
    endpoint: str,
    *,
    region: str | None = None,
    service: str = "es",
    timeout: float = 10.0,
    pool_maxsize: int = 10,
    credentials=None,
) -> OpenSearchHttp:
    """The index's client for ``endpoint`` (a URL).

    ``service``: ``es`` for an Amazon OpenSearch Service domain, ``aoss`` for Serverless (both
    signed with SigV4 from ``credentials``, default: botocore's credential chain, so a Lambda role
    works), or ``none`` for an unsigned node such as the local one.
    """
    url = urlsplit(endpoint if "://" in endpoint else f"https://{endpoint}")
    if not url.hostname:
        raise ValueError(f"not an endpoint URL: {endpoint!r}")
    tls = url.scheme == "https"
    base = f"{url.scheme}://{url.hostname}:{url.port or (443 if tls else 80)}"
    ca_certs = _ca_bundle() if tls else None
    if service == "none":
        return OpenSearchHttp(base, timeout=timeout, pool_maxsize=pool_maxsize, ca_certs=ca_certs)
    if service not in ("es", "aoss"):
        raise ValueError(f"service must be es, aoss or none, not {service!r}")
    if not region:
        raise ValueError("SigV4 needs the region")
    if credentials is None:
        import botocore.session

        credentials = botocore.session.get_session().get_credentials()
        if credentials is None:
            raise ValueError("no AWS credentials found to sign OpenSearch requests")
    return OpenSearchHttp(base, timeout=timeout, pool_maxsize=pool_maxsize, ca_certs=ca_certs,
                          signer=SigV4Signer(credentials, region, service))


def _ca_bundle() -> str:
    """The CA bundle botocore checks AWS endpoints with (certifi's when installed, else its own)."""
    from botocore.httpsession import get_cert_path

    return get_cert_path(True)


@contextmanager
def _boundary(action: str) -> Iterator[None]:
    try:
        yield
    except OpenSearchError as exc:
        raise IndexUnavailable(f"OpenSearch {action} failed: {exc}") from exc


class OpenSearchVectorIndex:
    """Implements ``ports.VectorIndex`` over one OpenSearch index shared by every tenant.

    Every query filters by tenant; every delete is by (tenant, experience id). The index is
    created on first use when missing (concurrent creators are fine), unless ``manage_index`` is
    False: then it was made beforehand (the cloud stack's deploy-time custom resource calls
    ``ensure_index``), and the adapter only reads and writes documents, every request under the
    index's own path (``/<index>/_search``, ``/<index>/_bulk``...), which is all the functions'
    roles may reach.
    """

    def __init__(
        self,
        client: OpenSearchHttp,
        spec: q.IndexSpec,
        *,
        refresh: bool | str | None = None,
        bulk_chunk: int = 500,
        node_cosines: bool | None = None,
        manage_index: bool = True,
    ) -> None:
        self.client = client
        self.spec = spec
        self.dim = spec.dim
        # Serverless answers a refresh parameter with an error. None: the size decides (module doc)
        self._serverless = spec.serverless
        self._refresh = refresh
        self._bulk_chunk = bulk_chunk
        # cosines by a Painless script field (one round trip per hybrid search); default: everywhere
        # but Serverless, where it was never run. False: the k-NN by ids, a second request.
        self._node_cosines = (not spec.serverless) if node_cosines is None else node_cosines
        self._ready = not manage_index
        self._lock = threading.Lock()

    # --- index lifecycle ---------------------------------------------------------------------------

    def ensure_index(self, force: bool = False) -> None:
        """Create the index if it is missing; check the vector dimension of an existing one and
        add the fields it lacks (an index created by an earlier version). Once per instance, or
        again with ``force``; never with ``manage_index=False`` unless forced."""
        if self._ready and not force:
            return
        with self._lock:
            if self._ready and not force:
                return
            name = self.spec.name
            with _boundary(f"creating index {name}"):
                # one request on a cold start: GET <index> answers its mappings and settings both
                try:
                    described = self.client.indices.get(index=name)
                except NotFoundError:
                    try:
                        self.client.indices.create(index=name, body=q.index_body(self.spec))
                    except RequestError as exc:
                        if exc.error != "resource_already_exists_exception":
                            raise
                    described = self.client.indices.get(index=name)
            drift = q.similarity_drift(described, name, self.spec)
            if drift:
                # not an error: recall still works, ranked by the index's own parameters
                log.warning("index %s ranks BM25 with %s, the settings say %s: a new index (or a reindex into "
                            "one) takes the settings", name, {k: v[0] for k, v in drift.items()},
                            {k: v[1] for k, v in drift.items()})
            dim = q.mapped_dimension(described, name)
            if dim is not None and dim != self.spec.dim:
                raise ValueError(f"index {name} holds {dim}-dimensional vectors, not {self.spec.dim}")
            self._check_shards(described)
            missing = q.missing_properties(described, name, self.spec)
            if missing:
                with _boundary(f"adding {', '.join(missing)} to index {name}"):
                    self.client.indices.put_mapping(index=name, body={"properties": missing})
            self._ready = True

    def _check_shards(self, described: dict) -> None:
        """An index keeps the shard count it was created with; one of several shards whose
        documents were placed by id cannot be read by tenant routing."""
        if self.spec.serverless:
            return
        name = self.spec.name
        shards = q.shard_count(described, name)
        if shards is not None and self.spec.shards is not None and shards != self.spec.shards:
            log.warning("index %s has %d primary shards, the settings say %d: the count is fixed at creation, a new "
                        "index and a reindex into it take the settings", name, shards, self.spec.shards)
        if q.routed(self.spec) and (shards or 1) > 1 and not q.routing_required(described, name):
            raise ValueError(
                f"index {name} has {shards} shards and was created without tenant routing: its documents are placed "
                "by id, where a routed delete would miss them; set opensearch_routing=none until it is reindexed "
                "into a routed index")

    # --- helpers -----------------------------------------------------------------------------------

    def _routing(self, tenant_id: str) -> dict:
        """The routing parameter of every request about ``tenant_id``'s documents (``q.routing``)."""
        route = q.routing(self.spec, tenant_id)
        return {} if route is None else {"routing": route}

    def _unit(self, vector: Vector) -> list[float] | None:
        """The unit vector as floats, or None for a zero vector (no direction, no cosine).
        Pure Python: the Lambda package has no numpy (a numpy array is accepted too)."""
        vec = [float(x) for x in (vector.tolist() if hasattr(vector, "tolist") else vector)]
        if len(vec) != self.dim:
            raise ValueError(f"vector has {len(vec)} dimensions, the index {self.dim}")
        norm = math.sqrt(math.fsum(x * x for x in vec))
        return [x / norm for x in vec] if norm > 0 else None

    def _search(self, tenant_id: str, body: dict, action: str) -> dict:
        self.ensure_index()
        with _boundary(action):
            return self.client.search(index=self.spec.name, body=body, **self._routing(tenant_id))

    def _msearch(self, tenant_id: str, bodies: list[dict], action: str) -> list[dict]:
        """One request for several searches of one tenant; a search that failed fails them all."""
        self.ensure_index()
        with _boundary(action):
            lines = q.msearch_lines(bodies, q.routing(self.spec, tenant_id))
            response = self.client.msearch(index=self.spec.name, body=lines)
        answers = response["responses"]
        for answer in answers:
            if answer.get("error"):
                raise IndexUnavailable(f"OpenSearch {action} failed: {answer['error']}")
        return answers

    def _refresh_param(self, documents: int) -> dict:
        if self._serverless:
            return {}
        if self._refresh is None:
            return {"refresh": "true" if documents <= SMALL_WRITE else "wait_for"}
        return {"refresh": self._refresh}

    def _bulk(self, lines: list[dict], action: str, documents: int) -> None:
        if not lines:
            return
        params = self._refresh_param(documents)
        with _boundary(action):
            response = self.client.bulk(body=lines, index=self.spec.name, **params)
        if response.get("errors"):
            for item in response["items"]:
                ((op, result),) = item.items()
                if op == "delete" and result.get("status") == 404:
                    continue  # deleting what is not there is the port's no-op
                if result.get("error"):
                    raise IndexUnavailable(f"OpenSearch {action} failed for {result.get('_id')}: {result['error']}")

    def _lookup(self, tenant_id: str, experience_ids: Sequence[str]) -> list[str]:
        """Serverless: the ``_id`` of every document of these entries (duplicates included)."""
        response = self._search(tenant_id, q.lookup_query(tenant_id, experience_ids), "lookup")
        return [h["_id"] for h in response["hits"]["hits"]]

    def _chunks(self, items: Sequence) -> Iterator[Sequence]:
        for start in range(0, len(items), self._bulk_chunk):
            yield items[start : start + self._bulk_chunk]

    def _ranked(self, response: dict, k: int, to_cosine: bool) -> list[tuple[str, float]]:
        out: dict[str, float] = {}
        for experience_id, score in q.hit_ids(response):
            if experience_id not in out:  # a Serverless duplicate ranks below its first copy
                out[experience_id] = q.cosine_from_score(score, self.spec.space) if to_cosine else score
        return list(out.items())[:k]

    # --- the port ----------------------------------------------------------------------------------

    def upsert(self, tenant_id: str, entries: Sequence[IndexEntry]) -> None:
        if not entries:
            return
        latest = {e.experience_id: e for e in entries}  # the last entry of an id wins, as in order
        docs = [q.document(tenant_id, e, self._unit(e.vector), self.spec.bm25.stemmer) for e in latest.values()]
        self.ensure_index()
        route = q.routing(self.spec, tenant_id)
        for chunk in self._chunks(docs):
            lines: list[dict] = []
            if self.spec.serverless:
                stale = self._lookup(tenant_id, [d["experience_id"] for d in chunk])
                lines += q.bulk_delete_lines(self.spec.name, stale, route)
            lines += q.bulk_index_lines(self.spec.name, tenant_id, chunk, self.spec.serverless, route)
            self._bulk(lines, "upsert", len(docs))  # the write's size, not the chunk's, picks the refresh

    def delete(self, tenant_id: str, experience_ids: Sequence[str]) -> None:
        ids = list(dict.fromkeys(experience_ids))
        if not ids:
            return
        self.ensure_index()
        for chunk in self._chunks(ids):
            if self.spec.serverless:
                doc_ids = self._lookup(tenant_id, chunk)
            else:
                doc_ids = [q.doc_id(tenant_id, i) for i in chunk]
            self._bulk(q.bulk_delete_lines(self.spec.name, doc_ids, q.routing(self.spec, tenant_id)), "delete", len(ids))

    def _knn_body(self, tenant_id: str, unit: list[float] | None, flt: IndexFilter, k: int) -> dict:
        if unit is None:  # cosine with a zero vector is 0 for every entry, as in the numpy index
            return q.filter_query(q.filter_clause(tenant_id, flt), k)
        return q.search_query(tenant_id, unit, flt, k, self.spec.ef_search)

    def _knn_hits(self, response: dict, unit: list[float] | None, k: int) -> list[tuple[str, float]]:
        if unit is None:
            return [(i, 0.0) for i, _ in self._ranked(response, k, to_cosine=False)]
        return self._ranked(response, k, to_cosine=True)

    def _lexical_hits(self, response: dict, k: int) -> list[tuple[str, float]]:
        return [(i, s) for i, s in self._ranked(response, k, to_cosine=False) if s > 0]

    def search(self, tenant_id: str, vector: Vector, flt: IndexFilter, k: int) -> list[tuple[str, float]]:
        if k <= 0:
            return []
        unit = self._unit(vector)
        response = self._search(tenant_id, self._knn_body(tenant_id, unit, flt, k), "search")
        return self._knn_hits(response, unit, k)

    def lexical_search(self, tenant_id: str, text: str, flt: IndexFilter, k: int) -> list[tuple[str, float]]:
        if k <= 0:
            return []
        body = q.lexical_query(tenant_id, text, flt, k, self.spec.bm25.stemmer)
        if body is None:
            return []
        return self._lexical_hits(self._search(tenant_id, body, "lexical search"), k)

    def similarities(self, tenant_id: str, vector: Vector, experience_ids: Sequence[str]) -> dict[str, float]:
        ids = list(dict.fromkeys(experience_ids))
        if not ids:
            return {}
        unit = self._unit(vector)
        out: dict[str, float] = {}
        for chunk in self._chunks(ids):
            if unit is None:
                response = self._search(tenant_id, q.filter_query(q.ids_clause(tenant_id, chunk), len(chunk)), "similarities")
                out.update((i, 0.0) for i, _ in q.hit_ids(response))
            elif self._node_cosines:
                out.update(q.hit_cosines(self._search(tenant_id, q.cosine_query(tenant_id, unit, chunk), "similarities")))
            else:
                response = self._search(tenant_id, q.similarity_query(tenant_id, unit, chunk), "similarities")
                out.update(self._ranked(response, len(chunk), to_cosine=True))
        return out

    def hybrid_search(
        self, tenant_id: str, vector: Vector, text: str, flt: IndexFilter, k: int
    ) -> tuple[dict[str, float], dict[str, float]]:
        """k-NN and BM25 in one ``_msearch``, one round trip: the BM25 hits carry their cosine
        (``q.with_cosines``, the script ``similarities`` runs, so the same floats), which is kept
        for the hits the k-NN did not return. On Serverless a second request asks ``similarities``
        for those."""
        if k <= 0:
            return {}, {}
        unit = self._unit(vector)
        bodies = [self._knn_body(tenant_id, unit, flt, k)]
        lexical_body = q.lexical_query(tenant_id, text, flt, k, self.spec.bm25.stemmer)
        if lexical_body is not None:
            if unit is not None and self._node_cosines:
                lexical_body = q.with_cosines(lexical_body, unit)
            bodies.append(lexical_body)
        answers = self._msearch(tenant_id, bodies, "hybrid search")
        semantic = dict(self._knn_hits(answers[0], unit, k))
        lexical = dict(self._lexical_hits(answers[1], k)) if lexical_body is not None else {}
        missing = [i for i in lexical if i not in semantic]
        if missing and unit is None:  # every hit is in the index, and a zero vector's cosine is 0
            semantic.update(dict.fromkeys(missing, 0.0))
        elif missing and self._node_cosines:
            cosines = q.hit_cosines(answers[1])
            semantic.update((i, cosines[i]) for i in missing if i in cosines)  # an entry without a vector has none
        elif missing:
            semantic.update(self.similarities(tenant_id, vector, missing))
        return semantic, lexical

    def count(self, tenant_id: str) -> int:
        self.ensure_index()
        with _boundary("count"):
            return int(self.client.count(index=self.spec.name, body=q.count_query(tenant_id),
                                         **self._routing(tenant_id))["count"])

    def purge_tenant(self, tenant_id: str, limit: int) -> int:
        """A search for up to ``limit`` of the tenant's documents, then a bulk delete of them: the
        same two paths every other call uses (``_search``, ``_bulk``, routed as they are; no
        delete-by-query, which Serverless lacks and the functions' roles need not reach)."""
        response = self._search(tenant_id, q.tenant_documents_query(tenant_id, limit), "purge")
        doc_ids = list(dict.fromkeys(h["_id"] for h in response["hits"]["hits"]))
        if doc_ids:
            route = q.routing(self.spec, tenant_id)
            self._bulk(q.bulk_delete_lines(self.spec.name, doc_ids, route), "purge", len(doc_ids))
        return len(doc_ids)
