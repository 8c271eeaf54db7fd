/** Tenants, keys, maintenance and the API's own description, against the real server. */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { test } from "node:test";
import { Hindsight, NO_RETRY, Unauthorized } from "hindsight-xp";
import { FAST_RETRY, adminClient, newTenant, serverUnderTest } from "./support.js";

// Every operation of the OpenAPI document, and the client method that calls it.
const ROUTES: Record<string, keyof Hindsight> = {
  "GET /v1/health": "health",
  "GET /v1/openapi.json": "openapi",
  "POST /v1/tenants": "createTenant",
  "GET /v1/tenants": "listTenants",
  "POST /v1/tenants/{tenant_id}/keys": "rotateKey",
  "POST /v1/tenants/{tenant_id}/exports": "startTenantExport",
  "GET /v1/tenants/{tenant_id}/exports/{export_id}": "getTenantExport",
  "GET /v1/tenants/{tenant_id}/exports/{export_id}/data": "getTenantExportPart",
  "DELETE /v1/tenants/{tenant_id}": "deleteTenant",
  "GET /v1/tenants/{tenant_id}/deletion": "getTenantDeletion",

  "POST /v1/tenants/{tenant_id}/retention": "setRetention",
  "POST /v1/trajectories": "startTrajectory",
  "GET /v1/trajectories/{trajectory_id}": "getTrajectory",
  "GET /v1/trajectories/{trajectory_id}/events": "getTrajectoryEvents",
  "POST /v1/trajectories/{trajectory_id}/events": "appendEvents",
  "POST /v1/trajectories/{trajectory_id}/finalize": "finalize",
  "POST /v1/experiences": "writeExperience",
  "GET /v1/experiences": "listExperiences",
  "GET /v1/experiences/{experience_id}": "getExperience",
  "DELETE /v1/experiences/{experience_id}": "forget",
  "POST /v1/experiences/{experience_id}/restore": "restore",
  "POST /v1/experiences/{experience_id}/feedback": "feedback",
  "POST /v1/recall": "recall",
  "POST /v1/advise": "advise",
  "POST /v1/maintenance/reindex": "reindex",
  "GET /v1/stats": "stats",
  "GET /v1/agents": "listAgents",
  "POST /v1/maintenance/decay": "decay",
  "GET /v1/maintenance/failed-reviews": "failedReviews",
  "POST /v1/maintenance/redrive": "redrive",
  "POST /v1/otlp/v1/traces": "exportTraces",
};
// A page for people, not an API call.
const NOT_FOR_CLIENTS = new Set(["GET /v1/docs"]);

