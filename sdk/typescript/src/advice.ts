/** `adviceFor`: the lessons to put in an agent's system prompt before it acts. */
import { Hindsight } from "./client.js";
import { HindsightError } from "./errors.js";
import type { RecallQuery } from "./types.js";

export interface AdviceOptions extends RecallQuery {
  /** Default: a client built from the environment. */
  client?: Hindsight;
  /** Memory is an aid: by default an unreachable or failing service yields "" (and `onError`), not an error. */
  failOpen?: boolean;
  onError?: (error: HindsightError) => void;
}

/**
 * The `<hindsight>...</hindsight>` advice block for this task, or "" when nothing applies.
 * `query` is the task in the agent's words (the user's request, the goal); `tools` are the tools
 * the agent has now: lessons about those rank higher.
 */
export async function adviceFor(query: string, options: AdviceOptions = {}): Promise<string> {
  const { client, failOpen = true, onError, ...recall } = options;
  try {
    return (await (client ?? new Hindsight()).recall(query, recall)).advice;
  } catch (exc) {
    if (!failOpen || !(exc instanceof HindsightError)) throw exc;
    onError?.(exc);
    return "";
  }
}

/** The system prompt with the advice block appended (unchanged when there is no advice). */
export function withAdvice(systemPrompt: string, advice: string): string {
  return advice ? `${systemPrompt.trimEnd()}\n\n${advice}` : systemPrompt;
}
