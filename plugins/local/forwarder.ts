/**
 * The data plane of the local cloud's load balancers: for every port of
 * every load balancer record in the state, a listener on
 * `ingressIp:port` (TCP: a proxy per connection; UDP: a relay per client
 * address) that forwards to the backends' `address:nodePort` (or, with pod
 * backends, to the pods' `address:port`), round-robin
 * (or by client IP with sessionAffinity ClientIP), honouring
 * loadBalancerSourceRanges. On Linux the whole 127.0.0.0/8 is bindable, so
 * the default pool 127.0.10.0/24 needs no privileges.
 *
 * The listeners follow the state, not the calls: `sync()` after a
 * mutation (the call returns once its listeners are bound) and a poll pick
 * up changes made by other processes (the CLI, a previous provider process).
 * A provider restart therefore restores every listener from disk, and a
 * deleted load balancer's listeners are closed. A port that cannot be bound
 * (e.g. still held by a dying previous process) is retried on every poll.
 *
 * Listeners are bounded (`maxListeners`, by default the process's open-file
 * limit less a reserve): each holds a file descriptor, and past the limit
 * every file the cloud opens, its state file first, fails with EMFILE, so
 * every call would fail. Load balancers past the bound stay records without
 * traffic (one warning), and get their listeners when others close.
 */
import dgram from 'node:dgram';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import ipaddr from 'ipaddr.js';
import type { LocalCloudLogger } from './context.js';
import type { LoadBalancerRecord, StateStore, StateView } from './state.js';

/** How often the state is checked for changes made elsewhere, and failed binds retried. */
const FORWARDER_POLL_MS = 1000;
/** A UDP client with no traffic for this long loses its relay socket. */
const UDP_IDLE_MS = 60_000;
/** Backends tried for one TCP connection before it is dropped. */
const MAX_CONNECT_TRIES = 3;
/** File descriptors left to the rest of the process (state file, gRPC, proxied connections) under the open-file limit. */
const FD_RESERVE = 1024;
/** The bound when the open-file limit cannot be read (not Linux). */
const DEFAULT_MAX_LISTENERS = 4096;

/**
 * The default bound on listeners: the soft open-file limit (`/proc/self/limits`) less FD_RESERVE, at least 1; an
 * unlimited or unreadable limit gives DEFAULT_MAX_LISTENERS (unreadable) or no bound (unlimited).
 */
export function defaultMaxListeners(limits = readLimits()): number {
  const soft = /^Max open files\s+(\S+)/m.exec(limits ?? '')?.[1];
  if (soft === undefined) return DEFAULT_MAX_LISTENERS;
  if (soft === 'unlimited') return Infinity;
  const n = Number(soft);
  return Number.isSafeInteger(n) && n > 0 ? Math.max(1, n - FD_RESERVE) : DEFAULT_MAX_LISTENERS;
}

function readLimits(): string | undefined {
  try {
    return readFileSync('/proc/self/limits', 'utf8');
  } catch {
    return undefined;
  }
}

interface Backend {
  address: string;
  port: number;
}

/** What one listener should do. */
interface Target {
  key: string;
  protocol: 'TCP' | 'UDP';
  ip: string;
  port: number;
  lb: string;
  backends: Backend[];
  sourceRanges: [ipaddr.IPv4 | ipaddr.IPv6, number][];
  clientIpAffinity: boolean;
}

const backendId = (b: Backend) => `${b.address}:${b.port}`;

/**
 * Targets of each load balancer record. Records are immutable and shared
 * between state views while unchanged, so a pass after one load balancer
 * changed rebuilds only that one's targets, not every backend list.
 */
const targetsByRecord = new WeakMap<LoadBalancerRecord, Target[]>();

