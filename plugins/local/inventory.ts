/**
 * Operator-side instance management (what `localcloud instance ...` does):
 * add, delete, shut down and start simulated machines. The cloud itself
 * never creates instances; Kubernetes nodes are expected to be named after
 * them.
 */
import { DEFAULT_NODE_CIDR, DEFAULT_REGION, DEFAULT_ZONE, ENV } from './config.js';
import { canonicalIp, IpPool } from './ip.js';
import { isInstanceId, newInstanceId, parseProviderId } from './names.js';
import { ADDRESS_TYPES, type AddressRecord, type InstanceRecord, type InstanceState, type LocalCloudState, type StateStore } from './state.js';
import { checkDnsSubdomain, checkLabelKey, checkLabelValue, checkToken, must } from './validate.js';

/** Instance type when none is given. */
const DEFAULT_INSTANCE_TYPE = 'local.small';

/** What `instance add` asks for; everything but the name is optional. */
export interface NewInstanceSpec {
  name: string;
  type?: string;
  zone?: string;
  region?: string;
  /** Addresses; an InternalIP is allocated and a Hostname (= name) added when missing (unless noHostname). */
  addresses?: AddressRecord[];
  /** No addresses at all (a cloud that reports none yet); `addresses` must then be empty. */
  noAddresses?: boolean;
  /** No Hostname address is added (a cloud that reports IPs only). */
  noHostname?: boolean;
  labels?: Record<string, string>;
}

/** Defaults for new instances. */
export interface InventoryDefaults {
  zone: string;
  region: string;
  /** Pool of allocated InternalIPs. */
  nodeCidr: string;
}

/** Defaults from the environment (LOCALCLOUD_ZONE, LOCALCLOUD_REGION, LOCALCLOUD_NODE_CIDR). */
export function inventoryDefaults(env: NodeJS.ProcessEnv = process.env): InventoryDefaults {
  return {
    zone: env[ENV.zone] || DEFAULT_ZONE,
    region: env[ENV.region] || DEFAULT_REGION,
    nodeCidr: env[ENV.nodeCidr] || DEFAULT_NODE_CIDR,
  };
}

/**
 * Parses `--address` text: `IP` (an InternalIP) or `TYPE=VALUE` with TYPE one
 * of InternalIP, ExternalIP, Hostname, InternalDNS, ExternalDNS.
 */
export function parseAddress(text: string): AddressRecord {
  const eq = text.indexOf('=');
  const typeText = eq >= 0 ? text.slice(0, eq) : 'InternalIP';
  const value = eq >= 0 ? text.slice(eq + 1) : text;
  const type = ADDRESS_TYPES.find((t) => t.toLowerCase() === typeText.toLowerCase());
  if (!type) throw new TypeError(`address type ${JSON.stringify(typeText)} is not one of ${ADDRESS_TYPES.join(', ')}`);
  if (type === 'InternalIP' || type === 'ExternalIP') {
    const ip = canonicalIp(value);
    if (!ip) throw new TypeError(`${type} ${JSON.stringify(value)} is not an IP address`);
    return { type, address: ip };
  }
  must(checkDnsSubdomain(value, type));
  return { type, address: value };
}

/** Parses `--label` text `key=value`. */
export function parseLabel(text: string): [string, string] {
  const eq = text.indexOf('=');
  if (eq < 0) throw new TypeError(`label ${JSON.stringify(text)} must be key=value`);
  const key = text.slice(0, eq);
  const value = text.slice(eq + 1);
  must(checkLabelKey(key));
  must(checkLabelValue(value, `label ${key} value`));
  return [key, value];
}

/** The instance a NAME, ID or providerID refers to, or undefined. */
function findInstance(state: Readonly<LocalCloudState>, ref: string): InstanceRecord | undefined {
  const id = parseProviderId(ref) ?? ref;
  return (isInstanceId(id) ? state.instances.find((i) => i.id === id) : undefined) ?? state.instances.find((i) => i.name === ref);
}

