/**
 * A weather agent that learns from its own mistake, offline: an ordinary agent loop whose model is
 * scripted (a rule-based stand-in for an LLM, no key), recorded by hindsight-xp.
 *
 * - run 1: nothing recalled; the model calls `get_weather` without a city, which fails; it asks the
 *   user, then succeeds. The run is recorded, finalized and reviewed by the service.
 * - run 2: the recalled lesson goes into the system prompt; the model asks for the city first.
 * - run 3: a model that ignores its system prompt. Before each call the loop asks hindsight
 *   (`advise`); the call that failed before is held back and the warning handed to the model.
 *
 *     make run                                                # the service, in another terminal
 *     cd examples/typescript && npm install && npm run build && npm start
 *
 * Needs HINDSIGHT_URL (default http://127.0.0.1:8000) and HINDSIGHT_API_KEY; without a key it
 * creates a tenant with HINDSIGHT_ADMIN_KEY, or the admin key `make run` left in .hindsight/admin_key.
 */
import { existsSync, readFileSync } from "node:fs";
import { randomUUID } from "node:crypto";
import { fileURLToPath } from "node:url";
import { Hindsight, HindsightError, TrajectoryRecorder, TransportError, withAdvice } from "hindsight-xp";

const TOOLS = ["get_weather", "ask_user"];
const SYSTEM = "You are a weather assistant. Use the tools to answer.";

// --- the tools (what the agent can do) ---------------------------------------------------------

async function getWeather(args: { date: string; city?: string }): Promise<string> {
  if (!args.city) throw new Error("MissingParameter: city is required");
  return `${args.date} in ${args.city}: rain, 14°C`;
}

async function askUser(_args: { question: string }): Promise<string> {
  return "Lyon"; // the simulated user lives in Lyon
}

// --- the scripted model (what a real LLM would decide) -----------------------------------------

type Message = { role: "system" | "user" | "tool"; content: string; name?: string };
type Action =
  | { tool: "get_weather"; args: { date: string; city?: string }; thought: string }
  | { tool: "ask_user"; args: { question: string }; thought: string }
  | { answer: string };

function weatherModel(messages: Message[], readsSystemPrompt: boolean): Action {
  const system = readsSystemPrompt ? messages.find((m) => m.role === "system")?.content ?? "" : "";
  const advised = system.includes("<hindsight>") && system.includes("`get_weather`") && system.includes("`city`");
  const results = messages.filter((m) => m.role === "tool");
  const city = results.find((m) => m.name === "ask_user")?.content;
  const last = results.at(-1);
  const failed = last !== undefined && /^(error|held back)/.test(last.content);
  if (last?.name === "get_weather" && !failed) return { answer: `Here is the forecast: ${last.content}.` };
  if (city) return { tool: "get_weather", args: { date: "tomorrow", city }, thought: `The user is in ${city}.` };
  if (failed) return { tool: "ask_user", args: { question: "Which city are you in?" }, thought: "That failed: I need the city." };
  if (advised) return { tool: "ask_user", args: { question: "Which city are you in?" }, thought: "Past runs say: ask for the city first." };
  return { tool: "get_weather", args: { date: "tomorrow" }, thought: "Let me look the forecast up." };
}

// --- the agent loop, recorded ------------------------------------------------------------------

export interface Run {
  title: string;
  trajectoryId: string;
  advice: string;
  steps: string[];
  failedCalls: number;
  answer: string;
}

export async function runAgent(
  hs: Hindsight, agentId: string, question: string, title: string, readsSystemPrompt = true,
): Promise<Run> {
  const rec = new TrajectoryRecorder(hs, { agent_id: agentId, goal: question, tools: TOOLS, task_type: "query" });
  const run: Run = { title, trajectoryId: rec.trajectoryId, advice: "", steps: [], failedCalls: 0, answer: "" };
  await rec.run(async () => {
    rec.userInput(question);
    // The lessons for this task, for the system prompt; the recorder attaches the recall id, so the
    // review credits the lessons served.
    run.advice = (await rec.recall(question, { tools: TOOLS })).advice;
    const tools = rec.wrapTools({ get_weather: getWeather, ask_user: askUser }); // each call recorded
    const messages: Message[] = [{ role: "system", content: withAdvice(SYSTEM, run.advice) }, { role: "user", content: question }];
    for (let turn = 0; turn < 8; turn++) {
      const action = weatherModel(messages, readsSystemPrompt);
      if ("answer" in action) {
        run.answer = action.answer;
        run.steps.push(`answer: ${action.answer}`);
        return;
      }
      rec.reasoning(action.thought);
      // Before the call: what past runs say about this call with these arguments.
      const advice = await rec.consult(action.tool, action.args);
      let output: string;
      const warning = advice?.warnings[0];
      if (warning) {
        output = `held back by hindsight: ${warning.message} Fix: ${warning.fix}`;
      } else {
        try {
          output = action.tool === "get_weather" ? await tools.get_weather(action.args) : await tools.ask_user(action.args);
        } catch (exc) {
          run.failedCalls++;
          output = `error: ${(exc as Error).message}`;
        }
      }
      run.steps.push(`${action.tool}(${JSON.stringify(action.args)}) -> ${output}`);
      messages.push({ role: "tool", name: action.tool, content: output });
    }
  });
  return run;
}