function targetsOfLb(lb: LoadBalancerRecord, log: LocalCloudLogger): Target[] {
  const cached = targetsByRecord.get(lb);
  if (cached) return cached;
  const out: Target[] = [];
  if (ipaddr.isValid(lb.ingressIp)) {
    const sourceRanges: Target['sourceRanges'] = [];
    for (const r of lb.sourceRanges) {
      try {
        sourceRanges.push(ipaddr.parseCIDR(r));
      } catch {
        log.warn({ lb: lb.name, range: r }, 'ignoring an invalid source range');
      }
    }
    for (const p of lb.ports) {
      if (p.protocol !== 'TCP' && p.protocol !== 'UDP') continue; // SCTP: recorded, not forwarded
      const key = `${p.protocol}/${lb.ingressIp}/${p.port}`;
      // Pod backends (protocol 1.1) replace the node ports when the host sent them.
      const backends = lb.podBackends
        ? lb.podBackends.flatMap((b) => {
            const port = b.ports[`${p.protocol}/${p.port}`];
            return port ? [{ address: b.address, port }] : [];
          })
        : p.nodePort > 0
          ? lb.backends.filter((b) => b.address).map((b) => ({ address: b.address, port: p.nodePort }))
          : [];
      out.push({
        key,
        protocol: p.protocol,
        ip: lb.ingressIp,
        port: p.port,
        lb: lb.name,
        backends,
        sourceRanges,
        clientIpAffinity: lb.sessionAffinity === 'ClientIP',
      });
    }
  }
  targetsByRecord.set(lb, out);
  return out;
}

function targetsOf(lbs: readonly LoadBalancerRecord[], log: LocalCloudLogger): Map<string, Target> {
  const out = new Map<string, Target>();
  for (const lb of lbs) for (const t of targetsOfLb(lb, log)) out.set(t.key, t);
  return out;
}

function allowed(t: Target, client: string | undefined): boolean {
  if (t.sourceRanges.length === 0) return true;
  if (!client) return false;
  let addr: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    addr = ipaddr.process(client);
  } catch {
    return false;
  }
  return t.sourceRanges.some(([net, bits]) => addr.kind() === net.kind() && addr.match(net, bits));
}

/** Index of the backend for a client: round-robin, or a stable hash of the client IP. */
function pick(t: Target, counter: number, client: string | undefined): number {
  if (!t.clientIpAffinity || !client) return counter % t.backends.length;
  let h = 0;
  for (const ch of client) h = (h * 31 + ch.charCodeAt(0)) >>> 0;
  return h % t.backends.length;
}

interface Listener {
  target: Target;
  open(): Promise<void>;
  update(t: Target): void;
  close(): void;
}

class TcpListener implements Listener {
  private readonly server: net.Server;
  private rr = 0;
  /** Open client connections, with the backend each goes to. */
  private readonly conns = new Map<net.Socket, { upstream?: net.Socket; backend?: string }>();

  constructor(
    public target: Target,
    private readonly log: LocalCloudLogger,
  ) {
    this.server = net.createServer((client) => this.accept(client));
  }

  open(): Promise<void> {
    return new Promise((resolve, reject) => {
      const onError = (err: Error) => reject(err);
      this.server.once('error', onError);
      this.server.listen({ host: this.target.ip, port: this.target.port, exclusive: true }, () => {
        this.server.off('error', onError);
        this.server.on('error', (err) => this.log.warn({ listener: this.target.key, error: err.message }, 'load balancer listener error'));
        resolve();
      });
    });
  }

  update(t: Target): void {
    this.target = t;
    // Nodes removed from the backend set stop receiving traffic, including open connections.
    const live = new Set(t.backends.map(backendId));
    for (const [client, c] of this.conns) if (c.backend && !live.has(c.backend)) client.destroy();
  }

  close(): void {
    this.server.close();
    for (const client of this.conns.keys()) client.destroy();
    this.conns.clear();
  }

