/**
 * `Hindsight`: one method per route of HTTP API v1.
 *
 * Names follow the Python SDK (in camelCase); what goes over the wire keeps the wire's
 * snake_case field names, and only options that are the SDK's own (timeouts, retries) are
 * camelCase. Writes carry ids chosen here (trajectory_id, event_id, experience_id) when the
 * caller gave none, which makes them idempotent on the service: a retry after a lost answer
 * cannot write twice.
 */
import { configFromEnv } from "./config.js";
import { RetryPolicy } from "./retry.js";
import { type Call, type FetchLike, Transport, sleep } from "./transport.js";
import type {
  AdviseQuery,
  AdviseResult,
  DecayOptions,
  DecayReport,
  EventsAccepted,
  Experience,
  AgentList,
  ExperiencePage,
  FailedReview,
  Health,
  JsonObject,
  KeyRotated,
  ListExperiences,
  OtlpExportResult,
  Outcome,
  RecallQuery,
  RecallResult,
  RedriveOptions,
  ReindexReport,
  Signal,
  StartTrajectory,
  Stats,
  Tenant,
  TenantCreated,
  TenantDeletion,
  TenantExport,

  TenantPage,
  Time,
  Trajectory,
  TrajectoryEvent,
  TrajectoryEvents,
  WriteExperience,
  WrittenExperience,
} from "./types.js";

export const VERSION = "0.1.0";
export const MAX_EVENTS_PER_CALL = 100;
export const MAX_RECENT_EVENTS = 20;

export interface HindsightOptions {
  /** Default: HINDSIGHT_URL, else http://127.0.0.1:8000. */
  url?: string;
  /** A tenant key. Default: HINDSIGHT_API_KEY. */
  apiKey?: string | null;
  /** The admin key (tenants and maintenance). Default: HINDSIGHT_ADMIN_KEY. */
  adminKey?: string | null;
  /** Per request, in milliseconds. Default: HINDSIGHT_TIMEOUT seconds, else 10 s. */
  timeoutMs?: number;
  retry?: RetryPolicy;
  /** Another fetch (a proxy agent, a test double). Default: the platform's. */
  fetch?: FetchLike;
  /** Sent with every request. */
  headers?: Record<string, string>;
}

export function newId(prefix: string): string {
  return `${prefix}_${globalThis.crypto.randomUUID().replaceAll("-", "")}`;
}

/** An id as one path segment: ids may hold '/' (the service allows it), which must not split the path. */
const seg = (id: string): string => encodeURIComponent(id);

/** Drop undefined fields (null is sent: the service reads it as "not given" too). */
function compact<T extends object>(body: T): Partial<T> {
  return Object.fromEntries(Object.entries(body).filter(([, v]) => v !== undefined)) as Partial<T>;
}

function wireTime(value: Time | null | undefined): string | number | null | undefined {
  return value instanceof Date ? value.toISOString() : value;
}

/** Events as sent: Date timestamps as ISO text, and (`fillIds`) a fresh event_id where one is missing. */
export function wireEvents(events: readonly TrajectoryEvent[], fillIds = true): TrajectoryEvent[] {
  return events.map((e) => {
    const out: TrajectoryEvent = fillIds ? { ...e, event_id: e.event_id || newId("evt") } : { ...e };
    if (e.timestamp instanceof Date) out.timestamp = e.timestamp.toISOString();
    return out;
  });
}

export class Hindsight {
  readonly url: string;
  readonly retry: RetryPolicy;
  private readonly settings: Required<HindsightOptions>;
  private readonly transport: Transport;

  constructor(options: HindsightOptions = {}) {
    const env = configFromEnv();
    this.settings = {
      url: (options.url ?? env.url).replace(/\/+$/, ""),
      apiKey: options.apiKey !== undefined ? options.apiKey : env.apiKey,
      adminKey: options.adminKey !== undefined ? options.adminKey : env.adminKey,
      timeoutMs: options.timeoutMs ?? env.timeoutMs,
      retry: options.retry ?? new RetryPolicy(),
      fetch: options.fetch ?? ((input, init) => globalThis.fetch(input, init)),
      headers: options.headers ?? {},
    };
    this.url = this.settings.url;
    this.retry = this.settings.retry;
    this.transport = new Transport({
      ...this.settings,
      headers: { "User-Agent": `hindsight-xp-js/${VERSION}`, Accept: "application/json", ...this.settings.headers },
    });
  }

