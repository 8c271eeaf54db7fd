/** Trajectories and lessons through the client's own calls, against the real server. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { Conflict, MAX_EVENTS_PER_CALL, NotFound } from "hindsight-xp";
import { newTenant } from "./support.js";

test("a trajectory started, appended to twice with the same ids, and finalized stores each event once", async () => {
  const { client } = await newTenant();
  const started = await client.startTrajectory({ agent_id: "ops-bot", goal: "Restart the web service", tags: ["ops"] });
  assert.match(started.trajectory_id, /^traj_[0-9a-f]{32}$/);
  assert.equal(started.status, "open");
  const again = await client.startTrajectory({ agent_id: "ops-bot", goal: "Restart the web service", trajectory_id: started.trajectory_id });
  assert.equal(again.trajectory_id, started.trajectory_id, "a repeated id answers the existing trajectory");

  const events = [
    { type: "user_input" as const, event_id: "u1", content: { text: "restart web" }, timestamp: new Date() },
    { type: "tool_call" as const, event_id: "c1", content: { tool: "systemctl", params: { unit: "web" }, result: "done" } },
  ];
  assert.deepEqual(await client.appendEvents(started.trajectory_id, events), { accepted: 2, duplicates: 0 });
  assert.deepEqual(await client.appendEvents(started.trajectory_id, events), { accepted: 0, duplicates: 2 });
  const noIds = await client.appendEvents(started.trajectory_id, [{ type: "feedback", content: { text: "thanks", sentiment: "positive" } }]);
  assert.deepEqual(noIds, { accepted: 1, duplicates: 0 }, "the SDK gave the event an id");
  assert.throws(() => client.appendEvents(started.trajectory_id, []), RangeError);
  const tooMany = Array.from({ length: MAX_EVENTS_PER_CALL + 1 }, () => ({ type: "user_input" as const, content: { text: "x" } }));
  assert.throws(() => client.appendEvents(started.trajectory_id, tooMany), /at most 100 events/);

  const finalized = await client.finalize(started.trajectory_id, "success", "restarted");
  assert.equal(finalized.outcome, "success");
  await client.finalize(started.trajectory_id, "success"); // a repeat is harmless
  const stored = await client.getTrajectory(started.trajectory_id);
  assert.equal(stored.event_count, 3);
  assert.deepEqual(stored.tags, ["ops"]);
  await assert.rejects(client.appendEvents(started.trajectory_id, [{ type: "user_input", content: { text: "late" } }]), Conflict);
});

test("lessons are written once per id, listed page by page, forgotten, and restored only when archived", async () => {
  const { client } = await newTenant();
  const ids: string[] = [];
  for (let i = 0; i < 5; i++) {
    const written = await client.writeExperience({
      situation: `Deploying service ${i}`, lesson: `Service ${i} needs its migrations run first.`, agent_id: "ops-bot", tags: ["deploy"],
    });
    ids.push(written.experience_id);
  }
  const repeat = await client.writeExperience({ experience_id: ids[0]!, situation: "Deploying service 0", lesson: "other text" });
  assert.equal(repeat.lesson, "Service 0 needs its migrations run first.", "a repeated id answers the stored lesson");

  const first = await client.listExperiences({ agent_id: "ops-bot", limit: 2 });
  assert.equal(first.items.length, 2);
  assert.ok(first.cursor);
  const all: string[] = [];
  for await (const experience of client.iterExperiences({ agent_id: "ops-bot", limit: 2 })) all.push(experience.experience_id);
  assert.deepEqual([...all].sort(), [...ids].sort());

  const fetched = await client.getExperience(ids[1]!);
  assert.deepEqual([fetched.situation, fetched.tags, fetched.source], ["Deploying service 1", ["deploy"], "human"]);

  let archived = fetched;
  for (let i = 0; i < 8 && archived.status === "active"; i++) archived = await client.feedback(ids[1]!, "failed");
  assert.equal(archived.status, "archived");
  assert.equal((await client.restore(ids[1]!)).status, "active");

  const forgotten = await client.forget(ids[2]!, "wrong");
  assert.equal(forgotten.status, "forgotten");
  await assert.rejects(client.restore(ids[2]!), (err: unknown) => err instanceof Conflict && err.status === 409);
  const active = await client.listExperiences({ agent_id: "ops-bot", status: "active", limit: 50 });
  assert.ok(!active.items.some((e) => e.experience_id === ids[2]), "a forgotten lesson is not active");
});

test("ids holding '/' stay one path segment", async () => {
  const { client } = await newTenant();
  const started = await client.startTrajectory({ agent_id: "a", goal: "g", trajectory_id: "run/2026/1" });
  assert.equal((await client.getTrajectory("run/2026/1")).trajectory_id, started.trajectory_id);
  const written = await client.writeExperience({ experience_id: "lesson/a+b", situation: "s", lesson: "l" });
  assert.equal((await client.getExperience("lesson/a+b")).experience_id, written.experience_id);
});

test("a correction written with supersedes archives the lesson it names and chains the two; auto replaces the flagged ones", async () => {
  const { client } = await newTenant();
  const old = await client.writeExperience({
    situation: "Scheduling a production deploy", agent_id: "ops", advice: "Deploy to production on Friday afternoons, when traffic is lowest.",
  });
  const flagged = await client.writeExperience({
    situation: "Scheduling a production deploy", agent_id: "ops", advice: "Deploy Monday to Thursday mornings only; a Friday deploy left an outage unattended.",
  });
  assert.deepEqual(flagged.correction_of, [old.experience_id], "a probable correction is named, not applied");
  assert.equal((await client.getExperience(old.experience_id)).status, "active");

  await client.forget(flagged.experience_id, "written again below with supersedes");
  const fixed = await client.writeExperience({
    situation: "Scheduling a production deploy", agent_id: "ops", supersedes: [old.experience_id],
    advice: "Deploy Monday to Thursday mornings only; a Friday deploy left an outage unattended over the weekend.",
  });
  assert.equal(fixed.supersedes, old.experience_id);
  assert.equal(fixed.version, 2);
  assert.deepEqual(fixed.correction_of, []);
  const archived = await client.getExperience(old.experience_id);
  assert.deepEqual([archived.status, archived.superseded_by, archived.status_reason], ["archived", fixed.experience_id, `superseded by ${fixed.experience_id}`]);

  await assert.rejects(
    client.writeExperience({ situation: "Scheduling a deploy", advice: "Any day.", agent_id: "someone-else", supersedes: [fixed.experience_id] }),
    NotFound, "another agent's lesson is not this scope's to replace",
  );
  await assert.rejects(
    client.writeExperience({ situation: "Scheduling a deploy", advice: "Any day.", agent_id: "ops", supersedes: [flagged.experience_id] }),
    Conflict, "a forgotten lesson cannot be replaced",
  );
  assert.throws(() => client.writeExperience({ situation: "x", advice: "y", supersedes: "an-id" as "auto" }), TypeError);

  const auto = await client.writeExperience({
    situation: "Scheduling a production deploy", agent_id: "ops", supersedes: "auto",
    advice: "Deploy Tuesday to Thursday mornings; Mondays follow the weekend's backlog.",
  });
  assert.equal(auto.supersedes, fixed.experience_id);
  assert.equal((await client.getExperience(fixed.experience_id)).superseded_by, auto.experience_id);
});

test("listAgents names the agents whose lessons a recall can scope to, most lessons first", async () => {
  const { client } = await newTenant();
  await client.writeExperience({ situation: "Deploying the web service", lesson: "Drain the node first.", agent_id: "ops-bot" });
  await client.writeExperience({ situation: "Restarting the queue", lesson: "Pause the consumers first.", agent_id: "ops-bot" });
  await client.writeExperience({ situation: "Answering a refund request", lesson: "Check the order's state first.", agent_id: "support-bot" });
  await client.writeExperience({ situation: "Any task", lesson: "Read the runbook." });
  const listed = await client.listAgents();
  assert.deepEqual(listed.agents, [{ agent_id: "ops-bot", active_lessons: 2 }, { agent_id: "support-bot", active_lessons: 1 }]);
  assert.equal(listed.shared_lessons, 1);
});