  private accept(client: net.Socket): void {
    const t = this.target;
    client.on('error', () => undefined);
    if (t.backends.length === 0 || !allowed(t, client.remoteAddress)) {
      client.destroy();
      return;
    }
    const entry: { upstream?: net.Socket; backend?: string } = {};
    this.conns.set(client, entry);
    client.once('close', () => {
      this.conns.delete(client);
      entry.upstream?.destroy();
    });
    const first = pick(t, this.rr++, client.remoteAddress);
    const attempt = (n: number) => {
      if (client.destroyed) return;
      const b = t.backends[(first + n) % t.backends.length]!;
      const upstream = net.connect({ host: b.address, port: b.port });
      entry.upstream = upstream;
      entry.backend = backendId(b);
      let connected = false;
      upstream.once('connect', () => {
        connected = true;
        client.pipe(upstream);
        upstream.pipe(client);
      });
      upstream.on('error', () => {
        if (!connected && n + 1 < Math.min(MAX_CONNECT_TRIES, t.backends.length)) attempt(n + 1);
        else client.destroy();
      });
      upstream.once('close', () => {
        if (connected) client.end();
      });
    };
    attempt(0);
  }
}

class UdpListener implements Listener {
  private readonly socket: dgram.Socket;
  private rr = 0;
  private readonly sessions = new Map<string, { upstream: dgram.Socket; backend: string; timer: NodeJS.Timeout; queued?: Buffer[] }>();

  constructor(
    public target: Target,
    private readonly log: LocalCloudLogger,
  ) {
    this.socket = dgram.createSocket(net.isIPv6(target.ip) ? 'udp6' : 'udp4');
    this.socket.on('message', (msg, rinfo) => this.relay(msg, rinfo));
  }

  open(): Promise<void> {
    return new Promise((resolve, reject) => {
      const onError = (err: Error) => reject(err);
      this.socket.once('error', onError);
      this.socket.bind({ address: this.target.ip, port: this.target.port, exclusive: true }, () => {
        this.socket.off('error', onError);
        this.socket.on('error', (err) => this.log.warn({ listener: this.target.key, error: err.message }, 'load balancer listener error'));
        resolve();
      });
    });
  }

  update(t: Target): void {
    this.target = t;
    const live = new Set(t.backends.map(backendId));
    for (const [client, s] of this.sessions) if (!live.has(s.backend)) this.endSession(client);
  }

  close(): void {
    for (const client of [...this.sessions.keys()]) this.endSession(client);
    try {
      this.socket.close();
    } catch {
      // not bound
    }
  }

  private endSession(client: string): void {
    const s = this.sessions.get(client);
    if (!s) return;
    clearTimeout(s.timer);
    s.upstream.close();
    this.sessions.delete(client);
  }

  private relay(msg: Buffer, rinfo: dgram.RemoteInfo): void {
    const t = this.target;
    if (t.backends.length === 0 || !allowed(t, rinfo.address)) return;
    const client = `${rinfo.address}|${rinfo.port}`;
    let s = this.sessions.get(client);
    if (!s) {
      const b = t.backends[pick(t, this.rr++, rinfo.address)]!;
      const upstream = dgram.createSocket(net.isIPv6(b.address) ? 'udp6' : 'udp4');
      upstream.on('message', (reply) => this.socket.send(reply, rinfo.port, rinfo.address));
      upstream.on('error', () => this.endSession(client));
      // connect() is asynchronous: datagrams wait in `queued` until it is done.
      const session = {
        upstream,
        backend: backendId(b),
        timer: setTimeout(() => this.endSession(client), UDP_IDLE_MS),
        queued: [] as Buffer[] | undefined,
      };
      upstream.connect(b.port, b.address, () => {
        for (const m of session.queued ?? []) upstream.send(m);
        session.queued = undefined;
      });
      s = session;
      this.sessions.set(client, s);
    }
    s.timer.refresh();
    if (s.queued) s.queued.push(msg);
    else s.upstream.send(msg, (err) => err && this.endSession(client));
  }
}

