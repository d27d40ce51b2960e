/**
 * One HTTPS request from a test, with the credentials the host's servers
 * take: a bearer token, a client certificate, or front-proxy headers.
 * Resolves with any HTTP answer; rejects on connection, TLS and time-out
 * errors.
 */
import https from 'node:https';

export interface HttpsOptions {
  method?: string;
  /** PEM bundle that must sign the server's certificate; without it (or `insecure`), the system CAs. */
  ca?: string;
  /** Accept any server certificate. */
  insecure?: boolean;
  /** Sent as `Authorization: Bearer <token>`. */
  token?: string;
  /** Client certificate and key (PEM). */
  cert?: string;
  key?: string;
  headers?: Record<string, string | string[]>;
  body?: string;
  timeoutMs?: number;
}

export interface HttpsAnswer {
  status: number;
  body: string;
  type: string | undefined;
}

export function httpsRequest(url: string, o: HttpsOptions = {}): Promise<HttpsAnswer> {
  const timeout = o.timeoutMs ?? 10_000;
  return new Promise((resolve, reject) => {
    const req = https.request(
      new URL(url),
      {
        method: o.method ?? 'GET',
        ca: o.ca,
        cert: o.cert,
        key: o.key,
        rejectUnauthorized: !o.insecure,
        headers: {
          ...(o.token ? { authorization: `Bearer ${o.token}` } : {}),
          ...(o.body !== undefined ? { 'content-type': 'application/json' } : {}),
          ...o.headers,
        },
        timeout,
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8'), type: res.headers['content-type'] }),
        );
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`${o.method ?? 'GET'} ${url} timed out after ${timeout}ms`)));
    req.on('error', reject);
    req.end(o.body);
  });
}
