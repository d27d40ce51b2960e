/**
 * The conformance kit against a real provider served by the bridge (exec
 * mode), for the provider test files of test/integration/providers: every
 * failure must be one of the provider's own answers the test pins (and its
 * doc in docs/providers explains), and the checks named must pass.
 */
import type { ExecutionContext } from 'ava';
import { runConformance } from '../../conformance/run.js';

/** A kit failure that comes from the provider's own answer, with the kit's message (run-specific machine names as cct<run>-). */
export interface PinnedFailure {
  id: string;
  message: string;
}

export interface RealProviderKit {
  /** The plugin executable. */
  path: string;
  /** Its environment (config file, KUBECONFIG, credentials for the stand-in). */
  env: Record<string, string>;
  /** The bytes sent to Configure (default: none). */
  cloudConfig?: Buffer;
  failures: PinnedFailure[];
  /** Checks that must pass. */
  pass: string[];
}

/** Runs the kit; logs what passed and was skipped; fails unless exactly the pinned failures occur and every `pass` check passed. */
export async function checkRealProviderKit(t: ExecutionContext, o: RealProviderKit): Promise<void> {
  const results = await runConformance({
    target: { kind: 'exec', path: o.path, env: Object.entries(o.env).map(([k, v]) => `${k}=${v}`) },
    cloudConfig: o.cloudConfig ?? Buffer.alloc(0),
    startTimeoutMs: 60_000,
    shutdownGraceMs: 2_000,
  });
  const by = (outcome: string) => results.filter((r) => r.outcome === outcome).map((r) => r.id);
  t.log(`passed: ${by('pass').join(', ')}`);
  t.log(`skipped: ${by('skip').join(', ')}`);
  t.deepEqual(
    results.filter((r) => r.outcome === 'fail').map((r) => `${r.id}: ${(r.message ?? '').replace(/cct[0-9a-f]+-/g, 'cct<run>-')}`),
    o.failures.map((f) => `${f.id}: ${f.message}`),
  );
  for (const id of o.pass) t.true(by('pass').includes(id), id);
}
