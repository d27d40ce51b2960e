/**
 * Kubeconfig loading with the CCM's flag semantics, without
 * `@kubernetes/client-node` at run time (importing it costs ~70 MB of RSS and
 * 0.7 s of start-up: it loads every generated API class). The loaded config
 * has client-node's shape (`clusters`, `users`, `contexts`, `currentContext`,
 * camelCase entries), so a client-node `KubeConfig` (tests) fits wherever a
 * {@link KubeConfigData} is asked for.
 *
 * What is read of a kubeconfig file: `current-context`; contexts (cluster,
 * user, namespace); clusters (`server`, `certificate-authority[-data]`,
 * `insecure-skip-tls-verify`, `tls-server-name`, `proxy-url`); users
 * (`token`, `tokenFile`, `client-certificate[-data]`, `client-key[-data]`,
 * `username`/`password`, `exec`, `as`, `auth-provider`, which credentials.ts
 * refuses with what to use instead). Relative file paths are taken relative to
 * the kubeconfig file's directory, as kubectl does.
 */
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import yaml from 'js-yaml';
import type { Cluster, Context, User } from '@kubernetes/client-node';

/** Service-account files of in-cluster config, under an optional prefix (tests). */
const SERVICE_ACCOUNT_TOKEN_PATH = '/var/run/secrets/kubernetes.io/serviceaccount/token';
const SERVICE_ACCOUNT_CA_PATH = '/var/run/secrets/kubernetes.io/serviceaccount/ca.crt';
/** Largest kubeconfig file read (certificates inline make them a few KB; this is generous). */
const MAX_KUBECONFIG_BYTES = 4 * 2 ** 20;

/** An exec credential plugin (client-go's ExecConfig). */
export interface ExecConfig {
  command: string;
  args?: string[];
  env?: { name: string; value: string }[];
  apiVersion?: string;
}

/** A user entry: client-node's `User` plus kubectl's `tokenFile` (re-read periodically, see credentials.ts). */
export interface KubeUser extends User {
  readonly tokenFile?: string;
  readonly exec?: ExecConfig;
}

/** A loaded kubeconfig; a client-node `KubeConfig` has this shape too. */
export interface KubeConfigData {
  clusters: readonly Cluster[];
  users: readonly KubeUser[];
  contexts: readonly Context[];
  currentContext: string;
}

/** Inputs of {@link loadKubeConfig}. */
export interface LoadKubeConfigOptions {
  /** `--kubeconfig`: path of a kubeconfig file. */
  kubeconfig?: string;
  /** The flag `kubeconfig` came from, for messages. Default `--kubeconfig`. */
  flag?: string;
  /** `--master`: API server URL, overriding the server of the selected cluster. */
  master?: string;
  /** Prefix of the service-account files for in-cluster config. Default '' (tests inject). */
  inClusterPathPrefix?: string;
}

/**
 * Loads the API server connection settings, first match wins:
 * 1. `kubeconfig` (the `--kubeconfig` flag);
 * 2. the KUBECONFIG environment variable (path-list; files merged, the first file defining a name wins);
 * 3. in-cluster service account (KUBERNETES_SERVICE_HOST/PORT set and the token file present);
 * 4. `master` alone: that URL with no credentials (as upstream BuildConfigFromFlags).
 * Unlike kubectl, ~/.kube/config is never read implicitly. `master`, when
 * given, replaces the server URL of the selected cluster (an `http:` URL also
 * sets skipTLSVerify: there is no TLS to verify). Throws if no source applies
 * (telling the operator to pass --kubeconfig), or if a file cannot be
 * read/parsed, or the config selects no cluster.
 */
