/**
 * Small real backends for load balancer tests: a TCP server that answers
 * every connection with its name (then closes), a UDP server that answers
 * every datagram with its name, and clients for both.
 */
import dgram from 'node:dgram';
import net from 'node:net';

export interface Backend {
  name: string;
  /** The port it listens on (the one bound when asked for port 0); TCP only. */
  port?: number;
  close(): Promise<void>;
}

/** A TCP server on ip:port (0: a free one, see `port`) answering `<name>\n` to every connection. */
export async function startTcpBackend(name: string, ip: string, port: number): Promise<Backend> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    s.on('error', () => undefined);
    s.end(`${name}\n`);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host: ip, port }, () => resolve());
  });
  return {
    name,
    port: (server.address() as net.AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/**
 * The TCP backends of one node address, one per node port. The API server
 * hands a deleted Service's node port out again: a backend still listening
 * there served a Service that is gone, so it makes way for the new one
 * (else EADDRINUSE).
 */
export class NodePortBackends {
  private readonly byPort = new Map<number, Backend>();

  constructor(private readonly ip: string) {}

  /** Starts a backend answering `name` on this node's `nodePort`, closing whatever listened there before. */
  async start(name: string, nodePort: number): Promise<Backend> {
    await this.byPort.get(nodePort)?.close();
    const backend = await startTcpBackend(name, this.ip, nodePort);
    this.byPort.set(nodePort, backend);
    return backend;
  }

  /** Closes every backend. */
  async closeAll(): Promise<void> {
    await Promise.all([...this.byPort.values()].map((b) => b.close()));
    this.byPort.clear();
  }
}

/** A UDP server on ip:port answering `<name>` to every datagram. */
export async function startUdpBackend(name: string, ip: string, port: number): Promise<Backend> {
  const sock = dgram.createSocket('udp4');
  sock.on('message', (_m, r) => sock.send(name, r.port, r.address));
  await new Promise<void>((resolve, reject) => {
    sock.once('error', reject);
    sock.bind(port, ip, () => resolve());
  });
  return { name, close: () => new Promise<void>((resolve) => sock.close(() => resolve())) };
}

/** Connects to ip:port and returns the first line received; rejects on error or after `timeoutMs`. */
export function tcpRequest(ip: string, port: number, timeoutMs = 3000): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = net.connect({ host: ip, port });
    let data = '';
    const timer = setTimeout(() => {
      s.destroy();
      reject(new Error(`no answer from ${ip}:${port} within ${timeoutMs} ms`));
    }, timeoutMs);
    s.on('data', (d) => (data += d.toString()));
    s.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    s.on('close', () => {
      clearTimeout(timer);
      if (data) resolve(data.trim());
      else reject(new Error(`connection to ${ip}:${port} closed without an answer`));
    });
  });
}

/** Sends one datagram to ip:port and returns the answer; rejects after `timeoutMs`. */
export function udpRequest(ip: string, port: number, timeoutMs = 2000): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = dgram.createSocket('udp4');
    const timer = setTimeout(() => {
      s.close();
      reject(new Error(`no UDP answer from ${ip}:${port} within ${timeoutMs} ms`));
    }, timeoutMs);
    s.on('message', (m) => {
      clearTimeout(timer);
      s.close();
      resolve(m.toString());
    });
    s.send('ping', port, ip);
  });
}
