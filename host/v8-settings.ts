/**
 * V8 heap settings the host applies to itself at start (imported first by
 * main.ts), so it runs lean without NODE_OPTIONS: with Node's defaults V8
 * grows the young generation to 16 MiB per semi-space and the old generation
 * by up to 4× under a burst of work, which the host does not need (its
 * informer caches are small, see cache-transforms.ts) and which made its peak
 * RSS 1.6–1.8× the upstream CCM's (docs/benchmarks.md, "Per-object cost").
 *
 * Only flags V8 reads while running can be set here (`--max-semi-space-size`
 * and `--max-old-space-size` are read once, when the heap is made, hence the
 * NODE_OPTIONS advice in docs/memory.md): the young generation stops growing
 * past its first size, and the old generation's limit grows by a fixed share
 * after each full GC instead of V8's factor for large heaps. A V8 flag of the
 * same kind given on the command line or in NODE_OPTIONS wins (the operator's
 * choice is kept); see {@link v8SettingsFor}.
 */
import v8 from 'node:v8';

/** One runtime V8 setting and the command-line flags that, when given, mean the operator chose instead. */
export interface V8Setting {
  /** What is applied, e.g. `--semi-space-growth-factor=1`. */
  flag: string;
  /** Flags (names without value) that leave this setting to the operator. */
  yieldsTo: string[];
}

/** The host's settings; the figures behind them are in docs/benchmarks.md, "Per-object cost". */
export const HOST_V8_SETTINGS: V8Setting[] = [
  // The young generation keeps its first size (1 MiB semi-spaces): short-lived garbage dies there all the same.
  { flag: '--semi-space-growth-factor=1', yieldsTo: ['--semi-space-growth-factor', '--max-semi-space-size', '--min-semi-space-size'] },
  // After a full GC the old generation may grow 50 % before the next, instead of up to 4× (V8's factor for large heaps).
  { flag: '--heap-growing-percent=50', yieldsTo: ['--heap-growing-percent', '--max-old-space-size'] },
];

/**
 * The settings of `settings` to apply, given the V8/Node flags the process
 * was started with (`process.execArgv` and NODE_OPTIONS, split on spaces).
 * Pure; `--flag_name` and `--flag-name` are the same flag to V8.
 */
export function v8SettingsFor(settings: V8Setting[], startFlags: string[]): string[] {
  const given = new Set(startFlags.map((f) => f.split('=')[0]!.replace(/_/g, '-')));
  return settings.filter((s) => !s.yieldsTo.some((f) => given.has(f))).map((s) => s.flag);
}

/** Applies {@link HOST_V8_SETTINGS} to this process; returns what was applied (for the start log). */
export function applyHostV8Settings(): string[] {
  const startFlags = [...process.execArgv, ...(process.env.NODE_OPTIONS ?? '').split(/\s+/).filter(Boolean)];
  const flags = v8SettingsFor(HOST_V8_SETTINGS, startFlags);
  for (const f of flags) v8.setFlagsFromString(f);
  return flags;
}

export const appliedV8Settings = applyHostV8Settings();
