/**
 * Retries: 429 and 503 honour Retry-After, the backoff is bounded otherwise, and writes that are
 * not idempotent are not repeated after a failure. A local HTTP server scripts the answers.
 */
import assert from "node:assert/strict";
import { after, test } from "node:test";
import { gunzipSync } from "node:zlib";
import { Hindsight, RateLimited, RetryPolicy, ServerError } from "hindsight-xp";
import { type Answer, ScriptedServer, type SeenRequest, json } from "./support.js";

const servers: ScriptedServer[] = [];
after(() => Promise.all(servers.map((s) => s.stop())));

async function scripted(answer: (req: SeenRequest, n: number) => Answer): Promise<{ server: ScriptedServer; url: string }> {
  const server = new ScriptedServer(answer);
  servers.push(server);
  return { server, url: await server.start() };
}

const TRAJECTORY = { trajectory_id: "t1", status: "open", agent_id: "a", goal: "g", event_count: 0, created_at: "", updated_at: "" };
const RATE_LIMITED = { error: { code: "rate_limited", message: "too many requests for this tenant" } };
const UNAVAILABLE = { error: { code: "unavailable", message: "the store did not answer" } };

test("a 429 is retried after the Retry-After the service sent, then succeeds", async () => {
  const { server, url } = await scripted((_req, n) =>
    n === 1 ? { status: 429, headers: { "Retry-After": "1" }, body: RATE_LIMITED } : { status: 200, body: TRAJECTORY });
  // a backoff of milliseconds: only Retry-After can explain a wait of a second
  const client = new Hindsight({ url, apiKey: "hs_k", retry: new RetryPolicy({ baseDelayMs: 1, maxDelayMs: 2 }) });
  const got = await client.getTrajectory("t1");
  assert.equal(got.trajectory_id, "t1");
  assert.equal(server.seen.length, 2);
  const waited = server.seen[1]!.at - server.seen[0]!.at;
  assert.ok(waited >= 950 && waited < 3000, `waited ${waited} ms for Retry-After: 1`);
  assert.equal(server.seen[1]!.headers["authorization"], "Bearer hs_k");
});

test("a 429 is retried even for a call that is not idempotent: the service applied nothing", async () => {
  const { server, url } = await scripted((_req, n) =>
    n === 1 ? { status: 429, headers: { "Retry-After": "0" }, body: RATE_LIMITED } : { status: 201, body: { tenant_id: "t", name: "n", api_key: "hs_new" } });
  const client = new Hindsight({ url, adminKey: "hs_admin", retry: new RetryPolicy({ baseDelayMs: 1 }) });
  assert.equal((await client.createTenant("n")).api_key, "hs_new");
  assert.deepEqual(server.seen.map((r) => json(r)), [{ name: "n" }, { name: "n" }]);
});

test("a Retry-After beyond the policy's ceiling is not waited for: RateLimited carries it and the request id", async () => {
  const { server, url } = await scripted(() => ({ status: 429, headers: { "Retry-After": "120", "X-Request-Id": "req-42" }, body: RATE_LIMITED }));
  const client = new Hindsight({ url, apiKey: "hs_k" });
  const started = Date.now();
  await assert.rejects(client.recall("anything"), (err: unknown) => {
    assert.ok(err instanceof RateLimited);
    assert.deepEqual([err.status, err.code, err.retryAfterMs, err.requestId], [429, "rate_limited", 120_000, "req-42"]);
    return true;
  });
  assert.ok(Date.now() - started < 1000);
  assert.equal(server.seen.length, 1);
});

test("429 without Retry-After backs off, and gives up after maxAttempts", async () => {
  const { server, url } = await scripted(() => ({ status: 429, body: RATE_LIMITED }));
  const client = new Hindsight({ url, apiKey: "hs_k", retry: new RetryPolicy({ maxAttempts: 3, baseDelayMs: 40, maxDelayMs: 1000 }) });
  await assert.rejects(client.stats(), (err: unknown) => err instanceof RateLimited && err.retryAfterMs === null);
  assert.equal(server.seen.length, 3);
  const gaps = [server.seen[1]!.at - server.seen[0]!.at, server.seen[2]!.at - server.seen[1]!.at];
  assert.ok(gaps[0]! >= 15 && gaps[1]! >= 35, `gaps ${gaps}: about 20-40 ms, then 40-80 ms`);
});

