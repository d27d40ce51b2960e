/**
 * Keep-alive connections to the API server, shared like client-go's transport
 * cache (one transport per TLS configuration, whatever the bearer token).
 *
 * client-node (1.x) builds a new `http(s).Agent` without keep-alive for every
 * request (`KubeConfig.applySecurityAuthentication`) and for every watch
 * (`applyToFetchOptions`), so each request pays a TCP connect and a full TLS
 * handshake. A {@link ConnectionPool} replaces that agent with a pooled
 * keep-alive one of the same TLS settings: requests share one agent (at most
 * {@link MAX_REQUEST_SOCKETS} connections, further requests queue), watches
 * another, so long-lived watches never take the request connections.
 *
 * The TLS settings are read from the agent client-node built, on every
 * request, so a rotated CA, client certificate or key (client-node re-reads
 * their files each time) gets a new agent; tokens are headers and do not
 * matter. Agents client-node builds for a `proxy-url` (proxy agents) are left
 * as they are: those keep one connection per request.
 */
import http from 'node:http';
import https from 'node:https';
import type { KubeConfig, RequestContext, SecurityAuthentication } from '@kubernetes/client-node';

/** Connections per API server for ordinary requests (client-go's HTTP/1.1 transport keeps 25 idle). */
export const MAX_REQUEST_SOCKETS = 32;
/** Connections per API server for watches: one per watched resource, far fewer than this. */
export const MAX_WATCH_SOCKETS = 64;
/**
 * An idle request connection is closed after this long, well before
 * kube-apiserver's own 90 s idle timeout, so a request rarely races the
 * server closing it. (Watch connections are reused by the next watch at once.)
 */
export const IDLE_SOCKET_TIMEOUT_MS = 30_000;
/** TLS identities kept at once; more appear only when certificates rotate. */
const MAX_IDENTITIES = 8;

/** The agent options that decide which connection a request may use. */
const TLS_KEYS = ['ca', 'cert', 'key', 'pfx', 'passphrase', 'rejectUnauthorized', 'servername'] as const;

type Purpose = 'request' | 'watch';

/** Pooled keep-alive agents by TLS identity; see the file comment. */
export class ConnectionPool {
  private readonly agents = new Map<string, http.Agent>();

  /**
   * The pooled agent to use instead of `built` (the agent client-node made
   * for one request or watch). Returns `built` itself when it is not a plain
   * `http.Agent`/`https.Agent` (proxy agents) or is missing.
   */
  agentFor<A>(built: A, purpose: Purpose = 'request'): A | http.Agent {
    if (!(built instanceof http.Agent)) return built;
    const secure = built.constructor === https.Agent;
    if (!secure && built.constructor !== http.Agent) return built;
    const options = (built as unknown as { options?: Record<string, unknown> }).options ?? {};
    const tls: Record<string, unknown> = {};
    for (const k of TLS_KEYS) if (options[k] !== undefined) tls[k] = options[k];
    const key = `${purpose}|${secure ? 'https' : 'http'}|${identity(tls)}`;
    let agent = this.agents.get(key);
    if (!agent) {
      const maxSockets = purpose === 'watch' ? MAX_WATCH_SOCKETS : MAX_REQUEST_SOCKETS;
      const settings: https.AgentOptions = { ...tls, keepAlive: true, maxSockets, maxFreeSockets: maxSockets, scheduling: 'lifo' };
      if (purpose === 'request') settings.timeout = IDLE_SOCKET_TIMEOUT_MS;
      agent = secure ? new https.Agent(settings) : new http.Agent(settings);
      // A superseded identity's agent is dropped, not destroyed: its requests
      // in flight finish, then its idle sockets time out.
      if (this.agents.size >= MAX_IDENTITIES) this.agents.delete(this.agents.keys().next().value!);
      this.agents.set(key, agent);
    }
    return agent;
  }

  /** Closes every pooled connection; requests in flight fail. For shutdown. */
  destroy(): void {
    for (const agent of this.agents.values()) agent.destroy();
    this.agents.clear();
  }
}

/** One string per distinct TLS configuration (certificates and keys by content). */
function identity(tls: Record<string, unknown>): string {
  return TLS_KEYS.map((k) => {
    const v = tls[k];
    if (v === undefined) return '';
    if (Buffer.isBuffer(v)) return v.toString('base64');
    return JSON.stringify(v);
  }).join('|');
}

/** `auth` (a KubeConfig or per-controller token source) with its requests sent over `pool`. */
export function pooledAuthentication(auth: SecurityAuthentication, pool: ConnectionPool): SecurityAuthentication {
  return {
    getName: () => auth.getName(),
    async applySecurityAuthentication(context: RequestContext): Promise<void> {
      await auth.applySecurityAuthentication(context);
      const agent = pool.agentFor(context.getAgent());
      if (agent) context.setAgent(agent);
    },
  };
}

/**
 * `kc` as client-node's `Watch` uses it (the current cluster and
 * `applyToFetchOptions`, nothing else), with each watch sent over `pool`.
 */
export function pooledWatchConfig(kc: KubeConfig, pool: ConnectionPool): KubeConfig {
  const view: Pick<KubeConfig, 'getCurrentCluster' | 'applyToFetchOptions'> = {
    getCurrentCluster: () => kc.getCurrentCluster(),
    async applyToFetchOptions(opts) {
      const init = await kc.applyToFetchOptions(opts);
      return { ...init, agent: pool.agentFor(init.agent, 'watch') };
    },
  };
  return view as KubeConfig;
}
