/**
 * Builds the Authenticator and Authorizer of the host's HTTPS servers from
 * the `--authentication-*`, `--authorization-*`, `--client-ca-file` and
 * `--requestheader-*` flags, with the API server doing the work upstream
 * delegates to it:
 *
 *  - TokenReview and SubjectAccessReview through `--authentication-kubeconfig`
 *    / `--authorization-kubeconfig`, else the host's own connection (upstream
 *    uses the in-cluster config; in a pod both are the same);
 *  - unless `--authentication-skip-lookup`, the client CA and request-header
 *    settings not given by flags come from ConfigMap
 *    kube-system/extension-apiserver-authentication, read at start. A
 *    failure to read it stops the start unless
 *    `--authentication-tolerate-lookup-failure`; a missing ConfigMap means
 *    none (upstream). Both the files and the ConfigMap are read again every
 *    minute, so a rotated CA is trusted without a restart.
 */
import { open } from 'node:fs/promises';
import type { X509Certificate } from 'node:crypto';
import type { Registry } from 'prom-client';
import type { ServingConfig } from '../config/serving.js';
import { makeClients } from '../kube/client.js';
import type { ConnectionPool } from '../kube/connections.js';
import { loadKubeConfig, type KubeConfigData } from '../kube/kubeconfig.js';
import { ApiError, type RestClient } from '../kube/rest.js';
import { errorMessage, type Logger } from '../log.js';
import { Authenticator, parseCaBundle, type ClientTrust, type RequestHeaderTrust, type UserInfo } from './authn.js';
import { Authorizer, type AuthzDecision } from './authz.js';

const AUTHENTICATION_CONFIGMAP = { namespace: 'kube-system', name: 'extension-apiserver-authentication' } as const;

/** Upstream's limits of the delegated clients: high, since they bound how fast requests are answered. */
const REVIEW_QPS = 200;
const REVIEW_BURST = 400;
/** Upstream's TokenReview and SubjectAccessReview timeout. */
const REVIEW_TIMEOUT_MS = 10_000;
/** How often the trusted CAs are read again (upstream re-reads CA files every minute). */
const TRUST_REFRESH_MS = 60_000;
/** Largest CA bundle file read. */
const MAX_CA_FILE_BYTES = 1024 * 1024;

export interface DelegatedAuthDeps {
  /** The host's own connection, used when no authentication/authorization kubeconfig is given. */
  kubeConfig: KubeConfigData;
  userAgent: string;
  registry?: Registry;
  connections?: ConnectionPool;
  log: Logger;
  /** How often the CAs are read again. Default TRUST_REFRESH_MS. */
  trustRefreshMs?: number;
}

/** Who made a request, and what they may do. */
export interface RequestAuth {
  authenticator: Authenticator;
  authorizer: Authorizer;
  /** Whether client certificates may be trusted, now or after a refresh: servers then ask clients for one. */
  readonly clientCertsWanted: boolean;
  /** Calls `fn` after the trusted CAs changed (a refresh found new ones); returns the unsubscribe. */
  onTrustChange(fn: () => void): () => void;
  /** Stops re-reading the CAs. */
  stop(): void;
}

/**
 * Reads the CA files and the cluster's authentication ConfigMap; rejects with
 * what to change when they cannot be used. They are read again every
 * `trustRefreshMs` (a rotated CA is picked up without a restart; a failed
 * read keeps the last good ones, with a warning).
 */
