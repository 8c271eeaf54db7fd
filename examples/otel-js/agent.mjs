/**
 * A JavaScript agent that learns through its OpenTelemetry exporter alone.
 *
 * The agent loop emits the spans of the GenAI semantic conventions with the OpenTelemetry SDK for
 * Node (`invoke_agent` for the run, `chat` for each model turn, `execute_tool` for each tool call,
 * with arguments, results and errors) and the stock OTLP/HTTP exporter sends them to hindsight's
 * `POST /v1/otlp/v1/traces`. Nothing else of hindsight is in the loop: pointing the exporter at the
 * service is the whole integration. The model is scripted (no key).
 *
 * - run 1: the model calls `get_weather` without a city, which fails; it asks the user, then
 *   succeeds. The trace becomes a trajectory (its id is the trace id), finalized by its root span
 *   and reviewed by the service.
 * - then the lesson is recalled (what an agent would put in its prompt), and run 2, with it in the
 *   system prompt, asks for the city first: no failed call.
 *
 *     make run                                       # the service, in another terminal
 *     cd examples/otel-js && npm ci && npm start
 *
 * Needs HINDSIGHT_URL (default http://127.0.0.1:8000) and HINDSIGHT_API_KEY; without a key it
 * creates a tenant with HINDSIGHT_ADMIN_KEY, or the admin key `make run` left in .hindsight/admin_key.
 */
import { existsSync, readFileSync } from "node:fs";
import { SpanStatusCode, trace } from "@opentelemetry/api";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { BatchSpanProcessor, NodeTracerProvider } from "@opentelemetry/sdk-trace-node";

const URL_ = (process.env.HINDSIGHT_URL ?? "http://127.0.0.1:8000").replace(/\/$/, "");

async function apiKey() {
  if (process.env.HINDSIGHT_API_KEY) return process.env.HINDSIGHT_API_KEY;
  const local = new URL("../../.hindsight/admin_key", import.meta.url);
  const admin = process.env.HINDSIGHT_ADMIN_KEY ?? (existsSync(local) ? readFileSync(local, "utf8").trim() : undefined);
  if (!admin) throw new Error("set HINDSIGHT_API_KEY (or HINDSIGHT_ADMIN_KEY to create a tenant)");
  const resp = await fetch(`${URL_}/v1/tenants`, {
    method: "POST",
    headers: { authorization: `Bearer ${admin}`, "content-type": "application/json" },
    body: JSON.stringify({ name: `otel-js-${Date.now()}` }),
  });
  if (resp.status !== 201) throw new Error(`creating a tenant: ${resp.status} ${await resp.text()}`);
  return (await resp.json()).api_key;
}

// --- the tools and the scripted model ----------------------------------------------------------

function getWeather({ date, city }) {
  if (!city) throw new Error("MissingParameter: city is required");
  return `${date} in ${city}: rain, 14°C`;
}

function askUser() {
  return "Lyon";
}

const TOOLS = { get_weather: getWeather, ask_user: askUser };

/** The next step: a tool call, or the answer. It reads the lesson where the system prompt has one. */
function model(messages) {
  const advised = /ask_user[^\n]*before[^\n]*get_weather|city/.test(messages[0].content ?? "") && messages[0].content.includes("<lesson>");
  const results = messages.filter((m) => m.role === "tool");
  const last = results.at(-1);
  const city = results.find((m) => m.name === "ask_user")?.content;
  if (last?.name === "get_weather" && !last.content.startsWith("Error")) return { answer: `Here is the forecast: ${last.content}.` };
  if (city) return { call: "get_weather", args: { date: "tomorrow", city } };
  if (last?.content.startsWith("Error") || advised) return { call: "ask_user", args: { question: "Which city are you in?" } };
  return { call: "get_weather", args: { date: "tomorrow" } };
}

// --- the agent loop, traced with the GenAI semantic conventions -------------------------------

const parts = (text) => JSON.stringify([{ role: "user", parts: [{ type: "text", content: text }] }]);

