/** Where the SDK reads the environment: here and nowhere else. */

export const DEFAULT_URL = "http://127.0.0.1:8000"; // what `make run` serves
export const DEFAULT_TIMEOUT_MS = 10_000;

export interface Config {
  url: string;
  apiKey: string | null;
  adminKey: string | null;
  timeoutMs: number;
}

type Env = Record<string, string | undefined>;

/** The process environment where there is one (Node, Deno, Bun); an empty one in a browser. */
function processEnv(): Env {
  const proc = (globalThis as { process?: { env?: Env } }).process;
  return proc?.env ?? {};
}

/** HINDSIGHT_URL, HINDSIGHT_API_KEY (a tenant key), HINDSIGHT_ADMIN_KEY, HINDSIGHT_TIMEOUT (seconds, as for the Python SDK). */
export function configFromEnv(env: Env = processEnv()): Config {
  const seconds = Number(env["HINDSIGHT_TIMEOUT"]);
  return {
    url: env["HINDSIGHT_URL"] || DEFAULT_URL,
    apiKey: env["HINDSIGHT_API_KEY"] || null,
    adminKey: env["HINDSIGHT_ADMIN_KEY"] || null,
    timeoutMs: Number.isFinite(seconds) && seconds > 0 ? seconds * 1000 : DEFAULT_TIMEOUT_MS,
  };
}
