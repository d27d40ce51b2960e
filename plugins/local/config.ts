/**
 * Settings of the local cloud: defaults, environment variables, and the
 * optional JSON cloud config the host passes to Configure.
 *
 * Cloud config (the --cloud-config file; empty is fine), all keys optional:
 *   { "zone": "local-a", "region": "local",
 *     "loadBalancerCidr": "127.0.10.0/24", "masterAddress": "127.0.0.1",
 *     "apiToken": "..." }
 * `apiToken` stands for a real cloud's credential: it is a secret (the host
 * treats secret-named keys as such), never logged or echoed in an error.
 */
import { InvalidArgumentError } from '../../sdk/errors.js';
import { IpPool, parseCidr, type Cidr } from './ip.js';
import { checkToken } from './validate.js';

/** Zone of instances and volumes when none is given. */
export const DEFAULT_ZONE = 'local-a';
/** Region of instances and volumes when none is given. */
export const DEFAULT_REGION = 'local';
/** Pool of load balancer ingress addresses (loopback, so a forwarder can bind them). */
const DEFAULT_LB_CIDR = '127.0.10.0/24';
/** Pool of instance InternalIPs allocated by the CLI when none is given. */
export const DEFAULT_NODE_CIDR = '127.1.0.0/16';
/** Answer of ClustersService.Master when not configured. */
const DEFAULT_MASTER_ADDRESS = '127.0.0.1';

/** Environment variables read at start. */
export const ENV = {
  zone: 'LOCALCLOUD_ZONE',
  region: 'LOCALCLOUD_REGION',
  loadBalancerCidr: 'LOCALCLOUD_LB_CIDR',
  nodeCidr: 'LOCALCLOUD_NODE_CIDR',
  /** Comma-separated loadBalancerClass values the load balancers serve (GetPluginCapabilities; read at start, as capabilities are fixed). */
  loadBalancerClasses: 'LOCALCLOUD_LB_CLASSES',
  /** "true": serve only LOCALCLOUD_LB_CLASSES, no Service without a class. */
  loadBalancerClassesOnly: 'LOCALCLOUD_LB_CLASSES_ONLY',
  /**
   * Comma-separated StorageClass provisioner names the volumes serve
   * (GetPluginCapabilities volume_provisioners; read at start). Unset: none
   * declared, so the host uses its --volume-provisioner-name or the plugin's
   * name (local.ccm.dev), as before.
   */
  volumeProvisioners: 'LOCALCLOUD_VOLUME_PROVISIONERS',
  /**
   * An IPv4 CIDR of at least /8 (e.g. 10.250.0.0/16): the local cloud's pod
   * network. A pod backend address in it is reached at 127.b.c.d (its last
   * three octets on loopback), because the API server refuses loopback
   * addresses in EndpointSlices while the local cloud's hosts are loopback
   * addresses. Unset: pod addresses are dialled as they are.
   */
  podCidr: 'LOCALCLOUD_POD_CIDR',
} as const;

/** The settings a running local cloud uses. */
export interface CloudSettings {
  /** Zone reported by GetZone and used for new volumes without topology. */
  zone: string;
  region: string;
  /** Where load balancer ingress IPs come from. */
  lbPool: IpPool;
  /** The host's --cluster-name from Configure (used when a request has none). */
  clusterName: string;
  /** Answer of ClustersService.Master. */
  masterAddress: string;
  /** Cloud config `apiToken`: a stand-in credential; secret. */
  apiToken?: string;
  /** loadBalancerClass values served (declared in GetPluginCapabilities; fixed for the process). */
  loadBalancerClasses: string[];
  /** Serve only loadBalancerClasses, no Service without a class. */
  loadBalancerClassesOnly: boolean;
  /** StorageClass provisioner names served (declared in GetPluginCapabilities; fixed for the process). */
  volumeProvisioners: string[];
  /** LOCALCLOUD_POD_CIDR: pod addresses in it are dialled on loopback (podDialAddress). */
  podCidr?: Cidr;
}

/** Settings overrides accepted by createLocalCloud. */
export interface SettingsInput {
  zone?: string;
  region?: string;
  loadBalancerCidr?: string;
  clusterName?: string;
  masterAddress?: string;
  loadBalancerClasses?: string[];
  loadBalancerClassesOnly?: boolean;
  volumeProvisioners?: string[];
}

/** The non-empty trimmed entries of a comma-separated value. */
function commaList(value: string | undefined): string[] {
  return (value ?? '')
    .split(',')
    .map((c) => c.trim())
    .filter((c) => c !== '');
}