export function loadKubeConfig(opts: LoadKubeConfigOptions = {}): KubeConfigData {
  const env = process.env;
  const prefix = opts.inClusterPathPrefix ?? '';
  const envPaths = (env.KUBECONFIG ?? '').split(path.delimiter).filter((p) => p);
  let kc: KubeConfigData;
  if (opts.kubeconfig) {
    kc = loadFile(opts.kubeconfig, opts.flag ?? '--kubeconfig');
  } else if (envPaths.length > 0) {
    kc = envPaths.map((p) => loadFile(p, 'KUBECONFIG')).reduce(mergeKubeConfigs);
  } else if (env.KUBERNETES_SERVICE_HOST && env.KUBERNETES_SERVICE_PORT && fs.existsSync(prefix + SERVICE_ACCOUNT_TOKEN_PATH)) {
    kc = inClusterConfig(env.KUBERNETES_SERVICE_HOST, env.KUBERNETES_SERVICE_PORT, prefix);
  } else if (opts.master) {
    kc = singleConfig({ name: 'master', server: opts.master, skipTLSVerify: isPlainHttp(opts.master) }, { name: 'anonymous' });
  } else {
    throw new Error('no API server configuration: pass --kubeconfig (or set KUBECONFIG), or run in a cluster with a service account');
  }
  const cluster = currentCluster(kc);
  if (!cluster) throw new Error(`kubeconfig selects no cluster (current context ${JSON.stringify(kc.currentContext)})`);
  const master = opts.master;
  if (master && cluster.server !== master) {
    kc.clusters = kc.clusters.map((c) => (c === cluster ? { ...c, server: master, skipTLSVerify: c.skipTLSVerify || isPlainHttp(master) } : c));
  }
  return kc;
}

/** The context `kc.currentContext` names, if any. */
function currentContext(kc: KubeConfigData): Context | undefined {
  return kc.contexts.find((c) => c.name === kc.currentContext);
}

/** The cluster of the current context, if any. */
export function currentCluster(kc: KubeConfigData): Cluster | undefined {
  const ctx = currentContext(kc);
  return ctx ? kc.clusters.find((c) => c.name === ctx.cluster) : undefined;
}

/** The user of the current context, if any. */
export function currentUser(kc: KubeConfigData): KubeUser | undefined {
  const ctx = currentContext(kc);
  return ctx ? kc.users.find((u) => u.name === ctx.user) : undefined;
}

/** A config of one cluster and one user, selected. */
export function singleConfig(cluster: Cluster, user: KubeUser): KubeConfigData {
  const context = { name: 'loaded-context', cluster: cluster.name, user: user.name };
  return { clusters: [cluster], users: [user], contexts: [context], currentContext: context.name };
}

/** `first` with the entries of `more` whose names it lacks; `first`'s current context unless it has none. */
function mergeKubeConfigs(first: KubeConfigData, more: KubeConfigData): KubeConfigData {
  const add = <T extends { name: string }>(a: readonly T[], b: readonly T[]): T[] => [...a, ...b.filter((x) => !a.some((y) => y.name === x.name))];
  return {
    clusters: add(first.clusters, more.clusters),
    users: add(first.users, more.users),
    contexts: add(first.contexts, more.contexts),
    currentContext: first.currentContext || more.currentContext,
  };
}

