/**
 * The conformance kit against a real provider served by the bridge (exec
 * mode), for the provider test files of test/integration/providers: every
 * failure must be one of the provider's own answers the test pins (and its
 * doc in docs/providers explains), and the checks named must pass. The kit's
 * test hook for a stand-in the test process holds (moto through its
 * client, the OpenStack stand-in) is served from here (serveTestHook).
 */
import type { ExecutionContext } from 'ava';
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
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
  /** The kit's --test-hook-command: makes and removes instances in the provider's stand-in (default: none, checks needing one skipped). */
  hookCommand?: string;
  failures: PinnedFailure[];
  /** Checks that must pass. */
  pass: string[];
}

/** What a test hook does in the provider's stand-in. */
export interface InstanceHook {
  /** Makes (idempotently) a running instance the provider finds by node name `name`; resolves its providerID as the provider reports it. */
  createInstance(name: string): Promise<string>;
  /** Removes it; none is success. */
  deleteInstance(name: string): Promise<void>;
}

export interface TestHookServer {
  /** The kit's --test-hook-command (kit-hook-client.js against this server). */
  command: string;
  stop(): Promise<void>;
}

/** The client the kit runs, compiled next to this file. */
const HOOK_CLIENT = fileURLToPath(new URL('./kit-hook-client.js', import.meta.url));

/**
 * Serves `hook` on 127.0.0.1 for the kit's hook command: the kit runs a
 * command, and the stand-in (and the Kubernetes client) live in this
 * process. Throttling is not offered (the command answers exit 3).
 */
export async function serveTestHook(hook: InstanceHook): Promise<TestHookServer> {
  // A secret path: only the command, which is told it, reaches the hook.
  const secret = `/${randomUUID()}`;
  const server = createServer((req, res) => {
    const answer = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    const path = req.url?.startsWith(`${secret}/`) ? req.url.slice(secret.length + 1) : '';
    let verb: string | undefined, name: string | undefined;
    try {
      [verb, name] = path.split('/').map(decodeURIComponent);
    } catch {
      return answer(400, { error: 'malformed path' });
    }
    if (req.method !== 'POST' || !name) return answer(404, { error: 'no such hook' });
    const done =
      verb === 'create-instance'
        ? hook.createInstance(name).then((providerId) => answer(200, { providerId }))
        : verb === 'delete-instance'
          ? hook.deleteInstance(name).then(() => answer(200, {}))
          : Promise.resolve(answer(404, { error: `no verb ${verb}` }));
    done.catch((err: Error) => answer(500, { error: err.message }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}${secret}`;
  return {
    command: shellCommand([process.execPath, HOOK_CLIENT, url]),
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Runs the kit; logs what passed, was skipped and failed; fails unless exactly the pinned failures occur and every `pass` check passed. */
export async function checkRealProviderKit(t: ExecutionContext, o: RealProviderKit): Promise<void> {
  const results = await runConformance({
    target: { kind: 'exec', path: o.path, env: Object.entries(o.env).map(([k, v]) => `${k}=${v}`) },
    cloudConfig: o.cloudConfig ?? Buffer.alloc(0),
    ...(o.hookCommand ? { hookCommand: o.hookCommand } : {}),
    startTimeoutMs: 60_000,
    shutdownGraceMs: 2_000,
  });
  const by = (outcome: string) => results.filter((r) => r.outcome === outcome).map((r) => r.id);
  t.log(`passed: ${by('pass').join(', ')}`);
  t.log(`skipped: ${by('skip').join(', ')}`);
  t.log(`failed: ${by('fail').join(', ')}`);
  t.deepEqual(
    results.filter((r) => r.outcome === 'fail').map((r) => `${r.id}: ${(r.message ?? '').replace(/cct[0-9a-f]+-/g, 'cct<run>-')}`),
    o.failures.map((f) => `${f.id}: ${f.message}`),
  );
  for (const id of o.pass) t.true(by('pass').includes(id), id);
}

/** `argv` as a /bin/sh command line (each word single-quoted), for a hookCommand the kit appends its verbs to. */
export function shellCommand(argv: readonly string[]): string {
  return argv.map((w) => `'${w.replaceAll("'", `'\\''`)}'`).join(' ');
}
