/** Small statistics helpers for the benchmarks. */

export function percentile(sortedMs: number[], p: number): number {
  if (sortedMs.length === 0) return NaN;
  const i = Math.min(sortedMs.length - 1, Math.max(0, Math.ceil((p / 100) * sortedMs.length) - 1));
  return sortedMs[i]!;
}

export interface LoadResult {
  calls: number;
  seconds: number;
  callsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
}

/**
 * Runs `call` from `concurrency` loops until `calls` calls have finished
 * (after `warmup` untimed calls) and reports throughput and latency.
 */
export async function load(call: () => Promise<unknown>, opts: { concurrency: number; calls: number; warmup?: number }): Promise<LoadResult> {
  for (let i = 0; i < (opts.warmup ?? 200); i++) await call();
  const latencies: number[] = [];
  let started = 0;
  const t0 = process.hrtime.bigint();
  const loop = async () => {
    while (started < opts.calls) {
      started++;
      const s = process.hrtime.bigint();
      await call();
      latencies.push(Number(process.hrtime.bigint() - s) / 1e6);
    }
  };
  await Promise.all(Array.from({ length: opts.concurrency }, loop));
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  latencies.sort((a, b) => a - b);
  return {
    calls: latencies.length,
    seconds,
    callsPerSecond: latencies.length / seconds,
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
  };
}
