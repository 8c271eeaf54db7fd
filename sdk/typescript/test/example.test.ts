/** The example agent (examples/typescript) run as a user runs it, against the real server. */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { serverUnderTest } from "./support.js";

// this file runs from sdk/typescript/build/
const EXAMPLE = fileURLToPath(new URL("../../../examples/typescript/dist/weather-agent.js", import.meta.url));

test("the example agent learns from its first run: fewer steps with the lesson, and advise holds a bad call back", async () => {
  assert.ok(existsSync(EXAMPLE), `${EXAMPLE} is built by \`npm ci && npm run build\` in examples/typescript (make test-ts does it)`);
  const { url, adminKey } = serverUnderTest();
  const { stdout } = await promisify(execFile)(process.execPath, [EXAMPLE], {
    env: { PATH: process.env["PATH"] ?? "", HINDSIGHT_URL: url, HINDSIGHT_ADMIN_KEY: adminKey },
    timeout: 60_000,
  });
  const runs = stdout.split("\n== ").slice(1);
  assert.equal(runs.length, 3, stdout);
  const [first, second, third] = runs as [string, string, string];

  assert.match(first, /^run 1 \(no memory\): 4 steps, 1 failed\n/);
  assert.ok(!first.includes("<hindsight>"), "run 1 has nothing to recall");
  assert.match(first, /1\. get_weather\(\{"date":"tomorrow"\}\) -> error: MissingParameter: city is required/);
  assert.match(first, /review of run 1: reviewed, lessons learned: 1/);

  assert.match(second, /^run 2 \(the lesson in the system prompt\): 3 steps, 0 failed\n/);
  assert.match(second, /<hindsight>\n[^\n]*\n1\. [^\n]*Call `ask_user` before `get_weather`/);
  assert.match(second, /1\. ask_user\(.*\) -> Lyon\n\s+2\. get_weather\(\{"date":"tomorrow","city":"Lyon"\}\) -> tomorrow in Lyon: rain/);

  assert.match(third, /^run 3 \(a model that ignores its prompt; advise before each call\): 4 steps, 0 failed\n/);
  assert.match(third, /1\. get_weather\(\{"date":"tomorrow"\}\) -> held back by hindsight: `get_weather` failed .*`city` is missing/);
  assert.match(third, /4\. answer: Here is the forecast: tomorrow in Lyon: rain, 14°C\./);

  assert.match(stdout, /the lesson: served to 2 runs, adopted by 2, success when adopted 1\n$/);
});