function mustFind(state: LocalCloudState, ref: string): InstanceRecord {
  const inst = findInstance(state, ref);
  if (!inst) throw new Error(`instance ${JSON.stringify(ref)} not found`);
  return inst;
}

/** Adds instances in one transaction; fails (adding none) if a name is taken or invalid. */
export async function addInstances(
  store: StateStore,
  specs: readonly NewInstanceSpec[],
  defaults: InventoryDefaults = inventoryDefaults(),
): Promise<InstanceRecord[]> {
  const pool = new IpPool(defaults.nodeCidr);
  for (const spec of specs) {
    must(checkDnsSubdomain(spec.name, 'instance name'));
    must(checkToken(spec.type ?? DEFAULT_INSTANCE_TYPE, 'instance type'));
    must(checkToken(spec.zone ?? defaults.zone, 'zone'));
    must(checkToken(spec.region ?? defaults.region, 'region'));
    for (const [k, v] of Object.entries(spec.labels ?? {})) {
      must(checkLabelKey(k));
      must(checkLabelValue(v, `label ${k} value`));
    }
  }
  return store.update((draft) => {
    const names = new Set(draft.instances.map((i) => i.name));
    const used = new Set(draft.instances.flatMap((i) => i.addresses.filter((a) => a.type === 'InternalIP').map((a) => a.address)));
    const added: InstanceRecord[] = [];
    for (const spec of specs) {
      if (names.has(spec.name)) {
        const other = draft.instances.find((i) => i.name === spec.name);
        throw new Error(`instance ${JSON.stringify(spec.name)} already exists${other ? ` (${other.id})` : ''}`);
      }
      names.add(spec.name);
      if (spec.noAddresses && (spec.addresses ?? []).length > 0)
        throw new Error(`instance ${JSON.stringify(spec.name)}: give addresses or ask for none, not both`);
      const addresses = dedupeAddresses(spec.addresses ?? []);
      if (!spec.noAddresses && !addresses.some((a) => a.type === 'InternalIP')) {
        const ip = pool.allocate(used);
        if (!ip) throw new Error(`node address pool ${defaults.nodeCidr} is exhausted; pass --address`);
        addresses.unshift({ type: 'InternalIP', address: ip });
      }
      for (const a of addresses) if (a.type === 'InternalIP') used.add(a.address);
      if (!spec.noAddresses && !spec.noHostname && !addresses.some((a) => a.type === 'Hostname'))
        addresses.push({ type: 'Hostname', address: spec.name });
      const inst: InstanceRecord = {
        id: newInstanceId((id) => draft.instances.some((i) => i.id === id)),
        name: spec.name,
        type: spec.type ?? DEFAULT_INSTANCE_TYPE,
        zone: spec.zone ?? defaults.zone,
        region: spec.region ?? defaults.region,
        addresses,
        state: 'running',
        labels: { ...spec.labels },
        createdAt: new Date().toISOString(),
      };
      draft.instances.push(inst);
      added.push(inst);
    }
    return added;
  });
}

function dedupeAddresses(addrs: readonly AddressRecord[]): AddressRecord[] {
  const seen = new Set<string>();
  return addrs.filter((a) => {
    const key = `${a.type}|${a.address}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/** Deletes an instance (by name, id or providerID) and detaches its volumes; returns it. */
export async function deleteInstance(store: StateStore, ref: string): Promise<InstanceRecord> {
  return store.update((draft) => {
    const inst = mustFind(draft, ref);
    draft.instances = draft.instances.filter((i) => i !== inst);
    for (const v of draft.volumes) v.attachments = v.attachments.filter((a) => a.instanceId !== inst.id);
    return inst;
  });
}

/** Sets an instance's power state (idempotent); returns it. */
export async function setInstanceState(store: StateStore, ref: string, state: InstanceState): Promise<InstanceRecord> {
  return store.update((draft) => {
    const inst = mustFind(draft, ref);
    inst.state = state;
    return inst;
  });
}
