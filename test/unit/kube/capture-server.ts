/**
 * A local HTTP endpoint that records requests and answers with canned
 * responses, for checking what the host's API client puts on the wire (headers, patch
 * content types, bodies). It does not emulate API server semantics.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';

export interface CapturedRequest {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
  /** performance.now() when the request arrived. */
  at: number;
  /** Client port of the connection it came on: equal ports, same connection. */
  remotePort: number;
}

export interface CannedResponse {
  status: number;
  /** Sent as JSON. */
  body?: unknown;
  /** Sent as is instead of `body` (e.g. an answer that is not JSON). */
  raw?: string;
}

export interface CaptureServer {
  url: string;
  requests: CapturedRequest[];
  /** KubeConfig pointing at this server with bearer token `token`. */
  kubeConfig(token?: string): KubeConfig;
  close(): Promise<void>;
}

/** Starts a server on 127.0.0.1 answering each request with `respond(request)`. */
export async function startCaptureServer(respond: (req: CapturedRequest) => CannedResponse): Promise<CaptureServer> {
  const requests: CapturedRequest[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const captured: CapturedRequest = {
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
        at: performance.now(),
        remotePort: req.socket.remotePort ?? 0,
      };
      requests.push(captured);
      const { status, body, raw } = respond(captured);
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(raw ?? JSON.stringify(body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    requests,
    kubeConfig(token = 'test-token') {
      const kc = new KubeConfig();
      // client-node (1.x) only talks plain HTTP to clusters marked skipTLSVerify.
      kc.loadFromClusterAndUser({ name: 'capture', server: url, skipTLSVerify: true }, { name: 'capture', token });
      return kc;
    },
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
