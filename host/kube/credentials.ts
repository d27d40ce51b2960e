/**
 * What each API request carries from the kubeconfig: TLS settings (CA,
 * client certificate and key, verification, server name) and headers
 * (Authorization, Impersonate-User).
 *
 * - Files (CA, client certificate/key, token file) are re-read at most every
 *   {@link FILE_REFRESH_MS}, so rotated service-account tokens and
 *   certificates are picked up, as client-go's cached file token source does
 *   for the in-cluster token.
 * - Exec credential plugins (client.authentication.k8s.io/v1 and v1beta1)
 *   run non-interactively with `KUBERNETES_EXEC_INFO` set, at most
 *   {@link EXEC_TIMEOUT_MS} and {@link MAX_EXEC_OUTPUT_BYTES} of output; the
 *   credential is cached until its `expirationTimestamp` (for ever when it has
 *   none), and concurrent requests share one run.
 * - `auth-provider` entries (removed from kubectl in 1.26) are refused with
 *   the exec plugin to use instead, and so is a cluster's `proxy-url`.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import { currentCluster, currentUser, type ExecConfig, type KubeConfigData, type KubeUser } from './kubeconfig.js';

/** How long a file read for a credential is used before it is read again. */
const FILE_REFRESH_MS = 60_000;
/** Decoded inline certificate data kept (a kubeconfig's CA, certificate and key; exec credentials rotate). */
const MAX_DECODED_ENTRIES = 16;
/** An exec plugin that runs longer than this is killed and the request fails. */
const EXEC_TIMEOUT_MS = 60_000;
/** Largest output accepted from an exec plugin. */
const MAX_EXEC_OUTPUT_BYTES = 1 * 2 ** 20;
/** Largest credential file (token, certificate, key) read. */
const MAX_CREDENTIAL_FILE_BYTES = 1 * 2 ** 20;
/** An exec credential this close to expiry is fetched again. */
const EXEC_EXPIRY_MARGIN_MS = 10_000;

/** TLS options of the connection a request goes over (node:https agent options). */
export interface TlsSettings {
  ca?: Buffer;
  cert?: Buffer;
  key?: Buffer;
  rejectUnauthorized?: boolean;
  servername?: string;
}

/** What one request carries. */
export interface RequestAuth {
  tls: TlsSettings;
  headers: Record<string, string>;
}

/** Source of a request's credentials; asked before every request. */
export interface Authenticator {
  authenticate(): Promise<RequestAuth>;
}

/** The current context's cluster and user of a kubeconfig, as request credentials. */
export class KubeCredentials implements Authenticator {
  /** API server URL, without a trailing slash. */
  readonly server: string;
  private readonly files = new Map<string, { data: Buffer; readAt: number }>();
  /**
   * Inline (base64) certificate data decoded once: the same Buffer every
   * request, so the connection pool's identity of it is computed once
   * (connections.ts) instead of decoding and re-encoding the CA per request.
   */
  private readonly decoded = new Map<string, Buffer>();
  private readonly exec?: ExecPlugin;

  /** Throws if `kc` selects no cluster or its user uses an auth-provider. */
  constructor(private readonly kc: KubeConfigData) {
    const cluster = currentCluster(kc);
    if (!cluster) throw new Error(`kubeconfig selects no cluster (current context ${JSON.stringify(kc.currentContext)})`);
    if (cluster.proxyUrl) {
      throw new Error(
        `kubeconfig cluster ${JSON.stringify(cluster.name)} sets proxy-url, which the host does not support: remove it and let the host reach the API server directly`,
      );
    }
    this.server = cluster.server.replace(/\/$/, '');
    const user = currentUser(kc);
    if (user?.authProvider && !providerTokenFile(user)) {
      const name = String((user.authProvider as { name?: unknown }).name ?? '');
      throw new Error(
        `kubeconfig user ${JSON.stringify(user.name)} uses auth-provider ${JSON.stringify(name)}, which is not supported (kubectl removed it in 1.26): ` +
          'use an exec credential plugin instead (gke-gcloud-auth-plugin for GKE, kubelogin for Azure and OIDC), or a token/tokenFile',
      );
    }
    if (user?.exec) this.exec = new ExecPlugin(user.exec, user.name);
  }

  async authenticate(): Promise<RequestAuth> {
    const cluster = currentCluster(this.kc)!;
    const user = currentUser(this.kc);
    const tls: TlsSettings = {};
    if (cluster.skipTLSVerify) tls.rejectUnauthorized = false;
    if (cluster.tlsServerName) tls.servername = cluster.tlsServerName;
    const ca = this.fileOrData(cluster.caFile, cluster.caData);
    if (ca) tls.ca = ca;
    const headers: Record<string, string> = {};
    if (!user) return { tls, headers };
    const cert = this.fileOrData(user.certFile, user.certData);
    const key = this.fileOrData(user.keyFile, user.keyData);
    if (cert) tls.cert = cert;
    if (key) tls.key = key;
    if (user.impersonateUser) headers['Impersonate-User'] = user.impersonateUser;
    if (user.username) headers.Authorization = `Basic ${Buffer.from(`${user.username}:${user.password ?? ''}`).toString('base64')}`;
    const tokenFile = user.tokenFile ?? providerTokenFile(user);
    if (this.exec) {
      const status = await this.exec.credential();
      if (status.clientCertificateData) tls.cert = Buffer.from(status.clientCertificateData);
      if (status.clientKeyData) tls.key = Buffer.from(status.clientKeyData);
      if (status.token) headers.Authorization = `Bearer ${status.token}`;
    } else if (user.token) {
      headers.Authorization = `Bearer ${user.token}`;
    } else if (tokenFile) {
      headers.Authorization = `Bearer ${this.read(tokenFile).toString('utf8').trim()}`;
    }
    return { tls, headers };
  }

