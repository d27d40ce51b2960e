/**
 * Runs named health checks concurrently, each bounded by a timeout, and
 * turns their failures into one-line reasons for the /healthz body.
 */
import { errorMessage } from '../log.js';

/** A health check: passes unless it throws or rejects. */
export type HealthCheck = () => Promise<void> | void;

/** Outcome of one check; `error` is a one-line reason when it failed. */
export interface CheckResult {
  name: string;
  error?: string;
}

/** Runs `checks` in parallel; results keep the input order. A check slower than `timeoutMs` fails. */
export async function runChecks(checks: Iterable<[string, HealthCheck]>, timeoutMs: number): Promise<CheckResult[]> {
  return Promise.all(
    [...checks].map(async ([name, fn]) => {
      try {
        await withTimeout(fn, timeoutMs);
        return { name };
      } catch (err) {
        return { name, error: oneLine(errorMessage(err)) || 'failed without a message' };
      }
    }),
  );
}

async function withTimeout(fn: HealthCheck, timeoutMs: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${timeoutMs}ms`)), timeoutMs);
  });
  try {
    await Promise.race([Promise.resolve().then(fn), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

function oneLine(text: string): string {
  return text.replace(/\s*[\r\n]+\s*/g, ' ').trim();
}