test("a 503 is retried after its Retry-After for an idempotent call, and not for one that is not", async () => {
  const { server, url } = await scripted((req) => {
    const failures = server.seen.filter((s) => s.path === req.path).length;
    if (failures === 1) return { status: 503, headers: { "Retry-After": "0" }, body: UNAVAILABLE };
    return req.path === "/v1/recall" ? { status: 200, body: { recall_id: "rc_1", hits: [], advice: "" } } : { status: 200, body: {} };
  });
  const client = new Hindsight({ url, apiKey: "hs_k", retry: new RetryPolicy({ baseDelayMs: 1 }) });
  assert.equal((await client.recall("q")).recall_id, "rc_1");
  assert.equal(server.seen.filter((s) => s.path === "/v1/recall").length, 2);

  await assert.rejects(client.feedback("exp_1", "adopted"), (err: unknown) => {
    assert.ok(err instanceof ServerError);
    assert.deepEqual([err.status, err.code, err.retryAfterMs], [503, "unavailable", 0]);
    return true;
  });
  assert.equal(server.seen.filter((s) => s.path === "/v1/experiences/exp_1/feedback").length, 1, "a signal is never sent twice");
});

test("an error answer that is not the service's shape still maps to its family", async () => {
  const { url } = await scripted(() => ({ status: 502, headers: { "Content-Type": "text/html" }, body: "<html>Bad Gateway</html>" }));
  const client = new Hindsight({ url, apiKey: "hs_k", retry: new RetryPolicy({ maxAttempts: 1 }) });
  await assert.rejects(client.stats(), (err: unknown) =>
    err instanceof ServerError && err.status === 502 && err.code === "http_502" && err.message === "<html>Bad Gateway</html>");
});

test("the backoff is exponential with equal jitter, capped, and stops at maxAttempts", () => {
  const low = new RetryPolicy({ baseDelayMs: 100, maxDelayMs: 1000, maxAttempts: 10, random: () => 0 });
  const high = new RetryPolicy({ baseDelayMs: 100, maxDelayMs: 1000, maxAttempts: 10, random: () => 0.999999 });
  assert.deepEqual([0, 1, 2, 3, 4, 5].map((a) => low.backoff(a)), [50, 100, 200, 400, 500, 500]);
  assert.deepEqual([0, 1, 2, 3, 4, 5].map((a) => Math.round(high.backoff(a))), [100, 200, 400, 800, 1000, 1000]);

  const policy = new RetryPolicy({ maxAttempts: 3, maxRetryAfterMs: 5000, random: () => 0 });
  const answer = (status: number, retryAfterMs: number | null = null) => ({ kind: "answer" as const, status, retryAfterMs });
  assert.equal(policy.delay(answer(429, 2000), 0, false), 2000);
  assert.equal(policy.delay(answer(429, 6000), 0, true), null);
  assert.equal(policy.delay(answer(429, 2000), 2, true), null, "the third attempt was the last");
  assert.equal(policy.delay(answer(503, 1000), 0, true), 1000);
  assert.equal(policy.delay(answer(503, 1000), 0, false), null);
  assert.equal(policy.delay(answer(500), 1, true), 250);
  assert.equal(policy.delay(answer(422), 0, true), null);
  assert.equal(policy.delay({ kind: "transport", notSent: true }, 0, false), 125);
  assert.equal(policy.delay({ kind: "transport", notSent: false }, 0, false), null, "a write that may have been applied");
});

test("OTLP traces go out as the exporter sends them: JSON or protobuf, gzip when asked", async () => {
  const { server, url } = await scripted((req) =>
    req.headers["content-type"] === "application/json" ? { status: 200, body: {} } : { status: 200, headers: { "Content-Type": "application/x-protobuf" }, body: "" });
  const client = new Hindsight({ url, apiKey: "hs_k" });
  const traces = { resourceSpans: [{ scopeSpans: [{ spans: [{ traceId: "0af7651916cd43dd8448eb211c80319c", name: "execute_tool" }] }] }] };
  assert.deepEqual((await client.exportTraces(traces, { gzip: true })).body, {});
  const bytes = new Uint8Array([0x0a, 0x00]);
  assert.deepEqual((await client.exportTraces(bytes)).body, new Uint8Array());
  const [sentJson, sentProto] = server.seen;
  assert.deepEqual([sentJson!.path, sentJson!.headers["content-encoding"]], ["/v1/otlp/v1/traces", "gzip"]);
  assert.deepEqual(JSON.parse(gunzipSync(sentJson!.body).toString()), traces);
  assert.deepEqual([sentProto!.headers["content-type"], [...sentProto!.body]], ["application/x-protobuf", [0x0a, 0x00]]);
});
