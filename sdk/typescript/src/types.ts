/**
 * The shapes of HTTP API v1 (docs/api.md), as the service sends and accepts them: field names
 * are the wire's (snake_case), so an answer is used as it arrives, and fields a newer service
 * adds are simply there.
 */

export type Outcome = "success" | "failure" | "partial";
export type Signal = "adopted" | "ignored" | "succeeded" | "failed";
export type ExperienceStatus = "active" | "archived" | "forgotten";
export type TrajectoryStatus = "open" | "finalized" | "reviewed" | "review_failed";
export type EventType = "user_input" | "llm_reasoning" | "tool_call" | "state_change" | "feedback" | "recall";
export type Source = "human" | "agent" | "simulation";
/** ISO-8601 text, or epoch milliseconds. */
export type Time = string | number | Date;
export type JsonObject = { [key: string]: unknown };

// --- misc and tenants --------------------------------------------------------------------------

export interface Health {
  status: "ok";
  backend: string;
}

export interface TenantCreated {
  tenant_id: string;
  name: string;
  /** Shown once by the service; only its hash is stored. */
  api_key: string;
}

export interface Tenant {
  tenant_id: string;
  name: string;
  created_at: string;
  /** Days its trajectories keep their events (0: for good); null: the deployment's default. */
  event_retention_days?: number | null;
}

export interface TenantPage {
  tenants: Tenant[];
  /** Pass as `cursor` for the next page; null on the last page. */
  cursor: string | null;
}

export interface KeyRotated {
  tenant_id: string;
  api_key: string;
}

export interface DecayReport {
  decayed: number;
  archived: number;
  /** Archived (or, in a dry run, to be archived), the first 1,000. */
  archived_ids: string[];
  dry_run: boolean;
}

export interface FailedReview {
  tenant_id: string;
  trajectory_id: string;
  /** `full`, or `local:<event_id>` for the review of an ingest anomaly. */
  kind: string;
  attempts: number;
  error?: string | null;
  failed_at?: string | null;
}

export interface ReindexReport {
  reindexed: number;
  /** The next batch's cursor; null once every lesson is indexed again. */
  cursor: string | null;
}

export interface Stats {
  experiences: Record<string, number>;
  trajectories: Record<string, number>;
  freshness_histogram: { bucket: string; count: number }[];
  decay?: { half_life_days: number; archive_below: number; min_age_days: number } | null;
  /** When the pass that counted these started (a large tenant is counted over several requests). */
  as_of?: string | null;
  /** False while the first pass over a large tenant is under way: the counts cover part of it. */
  complete?: boolean;
}

// --- trajectories ------------------------------------------------------------------------------

export interface StartTrajectory {
  agent_id: string;
  goal: string;
  /** Client-chosen and idempotent; the SDK chooses one (`traj_` + a UUID) when none is given. */
  trajectory_id?: string;
  user_id?: string | null;
  task_type?: string | null;
  tools?: string[];
  intent?: string | null;
  tags?: string[];
  metadata?: JsonObject;
}

export interface Trajectory {
  trajectory_id: string;
  status: TrajectoryStatus;
  agent_id: string;
  user_id?: string | null;
  goal: string;
  task_type?: string | null;
  tools?: string[];
  intent?: string | null;
  tags?: string[];
  metadata?: JsonObject;
  event_count: number;
  outcome?: Outcome | null;
  experience_ids?: string[];
  review?: JsonObject | null;
  created_at: string;
  updated_at: string;
}

export interface EventContext {
  goal?: string | null;
  subtask?: string | null;
  last_user_input?: string | null;
}

export interface ToolCallContent {
  tool: string;
  params?: JsonObject;
  status?: "ok" | "error";
  result?: unknown;
  error?: unknown;
  available_tools?: string[];
  [extra: string]: unknown;
}

/** An event of the contract. `event_id` is required by the service; the SDK fills it in when missing. */
export interface TrajectoryEvent {
  type: EventType;
  event_id?: string;
  timestamp?: Time | null;
  node_id?: string | null;
  /** Decision-graph parent; default: the previous event. */
  parent_id?: string | null;
  context?: EventContext;
  content?: JsonObject;
}

export interface EventsAccepted {
  accepted: number;
  duplicates: number;
}

export interface EventOut {
  event_id: string;
  seq: number;
  type: EventType;
  timestamp: string;
  node_id?: string | null;
  parent_id?: string | null;
  context?: JsonObject;
  content?: JsonObject;
  /** The event_id of its parent in the decision graph; null for the root. */
  parent: string | null;
  label: "effective" | "recovery" | "failed" | "repeated" | "objected" | null;
  contribution: number;
}

export interface Contrast {
  failed: string;
  worked: string;
  kind: "param" | "order" | "swap";
  changed_params?: string[];
  prerequisite?: string | null;
}

export interface TrajectoryEvents {
  trajectory_id: string;
  events: EventOut[];
  contrasts: Contrast[];
  /** The next page's cursor; null after the last page. */
  cursor: string | null;
}

// --- experiences -------------------------------------------------------------------------------

export interface WriteExperience {
  situation: string;
  lesson?: string;
  /** Second person, ready for a prompt. Give a lesson, advice or both. */
  advice?: string;
  action?: string;
  result?: string;
  /** Client-chosen and idempotent; the SDK chooses one (`exp_` + a UUID) when none is given. */
  experience_id?: string;
  tags?: string[];
  task_type?: string | null;
  tools?: string[];
  agent_id?: string | null;
  user_id?: string | null;
  source?: Source;
  sources?: string[];
  confidence?: number | null;
  /**
   * The lessons this one corrects: ids in the same agent_id and user_id, archived and chained to it in
   * the same write (another scope's or an unknown id: NotFound; a forgotten one: Conflict), or "auto"
   * for the probable corrections the service finds (the ones it would name in `correction_of`).
   */
  supersedes?: string[] | "auto" | null;
}

