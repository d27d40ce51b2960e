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
}

export interface ProbeResult {
  status: number;
  body: string;
}

/**
 * One GET with a hard time limit. Resolves with status and body for any HTTP
 * answer; rejects on connection errors, TLS errors and timeouts.
 */
export function get(url: string, opts: ProbeOptions = {}): Promise<ProbeResult> {
  const u = new URL(url);
  const mod = u.protocol === 'https:' ? https : http;
  const timeout = opts.timeoutMs ?? 2_000;
  return new Promise((resolve, reject) => {
    const req = mod.request(
      u,
      {
        method: 'GET',
        ca: opts.ca,
        rejectUnauthorized: !opts.insecure,
        headers: opts.token ? { authorization: `Bearer ${opts.token}` } : {},
        timeout,
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`GET ${url} timed out after ${timeout}ms`)));
    req.on('error', reject);
    req.end();
  });
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