  /** The same client (same settings) acting for another tenant. */
  withApiKey(apiKey: string): Hindsight {
    return new Hindsight({ ...this.settings, apiKey });
  }

  /** The same client with another retry policy (e.g. NO_RETRY for calls that must not wait). */
  withRetry(retry: RetryPolicy): Hindsight {
    return new Hindsight({ ...this.settings, retry });
  }

  /** Make a call described as data; every method below is one of these. */
  request<T>(call: Call): Promise<T> {
    return this.transport.run<T>(call);
  }

  // --- misc ------------------------------------------------------------------------------------

  /** GET /v1/health (no key). */
  health(): Promise<Health> {
    return this.request({ method: "GET", path: "/v1/health", auth: "none" });
  }

  /** GET /v1/openapi.json (no key). */
  openapi(): Promise<JsonObject> {
    return this.request({ method: "GET", path: "/v1/openapi.json", auth: "none" });
  }

  // --- tenants and maintenance (admin key) ------------------------------------------------------

  /** POST /v1/tenants: a tenant and its first API key (shown once). */
  createTenant(name: string): Promise<TenantCreated> {
    // Not idempotent: a retry after a lost answer would create a second tenant.
    return this.request({ method: "POST", path: "/v1/tenants", json: { name }, auth: "admin", idempotent: false });
  }

  /** GET /v1/tenants, every page: all the tenants, oldest first (see `iterTenants` to hold one page at a time). */
  async listTenants(options: { page_size?: number } = {}): Promise<Tenant[]> {
    const tenants: Tenant[] = [];
    for await (const tenant of this.iterTenants(options)) tenants.push(tenant);
    return tenants;
  }

  /** GET /v1/tenants: one page of tenants, oldest first; pass its `cursor` back for the next. */
  listTenantsPage(options: { limit?: number; cursor?: string | null } = {}): Promise<TenantPage> {
    return this.request({
      method: "GET", path: "/v1/tenants", query: { limit: options.limit ?? 100, cursor: options.cursor ?? undefined },
      auth: "admin",
    });
  }

  /** Every tenant, oldest first, page after page (the service's cursor). */
  async *iterTenants(options: { page_size?: number } = {}): AsyncGenerator<Tenant> {
    let cursor: string | null = null;
    do {
      const page: TenantPage = await this.listTenantsPage({ limit: options.page_size ?? 100, cursor });
      yield* page.tenants;
      cursor = page.cursor;
    } while (cursor);
  }

  /** POST /v1/tenants/{id}/keys: a new key; the old ones are revoked unless `revoke_old: false`. */
  rotateKey(tenantId: string, options: { revoke_old?: boolean } = {}): Promise<KeyRotated> {
    return this.request({
      method: "POST", path: `/v1/tenants/${seg(tenantId)}/keys`, json: { revoke_old: options.revoke_old ?? true },
      auth: "admin", idempotent: false,
    });
  }

  /** POST /v1/tenants/{id}/retention: the days the events of the trajectories the tenant starts
   * from now on are kept (0: for good; null: the deployment's default). Lessons never expire. */
  setRetention(tenantId: string, eventRetentionDays: number | null): Promise<Tenant> {
    return this.request({
      method: "POST", path: `/v1/tenants/${seg(tenantId)}/retention`, json: { event_retention_days: eventRetentionDays },
      auth: "admin",
    });
  }

  /** POST /v1/maintenance/decay: decay freshness and archive stale lessons (every tenant's, or one's). */
  decay(options: DecayOptions = {}): Promise<DecayReport> {
    const body = compact({ as_of: wireTime(options.as_of), tenant_id: options.tenant_id, dry_run: options.dry_run || undefined });
    return this.request({ method: "POST", path: "/v1/maintenance/decay", json: body, auth: "admin", idempotent: !!options.dry_run });
  }

