/**
 * `<provider> probe [--endpoint=unix:///path.sock] [--timeout=3s] [--ready]`:
 * a provider executable as its own kubelet exec probe. Its images are
 * distroless and its gRPC health service is on the Unix socket only, which
 * the kubelet's grpc and tcpSocket probes cannot reach; the provider's own
 * executable can. It dials the socket of the running provider, prints one
 * line saying why, and exits:
 *
 * | exit | meaning |
 * |------|---------|
 * | 0 (PROBE_OK) | liveness: grpc.health.v1 Check for `ccm.provider.v1` answered SERVING; with `--ready` (readiness) also IdentityService/Probe answered ready=true |
 * | 1 (PROBE_FAILED) | anything else: no socket, refused, NOT_SERVING, ready=false, an error, or no answer within --timeout (a wedged process accepts connections and answers nothing) |
 * | 2 (PROBE_USAGE) | the probe's own command line is wrong |
 *
 * Liveness asks nothing of the cloud, so a cloud outage never restarts the
 * provider. The endpoint is --endpoint, else CCM_PROVIDER_ENDPOINT (where
 * sidecar mode serves). --timeout (default 3 s; `500ms`, `3s`) bounds the
 * whole probe. Read-only: safe at any rate. serve() answers it (before
 * serving), and an executable that builds something expensive first calls
 * probeIfAsked() at its top (plugins/local/main.ts does).
 */
import { credentials, Metadata, status as Code, type ServiceError } from '@grpc/grpc-js';
import { IdentityServiceClient } from '../proto/gen/ccm/provider/v1/identity.js';
import { HealthClient, SERVING } from './health-client.js';
import { ENV_SIDECAR_ENDPOINT, HEALTH_SERVICE_NAME, unixSocketPath } from './protocol.js';

/** The first argument that makes a provider executable its own probe. */
export const PROBE_COMMAND = 'probe';
/** Bound of a probe unless --timeout says otherwise. */
export const DEFAULT_PROBE_TIMEOUT_MS = 3_000;
export const PROBE_OK = 0;
export const PROBE_FAILED = 1;
export const PROBE_USAGE = 2;

const USAGE = 'usage: probe [--endpoint=unix:///path.sock] [--timeout=3s] [--ready]';

/** `3s`, `500ms`, `1.5s` → milliseconds; undefined when not a positive duration. */
export function parseProbeTimeout(value: string): number | undefined {
  const m = /^(\d+(?:\.\d+)?)(ms|s)$/.exec(value);
  if (!m) return undefined;
  const ms = Number(m[1]) * (m[2] === 's' ? 1000 : 1);
  return ms > 0 ? ms : undefined;
}

/** Parsed probe arguments, or the one-line complaint. */
export function parseProbeArgs(
  argv: readonly string[],
  env: NodeJS.ProcessEnv,
): { endpoint: string; timeoutMs: number; ready: boolean } | { error: string } {
  let endpoint: string | undefined;
  let timeout: string | undefined;
  let ready = false;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const [name, inline] = a.startsWith('--') && a.includes('=') ? [a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1)] : [a, undefined];
    const value = (): string | undefined => inline ?? argv[++i];
    if (name === '--endpoint') endpoint = value();
    else if (name === '--timeout') timeout = value();
    else if (name === '--ready' && inline === undefined) ready = true;
    else return { error: `probe: unexpected argument ${JSON.stringify(a)} (${USAGE})` };
  }
  endpoint ||= env[ENV_SIDECAR_ENDPOINT] ?? '';
  if (unixSocketPath(endpoint) === undefined)
    return { error: `probe: endpoint ${JSON.stringify(endpoint)} is not unix:///absolute/path.sock (--endpoint or $${ENV_SIDECAR_ENDPOINT})` };
  const timeoutMs = timeout === undefined ? DEFAULT_PROBE_TIMEOUT_MS : parseProbeTimeout(timeout);
  if (timeoutMs === undefined) return { error: `probe: --timeout=${timeout} is not a positive duration such as 3s or 500ms` };
  return { endpoint, timeoutMs, ready };
}

function callError(call: string, err: ServiceError, timeoutMs: number): Error {
  if (err.code === Code.DEADLINE_EXCEEDED)
    return new Error(`no answer to ${call} within ${timeoutMs / 1000}s (a process that accepts connections but answers nothing is wedged)`);
  return new Error(`${call} failed: ${Code[err.code] ?? err.code}: ${JSON.stringify(err.details)}`);
}

/**
 * Asks the provider at `endpoint` what the probe asks, all within
 * `timeoutMs`; resolves with what it answered when it passes, rejects with why
 * not. Read-only, idempotent.
 */
export async function checkProvider(endpoint: string, ready: boolean, timeoutMs: number): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  const health = new HealthClient(endpoint, credentials.createInsecure());
  const identity = new IdentityServiceClient(endpoint, credentials.createInsecure(), { channelOverride: health.getChannel() });
  try {
    // Not waitForReady: a missing or refused socket fails at once; one that connects but never answers waits out the deadline.
    const status = await new Promise<number>((resolve, reject) =>
      health.check({ service: HEALTH_SERVICE_NAME }, new Metadata(), { deadline }, (err, res) =>
        err ? reject(callError('grpc.health.v1 Check', err, timeoutMs)) : resolve(res?.status ?? 0),
      ),
    );
    if (status !== SERVING) throw new Error(`grpc.health.v1 Check answered ${status === 2 ? 'NOT_SERVING' : `status ${status}`}`);
    if (!ready) return 'grpc.health.v1 SERVING';
    const res = await new Promise<{ ready: boolean }>((resolve, reject) =>
      identity.probe({}, new Metadata(), { deadline }, (err, r) => (err ? reject(callError('IdentityService/Probe', err, timeoutMs)) : resolve(r))),
    );
    if (!res.ready)
      throw new Error(
        'SERVING, but IdentityService/Probe answered ready=false (not configured by the host yet, or the provider says it is not ready)',
      );
    return 'grpc.health.v1 SERVING, IdentityService/Probe ready';
  } finally {
    health.close(); // the one channel both clients use
  }
}

/** Runs the probe for `argv` (the arguments after `probe`), writes its one line to `out`, and resolves with the exit code. */
export async function runProbe(argv: readonly string[], env: NodeJS.ProcessEnv, out: (line: string) => void): Promise<number> {
  const args = parseProbeArgs(argv, env);
  if ('error' in args) {
    out(args.error);
    return PROBE_USAGE;
  }
  try {
    out(`probe ok: ${args.endpoint}: ${await checkProvider(args.endpoint, args.ready, args.timeoutMs)}`);
    return PROBE_OK;
  } catch (err) {
    out(`probe failed: ${args.endpoint}: ${err instanceof Error ? err.message : String(err)}`);
    return PROBE_FAILED;
  }
}

/**
 * When the process was started as `<executable> probe ...`: runs the probe
 * and exits with its code (never returns). Otherwise returns at once. Call it
 * first in a provider's main, before anything slow or with side effects.
 */
export async function probeIfAsked(argv: readonly string[] = process.argv.slice(2), env: NodeJS.ProcessEnv = process.env): Promise<void> {
  if (argv[0] !== PROBE_COMMAND) return;
  const code = await runProbe(argv.slice(1), env, (line) => process.stdout.write(`${line}\n`));
  process.exit(code);
}