/** Parses kubeconfig YAML; relative paths are resolved against `baseDir`. Throws naming the bad entry. */
function parseKubeConfig(text: string, baseDir: string): KubeConfigData {
  const doc = yaml.load(text) as Record<string, unknown> | null | undefined;
  if (doc !== null && doc !== undefined && (typeof doc !== 'object' || Array.isArray(doc)))
    throw new Error('not a kubeconfig: the document is not a mapping');
  const abs = (p: unknown): string | undefined => (typeof p === 'string' && p ? path.resolve(baseDir, p) : undefined);
  const clusters = entries(doc?.clusters, 'clusters', 'cluster').map(({ name, body, where }): Cluster => {
    const server = str(body.server);
    if (!server) throw new Error(`${where}.cluster.server is missing`);
    return {
      name,
      server: server.replace(/\/$/, ''),
      caData: str(body['certificate-authority-data']),
      caFile: abs(body['certificate-authority']),
      skipTLSVerify: body['insecure-skip-tls-verify'] === true,
      tlsServerName: str(body['tls-server-name']),
      proxyUrl: str(body['proxy-url']),
    };
  });
  const users = entries(doc?.users, 'users', 'user').map(({ name, body }): KubeUser => ({
    name,
    token: str(body.token),
    tokenFile: abs(body.tokenFile ?? body['token-file']),
    certData: str(body['client-certificate-data']),
    certFile: abs(body['client-certificate']),
    keyData: str(body['client-key-data']),
    keyFile: abs(body['client-key']),
    username: str(body.username),
    password: str(body.password),
    impersonateUser: str(body.as),
    exec: execConfig(body.exec, baseDir),
    authProvider: body['auth-provider'] ?? undefined,
  }));
  const contexts = entries(doc?.contexts, 'contexts', 'context').map(({ name, body, where }): Context => {
    const cluster = str(body.cluster);
    const user = str(body.user) ?? '';
    if (!cluster) throw new Error(`${where}.context.cluster is missing`);
    return { name, cluster, user, namespace: str(body.namespace) };
  });
  return { clusters, users, contexts, currentContext: str(doc?.['current-context']) ?? '' };
}

function loadFile(file: string, source: string): KubeConfigData {
  try {
    const size = fs.statSync(file).size;
    if (size > MAX_KUBECONFIG_BYTES) throw new Error(`file is ${size} bytes, more than the ${MAX_KUBECONFIG_BYTES} a kubeconfig may have`);
    return parseKubeConfig(fs.readFileSync(file, 'utf8'), path.dirname(path.resolve(file)));
  } catch (err) {
    throw new Error(`cannot load kubeconfig ${file} from ${source}: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
  }
}

/** In-cluster config as client-go's InClusterConfig (the token file is re-read, credentials.ts). */
function inClusterConfig(host: string, port: string, prefix: string): KubeConfigData {
  const scheme = port === '80' || port === '8080' || port === '8001' ? 'http' : 'https';
  const server = `${scheme}://${net.isIPv6(host) ? `[${host}]` : host}:${port}`;
  return singleConfig(
    { name: 'inCluster', server, caFile: prefix + SERVICE_ACCOUNT_CA_PATH, skipTLSVerify: false },
    { name: 'inClusterUser', tokenFile: prefix + SERVICE_ACCOUNT_TOKEN_PATH },
  );
}

function isPlainHttp(url: string): boolean {
  return url.startsWith('http:');
}

/** The `{name, <field>: {...}}` entries of a kubeconfig list, checked. */
function entries(list: unknown, what: string, field: string): { name: string; body: Record<string, unknown>; where: string }[] {
  if (list === undefined || list === null) return [];
  if (!Array.isArray(list)) throw new Error(`${what} is not a list`);
  return list.map((elt: unknown, i) => {
    const where = `${what}[${i}]`;
    const e = (elt ?? {}) as Record<string, unknown>;
    const name = str(e.name);
    if (!name) throw new Error(`${where}.name is missing`);
    const body = e[field];
    if (typeof body !== 'object' || body === null) throw new Error(`${where}.${field} is missing`);
    return { name, body: body as Record<string, unknown>, where };
  });
}

function execConfig(v: unknown, baseDir: string): ExecConfig | undefined {
  if (typeof v !== 'object' || v === null) return undefined;
  const e = v as Record<string, unknown>;
  const command = str(e.command);
  if (!command) throw new Error('user exec.command is missing');
  return {
    // kubectl: a command with a path separator is relative to the kubeconfig; a bare name is looked up in PATH.
    command: command.includes('/') ? path.resolve(baseDir, command) : command,
    args: Array.isArray(e.args) ? e.args.map(String) : undefined,
    env: Array.isArray(e.env)
      ? e.env.map((x: { name?: unknown; value?: unknown }) => ({ name: String(x?.name ?? ''), value: String(x?.value ?? '') }))
      : undefined,
    apiVersion: str(e.apiVersion),
  };
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' && v !== '' ? v : undefined;
}
