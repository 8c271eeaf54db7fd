/**
 * The JavaScript agent that exports OpenTelemetry spans (examples/otel-js: the OpenTelemetry SDK for
 * Node and its OTLP/HTTP exporter, nothing of hindsight in the loop) run as a user runs it, against
 * the real server: its trace becomes a trajectory, reviewed, and the lesson recalled spares the
 * second run its failed call.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { serverUnderTest } from "./support.js";

// this file runs from sdk/typescript/build/
const AGENT = fileURLToPath(new URL("../../../examples/otel-js/agent.mjs", import.meta.url));
const MODULES = fileURLToPath(new URL("../../../examples/otel-js/node_modules/@opentelemetry/sdk-trace-node", import.meta.url));

test("an agent exporting OpenTelemetry spans learns through its exporter alone", async () => {
  assert.ok(existsSync(MODULES), "examples/otel-js needs `npm ci` (make test-ts does it)");
  const { url, adminKey } = serverUnderTest();
  const { stdout } = await promisify(execFile)(process.execPath, [AGENT], {
    env: { PATH: process.env["PATH"] ?? "", HINDSIGHT_URL: url, HINDSIGHT_ADMIN_KEY: adminKey },
    timeout: 90_000,
  });
  assert.match(stdout, /== run 1 \(no memory\): 4 steps, 1 failed\n/);
  // the trace is the trajectory: its id, the agent and goal from the invoke_agent span, the outcome
  // from the root's status, the chat and execute_tool spans as its events, reviewed
  assert.match(stdout, /trajectory [0-9a-f]{32}: agent weather-bot, goal "Will it rain tomorrow\?", outcome success, 7 events, reviewed\n/);
  assert.match(stdout, /recalled: [^\n]*`get_weather`[^\n]*`city`[^\n]*MissingParameter: city is required/);
  assert.match(stdout, /== run 2 \(the lesson in the system prompt\): 3 steps, 0 failed\n\s+1\. ask_user/);
});
