/** Typed errors: the real server's 401, 404, 409 and 422, and what an unreachable service gives. */
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  APIError,
  Conflict,
  Hindsight,
  HindsightError,
  InvalidRequest,
  NotFound,
  type Outcome,
  RetryPolicy,
  TransportError,
  Unauthorized,
} from "hindsight-xp";
import { FAST_RETRY, ScriptedServer, newTenant, serverUnderTest } from "./support.js";

async function caught(work: Promise<unknown>): Promise<unknown> {
  try {
    await work;
  } catch (exc) {
    return exc;
  }
  assert.fail("the call succeeded");
}

test("401: an unknown key is Unauthorized, with the service's status, code and message", async () => {
  const client = new Hindsight({ url: serverUnderTest().url, apiKey: "hs_unknown", retry: FAST_RETRY });
  const err = await caught(client.stats());
  assert.ok(err instanceof Unauthorized && err instanceof APIError && err instanceof HindsightError && err instanceof Error);
  assert.deepEqual([err.name, err.status, err.code, err.message], ["Unauthorized", 401, "unauthorized", "unknown or revoked API key"]);
  assert.equal(err.requestId, null, "the embedded server names no request id");
});

test("404: an unknown id, and another tenant's id, are NotFound alike", async () => {
  const mine = await newTenant();
  const theirs = await newTenant();
  const started = await theirs.client.startTrajectory({ agent_id: "a", goal: "theirs" });
  const unknown = await caught(mine.client.getTrajectory("traj_nobody"));
  assert.ok(unknown instanceof NotFound);
  assert.deepEqual([unknown.status, unknown.code, unknown.message], [404, "not_found", "trajectory traj_nobody not found"]);
  const other = await caught(mine.client.getTrajectory(started.trajectory_id));
  assert.ok(other instanceof NotFound && other.status === 404);
  await assert.rejects(mine.client.getExperience("exp_nobody"), NotFound);
});

test("422: what the service refuses is InvalidRequest, with the fields in details", async () => {
  const { client } = await newTenant();
  const started = await client.startTrajectory({ agent_id: "a", goal: "g" });
  const err = await caught(client.finalize(started.trajectory_id, "maybe" as Outcome));
  assert.ok(err instanceof InvalidRequest);
  assert.deepEqual([err.status, err.code], [422, "invalid_input"]);
  assert.match(err.message, /outcome/);
  assert.deepEqual((err.details as { field: string }[]).map((d) => d.field), ["outcome"]);
  const bad = await caught(client.appendEvents(started.trajectory_id, [{ type: "thought" as "user_input", content: { text: "x" } }]));
  assert.ok(bad instanceof InvalidRequest && bad.status === 422);
  assert.deepEqual((bad.details as { field: string }[]).map((d) => d.field), ["events.0.type"]);
});

test("409: events after finalize are a Conflict", async () => {
  const { client } = await newTenant();
  const started = await client.startTrajectory({ agent_id: "a", goal: "g" });
  await client.finalize(started.trajectory_id, "failure");
  const err = await caught(client.appendEvents(started.trajectory_id, [{ type: "user_input", content: { text: "late" } }]));
  assert.ok(err instanceof Conflict && err.status === 409);
});

test("an unreachable service is a TransportError after the retries, and a refused connection is retried for any call", async () => {
  const server = new ScriptedServer(() => ({ status: 200 }));
  const url = await server.start();
  await server.stop(); // nothing listens on this port any more
  let attempts = 0;
  const client = new Hindsight({
    url, apiKey: "hs_x", adminKey: "hs_admin", retry: new RetryPolicy({ maxAttempts: 3, baseDelayMs: 1, maxDelayMs: 2 }),
    fetch: (input, init) => { attempts++; return fetch(input, init); },
  });
  const err = await caught(client.createTenant("never-sent"));
  assert.ok(err instanceof TransportError && !(err instanceof APIError));
  assert.match(err.message, /ECONNREFUSED/);
  assert.equal(attempts, 3, "nothing was sent, so even a call that is not idempotent is retried");
});

test("an answer that takes longer than the timeout is a TransportError naming the timeout", async () => {
  const server = new ScriptedServer(() => ({ status: 200, body: {}, delayMs: 1000 }));
  const url = await server.start();
  try {
    const client = new Hindsight({ url, apiKey: "hs_x", timeoutMs: 100, retry: new RetryPolicy({ maxAttempts: 1 }) });
    const started = Date.now();
    const err = await caught(client.stats());
    assert.ok(err instanceof TransportError, String(err));
    assert.match(err.message, /no answer within 100 ms/);
    assert.ok(Date.now() - started < 900);
  } finally {
    await server.stop();
  }
});