  /** GET /v1/maintenance/failed-reviews: reviews the service gave up on, with the reason. */
  async failedReviews(options: { tenant_id?: string; limit?: number } = {}): Promise<FailedReview[]> {
    const out = await this.request<{ failed?: FailedReview[] }>({
      method: "GET", path: "/v1/maintenance/failed-reviews", query: { tenant_id: options.tenant_id, limit: options.limit ?? 100 },
      auth: "admin",
    });
    return out.failed ?? [];
  }

  /** POST /v1/maintenance/redrive: failed reviews sent round again (all, a tenant's, or listed ones). How many. */
  async redrive(options: RedriveOptions = {}): Promise<number> {
    const out = await this.request<{ redriven: number }>({
      method: "POST", path: "/v1/maintenance/redrive", json: compact({ ...options }), auth: "admin",
    });
    return out.redriven;
  }

  // --- a tenant's export and deletion (admin key) -------------------------------------------------

  /** POST /v1/tenants/{id}/exports: start an export of everything the tenant owns. */
  startTenantExport(tenantId: string): Promise<TenantExport> {
    // Not idempotent: a retry after a lost answer would start a second export.
    return this.request({ method: "POST", path: `/v1/tenants/${seg(tenantId)}/exports`, auth: "admin", idempotent: false });
  }

  /** GET /v1/tenants/{id}/exports/{export_id}: an export's progress and its parts. */
  getTenantExport(tenantId: string, exportId: string): Promise<TenantExport> {
    return this.request({ method: "GET", path: `/v1/tenants/${seg(tenantId)}/exports/${seg(exportId)}`, auth: "admin" });
  }

  /** GET /v1/tenants/{id}/exports/{export_id}/data: one part of an export (from 1), as JSON Lines text. */
  async getTenantExportPart(tenantId: string, exportId: string, part = 1): Promise<string> {
    const bytes = await this.request<Uint8Array>({
      method: "GET", path: `/v1/tenants/${seg(tenantId)}/exports/${seg(exportId)}/data`, query: { part }, auth: "admin",
      binary: true,
    });
    return new TextDecoder().decode(bytes);
  }

  /** DELETE /v1/tenants/{id}: revoke the tenant's keys at once and purge everything it owns (asked again: the same deletion). */
  deleteTenant(tenantId: string): Promise<TenantDeletion> {
    return this.request({ method: "DELETE", path: `/v1/tenants/${seg(tenantId)}`, auth: "admin", idempotent: true });
  }

  /** GET /v1/tenants/{id}/deletion: a tenant deletion's progress. */
  getTenantDeletion(tenantId: string): Promise<TenantDeletion> {
    return this.request({ method: "GET", path: `/v1/tenants/${seg(tenantId)}/deletion`, auth: "admin" });
  }

  // --- tenant key: maintenance ------------------------------------------------------------------

  /** POST /v1/maintenance/reindex: one batch of the rebuild of the tenant's vector index from the
   * store (`limit` lessons, the server's default without it) after `cursor`; call again with the
   * report's cursor until it is null. */
  reindex(options: { cursor?: string; limit?: number } = {}): Promise<ReindexReport> {
    const json: Record<string, unknown> = {};
    if (options.cursor !== undefined) json.cursor = options.cursor;
    if (options.limit !== undefined) json.limit = options.limit;
    return this.request({ method: "POST", path: "/v1/maintenance/reindex", json });
  }

  /** GET /v1/stats. */
  stats(): Promise<Stats> {
    return this.request({ method: "GET", path: "/v1/stats" });
  }

  /** GET /v1/agents: the agents whose lessons a recall can scope to (pass one as `agent_id`). */
  listAgents(): Promise<AgentList> {
    return this.request({ method: "GET", path: "/v1/agents" });
  }

  // --- trajectories -----------------------------------------------------------------------------