export interface Experience {
  experience_id: string;
  situation: string;
  action: string;
  result: string;
  lesson: string;
  advice: string;
  tags: string[];
  task_type: string | null;
  tools: string[];
  agent_id: string | null;
  user_id: string | null;
  source: Source;
  sources: string[];
  confidence: number;
  freshness: number;
  utility: number;
  status: ExperienceStatus;
  status_reason?: string | null;
  support: number;
  version: number;
  supersedes?: string | null;
  superseded_by?: string | null;
  created_at: string;
  updated_at: string;
  renewed_at?: string | null;
  served?: number;
  adopted?: number;
  success_when_adopted?: number | null;
  success_when_ignored?: number | null;
  lift?: number | null;
  history?: JsonObject[];
}

/** The answer to writeExperience: the lesson, and the lessons it probably corrects. */
export interface WrittenExperience extends Experience {
  /**
   * Active lessons of the same scope and situation whose advice this one contradicts and that it
   * does not supersede: write it again with `supersedes` naming them (or "auto") to replace them.
   * Absent on an answer of a service that predates corrections.
   */
  correction_of?: string[];
}

export interface ExperiencePage {
  items: Experience[];
  /** Pass as `cursor` for the next page; null on the last page. */
  cursor: string | null;
}

export interface ListExperiences {
  agent_id?: string;
  status?: ExperienceStatus;
  limit?: number;
  cursor?: string | null;
}

// --- recall and advise -------------------------------------------------------------------------

export interface Explanation {
  semantic: number;
  lexical: number;
  tag_match: number;
  freshness: number;
  utility: number;
  confidence: number;
  matched_tools: string[];
  matched_tags: string[];
  task_type_match: boolean | null;
  matched_anchors?: string[];
}

export interface Hit {
  experience: Experience;
  score: number;
  explanation: Explanation;
}

export interface RecallQuery {
  agent_id?: string | null;
  user_id?: string | null;
  task_type?: string | null;
  tools?: string[];
  intent?: string | null;
  tags?: string[];
  top_k?: number;
  min_score?: number;
}

export interface RecallResult {
  /** Attach it to the running trajectory (a `recall` event) so its review credits these lessons. */
  recall_id: string;
  hits: Hit[];
  /** The hits rendered as one block for the agent's prompt; empty when nothing was recalled. */
  advice: string;
  /** after_tools, system_start, system_end or before_user. */
  advice_placement?: string;
  /** How many lessons scope rules hid, per scope field (never their content). */
  hidden_by_scope?: Record<string, Record<string, number>>;
  /** `lexical_only` when the query could not be embedded and the lessons were ranked by their words. */
  degraded?: "lexical_only" | null;
}

/** GET /v1/agents: the agents the tenant's active lessons belong to, most lessons first. */
export interface AgentList {
  agents: { agent_id: string; active_lessons: number }[];
  /** Active lessons of no agent, seen by every recall. */
  shared_lessons: number;
}

export interface AdviseQuery {
  goal?: string | null;
  agent_id?: string | null;
  user_id?: string | null;
  /** The running trajectory: its last events stand in for recent_events when none are sent. */
  trajectory_id?: string | null;
  /** What the agent did just before, oldest first (the last 20 are sent). */
  recent_events?: TrajectoryEvent[];
  top_k?: number;
  /** Milliseconds for this call alone (default: the client's timeout). */
  timeoutMs?: number;
}

export interface AdviseWarning {
  experience_id: string;
  /** What about this call broke the lesson's checks. */
  message: string;
  /** The lesson's advice: what worked instead. */
  fix: string;
}

export interface AdviseResult {
  recall_id: string;
  warnings: AdviseWarning[];
  hits: Hit[];
  /** The block to show the agent (warnings flagged); empty when nothing applies. */
  advice: string;
}

// --- maintenance -------------------------------------------------------------------------------

export interface DecayOptions {
  /** Decay as of this time: at most 1 day before now, 366 days after. */
  as_of?: Time;
  /** Only this tenant's lessons (default: every tenant's). */
  tenant_id?: string;
  /** Write nothing; answer what would be decayed and archived. */
  dry_run?: boolean;
}

export interface RedriveOptions {
  tenant_id?: string;
  trajectory_ids?: string[];
}

// --- OpenTelemetry -----------------------------------------------------------------------------

export interface OtlpExportResult {
  /** The OTLP ExportTraceServiceResponse as JSON (empty, or `partialSuccess`), or the raw bytes of a protobuf answer. */
  body: JsonObject | Uint8Array;
}

/** One part of a tenant export: JSON Lines, read in order. */
export interface ExportPart {
  number: number;
  lines: number;
  bytes: number;
  /** Where an operator finds it outside the API (a path in the data folder, or an s3:// URL). */
  location: string;
}

/** A tenant export (admin): its progress and the parts written so far. */
export interface TenantExport {
  export_id: string;
  tenant_id: string;
  /** `running`, `done`, or `cancelled` (the tenant was deleted meanwhile). */
  state: "running" | "done" | "cancelled";
  requested_at: string;
  finished_at?: string | null;
  phase: string;
  counts: Record<string, number>;
  parts: ExportPart[];
  runs: number;
}

/** A tenant deletion (admin): its keys were revoked when it was asked for; then everything it owns is purged. */
export interface TenantDeletion {
  tenant_id: string;
  state: "running" | "done" | "cancelled";
  requested_at: string;
  not_before: string;
  finished_at?: string | null;
  keys_revoked: number;
  deleted: Record<string, number>;
  runs: number;
}
