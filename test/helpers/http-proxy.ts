/**
 * An HTTP-aware proxy in front of the API server, for tests of requests
 * whose outcome a client never learns and of watches that go quiet, one
 * request at a time (test/helpers/tcp-proxy.ts works on whole connections
 * and cannot see inside TLS). It terminates TLS with a self-signed
 * certificate ({@link HttpProxy.kubeConfig} trusts it), forwards every
 * request to the API server as it came (the bearer token travels in its
 * Authorization header) and streams the answers back, watches included.
 *
 * - {@link HttpProxy.hold}: requests it picks are read whole, kept, and their
 *   client's connection is reset without an answer: to the client the
 *   outcome is unknown. {@link HttpProxy.sendHeld} later sends them to the
 *   API server, which applies them: a write the client gave up on that lands
 *   anyway, as one queued in a load balancer or a busy server does.
 * - {@link HttpProxy.freeze}: the answers in progress it picks (watches) are
 *   black-holed: nothing more reaches the client and nothing is closed, so
 *   the client's cache silently stops following the server.
 */
import https from 'node:https';
import type { IncomingHttpHeaders, IncomingMessage, OutgoingHttpHeaders } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { readFile } from 'node:fs/promises';
import { KubeConfig } from '@kubernetes/client-node';
import { generateSelfSigned } from '../../host/server/self-signed.js';

/** What a pick sees of a request. */
export interface RequestLine {
  method: string;
  /** Path and query, as sent (e.g. `/api/v1/nodes/n1` or `/api/v1/persistentvolumes?watch=true&...`). */
  path: string;
}

export type Pick = (r: RequestLine) => boolean;

export interface HeldAnswer extends RequestLine {
  status: number;
  body: string;
}

export interface HttpProxy {
  /** `https://127.0.0.1:<port>`. */
  readonly url: string;
  /** `user`'s kubeconfig pointed at this proxy (server URL and CA); same credentials. */
  kubeConfig(user: KubeConfig): KubeConfig;
  /** From now on, requests `pick` selects are held (`undefined`: none). */
  hold(pick: Pick | undefined): void;
  /** The requests held so far and not sent yet. */
  readonly held: readonly RequestLine[];
  /** Sends the held requests to the API server, one after another in the order they came; their answers. */
  sendHeld(): Promise<HeldAnswer[]>;
  /** Answers streaming now (e.g. watches) that `pick` selects. */
  streaming(pick: Pick): RequestLine[];
  /** Black-holes the answers streaming now that `pick` selects; returns how many. Later requests pass. */
  freeze(pick: Pick): number;
  /** Closes the listener, every connection and every request upstream. */
  close(): Promise<void>;
}

/** Headers that belong to one connection (RFC 9110 §7.6.1), not forwarded. */
const HOP_BY_HOP = ['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'te', 'trailer'];

function endToEnd(headers: IncomingHttpHeaders, host?: string): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = { ...headers };
  for (const h of HOP_BY_HOP) delete out[h];
  if (host) out.host = host;
  return out;
}

interface Stream extends RequestLine {
  frozen: boolean;
  upstream: IncomingMessage;
}