function print(run: Run): void {
  console.log(`\n== ${run.title}: ${run.steps.length} steps, ${run.failedCalls} failed`);
  if (run.advice) console.log(`advice in the system prompt:\n${run.advice}`);
  run.steps.forEach((step, i) => console.log(`  ${i + 1}. ${step}`));
}

/** Three runs of the agent; each later run benefits from what the first one taught. */
export async function demo(hs: Hindsight, agentId: string): Promise<Run[]> {
  const first = await runAgent(hs, agentId, "Will it rain tomorrow?", "run 1 (no memory)");
  print(first);
  const review = await hs.waitForReview(first.trajectoryId, { timeoutMs: 30_000 });
  console.log(`\nreview of run 1: ${review.status}, lessons learned: ${review.experience_ids?.length ?? 0}`);
  const second = await runAgent(hs, agentId, "Do I need an umbrella tomorrow?", "run 2 (the lesson in the system prompt)");
  print(second);
  const third = await runAgent(hs, agentId, "Is it going to rain tomorrow?", "run 3 (a model that ignores its prompt; advise before each call)", false);
  print(third);
  // Runs 2 and 3 were served the lesson (the recall, the advise); their reviews credit it.
  await hs.waitForReview(second.trajectoryId, { timeoutMs: 30_000 });
  await hs.waitForReview(third.trajectoryId, { timeoutMs: 30_000 });
  const lesson = await hs.getExperience(review.experience_ids![0]!);
  console.log(`\nthe lesson: served to ${lesson.served} runs, adopted by ${lesson.adopted}, ` +
    `success when adopted ${lesson.success_when_adopted ?? "n/a"}`);
  return [first, second, third];
}

// --- configuration -----------------------------------------------------------------------------

async function apiKey(url: string): Promise<string> {
  if (process.env["HINDSIGHT_API_KEY"]) return process.env["HINDSIGHT_API_KEY"];
  let admin = process.env["HINDSIGHT_ADMIN_KEY"];
  // `make run` writes its admin key under the repository's .hindsight/ (this file is in examples/typescript/dist/)
  for (const file of [".hindsight/admin_key", fileURLToPath(new URL("../../../.hindsight/admin_key", import.meta.url))]) {
    if (!admin && existsSync(file)) admin = readFileSync(file, "utf8").trim();
  }
  if (!admin) throw new Error("set HINDSIGHT_API_KEY (or HINDSIGHT_ADMIN_KEY to create a tenant)");
  // tenant names are unique per deployment: each run of the example gets its own tenant
  const created = await new Hindsight({ url, adminKey: admin }).createTenant(`weather-example-${randomUUID().slice(0, 8)}`);
  return created.api_key;
}

async function main(): Promise<void> {
  const url = process.env["HINDSIGHT_URL"] ?? "http://127.0.0.1:8000";
  // a fresh agent id by default, so that run 1 starts with no memory
  const agentId = process.argv[2] ?? `weather-bot-${randomUUID().slice(0, 6)}`;
  try {
    await demo(new Hindsight({ url, apiKey: await apiKey(url) }), agentId);
  } catch (exc) {
    if (exc instanceof TransportError) {
      console.error(`error: nothing answers at ${url} (${exc.message}).\nStart the service with \`make run\`, or point HINDSIGHT_URL at it.`);
    } else {
      console.error(`error: ${exc instanceof HindsightError || exc instanceof Error ? exc.message : String(exc)}`);
    }
    process.exitCode = 1;
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) await main();
