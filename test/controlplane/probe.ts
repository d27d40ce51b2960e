/**
 * Small network helpers for bringing up a local control plane: picking free
 * loopback ports and making one bounded HTTP(S) request.
 */
import http from 'node:http';
import https from 'node:https';
import { createServer, type Server } from 'node:net';

/**
 * Returns `n` distinct loopback ports that were free a moment ago (the kernel
 * picked them for port-0 listeners, all held open together so they differ).
 * Another process can still take one before it is used; callers retry then.
 */
export async function freePorts(n: number): Promise<number[]> {
  const servers: Server[] = [];
  try {
    const ports: number[] = [];
    for (let i = 0; i < n; i++) {
      const srv = createServer();
      servers.push(srv);
      await new Promise<void>((resolve, reject) => {
        srv.once('error', reject);
        srv.listen(0, '127.0.0.1', resolve);
      });
      const addr = srv.address();
      if (addr === null || typeof addr === 'string') throw new Error('port-0 listener has no port');
      ports.push(addr.port);
    }
    return ports;
  } finally {
    await Promise.all(servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
  }
}

export interface ProbeOptions {
  /** PEM CA bundle that must sign the server's certificate (https only). */
  ca?: string | Buffer;
  /** Accept any server certificate (a self-signed health endpoint, where only "is it up" matters). */
  insecure?: boolean;
  /** Sent as `Authorization: Bearer <token>`. */
  token?: string;
  /** Per-request limit; the request is abandoned after this. */
  timeoutMs?: number;
  /** Default GET; etcd's gRPC gateway (/v3/...) answers POST only. */
  method?: 'GET' | 'POST';
  /** Request body (sent with content-type application/json). */
  body?: string;
}

export interface ProbeResult {
  status: number;
  body: string;
  /** Response headers, names lower-case. */
  headers: http.IncomingHttpHeaders;
}

/**
 * One GET (or `opts.method`) with a hard time limit. Resolves with status,
 * body and headers for any HTTP answer; rejects on connection errors, TLS
 * errors and timeouts.
 */
export function get(url: string, opts: ProbeOptions = {}): Promise<ProbeResult> {
  const u = new URL(url);
  const mod = u.protocol === 'https:' ? https : http;
  const timeout = opts.timeoutMs ?? 2_000;
  return new Promise((resolve, reject) => {
    const req = mod.request(
      u,
      {
        method: opts.method ?? 'GET',
        ca: opts.ca,
        rejectUnauthorized: !opts.insecure,
        headers: {
          ...(opts.token ? { authorization: `Bearer ${opts.token}` } : {}),
          ...(opts.body !== undefined ? { 'content-type': 'application/json' } : {}),
        },
        timeout,
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8'), headers: res.headers }));
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`GET ${url} timed out after ${timeout}ms`)));
    req.on('error', reject);
    req.end(opts.body);
  });
}

/**
 * Whether the etcd at `url` is healthy AND is the member named `name`, i.e.
 * the process this caller started with --name=<name>. A health check alone
 * cannot tell: a port picked free (freePorts) is released before etcd binds
 * it, so another test's etcd can hold it by then; our etcd then exits with
 * "address already in use" while its /health probe is answered by the other
 * one, and our kube-apiserver would store into another test's cluster
 * (docs/testing.md, "Ports picked free").
 */
export async function etcdAnswersAs(url: string, name: string): Promise<boolean> {
  const health = await get(`${url}/health`).catch(() => undefined);
  if (health?.status !== 200 || !health.body.includes('"health":"true"')) return false;
  const list = await get(`${url}/v3/cluster/member/list`, { method: 'POST', body: '{}' }).catch(() => undefined);
  if (list?.status !== 200) return false;
  try {
    const members = (JSON.parse(list.body) as { members?: { name?: string }[] }).members ?? [];
    // Our etcd is a one-member cluster; its name is published (raft) just after it starts: poll until it shows.
    return members.length === 1 && members[0]!.name === name;
  } catch {
    return false;
  }
}

/**
 * Calls `check` until it returns a value other than undefined, or until the
 * deadline (epoch ms) passes, then throws `onTimeout()`. `check` may throw to
 * abort the wait at once (e.g. the process being waited for has exited).
 */
export async function pollUntil<T>(
  deadline: number,
  check: () => Promise<T | undefined>,
  onTimeout: () => Promise<Error>,
  intervalMs = 200,
): Promise<T> {
  for (;;) {
    const v = await check();
    if (v !== undefined) return v;
    if (Date.now() >= deadline) throw await onTimeout();
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