/** Keeps one listener per load balancer port of the state document. */
export class Forwarder {
  private readonly listeners = new Map<string, Listener>();
  /** Keys whose bind failed; retried on every poll. */
  private readonly failed = new Set<string>();
  /** Keys not opened because of maxListeners; tried again when the state changes (a load balancer deleted frees one). */
  private readonly capped = new Set<string>();
  private lastView?: StateView;
  private timer?: NodeJS.Timeout;
  private chain: Promise<void> = Promise.resolve();
  private pending?: Promise<void>;
  private closed = false;

  constructor(
    private readonly store: StateStore,
    private readonly log: LocalCloudLogger,
    private readonly pollMs = FORWARDER_POLL_MS,
    private readonly maxListeners = defaultMaxListeners(),
  ) {}

  /** First sync, then the poll. */
  start(): Promise<void> {
    this.timer = setInterval(
      () => void this.sync().catch((err) => this.log.warn({ error: (err as Error).message }, 'forwarder sync failed')),
      this.pollMs,
    );
    this.timer.unref();
    return this.sync();
  }

  /**
   * Brings the listeners in line with the state. Resolves after a pass that
   * started after this call (concurrent calls share one pass). Never rejects
   * for a port that cannot be bound (logged, retried by the poll).
   */
  sync(): Promise<void> {
    if (!this.pending) {
      const run = this.chain.then(() => {
        this.pending = undefined;
        return this.pass();
      });
      this.pending = run;
      this.chain = run.catch(() => undefined);
    }
    return this.pending;
  }

  /** The keys of the listeners currently bound (tests, status). */
  bound(): string[] {
    return [...this.listeners.keys()].filter((k) => !this.failed.has(k));
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.timer);
    await this.chain;
    for (const l of this.listeners.values()) l.close();
    this.listeners.clear();
  }

  private async pass(): Promise<void> {
    if (this.closed) return;
    const view = this.store.view();
    // Capped keys need no retry here: a listener closes only when the view changes.
    if (view === this.lastView && this.failed.size === 0) return;
    this.lastView = view;
    const targets = targetsOf(view.state.loadBalancers, this.log);
    for (const [key, l] of this.listeners) {
      if (!targets.has(key)) {
        l.close();
        this.listeners.delete(key);
        this.failed.delete(key);
        this.log.info({ listener: key }, 'load balancer listener closed');
      }
    }
    const wasCapped = this.capped.size;
    this.capped.clear();
    const opening: Promise<void>[] = [];
    for (const [key, t] of targets) {
      const existing = this.listeners.get(key);
      if (existing && !this.failed.has(key)) {
        if (existing.target !== t) existing.update(t);
        continue;
      }
      if (!existing && this.listeners.size >= this.maxListeners) {
        this.capped.add(key);
        continue;
      }
      existing?.close();
      const l: Listener = t.protocol === 'TCP' ? new TcpListener(t, this.log) : new UdpListener(t, this.log);
      this.listeners.set(key, l);
      opening.push(
        l.open().then(
          () => {
            if (this.failed.delete(key)) this.log.info({ listener: key }, 'load balancer listener bound after retrying');
            else this.log.debug({ listener: key, lb: t.lb, backends: t.backends.length }, 'load balancer listener open');
          },
          (err: Error) => {
            if (!this.failed.has(key)) this.log.warn({ listener: key, lb: t.lb, error: err.message }, 'cannot bind load balancer listener; retrying');
            this.failed.add(key);
          },
        ),
      );
    }
    await Promise.all(opening);
    if (this.capped.size > 0 && wasCapped === 0) {
      this.log.warn(
        { maxListeners: this.maxListeners, notOpened: this.capped.size },
        'load balancer listeners at their bound (the open-file limit less a reserve): the rest are records without traffic until others close; raise the limit (ulimit -n), or set LOCALCLOUD_FORWARD=false',
      );
    } else if (this.capped.size === 0 && wasCapped > 0) this.log.info({ maxListeners: this.maxListeners }, 'every load balancer listener open again');
  }
}
