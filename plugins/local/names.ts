/**
 * Identifiers of the local cloud: instance and volume ids, providerIDs, and
 * the deterministic cloud names of load balancers and routes.
 */
import { createHash, randomBytes } from 'node:crypto';

/** The environment variable naming the provider (two local clouds in one host need two names). */
export const PROVIDER_NAME_ENV = 'LOCALCLOUD_PROVIDER_NAME';
const DEFAULT_PROVIDER_NAME = 'local';
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/** Why $LOCALCLOUD_PROVIDER_NAME cannot be used (main.ts refuses to start), or undefined. */
export function providerNameProblem(env: NodeJS.ProcessEnv): string | undefined {
  const v = env[PROVIDER_NAME_ENV];
  if (v === undefined || v === '' || DNS_LABEL.test(v)) return undefined;
  return `${PROVIDER_NAME_ENV}=${JSON.stringify(v.slice(0, 80))} is invalid: want a lowercase DNS label, e.g. east`;
}

/**
 * The providerName of the local cloud (providerIDs are `<name>://<id>`):
 * $LOCALCLOUD_PROVIDER_NAME, else `local`.
 */
export const PROVIDER_NAME =
  providerNameProblem(process.env) === undefined && process.env[PROVIDER_NAME_ENV] ? process.env[PROVIDER_NAME_ENV] : DEFAULT_PROVIDER_NAME;
/** Prefix of every providerID of this cloud. */
const PROVIDER_ID_PREFIX = `${PROVIDER_NAME}://`;
/** Cluster name used when the host sends none (upstream default). */
export const DEFAULT_CLUSTER_NAME = 'kubernetes';
/** Longest cloud name of a load balancer or route (a DNS label). */
const MAX_CLOUD_NAME_LENGTH = 63;

const INSTANCE_ID_RE = /^i-[0-9a-f]{8}$/;

/** A fresh instance id (`i-` + 8 hex) not in `taken`. */
export function newInstanceId(taken: (id: string) => boolean): string {
  return freshId('i-', taken);
}

/** A fresh volume id (`vol-` + 8 hex) not in `taken`. */
export function newVolumeId(taken: (id: string) => boolean): string {
  return freshId('vol-', taken);
}

function freshId(prefix: string, taken: (id: string) => boolean): string {
  for (;;) {
    const id = prefix + randomBytes(4).toString('hex');
    if (!taken(id)) return id;
  }
}

/** Whether `id` looks like an instance id. */
export function isInstanceId(id: string): boolean {
  return INSTANCE_ID_RE.test(id);
}

/** `<provider name>://<id>` (`local://<id>` by default). */
export function providerIdOf(instanceId: string): string {
  return PROVIDER_ID_PREFIX + instanceId;
}

/**
 * The instance id inside a providerID, or undefined when it is not a
 * providerID of this cloud's name (`local://` by default). `local:///i-…`
 * (empty host) is accepted too.
 */
export function parseProviderId(providerId: string): string | undefined {
  if (!providerId.startsWith(PROVIDER_ID_PREFIX)) return undefined;
  const id = providerId.slice(PROVIDER_ID_PREFIX.length).replace(/^\/+/, '');
  return id.length > 0 && !id.includes('/') ? id : undefined;
}

/** Whether a Node's providerID names another provider's machine (set, and not `<provider name>://`): not this cloud's to use. */
export function isForeignProviderId(providerId: string): boolean {
  return providerId !== '' && !providerId.startsWith(PROVIDER_ID_PREFIX);
}

/** Lowercase, [a-z0-9-] only, no leading/trailing or doubled dashes. */
function slug(s: string): string {
  return s
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, '-')
    .replace(/-+/g, '-')
    .replace(/^-|-$/g, '');
}

/** First `n` hex digits of SHA-256 of `s`. */
function shortHash(s: string, n = 8): string {
  return createHash('sha256').update(s).digest('hex').slice(0, n);
}

/** `slug(s)` cut to `max` chars; when cut, the tail is replaced by a hash of `s` so distinct inputs stay distinct. */
function boundedSlug(s: string, max: number): string {
  const sl = slug(s);
  if (sl.length <= max) return sl;
  return `${sl.slice(0, max - 7).replace(/-$/, '')}-${shortHash(s, 6)}`;
}

/**
 * Cloud name of a Service's load balancer: `lb-<cluster>-<uid without
 * dashes>`, deterministic and at most 63 characters.
 */
export function loadBalancerName(clusterName: string, serviceUid: string): string {
  const cluster = clusterName || DEFAULT_CLUSTER_NAME;
  let uid = serviceUid.toLowerCase().replace(/[^a-z0-9]/g, '');
  if (uid.length === 0 || uid.length > 32) uid = shortHash(serviceUid, 32);
  const room = MAX_CLOUD_NAME_LENGTH - 'lb-'.length - 1 - uid.length;
  const c = boundedSlug(cluster, room) || shortHash(cluster, 6);
  return `lb-${c}-${uid}`;
}

/**
 * Cloud name of a route: `<cluster>-<hint or node>-<hash of CIDR>`, at most
 * 63 characters. The CIDR hash keeps the two routes of a dual-stack node
 * (same name hint) apart.
 */
export function routeName(clusterName: string, hint: string, destinationCidr: string): string {
  const cluster = boundedSlug(clusterName || DEFAULT_CLUSTER_NAME, 20) || 'cluster';
  const tail = shortHash(destinationCidr, 8);
  const room = MAX_CLOUD_NAME_LENGTH - cluster.length - tail.length - 2;
  const middle = boundedSlug(hint, room) || 'route';
  return `${cluster}-${middle}-${tail}`;
}