  /** POST /v1/trajectories (a repeated trajectory_id answers the existing one). */
  startTrajectory(input: StartTrajectory): Promise<Trajectory> {
    const body = compact({ ...input, trajectory_id: input.trajectory_id ?? newId("traj") });
    return this.request({ method: "POST", path: "/v1/trajectories", json: body });
  }

  /** POST /v1/trajectories/{id}/events: at most 100 events; those without an event_id get one. */
  appendEvents(trajectoryId: string, events: readonly TrajectoryEvent[]): Promise<EventsAccepted> {
    if (events.length === 0) throw new RangeError("appendEvents needs at least one event");
    if (events.length > MAX_EVENTS_PER_CALL) {
      throw new RangeError(`at most ${MAX_EVENTS_PER_CALL} events per call, got ${events.length}; send them in batches`);
    }
    return this.request({ method: "POST", path: `/v1/trajectories/${seg(trajectoryId)}/events`, json: { events: wireEvents(events) } });
  }

  /** POST /v1/trajectories/{id}/finalize: the review then runs asynchronously. Safe to repeat. */
  finalize(trajectoryId: string, outcome: Outcome, feedback?: string | null): Promise<Trajectory> {
    return this.request({
      method: "POST", path: `/v1/trajectories/${seg(trajectoryId)}/finalize`, json: compact({ outcome, feedback }),
    });
  }

  /** GET /v1/trajectories/{id}. */
  getTrajectory(trajectoryId: string): Promise<Trajectory> {
    return this.request({ method: "GET", path: `/v1/trajectories/${seg(trajectoryId)}` });
  }

  /** GET /v1/trajectories/{id}/events: a page of the decision graph (`limit` events after
   * `cursor`), each step's label and contribution; the answer's cursor names the next page. */
  getTrajectoryEvents(trajectoryId: string, options: { limit?: number; cursor?: string } = {}): Promise<TrajectoryEvents> {
    return this.request({
      method: "GET", path: `/v1/trajectories/${seg(trajectoryId)}/events`, query: { limit: options.limit, cursor: options.cursor },
    });
  }

