/**
 * Keep-alive connections to the API server, shared like client-go's transport
 * cache (one transport per TLS configuration, whatever the bearer token):
 * requests share one agent per TLS identity (at most
 * {@link MAX_REQUEST_SOCKETS} connections, further requests queue), watches
 * another, so long-lived watches never take the request connections. The TLS
 * settings are passed with every request (credentials.ts re-reads their
 * files), so a rotated CA, client certificate or key gets a new agent; tokens
 * are headers and do not matter.
 */
import { createHash } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import type { TlsSettings } from './credentials.js';

/** Connections per API server for ordinary requests (client-go's HTTP/1.1 transport keeps 25 idle). */
export const MAX_REQUEST_SOCKETS = 32;
/** Connections per API server for watches: one per watched resource, far fewer than this. */
export const MAX_WATCH_SOCKETS = 64;
/**
 * An idle request connection is closed after this long, well before
 * kube-apiserver's own 90 s idle timeout, so a request rarely races the
 * server closing it. (Watch connections are reused by the next watch at once.)
 */
const IDLE_SOCKET_TIMEOUT_MS = 30_000;
/** TLS identities kept at once; more appear only when certificates rotate. */
const MAX_IDENTITIES = 8;

/** The TLS settings that decide which connection a request may use. */
const TLS_KEYS = ['ca', 'cert', 'key', 'rejectUnauthorized', 'servername'] as const;

export type Purpose = 'request' | 'watch';

/** Pooled keep-alive agents by TLS identity; see the file comment. */
export class ConnectionPool {
  private readonly agents = new Map<string, http.Agent>();

  /** The pooled agent for connections with `tls` settings (`secure`: https), created on first use. */
  agentFor(secure: boolean, tls: TlsSettings, purpose: Purpose = 'request'): http.Agent {
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

/**
 * Content keys of the certificate and key Buffers seen, by Buffer: credentials.ts hands the same Buffer to every
 * request until the file is re-read or the data changes, so each is hashed once, not on every request (a CA
 * bundle is kilobytes). Weak: a replaced Buffer's entry goes with it.
 */
const contentKeys = new WeakMap<Buffer, string>();

function contentKey(b: Buffer): string {
  let k = contentKeys.get(b);
  if (k === undefined) {
    k = createHash('sha256').update(b).digest('base64');
    contentKeys.set(b, k);
  }
  return k;
}

/** One string per distinct TLS configuration (certificates and keys by content). */
function identity(tls: TlsSettings): string {
  let out = '';
  for (const k of TLS_KEYS) {
    const v = tls[k];
    out += v === undefined ? '|' : Buffer.isBuffer(v) ? `${contentKey(v)}|` : `${JSON.stringify(v)}|`;
  }
  return out;
}
