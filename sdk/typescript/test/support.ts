/**
 * What the tests share: the real server they run against, a new tenant per test, and small local
 * HTTP servers that answer what a test needs (429 then 200, a service that fails a while).
 *
 * The real server is started around the test run by `python -m devtools.with_server` (see
 * `make test-ts`), which passes HINDSIGHT_URL and HINDSIGHT_ADMIN_KEY.
 */
import { randomUUID } from "node:crypto";
import { type IncomingMessage, type ServerResponse, createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { Hindsight, RetryPolicy } from "hindsight-xp";

// Retries in tests wait milliseconds, not seconds.
export const FAST_RETRY = new RetryPolicy({ maxAttempts: 4, baseDelayMs: 10, maxDelayMs: 50 });

export interface ServerUnderTest {
  url: string;
  adminKey: string;
}

export function serverUnderTest(): ServerUnderTest {
  const url = process.env["HINDSIGHT_URL"];
  const adminKey = process.env["HINDSIGHT_ADMIN_KEY"];
  if (!url || !adminKey) {
    throw new Error(
      "these tests run against a real hindsight server: run `make test-ts` from the repository root, or " +
        "`.venv/bin/python -m devtools.with_server -- npm --prefix sdk/typescript test`",
    );
  }
  return { url, adminKey };
}

export function adminClient(): Hindsight {
  const { url, adminKey } = serverUnderTest();
  return new Hindsight({ url, adminKey, apiKey: null, retry: FAST_RETRY });
}

export interface TenantUnderTest {
  tenantId: string;
  apiKey: string;
  client: Hindsight;
}

/** A new tenant (names are unique per deployment) and a client acting for it. */
export async function newTenant(prefix = "ts-sdk"): Promise<TenantUnderTest> {
  const created = await adminClient().createTenant(`${prefix}-${randomUUID().slice(0, 8)}`);
  const { url } = serverUnderTest();
  const client = new Hindsight({ url, apiKey: created.api_key, adminKey: null, retry: FAST_RETRY });
  return { tenantId: created.tenant_id, apiKey: created.api_key, client };
}

export interface SeenRequest {
  method: string;
  path: string;
  headers: IncomingMessage["headers"];
  body: Buffer;
  at: number;
}

export type Answer = { status: number; headers?: Record<string, string>; body?: unknown; delayMs?: number };

/** A local HTTP server whose answers a test scripts; it records every request it got. */
export class ScriptedServer {
  readonly seen: SeenRequest[] = [];
  private readonly server = createServer((req, res) => this.handle(req, res));

  constructor(private readonly answer: (req: SeenRequest, n: number) => Answer) {}

  async start(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, "127.0.0.1", resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const seen: SeenRequest = { method: req.method ?? "", path: req.url ?? "", headers: req.headers, body: Buffer.concat(chunks), at: Date.now() };
      this.seen.push(seen);
      const { status, headers = {}, body, delayMs = 0 } = this.answer(seen, this.seen.length);
      const text = body === undefined ? "" : typeof body === "string" ? body : JSON.stringify(body);
      setTimeout(() => {
        res.writeHead(status, { "Content-Type": "application/json", ...headers });
        res.end(text);
      }, delayMs);
    });
  }
}

export function json(req: SeenRequest): any {
  return JSON.parse(req.body.toString("utf8"));
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Poll `read` until `done` holds (or the time is up), and return the last value read. */
export async function eventually<T>(read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value) || Date.now() > deadline) return value;
    await sleep(50);
  }
}