/** Settings from explicit input, then the environment, then defaults; throws a one-line error when invalid. */
export function resolveSettings(input: SettingsInput = {}, env: NodeJS.ProcessEnv = process.env): CloudSettings {
  const zone = input.zone ?? (env[ENV.zone] || DEFAULT_ZONE);
  const region = input.region ?? (env[ENV.region] || DEFAULT_REGION);
  const cidr = input.loadBalancerCidr ?? (env[ENV.loadBalancerCidr] || DEFAULT_LB_CIDR);
  for (const problem of [checkToken(zone, 'zone'), checkToken(region, 'region')]) if (problem) throw new TypeError(problem);
  const classes =
    input.loadBalancerClasses ??
    (env[ENV.loadBalancerClasses] ?? '')
      .split(',')
      .map((c) => c.trim())
      .filter((c) => c !== '');
  const provisioners = input.volumeProvisioners ?? commaList(env[ENV.volumeProvisioners]);
  const podCidrText = env[ENV.podCidr] ?? '';
  const podCidr = podCidrText ? parseCidr(podCidrText) : undefined;
  if (podCidrText && !(podCidr && podCidr.addr.kind() === 'ipv4' && podCidr.prefix >= 8))
    throw new TypeError(`${ENV.podCidr} must be an IPv4 CIDR of at least /8, not ${JSON.stringify(podCidrText)}`);
  const only = env[ENV.loadBalancerClassesOnly] ?? '';
  if (!['', 'true', 'false'].includes(only)) throw new TypeError(`${ENV.loadBalancerClassesOnly} must be true or false, not ${JSON.stringify(only)}`);
  return {
    loadBalancerClasses: classes,
    loadBalancerClassesOnly: input.loadBalancerClassesOnly ?? only === 'true',
    volumeProvisioners: provisioners,
    ...(podCidr ? { podCidr } : {}),
    zone,
    region,
    lbPool: new IpPool(cidr),
    clusterName: input.clusterName ?? '',
    masterAddress: input.masterAddress ?? DEFAULT_MASTER_ADDRESS,
  };
}

const CLOUD_CONFIG_KEYS = ['zone', 'region', 'loadBalancerCidr', 'masterAddress', 'apiToken'] as const;

/**
 * Applies a Configure request's cloud config (JSON, possibly empty) on top
 * of `base`. Throws InvalidArgumentError when it cannot be used; unknown
 * keys become warnings.
 */
export function applyCloudConfig(base: CloudSettings, raw: Uint8Array, clusterName: string): { settings: CloudSettings; warnings: string[] } {
  const text = Buffer.from(raw).toString('utf8').trim();
  const warnings: string[] = [];
  let doc: Record<string, unknown> = {};
  if (text) {
    try {
      const parsed: unknown = JSON.parse(text);
      if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error('not a JSON object');
      doc = parsed as Record<string, unknown>;
    } catch (err) {
      // JSON.parse quotes the input in its message, and the input holds secrets: keep only the position.
      const at = /position \d+/.exec((err as Error).message)?.[0];
      throw new InvalidArgumentError(`cloud config is not a JSON object${at ? ` (syntax error at ${at})` : ''}`);
    }
  }
  for (const key of Object.keys(doc)) {
    if (!(CLOUD_CONFIG_KEYS as readonly string[]).includes(key)) warnings.push(`cloud config key ${JSON.stringify(key)} is unknown and ignored`);
  }
  const str = (key: (typeof CLOUD_CONFIG_KEYS)[number]): string | undefined => {
    const v = doc[key];
    if (v === undefined) return undefined;
    if (typeof v !== 'string' || v === '') throw new InvalidArgumentError(`cloud config ${key} must be a non-empty string`);
    return v;
  };
  const zone = str('zone') ?? base.zone;
  const region = str('region') ?? base.region;
  for (const problem of [checkToken(zone, 'cloud config zone'), checkToken(region, 'cloud config region')]) {
    if (problem) throw new InvalidArgumentError(problem);
  }
  const cidr = str('loadBalancerCidr');
  let lbPool = base.lbPool;
  if (cidr !== undefined) {
    try {
      lbPool = new IpPool(cidr);
    } catch (err) {
      throw new InvalidArgumentError(`cloud config loadBalancerCidr: ${(err as Error).message}`);
    }
  }
  return {
    settings: {
      zone,
      region,
      lbPool,
      clusterName: clusterName || base.clusterName,
      masterAddress: str('masterAddress') ?? base.masterAddress,
      apiToken: str('apiToken') ?? base.apiToken,
      loadBalancerClasses: base.loadBalancerClasses,
      loadBalancerClassesOnly: base.loadBalancerClassesOnly,
      volumeProvisioners: base.volumeProvisioners,
      ...(base.podCidr ? { podCidr: base.podCidr } : {}),
    },
    warnings,
  };
}