  private fileOrData(file: string | undefined, data: string | undefined): Buffer | undefined {
    if (file) return this.read(file);
    if (!data) return undefined;
    let buf = this.decoded.get(data);
    if (!buf) {
      buf = Buffer.from(data, 'base64');
      // A kubeconfig holds a few such strings; bounded all the same.
      if (this.decoded.size >= MAX_DECODED_ENTRIES) this.decoded.clear();
      this.decoded.set(data, buf);
    }
    return buf;
  }

  /** `file`'s content, read again once {@link FILE_REFRESH_MS} passed. */
  private read(file: string): Buffer {
    const now = Date.now();
    const cached = this.files.get(file);
    if (cached && now - cached.readAt < FILE_REFRESH_MS) return cached.data;
    const size = fs.statSync(file).size;
    if (size > MAX_CREDENTIAL_FILE_BYTES) throw new Error(`credential file ${file} is ${size} bytes, more than ${MAX_CREDENTIAL_FILE_BYTES}`);
    const data = fs.readFileSync(file);
    this.files.set(file, { data, readAt: now });
    return data;
  }
}

/** The token file of client-node's in-cluster user (`auth-provider: {name: tokenFile}`), if `user` is one. */
function providerTokenFile(user: KubeUser): string | undefined {
  const p = user.authProvider as { name?: unknown; config?: { tokenFile?: unknown } } | undefined;
  return p?.name === 'tokenFile' && typeof p.config?.tokenFile === 'string' ? p.config.tokenFile : undefined;
}

/** `status` of an ExecCredential. */
export interface ExecCredentialStatus {
  token?: string;
  clientCertificateData?: string;
  clientKeyData?: string;
  expirationTimestamp?: string;
}

const EXEC_API_VERSIONS = new Set(['client.authentication.k8s.io/v1', 'client.authentication.k8s.io/v1beta1']);

/** One exec credential plugin with its cached credential. */
class ExecPlugin {
  private cached?: { status: ExecCredentialStatus; expiresAt: number };
  private running?: Promise<ExecCredentialStatus>;

  constructor(
    private readonly cfg: ExecConfig,
    private readonly userName: string,
  ) {
    const v = cfg.apiVersion ?? '';
    if (!EXEC_API_VERSIONS.has(v)) {
      throw new Error(
        `kubeconfig user ${JSON.stringify(userName)}: exec apiVersion ${JSON.stringify(v)} is not supported; use client.authentication.k8s.io/v1 (or v1beta1)`,
      );
    }
  }

  credential(): Promise<ExecCredentialStatus> {
    if (this.cached && Date.now() < this.cached.expiresAt - EXEC_EXPIRY_MARGIN_MS) return Promise.resolve(this.cached.status);
    this.running ??= this.run().finally(() => (this.running = undefined));
    return this.running;
  }

  private run(): Promise<ExecCredentialStatus> {
    const apiVersion = this.cfg.apiVersion!;
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      KUBERNETES_EXEC_INFO: JSON.stringify({ apiVersion, kind: 'ExecCredential', spec: { interactive: false } }),
    };
    for (const e of this.cfg.env ?? []) env[e.name] = e.value;
    const what = `exec credential plugin ${JSON.stringify(this.cfg.command)} of kubeconfig user ${JSON.stringify(this.userName)}`;
    return new Promise((resolve, reject) => {
      execFile(
        this.cfg.command,
        this.cfg.args ?? [],
        { env, timeout: EXEC_TIMEOUT_MS, maxBuffer: MAX_EXEC_OUTPUT_BYTES, encoding: 'utf8' },
        (err, stdout, stderr) => {
          if (err) {
            const how = err.killed
              ? `was stopped after ${EXEC_TIMEOUT_MS} ms or ${MAX_EXEC_OUTPUT_BYTES} bytes of output`
              : `exited with ${err.code ?? 'an error'}`;
            reject(new Error(`${what} failed: it ${how}${stderr ? `: ${stderr.trim().slice(0, 1000)}` : ''}`));
            return;
          }
          try {
            const out = JSON.parse(stdout) as { apiVersion?: string; kind?: string; status?: ExecCredentialStatus };
            if (out.kind !== 'ExecCredential' || out.apiVersion !== apiVersion)
              throw new Error(`it printed kind ${out.kind} apiVersion ${out.apiVersion}, want ExecCredential ${apiVersion}`);
            const status = out.status ?? {};
            if (!status.token && !(status.clientCertificateData && status.clientKeyData))
              throw new Error('its status has neither a token nor a client certificate and key');
            const stamp = status.expirationTimestamp ? Date.parse(status.expirationTimestamp) : Infinity;
            this.cached = { status, expiresAt: Number.isNaN(stamp) ? Infinity : stamp };
            resolve(status);
          } catch (e) {
            reject(new Error(`${what} gave no usable credential: ${e instanceof Error ? e.message : String(e)}`));
          }
        },
      );
    });
  }
}