export async function delegatedAuth(s: ServingConfig, deps: DelegatedAuthDeps): Promise<RequestAuth> {
  const clientOpts = { qps: REVIEW_QPS, burst: REVIEW_BURST, userAgent: deps.userAgent, registry: deps.registry, connections: deps.connections };
  const authnRest = makeClients(
    s.authentication.kubeconfig ? loadKubeConfig({ kubeconfig: s.authentication.kubeconfig, flag: '--authentication-kubeconfig' }) : deps.kubeConfig,
    clientOpts,
  ).rest;
  const authzRest = makeClients(
    s.authorization.kubeconfig ? loadKubeConfig({ kubeconfig: s.authorization.kubeconfig, flag: '--authorization-kubeconfig' }) : deps.kubeConfig,
    clientOpts,
  ).rest;
  const a = s.authentication;
  const log = deps.log.child({ component: 'delegated-auth' });

  let trust: ClientTrust;
  try {
    trust = await loadTrust(s, authnRest);
  } catch (err) {
    if (!(err instanceof LookupError)) throw err;
    if (!a.tolerateLookupFailure) {
      throw new Error(
        `${err.message}: bind the host's identity to Role extension-apiserver-authentication-reader in kube-system (deploy/base/rbac-delegated-auth.yaml), or pass --authentication-skip-lookup or --authentication-tolerate-lookup-failure`,
        { cause: err },
      );
    }
    log.warn(
      { err: err.message },
      'continuing without the cluster authentication configuration: client certificates may be refused and requests treated as anonymous',
    );
    trust = err.partial;
  }
  log.info(describe(trust), 'trusted client certificate authorities');
  const authenticator = new Authenticator({ trust, reviewToken: (token) => reviewToken(authnRest, token), tokenCacheTtlMs: a.tokenCacheTtlMs });

  const listeners = new Set<() => void>();
  let refreshing = false;
  const refresh = async () => {
    if (refreshing) return;
    refreshing = true;
    try {
      const next = await loadTrust(s, authnRest);
      if (trustKey(next) === trustKey(trust)) return;
      trust = next;
      authenticator.setTrust(next);
      log.info(describe(next), 'trusted client certificate authorities changed');
      for (const fn of listeners) fn();
    } catch (err) {
      log.warn({ err: errorMessage(err) }, 'cannot re-read the trusted client certificate authorities; keeping the last ones');
    } finally {
      refreshing = false;
    }
  };
  const timer = setInterval(() => void refresh(), deps.trustRefreshMs ?? TRUST_REFRESH_MS).unref();
  return {
    authenticator,
    authorizer: new Authorizer({
      alwaysAllowPaths: s.authorization.alwaysAllowPaths,
      review: (user, path, verb) => reviewAccess(authzRest, user, path, verb),
      allowCacheTtlMs: s.authorization.allowCacheTtlMs,
      denyCacheTtlMs: s.authorization.denyCacheTtlMs,
    }),
    clientCertsWanted: !a.skipLookup || a.clientCaFile !== undefined || a.requestHeader.clientCaFile !== undefined,
    onTrustChange(fn) {
      listeners.add(fn);
      return () => listeners.delete(fn);
    },
    stop: () => clearInterval(timer),
  };
}

/** The ConfigMap could not be read; `partial` is what the files gave. */
class LookupError extends Error {
  constructor(
    message: string,
    readonly partial: ClientTrust,
    options: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** The flags' CA files, and what they leave out from the ConfigMap (unless --authentication-skip-lookup). */
async function loadTrust(s: ServingConfig, rest: RestClient): Promise<ClientTrust> {
  const a = s.authentication;
  let clientCa = a.clientCaFile
    ? parseCaBundle(await readBounded(a.clientCaFile, 'client-ca-file'), `--client-ca-file ${a.clientCaFile}`)
    : undefined;
  let requestHeader: RequestHeaderTrust | undefined;
  if (a.requestHeader.clientCaFile) {
    const ca = parseCaBundle(
      await readBounded(a.requestHeader.clientCaFile, 'requestheader-client-ca-file'),
      `--requestheader-client-ca-file ${a.requestHeader.clientCaFile}`,
    );
    requestHeader = { ...a.requestHeader, ca };
  }
  if (!a.skipLookup && (clientCa === undefined || requestHeader === undefined)) {
    let found;
    try {
      found = await lookup(rest);
    } catch (err) {
      const where = `${AUTHENTICATION_CONFIGMAP.namespace}/${AUTHENTICATION_CONFIGMAP.name}`;
      throw new LookupError(`cannot read ConfigMap ${where}: ${errorMessage(err)}`, { clientCa, requestHeader }, { cause: err });
    }
    clientCa ??= found.clientCa;
    requestHeader ??= found.requestHeader;
  }
  return { clientCa, requestHeader };
}

/** What decides whether trust changed: the CA certificates and the front-proxy settings. */
function trustKey(t: ClientTrust): string {
  const prints = (cas: readonly X509Certificate[] | undefined) => cas?.map((c) => c.fingerprint256);
  return JSON.stringify([prints(t.clientCa), t.requestHeader && { ...t.requestHeader, ca: prints(t.requestHeader.ca) }]);
}

/** Log fields naming the trusted CAs. */
function describe(t: ClientTrust): Record<string, unknown> {
  return {
    clientCa: t.clientCa?.map((c) => c.subject.replace(/\n/g, ',')),
    requestHeaderCa: t.requestHeader?.ca.map((c) => c.subject.replace(/\n/g, ',')),
  };
}

interface TokenReviewAnswer {
  status?: { authenticated?: boolean; user?: { username?: string; uid?: string; groups?: string[]; extra?: Record<string, string[]> } };
}

async function reviewToken(rest: RestClient, token: string): Promise<UserInfo | undefined> {
  const answer = await rest.request<TokenReviewAnswer>('POST', '/apis/authentication.k8s.io/v1/tokenreviews', {
    body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token } },
    signal: AbortSignal.timeout(REVIEW_TIMEOUT_MS),
  });
  const u = answer.status?.user;
  if (answer.status?.authenticated !== true || !u?.username) return undefined;
  return { name: u.username, ...(u.uid ? { uid: u.uid } : {}), groups: u.groups ?? [], ...(u.extra ? { extra: u.extra } : {}) };
}