test("the client has a method for every operation the server's OpenAPI document lists", async () => {
  const client = new Hindsight({ url: serverUnderTest().url, apiKey: null, adminKey: null });
  const health = await client.health();
  assert.equal(health.status, "ok");
  assert.ok(health.backend.length > 0);
  const doc = (await client.openapi()) as { paths: Record<string, Record<string, unknown>> };
  const operations = Object.entries(doc.paths).flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`));
  assert.ok(operations.length >= 20, `the document lists ${operations.length} operations`);
  const missing = operations.filter((op) => !NOT_FOR_CLIENTS.has(op) && !(op in ROUTES));
  assert.deepEqual(missing, []);
  for (const method of Object.values(ROUTES)) {
    assert.equal(typeof Hindsight.prototype[method], "function", `Hindsight.${String(method)}`);
  }
});

test("an admin creates a tenant whose key works, lists it, and a rotated key revokes the old one", async () => {
  const admin = adminClient();
  const name = `ts-admin-${randomUUID().slice(0, 8)}`;
  const created = await admin.createTenant(name);
  assert.equal(created.name, name);
  assert.match(created.api_key, /^hs_/);
  const tenant = admin.withApiKey(created.api_key);
  assert.equal((await tenant.stats()).experiences["active"] ?? 0, 0);

  const listed = await admin.listTenants({ page_size: 1 }); // one tenant a page: the cursor is followed
  assert.deepEqual(listed.filter((t) => t.tenant_id === created.tenant_id).map((t) => t.name), [name]);

  assert.equal((await admin.setRetention(created.tenant_id, 7)).event_retention_days, 7);
  assert.equal((await admin.setRetention(created.tenant_id, null)).event_retention_days ?? null, null);

  const rotated = await admin.rotateKey(created.tenant_id);
  assert.equal(rotated.tenant_id, created.tenant_id);
  assert.notEqual(rotated.api_key, created.api_key);
  await admin.withApiKey(rotated.api_key).stats();
  await assert.rejects(tenant.stats(), (err: unknown) => err instanceof Unauthorized && err.status === 401);

  const kept = await admin.rotateKey(created.tenant_id, { revoke_old: false });
  await admin.withApiKey(kept.api_key).stats();
  await admin.withApiKey(rotated.api_key).stats(); // not revoked this time
});

test("the admin key reads no tenant's data, and a tenant key manages no tenants", async () => {
  const { url, adminKey } = serverUnderTest();
  const { apiKey } = await newTenant();
  const wrongKind = new Hindsight({ url, apiKey: adminKey, retry: NO_RETRY });
  await assert.rejects(wrongKind.stats(), (err: unknown) => err instanceof Unauthorized && /tenant key/.test(err.message));
  const tenantAsAdmin = new Hindsight({ url, adminKey: apiKey, retry: NO_RETRY });
  await assert.rejects(tenantAsAdmin.listTenants(), Unauthorized);
});

test("maintenance: reindex and stats with a tenant key; decay, failed reviews and redrive with the admin key", async () => {
  const admin = adminClient();
  const { tenantId, client } = await newTenant();
  const written = await client.writeExperience({
    situation: "Charging a customer through the billing API", advice: "Pass `amount` in integer cents.", tools: ["charge"],
  });
  assert.deepEqual(await client.reindex(), { reindexed: 1, cursor: null });
  const stats = await client.stats();
  assert.equal(stats.experiences["active"], 1);
  assert.ok(stats.freshness_histogram.length > 0);

  const dry = await admin.decay({ tenant_id: tenantId, dry_run: true, as_of: new Date(Date.now() + 365 * 86_400_000) });
  assert.equal(dry.dry_run, true);
  assert.ok(dry.archived_ids.includes(written.experience_id), "a year on, an unused lesson would be archived");
  assert.equal((await client.getExperience(written.experience_id)).status, "active", "a dry run writes nothing");
  const now = await admin.decay({ tenant_id: tenantId });
  assert.deepEqual([now.dry_run, now.archived], [false, 0]);

  assert.deepEqual(await admin.failedReviews({ tenant_id: tenantId }), []);
  assert.equal(await admin.redrive({ tenant_id: tenantId }), 0);
  assert.equal(await admin.redrive({ trajectory_ids: ["traj_none"] }), 0);
});

test("a client without the key a call needs says so before sending anything", async () => {
  let sent = 0;
  const client = new Hindsight({
    url: serverUnderTest().url, apiKey: null, adminKey: null, retry: FAST_RETRY,
    fetch: (input, init) => { sent++; return fetch(input, init); },
  });
  await assert.rejects(client.stats(), { name: "ConfigurationError", message: /HINDSIGHT_API_KEY/ });
  await assert.rejects(client.createTenant("x"), { name: "ConfigurationError", message: /HINDSIGHT_ADMIN_KEY/ });
  assert.equal(sent, 0);
});

async function until<T>(read: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
  for (let i = 0; i < 200; i++) {
    const value = await read();
    if (done(value)) return value;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error("the job did not finish in 20 s");
}

test("an admin exports a tenant as JSON Lines, then deletes it: its key is refused at once", async () => {
  const admin = adminClient();
  const created = await admin.createTenant(`ts-gone-${randomUUID().slice(0, 8)}`);
  const tenant = admin.withApiKey(created.api_key).withRetry(NO_RETRY);
  await tenant.writeExperience({ situation: "a TypeScript client exports", advice: "Read the parts in order." });

  const started = await admin.startTenantExport(created.tenant_id);
  assert.equal(started.tenant_id, created.tenant_id);
  const done = await until(() => admin.getTenantExport(created.tenant_id, started.export_id), (e) => e.state === "done");
  assert.equal(done.counts["experiences"], 1);
  const lines = (await admin.getTenantExportPart(created.tenant_id, started.export_id, 1)).trim().split("\n").map((l) => JSON.parse(l));
  assert.deepEqual(lines[0], { type: "tenant", data: { tenant_id: created.tenant_id, name: created.name, created_at: lines[0].data.created_at } });
  assert.ok(lines.some((l) => l.type === "experience" && l.data.advice === "Read the parts in order."));

  const deletion = await admin.deleteTenant(created.tenant_id);
  assert.equal(deletion.keys_revoked, 1);
  await assert.rejects(tenant.stats(), (err: unknown) => err instanceof Unauthorized && err.status === 401);
  const finished = await until(() => admin.getTenantDeletion(created.tenant_id), (d) => d.state === "done");
  assert.ok((finished.deleted["items"] ?? 0) > 0);
  assert.ok(!(await admin.listTenants()).some((t) => t.tenant_id === created.tenant_id));
});

test("the tenant listing comes a page at a time, each tenant once", async () => {
  const admin = adminClient();
  await newTenant("ts-page");
  await newTenant("ts-page");
  const first = await admin.listTenantsPage({ limit: 1 });
  assert.equal(first.tenants.length, 1);
  assert.ok(first.cursor, "a page of one, of two tenants or more, names the next");
  const ids: string[] = [];
  for await (const tenant of admin.iterTenants({ page_size: 1 })) ids.push(tenant.tenant_id);
  assert.equal(new Set(ids).size, ids.length);
  assert.deepEqual(ids, (await admin.listTenantsPage({ limit: 1000 })).tenants.map((t) => t.tenant_id));
  assert.equal(ids[0], first.tenants[0]!.tenant_id);
});
