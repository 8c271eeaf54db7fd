/**
 * The loop the SDK exists for, against the real server: a run is recorded through the recorder,
 * finalized, reviewed into a lesson; recall and advise give the lesson back; a recall id attached
 * to a later run credits the lesson it served.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { type AdviseResult, type Hindsight, TrajectoryRecorder, adviceFor, withAdvice } from "hindsight-xp";
import { eventually, newTenant } from "./support.js";

async function getWeather(args: { date: string; city?: string }): Promise<string> {
  if (!args.city) throw new Error("MissingParameter: city is required");
  return `${args.date} in ${args.city}: rain, 14°C`;
}

const CHARGE_ADVICE = "`charge` takes `amount` in integer cents (1999 for 19.99).";

async function chargeLesson(client: Hindsight, agentId: string): Promise<string> {
  const written = await client.writeExperience({
    situation: "Charging a customer through the billing API", advice: CHARGE_ADVICE, tools: ["charge"], agent_id: agentId,
  });
  return written.experience_id;
}

test("a failed tool call then a fixed one is reviewed into a lesson that recall and advise give back", async () => {
  const { client } = await newTenant();
  const question = "Will it rain tomorrow in Lyon?";
  assert.equal(await adviceFor(question, { client, agent_id: "weather-bot", tools: ["get_weather"] }), "");

  const rec = new TrajectoryRecorder(client, { agent_id: "weather-bot", goal: question, task_type: "query" });
  const answer = await rec.run(async () => {
    rec.userInput(question);
    const weather = rec.wrapTool("get_weather", getWeather);
    await assert.rejects(weather({ date: "tomorrow" }), /MissingParameter/); // thrown on unchanged
    rec.reasoning("The call needs a city; the user named Lyon.");
    return weather({ date: "tomorrow", city: "Lyon" });
  });
  assert.equal(answer, "tomorrow in Lyon: rain, 14°C");
  assert.equal(rec.finalized, true);
  assert.deepEqual(rec.stats, { recorded: 4, sent: 4, dropped: 0, failed: 0, pending: 0 });

  const reviewed = await client.waitForReview(rec.trajectoryId, { timeoutMs: 30_000 });
  assert.equal(reviewed.status, "reviewed");
  assert.equal(reviewed.outcome, "success");
  assert.deepEqual(reviewed.tools, ["get_weather"], "wrapped tools are the trajectory's tools");
  assert.equal(reviewed.experience_ids?.length, 1);
  const lessonId = reviewed.experience_ids![0]!;

  const graph = await client.getTrajectoryEvents(rec.trajectoryId);
  const calls = graph.events.filter((e) => e.type === "tool_call");
  assert.deepEqual(calls.map((e) => [e.content?.["status"], e.label]), [["error", "failed"], ["ok", "recovery"]]);
  assert.equal(calls[0]!.content?.["error"], "Error: MissingParameter: city is required");
  assert.deepEqual(calls[1]!.content?.["params"], { date: "tomorrow", city: "Lyon" });
  assert.equal(typeof calls[1]!.content?.["duration_ms"], "number");
  assert.deepEqual(graph.contrasts.map((c) => [c.failed, c.worked, c.kind]), [[calls[0]!.event_id, calls[1]!.event_id, "param"]]);

  const recalled = await client.recall("Will it rain tomorrow in Paris?", { agent_id: "weather-bot", tools: ["get_weather"] });
  assert.deepEqual(recalled.hits.map((h) => h.experience.experience_id), [lessonId]);
  assert.match(recalled.advice, /^<hindsight>[\s\S]*set `city`[\s\S]*<\/hindsight>$/);
  assert.match(recalled.recall_id, /^rc_/);
  const prompt = withAdvice("You are a weather assistant.", await adviceFor("Rain in Paris tomorrow?", {
    client, agent_id: "weather-bot", tools: ["get_weather"],
  }));
  assert.match(prompt, /^You are a weather assistant\.\n\n<hindsight>/);

  const warned = await client.advise("get_weather", { date: "tomorrow" }, { agent_id: "weather-bot", goal: "Rain tomorrow?" });
  assert.deepEqual(warned.warnings.map((w) => w.experience_id), [lessonId]);
  assert.match(warned.warnings[0]!.message, /`city` is missing/);
  assert.match(warned.warnings[0]!.fix, /set `city`/);
  const fine = await client.advise("get_weather", { date: "tomorrow", city: "Paris" }, { agent_id: "weather-bot" });
  assert.deepEqual([fine.warnings, fine.hits, fine.advice], [[], [], ""]);

  // another agent of the tenant does not see weather-bot's lesson
  const other = await client.recall("Will it rain tomorrow in Paris?", { agent_id: "travel-bot", tools: ["get_weather"] });
  assert.deepEqual(other.hits, []);
});

test("with advise on, the recorder asks before each wrapped call, and the review credits the lesson it served", async () => {
  const { client } = await newTenant();
  const lessonId = await chargeLesson(client, "shop-bot");
  const seen: [string, AdviseResult][] = [];
  const charged: unknown[] = [];
  const rec = new TrajectoryRecorder(client, {
    agent_id: "shop-bot", goal: "Charge the order", advise: true, onAdvice: (tool, result) => seen.push([tool, result]),
  });
  await rec.run(async () => {
    const charge = rec.wrapTool("charge", async (amount: number, currency = "EUR") => {
      charged.push([amount, currency]);
      return "ok";
    }, { paramNames: ["amount", "currency"] });
    await charge(19.99); // warned before the call, and made anyway
    assert.deepEqual(rec.lastAdvice?.warnings.map((w) => w.experience_id), [lessonId]);
    assert.match(rec.lastAdvice!.warnings[0]!.message, /decimal number/);
    await charge(1999); // nothing to say
  });
  assert.deepEqual(charged, [[19.99, "EUR"], [1999, "EUR"]]);
  assert.deepEqual(seen.map(([tool, r]) => [tool, r.warnings.length, r.hits.length]), [["charge", 1, 1], ["charge", 0, 0]]);

  const reviewed = await client.waitForReview(rec.trajectoryId, { timeoutMs: 30_000 });
  const credit = reviewed.review?.["credit"] as { ignored: string[]; adopted: string[] };
  assert.deepEqual(credit.ignored, [lessonId], "the call right after the warning broke it");
  const lesson = await eventually(() => client.getExperience(lessonId), (e) => (e.served ?? 0) >= 1);
  assert.deepEqual([lesson.served, lesson.adopted, lesson.success_when_ignored], [1, 0, 1]);
  const graph = await client.getTrajectoryEvents(rec.trajectoryId);
  assert.deepEqual(graph.events.map((e) => e.type), ["recall", "tool_call", "tool_call"], "only the advise that served a lesson is attached");
});

test("a recall through the recorder attaches its id, and following the lesson credits it as adopted", async () => {
  const { client } = await newTenant();
  const lessonId = await chargeLesson(client, "shop-bot");
  const rec = new TrajectoryRecorder(client, { agent_id: "shop-bot", goal: "Charge the order" });
  await rec.run(async () => {
    const recalled = await rec.recall("Charge the customer for the order", { tools: ["charge"] });
    assert.deepEqual(recalled.hits.map((h) => h.experience.experience_id), [lessonId]);
    rec.toolCall("charge", { amount: 1250 }, { result: "ok" });
  });
  const reviewed = await client.waitForReview(rec.trajectoryId, { timeoutMs: 30_000 });
  assert.deepEqual((reviewed.review?.["credit"] as { adopted: string[] }).adopted, [lessonId]);
  const lesson = await eventually(() => client.getExperience(lessonId), (e) => (e.served ?? 0) >= 1);
  assert.deepEqual([lesson.served, lesson.adopted, lesson.success_when_adopted], [1, 1, 1]);
});