async function runAgent(tracer, question, lesson) {
  const system = lesson ? `You are a weather assistant.\n<lesson>${lesson}</lesson>` : "You are a weather assistant.";
  const messages = [{ role: "system", content: system }, { role: "user", content: question }];
  const steps = [];
  return tracer.startActiveSpan("invoke_agent weather-bot", {
    attributes: { "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "weather-bot", "gen_ai.input.messages": parts(question) },
  }, async (root) => {
    for (let turn = 0; turn < 6; turn++) {
      const step = await tracer.startActiveSpan("chat scripted", { attributes: { "gen_ai.operation.name": "chat", "gen_ai.request.model": "scripted" } },
        async (chat) => {
          const next = model(messages);
          const id = `call_${turn}`;
          chat.setAttribute("gen_ai.output.messages", JSON.stringify([{ role: "assistant", parts: next.answer
            ? [{ type: "text", content: next.answer }]
            : [{ type: "tool_call", id, name: next.call, arguments: next.args }] }]));
          chat.end();
          return { ...next, id };
        });
      if (step.answer) {
        steps.push(`answer: ${step.answer}`);
        root.end();
        return { traceId: root.spanContext().traceId, steps };
      }
      const result = tracer.startActiveSpan(`execute_tool ${step.call}`, {
        attributes: { "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": step.call, "gen_ai.tool.call.id": step.id,
                      "gen_ai.tool.call.arguments": JSON.stringify(step.args) },
      }, (span) => {
        try {
          const out = TOOLS[step.call](step.args);
          span.setAttribute("gen_ai.tool.call.result", out);
          return out;
        } catch (err) {
          span.recordException(err);
          span.setStatus({ code: SpanStatusCode.ERROR, message: err.message });
          span.setAttribute("error.type", err.name);
          return `Error: ${err.message}`;
        } finally {
          span.end();
        }
      });
      steps.push(`${step.call}(${JSON.stringify(step.args)}) -> ${result}`);
      messages.push({ role: "tool", name: step.call, content: result });
    }
    root.setStatus({ code: SpanStatusCode.ERROR, message: "no answer after 6 turns" });
    root.end();
    return { traceId: root.spanContext().traceId, steps };
  });
}

// --- main: two runs, the lesson recalled between them ----------------------------------------

async function main() {
  const key = await apiKey();
  const auth = { authorization: `Bearer ${key}`, "content-type": "application/json" };
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({ "service.name": "weather-bot-js" }),
    // the only integration: the exporter's endpoint and the tenant's key
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter({ url: `${URL_}/v1/otlp/v1/traces`, headers: { authorization: `Bearer ${key}` } }))],
  });
  provider.register(); // the context manager (AsyncLocalStorage): a run's spans are one trace
  const tracer = trace.getTracer("weather-bot");
  const get = async (path) => (await fetch(`${URL_}${path}`, { headers: auth })).json();

  const first = await runAgent(tracer, "Will it rain tomorrow?", null);
  await provider.forceFlush();
  const failed = first.steps.filter((s) => s.includes("-> Error")).length;
  console.log(`== run 1 (no memory): ${first.steps.length} steps, ${failed} failed`);
  first.steps.forEach((s, i) => console.log(`   ${i + 1}. ${s}`));

  let traj;
  for (let i = 0; i < 300; i++) {
    traj = await get(`/v1/trajectories/${first.traceId}`);
    if (traj.status === "reviewed") break;
    await new Promise((r) => setTimeout(r, 200));
  }
  console.log(`trajectory ${traj.trajectory_id}: agent ${traj.agent_id}, goal "${traj.goal}", outcome ${traj.outcome}, ` +
              `${traj.event_count} events, ${traj.status}`);
  const recall = await (await fetch(`${URL_}/v1/recall`, {
    method: "POST", headers: auth,
    body: JSON.stringify({ query: "Will it rain tomorrow?", agent_id: "weather-bot", tools: ["get_weather", "ask_user"] }),
  })).json();
  const lesson = recall.hits?.[0]?.experience?.advice;
  console.log(`recalled: ${lesson ?? "nothing"}`);

  const second = await runAgent(tracer, "Will it rain tomorrow?", lesson);
  await provider.forceFlush();
  console.log(`== run 2 (the lesson in the system prompt): ${second.steps.length} steps, ` +
              `${second.steps.filter((s) => s.includes("-> Error")).length} failed`);
  second.steps.forEach((s, i) => console.log(`   ${i + 1}. ${s}`));
  await provider.shutdown();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
