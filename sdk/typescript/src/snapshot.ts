/**
 * A JSON-safe, size-bounded copy of whatever a tool took or returned.
 *
 * Taken at record time, because the agent may mutate a params object or a result array after the
 * call; bounded, because the service refuses events over 64 KiB and the recorder must not spend
 * the agent's time on a huge result. The same limits as the Python SDK's.
 */
export const MAX_STRING = 2000;
export const MAX_ITEMS = 50;
export const MAX_DEPTH = 6;

function cut(text: string): string {
  return text.length <= MAX_STRING ? text : `${text.slice(0, MAX_STRING)}…[${text.length - MAX_STRING} more chars]`;
}

function describe(value: unknown): string {
  if (value instanceof Error) return `${value.name}: ${value.message}`;
  try {
    return String(value);
  } catch {
    return Object.prototype.toString.call(value);
  }
}

export function snapshot(value: unknown, depth = 0, seen: Set<object> = new Set()): unknown {
  switch (typeof value) {
    case "string":
      return cut(value);
    case "boolean":
      return value;
    case "number":
      return Number.isFinite(value) ? value : String(value);
    case "bigint":
      return value.toString();
    case "undefined":
      return null;
    case "function":
      return `<function ${value.name || "anonymous"}>`;
    case "symbol":
      return value.toString();
  }
  if (value === null) return null;
  const obj = value as object;
  if (obj instanceof Date) return Number.isNaN(obj.getTime()) ? "Invalid Date" : obj.toISOString();
  if (obj instanceof Error) return cut(describe(obj));
  if (obj instanceof Uint8Array || obj instanceof ArrayBuffer) return `<${obj.byteLength} bytes>`;
  if (depth >= MAX_DEPTH || seen.has(obj)) return cut(seen.has(obj) ? "<cycle>" : describe(obj));
  seen.add(obj);
  try {
    const toJSON = (obj as { toJSON?: unknown }).toJSON;
    if (typeof toJSON === "function") return snapshot(toJSON.call(obj), depth + 1, seen);
    if (Array.isArray(obj) || obj instanceof Set) {
      const items = [...obj];
      const out = items.slice(0, MAX_ITEMS).map((v) => snapshot(v, depth + 1, seen));
      if (items.length > MAX_ITEMS) out.push(`…${items.length - MAX_ITEMS} more items`);
      return out;
    }
    const entries = obj instanceof Map ? [...obj.entries()].map(([k, v]) => [String(k), v] as const) : Object.entries(obj);
    const out: Record<string, unknown> = {};
    for (const [k, v] of entries.slice(0, MAX_ITEMS)) out[k] = snapshot(v, depth + 1, seen);
    if (entries.length > MAX_ITEMS) out["…"] = `${entries.length - MAX_ITEMS} more keys`;
    return out;
  } finally {
    seen.delete(obj);
  }
}
