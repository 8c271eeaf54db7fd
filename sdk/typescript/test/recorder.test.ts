/**
 * The recorder: what a wrapped tool records, batching, and an agent that never waits on (or fails
 * because of) the service. Against the real server, and a scripted one for a service that fails.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { Hindsight, RetryPolicy, TrajectoryRecorder, TransportError, snapshot } from "hindsight-xp";
import { FAST_RETRY, ScriptedServer, json, newTenant, serverUnderTest } from "./support.js";

test("wrapped tools record params, results, errors and latency, and return or throw what the tool did", async () => {
  const { client } = await newTenant();
  const rec = new TrajectoryRecorder(client, { agent_id: "files-bot", goal: "Tidy the folder", tools: ["ls"] });
  const tools = rec.wrapTools({
    ls: async (args: { path: string }) => ["a.txt", "b.txt"],
    mv: (src: string, dst: string) => `${src} -> ${dst}`,
    rm: async (args: { path: string }): Promise<string> => {
      throw new TypeError(`${args.path} is a directory`);
    },
    stat: async (args: { path: string }) => ({ ok: false, reason: "no such file" }),
  }, { isError: (result) => (result as { ok?: boolean }).ok === false && "stat: no such file" });
  const slow = rec.wrapTool("sleep", (ms: number) => new Promise<string>((r) => setTimeout(() => r("slept"), ms)), { paramNames: ["ms"] });

  assert.deepEqual(await tools.ls({ path: "/tmp" }), ["a.txt", "b.txt"]);
  assert.equal(await tools.mv("a.txt", "c.txt"), "a.txt -> c.txt");
  await assert.rejects(tools.rm({ path: "/home" }), { name: "TypeError", message: "/home is a directory" });
  assert.deepEqual(await tools.stat({ path: "x" }), { ok: false, reason: "no such file" });
  assert.equal(await slow(30), "slept");
  assert.equal(await rec.close(), true);

  const graph = await client.getTrajectoryEvents(rec.trajectoryId);
  const content = graph.events.map((e) => e.content!);
  assert.deepEqual(content.map((c) => [c["tool"], c["status"], c["params"]]), [
    ["ls", "ok", { path: "/tmp" }],
    ["mv", "ok", { args: ["a.txt", "c.txt"] }],
    ["rm", "error", { path: "/home" }],
    ["stat", "error", { path: "x" }],
    ["sleep", "ok", { ms: 30 }],
  ]);
  assert.deepEqual(content[0]!["result"], ["a.txt", "b.txt"]);
  assert.equal(content[2]!["error"], "TypeError: /home is a directory");
  assert.equal(content[3]!["error"], "stat: no such file");
  assert.ok((content[4]!["duration_ms"] as number) >= 25, `sleep took ${content[4]!["duration_ms"]} ms`);
  assert.deepEqual(content[0]!["available_tools"], ["ls", "mv", "rm", "stat", "sleep"]);
  const trajectory = await client.getTrajectory(rec.trajectoryId);
  assert.deepEqual(trajectory.tools, ["ls", "mv", "rm", "stat", "sleep"]);
});

test("a function that throws finalizes the run as failure, with the error as feedback, and the error goes on", async () => {
  const { client } = await newTenant();
  const rec = new TrajectoryRecorder(client, { agent_id: "a", goal: "Do the thing" });
  await assert.rejects(rec.run(async () => {
    rec.userInput("do it");
    throw new RangeError("out of budget");
  }), RangeError);
  const stored = await client.getTrajectory(rec.trajectoryId);
  assert.equal(stored.outcome, "failure");
  assert.equal(stored.event_count, 1);

  const overridden = new TrajectoryRecorder(client, { agent_id: "a", goal: "Do the other thing" });
  await overridden.run(async (r) => {
    r.toolCall("search", { q: "x" }, { result: [] });
    r.outcome = "partial";
  });
  assert.equal((await client.getTrajectory(overridden.trajectoryId)).outcome, "partial");
  assert.equal(await overridden.close(), true, "a second close answers the first one's result");
});

test("events go out in batches of at most 100, in order, all of them", async () => {
  const { apiKey } = await newTenant();
  let batches: number[] = [];
  const counting = new Hindsight({ url: serverUnderTest().url, apiKey, retry: FAST_RETRY,
    fetch: async (input, init) => {
      if (init.method === "POST" && String(input).endsWith("/events")) batches.push(JSON.parse(String(init.body)).events.length);
      return fetch(input, init);
    } });
  const rec = new TrajectoryRecorder(counting, { agent_id: "a", goal: "Count", flushIntervalMs: 50 });
  for (let i = 0; i < 250; i++) rec.stateChange("i", i);
  assert.equal(await rec.flush(10_000), true);
  assert.deepEqual(batches, [100, 100, 50]);
  batches = [];
  rec.feedback("done", "positive");
  assert.equal(await rec.close(), true);
  assert.deepEqual(batches, [1]);
  const graph = await counting.getTrajectoryEvents(rec.trajectoryId);
  assert.equal(graph.events.length, 251);
  assert.deepEqual(graph.events.slice(0, 250).map((e) => e.content?.["value"]), Array.from({ length: 250 }, (_, i) => i));
});

test("an unreachable service never holds the agent up: tools run, close gives up at its deadline", async () => {
  const client = new Hindsight({ url: "http://127.0.0.1:9", apiKey: "hs_x", retry: new RetryPolicy({ maxAttempts: 1 }) });
  const rec = new TrajectoryRecorder(client, {
    agent_id: "a", goal: "g", advise: true, adviseTimeoutMs: 200, closeTimeoutMs: 300, flushIntervalMs: 10,
  });
  const calls: number[] = [];
  const tool = rec.wrapTool("t", async (x: number) => { calls.push(x); return "done"; }, { paramNames: ["x"] });
  const started = performance.now();
  assert.equal(await tool(1), "done");
  assert.ok(performance.now() - started < 1000);
  assert.equal(rec.lastAdvice, null);
  assert.ok(rec.adviseErrors[0] instanceof TransportError);
  const closing = performance.now();
  assert.equal(await rec.close(), false);
  assert.ok(performance.now() - closing < 2000, "close keeps to its deadline");
  assert.deepEqual(calls, [1]);
  assert.ok(rec.errors.some((e) => e instanceof TransportError));
  assert.equal(rec.finalized, false);
});

test("a rejected key is noted once, and the recorder stops asking", async () => {
  const client = new Hindsight({ url: serverUnderTest().url, apiKey: "hs_revoked", retry: FAST_RETRY });
  const errors: unknown[] = [];
  const rec = new TrajectoryRecorder(client, { agent_id: "a", goal: "g", flushIntervalMs: 10, onError: (e) => errors.push(e) });
  for (let i = 0; i < 3; i++) {
    rec.userInput(`turn ${i}`);
    await rec.flush();
  }
  assert.equal(await rec.close(), false);
  assert.equal(errors.length, 1, "one 401, not one per batch");
  assert.deepEqual(rec.stats, { recorded: 3, sent: 0, dropped: 0, failed: 3, pending: 0 });
});

test("a service that fails for a while gets every event once it is back, and one bad event costs only itself", async () => {
  const eventIds: string[] = [];
  let eventCalls = 0;
  const server = new ScriptedServer((req) => {
    if (req.path === "/v1/trajectories") return { status: 201, body: { trajectory_id: json(req).trajectory_id, status: "open" } };
    if (req.path.endsWith("/events")) {
      eventCalls++;
      const events = json(req).events as { event_id: string; content: { text: string } }[];
      if (eventCalls <= 3) return { status: 503, headers: { "Retry-After": "0" }, body: { error: { code: "unavailable", message: "down" } } };
      if (events.some((e) => e.content.text === "bad")) return { status: 422, body: { error: { code: "invalid_input", message: "bad event" } } };
      eventIds.push(...events.map((e) => e.event_id));
      return { status: 202, body: { accepted: events.length, duplicates: 0 } };
    }
    return { status: 202, body: { trajectory_id: "t", status: "finalized" } };
  });
  const url = await server.start();
  try {
    const client = new Hindsight({ url, apiKey: "hs_k", retry: new RetryPolicy({ maxAttempts: 2, baseDelayMs: 1, maxDelayMs: 2 }) });
    const rec = new TrajectoryRecorder(client, { agent_id: "a", goal: "g", flushIntervalMs: 10 });
    const ids = ["one", "bad", "three"].map((text) => rec.userInput(text));
    assert.equal(await rec.close(), false, "one event was refused");
    assert.deepEqual(eventIds, [ids[0], ids[2]]);
    assert.deepEqual(rec.stats, { recorded: 3, sent: 2, dropped: 0, failed: 1, pending: 0 });
    assert.equal(rec.finalized, true);
    assert.equal(server.seen.filter((r) => r.path.endsWith("/finalize")).length, 1);
  } finally {
    await server.stop();
  }
});

test("a full buffer drops and counts instead of growing", async () => {
  const client = new Hindsight({ url: "http://127.0.0.1:9", apiKey: "hs_x", retry: new RetryPolicy({ maxAttempts: 1 }) });
  const rec = new TrajectoryRecorder(client, { agent_id: "a", goal: "g", maxBuffer: 5, flushIntervalMs: 60_000, closeTimeoutMs: 100 });
  for (let i = 0; i < 8; i++) rec.userInput(String(i));
  assert.deepEqual(rec.stats, { recorded: 5, sent: 0, dropped: 3, failed: 0, pending: 5 });
  await rec.close(null, null, { finalize: false });
});

test("snapshots are JSON-safe and bounded", () => {
  const cyclic: Record<string, unknown> = { name: "loop" };
  cyclic["self"] = cyclic;
  const shot = snapshot({
    text: "x".repeat(2500), n: Number.NaN, big: 10n, when: new Date(0), err: new Error("boom"), fn: function named() {},
    list: Array.from({ length: 60 }, (_, i) => i), map: new Map([["k", 1]]), bytes: new Uint8Array(3), cyclic, none: undefined,
  }) as Record<string, unknown>;
  assert.equal((shot["text"] as string).length, 2000 + "…[500 more chars]".length);
  assert.deepEqual([shot["n"], shot["big"], shot["when"], shot["err"], shot["fn"]], ["NaN", "10", "1970-01-01T00:00:00.000Z", "Error: boom", "<function named>"]);
  assert.equal((shot["list"] as unknown[]).length, 51);
  assert.equal((shot["list"] as unknown[])[50], "…10 more items");
  assert.deepEqual([shot["map"], shot["bytes"], shot["none"]], [{ k: 1 }, "<3 bytes>", null]);
  assert.deepEqual(shot["cyclic"], { name: "loop", self: "<cycle>" });
  JSON.stringify(shot);
});