interface AccessReviewAnswer {
  status?: { allowed?: boolean; reason?: string };
}

async function reviewAccess(rest: RestClient, user: UserInfo, path: string, verb: string): Promise<AuthzDecision> {
  const answer = await rest.request<AccessReviewAnswer>('POST', '/apis/authorization.k8s.io/v1/subjectaccessreviews', {
    body: {
      apiVersion: 'authorization.k8s.io/v1',
      kind: 'SubjectAccessReview',
      spec: { user: user.name, uid: user.uid, groups: user.groups, extra: user.extra, nonResourceAttributes: { path, verb } },
    },
    signal: AbortSignal.timeout(REVIEW_TIMEOUT_MS),
  });
  return { allowed: answer.status?.allowed === true, ...(answer.status?.reason ? { reason: answer.status.reason } : {}) };
}

/** The client CA and request-header trust the ConfigMap holds (each undefined when absent). */
async function lookup(rest: RestClient): Promise<{ clientCa?: X509Certificate[]; requestHeader?: RequestHeaderTrust }> {
  let data: Record<string, string>;
  try {
    const cm = await rest.request<{ data?: Record<string, string> }>(
      'GET',
      `/api/v1/namespaces/${AUTHENTICATION_CONFIGMAP.namespace}/configmaps/${AUTHENTICATION_CONFIGMAP.name}`,
      {
        signal: AbortSignal.timeout(REVIEW_TIMEOUT_MS),
      },
    );
    data = cm.data ?? {};
  } catch (err) {
    if (err instanceof ApiError && err.code === 404) return {};
    throw err;
  }
  const where = `ConfigMap ${AUTHENTICATION_CONFIGMAP.name}`;
  const clientCa = data['client-ca-file'] ? parseCaBundle(data['client-ca-file'], `${where} key client-ca-file`) : undefined;
  if (!data['requestheader-client-ca-file']) return { clientCa };
  const list = (key: string, headerNames = true): string[] => {
    const text = data[key];
    if (!text) return [];
    const parsed: unknown = JSON.parse(text);
    if (!Array.isArray(parsed) || parsed.some((v) => typeof v !== 'string')) throw new Error(`${where} key ${key} is not a JSON list of strings`);
    return headerNames ? (parsed as string[]).map((h) => h.toLowerCase()) : (parsed as string[]);
  };
  return {
    clientCa,
    requestHeader: {
      ca: parseCaBundle(data['requestheader-client-ca-file'], `${where} key requestheader-client-ca-file`),
      allowedNames: list('requestheader-allowed-names', false),
      usernameHeaders: list('requestheader-username-headers'),
      uidHeaders: list('requestheader-uid-headers'),
      groupHeaders: list('requestheader-group-headers'),
      extraHeaderPrefixes: list('requestheader-extra-headers-prefix'),
    },
  };
}

async function readBounded(file: string, flag: string): Promise<string> {
  try {
    const fh = await open(file, 'r');
    try {
      const { size } = await fh.stat();
      if (size > MAX_CA_FILE_BYTES) throw new Error(`larger than ${MAX_CA_FILE_BYTES} bytes`);
      return await fh.readFile('utf8');
    } finally {
      await fh.close();
    }
  } catch (err) {
    throw new Error(`cannot read --${flag} ${file}: ${errorMessage(err)}`, { cause: err });
  }
}
