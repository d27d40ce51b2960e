/**
 * A TCP proxy in front of the API server (or any TCP server), for tests of
 * dead connections: `freeze()` black-holes the connections established so
 * far (no byte forwarded either way, nothing closed: what a half-open
 * connection or a silently dropping middlebox looks like to both ends), while
 * new connections still pass. TLS goes through untouched, so a kubeconfig
 * only needs its server URL pointed at {@link TcpProxy.url}.
 */
import net, { type AddressInfo } from 'node:net';

export interface TcpProxy {
  /** `https://127.0.0.1:<port>` (or `http:` when the target was). */
  url: string;
  /** Connections accepted so far. */
  readonly accepted: number;
  /** Connections accepted and still open (the client has not closed its side). */
  readonly open: number;
  /** Black-holes every connection open now; returns how many. Later connections pass. */
  freeze(): number;
  /** Closes the listener and every connection. */
  close(): Promise<void>;
}

interface Pair {
  client: net.Socket;
  upstream: net.Socket;
  frozen: boolean;
}

/** Starts a proxy on 127.0.0.1, port 0, forwarding to `target` (an http(s) URL; only its host and port are used). */
export async function startTcpProxy(target: string): Promise<TcpProxy> {
  const to = new URL(target);
  const port = Number(to.port || (to.protocol === 'https:' ? 443 : 80));
  const pairs = new Set<Pair>();
  let accepted = 0;
  const server = net.createServer((client) => {
    accepted++;
    const upstream = net.connect({ host: to.hostname, port });
    const pair: Pair = { client, upstream, frozen: false };
    pairs.add(pair);
    // Forwarding by hand (not pipe()): a frozen pair drops what arrives instead of buffering it for later.
    client.on('data', (chunk) => {
      if (!pair.frozen) upstream.write(chunk);
    });
    upstream.on('data', (chunk) => {
      if (!pair.frozen) client.write(chunk);
    });
    // A close travels to the other side only while the pair forwards; a frozen
    // pair's server side stays open whatever the client does (the server never hears of it).
    const end = (): void => {
      pairs.delete(pair);
      client.destroy();
      if (!pair.frozen) upstream.destroy();
    };
    client.on('close', end);
    upstream.on('close', () => {
      if (!pair.frozen) end();
    });
    client.on('error', () => undefined);
    upstream.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const frozenUpstreams: net.Socket[] = [];
  return {
    url: `${to.protocol}//127.0.0.1:${(server.address() as AddressInfo).port}`,
    get accepted() {
      return accepted;
    },
    get open() {
      return pairs.size;
    },
    freeze() {
      let n = 0;
      for (const pair of pairs) {
        if (pair.frozen) continue;
        pair.frozen = true;
        frozenUpstreams.push(pair.upstream);
        n++;
      }
      return n;
    },
    async close() {
      for (const pair of pairs) pair.client.destroy();
      for (const pair of pairs) pair.upstream.destroy();
      for (const s of frozenUpstreams) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