/** Starts the proxy on 127.0.0.1, port 0, in front of the current cluster of `upstream` (its server URL and CA). */
export async function startHttpProxy(upstream: KubeConfig): Promise<HttpProxy> {
  const cluster = upstream.getCurrentCluster();
  if (!cluster) throw new Error('kubeconfig without a current cluster');
  const target = new URL(cluster.server);
  const ca = cluster.caData ? Buffer.from(cluster.caData, 'base64') : cluster.caFile ? await readFile(cluster.caFile) : undefined;
  const agent = new https.Agent({ keepAlive: true, ca, rejectUnauthorized: !cluster.skipTLSVerify });
  const serving = await generateSelfSigned({ commonName: 'ccm-test-http-proxy', dnsNames: ['localhost'], ips: ['127.0.0.1'] });

  let holding: Pick | undefined;
  const held: (RequestLine & { headers: OutgoingHttpHeaders; body: Buffer })[] = [];
  const streams = new Set<Stream>();
  const sockets = new Set<Socket>();

  /** One request to the API server; `onAnswer` gets its answer (headers read, body streaming). */
  const send = (line: RequestLine, headers: OutgoingHttpHeaders, onAnswer: (res: IncomingMessage) => void) =>
    https.request({ host: target.hostname, port: target.port, method: line.method, path: line.path, headers, agent }, onAnswer);

  const server = https.createServer({ cert: serving.cert, key: serving.key }, (req, res) => {
    const line: RequestLine = { method: req.method ?? 'GET', path: req.url ?? '/' };
    if (holding?.(line)) {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        held.push({ ...line, headers: endToEnd(req.headers, target.host), body: Buffer.concat(chunks) });
        // No answer: the client sees its connection reset after sending the whole request.
        req.socket.destroy();
      });
      return;
    }
    const up = send(line, endToEnd(req.headers, target.host), (answer) => {
      const stream: Stream = { ...line, frozen: false, upstream: answer };
      streams.add(stream);
      res.writeHead(answer.statusCode ?? 502, endToEnd(answer.headers));
      res.flushHeaders();
      // Forwarding by hand (not pipe()): a frozen answer drops what arrives instead of buffering it.
      answer.on('data', (c: Buffer) => {
        if (!stream.frozen) res.write(c);
      });
      answer.on('end', () => {
        streams.delete(stream);
        if (!stream.frozen) res.end();
      });
      answer.on('error', () => res.destroy());
      // The client went away: so does the request upstream, unless frozen (the server never hears of it).
      res.on('close', () => {
        streams.delete(stream);
        if (!stream.frozen) answer.destroy();
      });
    });
    up.on('error', () => res.destroy());
    req.pipe(up);
  });
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  server.on('tlsClientError', () => undefined);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const frozen: IncomingMessage[] = [];

  return {
    url,
    kubeConfig(user: KubeConfig): KubeConfig {
      const u = user.getCurrentUser();
      if (!u) throw new Error('kubeconfig without a current user');
      const kc = new KubeConfig();
      kc.loadFromOptions({
        clusters: [{ name: 'via-http-proxy', server: url, caData: Buffer.from(serving.cert).toString('base64'), skipTLSVerify: false }],
        users: [u],
        contexts: [{ name: 'via-http-proxy', cluster: 'via-http-proxy', user: u.name }],
        currentContext: 'via-http-proxy',
      });
      return kc;
    },
    hold(pick) {
      holding = pick;
    },
    get held() {
      return held.map(({ method, path }) => ({ method, path }));
    },
    async sendHeld() {
      const answers: HeldAnswer[] = [];
      for (const r of held.splice(0)) {
        answers.push(
          await new Promise<HeldAnswer>((resolve, reject) => {
            const up = send(r, { ...r.headers, 'content-length': String(r.body.length) }, (answer) => {
              const chunks: Buffer[] = [];
              answer.on('data', (c: Buffer) => chunks.push(c));
              answer.on('end', () =>
                resolve({ method: r.method, path: r.path, status: answer.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }),
              );
              answer.on('error', reject);
            });
            up.on('error', reject);
            up.end(r.body);
          }),
        );
      }
      return answers;
    },
    streaming(pick) {
      return [...streams].filter((s) => !s.frozen && pick(s)).map(({ method, path }) => ({ method, path }));
    },
    freeze(pick) {
      let n = 0;
      for (const s of streams) {
        if (s.frozen || !pick(s)) continue;
        s.frozen = true;
        frozen.push(s.upstream);
        n++;
      }
      return n;
    },
    async close() {
      holding = undefined;
      held.length = 0;
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const s of sockets) s.destroy();
      for (const s of streams) s.upstream.destroy();
      for (const u of frozen) u.destroy();
      agent.destroy();
      await closed;
    },
  };
}