  /** Poll until the service reviewed a finalized trajectory (or gave up on it). */
  async waitForReview(trajectoryId: string, options: { timeoutMs?: number; intervalMs?: number } = {}): Promise<Trajectory> {
    const timeoutMs = options.timeoutMs ?? 30_000;
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const trajectory = await this.getTrajectory(trajectoryId);
      if (trajectory.status === "reviewed" || trajectory.status === "review_failed") return trajectory;
      if (Date.now() >= deadline) {
        throw new Error(`trajectory ${trajectoryId} is still ${trajectory.status} after ${timeoutMs} ms`);
      }
      await sleep(options.intervalMs ?? 100);
    }
  }

  // --- experiences ------------------------------------------------------------------------------

  /**
   * POST /v1/experiences: a lesson written by hand (a repeated experience_id answers the stored one).
   * `supersedes` names the lessons it corrects (or "auto"): they are archived and chained to it.
   */
  writeExperience(input: WriteExperience): Promise<WrittenExperience> {
    if (typeof input.supersedes === "string" && input.supersedes !== "auto") {
      throw new TypeError(`supersedes takes a list of experience ids or "auto", not the string ${JSON.stringify(input.supersedes)}`);
    }
    const body = compact({ ...input, experience_id: input.experience_id ?? newId("exp") });
    return this.request({ method: "POST", path: "/v1/experiences", json: body });
  }

  /** GET /v1/experiences/{id}. */
  getExperience(experienceId: string): Promise<Experience> {
    return this.request({ method: "GET", path: `/v1/experiences/${seg(experienceId)}` });
  }

  /** GET /v1/experiences: one page, newest first. */
  listExperiences(options: ListExperiences = {}): Promise<ExperiencePage> {
    return this.request({
      method: "GET", path: "/v1/experiences",
      query: { agent_id: options.agent_id, status: options.status, limit: options.limit ?? 50, cursor: options.cursor },
    });
  }

  /** Every experience, page after page (the service's cursor), without holding them all. */
  async *iterExperiences(options: Omit<ListExperiences, "cursor"> = {}): AsyncGenerator<Experience> {
    let cursor: string | null = null;
    do {
      const page: ExperiencePage = await this.listExperiences({ ...options, limit: options.limit ?? 200, cursor });
      yield* page.items;
      cursor = page.cursor;
    } while (cursor);
  }

  /** DELETE /v1/experiences/{id}: it never appears in recall again (kept as a tombstone). */
  forget(experienceId: string, reason?: string | null): Promise<Experience> {
    return this.request({ method: "DELETE", path: `/v1/experiences/${seg(experienceId)}`, json: compact({ reason }) });
  }

  /** POST /v1/experiences/{id}/restore: an archived lesson active again (a forgotten one: Conflict). */
  restore(experienceId: string): Promise<Experience> {
    return this.request({ method: "POST", path: `/v1/experiences/${seg(experienceId)}/restore`, json: {} });
  }

  /** POST /v1/experiences/{id}/feedback: whether a lesson helped. */
  feedback(experienceId: string, signal: Signal): Promise<Experience> {
    // Each signal moves utility and freshness once: a duplicate would count twice, so no retry
    // unless the service refused the call outright.
    return this.request({
      method: "POST", path: `/v1/experiences/${seg(experienceId)}/feedback`, json: { signal }, idempotent: false,
    });
  }

  // --- recall and advise ------------------------------------------------------------------------

  /** POST /v1/recall: the lessons for the task at hand and the advice block for the prompt. */
  recall(query: string, options: RecallQuery = {}): Promise<RecallResult> {
    return this.request({ method: "POST", path: "/v1/recall", json: compact({ query, ...options }) });
  }

  /** POST /v1/advise: before a tool call, what past runs say about calling `tool` with `params` (no LLM). */
  advise(tool: string, params: JsonObject = {}, options: AdviseQuery = {}): Promise<AdviseResult> {
    const { timeoutMs, recent_events, ...rest } = options;
    const body = compact({
      tool, params, ...rest,
      // advise stores nothing, so its recent events need no ids
      recent_events: recent_events ? wireEvents(recent_events.slice(-MAX_RECENT_EVENTS), false) : undefined,
    });
    const call: Call = { method: "POST", path: "/v1/advise", json: body };
    if (timeoutMs !== undefined) call.timeoutMs = timeoutMs;
    return this.request(call);
  }

  // --- OpenTelemetry ----------------------------------------------------------------------------

  /**
   * POST /v1/otlp/v1/traces: an OTLP/HTTP trace export (ExportTraceServiceRequest), as protobuf
   * bytes or as OTLP JSON (an object or its text), gzip-compressed when `gzip` is set. An
   * OpenTelemetry exporter pointed at `${url}/v1/otlp/v1/traces` does the same; this is for
   * sending traces captured elsewhere. Spans sent twice are stored once, so it is retried.
   */
  async exportTraces(
    request: Uint8Array | string | JsonObject,
    options: { contentType?: "application/x-protobuf" | "application/json"; gzip?: boolean } = {},
  ): Promise<OtlpExportResult> {
    const isBytes = request instanceof Uint8Array;
    const contentType = options.contentType ?? (isBytes ? "application/x-protobuf" : "application/json");
    let bytes: Uint8Array | string = isBytes || typeof request === "string" ? request : JSON.stringify(request);
    if (options.gzip) bytes = await gzip(bytes);
    const protobuf = contentType === "application/x-protobuf";
    const raw = { bytes, contentType, ...(options.gzip ? { contentEncoding: "gzip" } : {}) };
    const body = await this.request<JsonObject | Uint8Array>({
      method: "POST", path: "/v1/otlp/v1/traces", raw, binary: protobuf,
    });
    return { body };
  }
}

async function gzip(data: Uint8Array | string): Promise<Uint8Array> {
  const input = typeof data === "string" ? new TextEncoder().encode(data) : data;
  const stream = new Blob([input as BlobPart]).stream().pipeThrough(new CompressionStream("gzip"));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}
