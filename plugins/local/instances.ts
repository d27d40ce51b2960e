/**
 * InstancesService of the local cloud (InstancesV2, the batch forms and the
 * legacy Instances RPCs) and the instance lookups other services share.
 */
import { createHash } from 'node:crypto';
import { InstanceNotFoundError, InvalidArgumentError, toStatus } from '../../sdk/errors.js';
import type { InstancesProvider } from '../../sdk/provider.js';
import { NodeAddressType, type NodeAddress, type NodeRef } from '../../proto/gen/ccm/provider/v1/common.js';
import type { InstanceMetadata } from '../../proto/gen/ccm/provider/v1/instances.js';
import { required, type CloudContext } from './context.js';
import { parseProviderId, providerIdOf } from './names.js';
import type { AddressRecord, AddressType, InstanceRecord, StateView } from './state.js';

/** Most nodes accepted by one batch call. */
const MAX_BATCH_NODES = 500;

const ADDRESS_TYPE_TO_PROTO: Readonly<Record<AddressType, NodeAddressType>> = {
  Hostname: NodeAddressType.NODE_ADDRESS_TYPE_HOSTNAME,
  InternalIP: NodeAddressType.NODE_ADDRESS_TYPE_INTERNAL_IP,
  ExternalIP: NodeAddressType.NODE_ADDRESS_TYPE_EXTERNAL_IP,
  InternalDNS: NodeAddressType.NODE_ADDRESS_TYPE_INTERNAL_DNS,
  ExternalDNS: NodeAddressType.NODE_ADDRESS_TYPE_EXTERNAL_DNS,
};

/** Converts stored addresses to protocol addresses. */
export function toNodeAddresses(addrs: readonly AddressRecord[]): NodeAddress[] {
  return addrs.map((a) => ({ type: ADDRESS_TYPE_TO_PROTO[a.type], address: a.address }));
}

/** Converts protocol addresses to stored ones, dropping UNSPECIFIED entries. */
export function fromNodeAddresses(addrs: readonly NodeAddress[]): AddressRecord[] {
  const back = new Map<NodeAddressType, AddressType>(Object.entries(ADDRESS_TYPE_TO_PROTO).map(([k, v]) => [v, k as AddressType]));
  return addrs.flatMap((a) => {
    const type = back.get(a.type);
    return type ? [{ type, address: a.address }] : [];
  });
}

/** The instance id in a `local://` providerID; InvalidArgumentError for any other providerID. */
export function instanceIdFromProviderId(providerId: string): string {
  const id = parseProviderId(providerId);
  if (id === undefined) throw new InvalidArgumentError(`providerID ${JSON.stringify(providerId)} is not a local:// providerID`);
  return id;
}

/** The instance with this providerID; InstanceNotFoundError when absent. */
export function instanceByProviderId(view: StateView, providerId: string): InstanceRecord {
  const id = instanceIdFromProviderId(providerId);
  const inst = view.instanceById(id);
  if (!inst) throw new InstanceNotFoundError(`instance ${id} not found`, { providerID: providerId });
  return inst;
}

/** The instance with this node name; InstanceNotFoundError when absent. */
export function instanceByNodeName(view: StateView, nodeName: string): InstanceRecord {
  required(nodeName, 'node_name');
  const inst = view.instanceByName(nodeName);
  if (!inst) throw new InstanceNotFoundError(`no instance for node ${JSON.stringify(nodeName)}`, { node: nodeName });
  return inst;
}

/** The instance behind a node: by providerID when set, else by name. */
function instanceOfNode(view: StateView, node: NodeRef | undefined): InstanceRecord {
  const n = required(node, 'node');
  if (n.providerId) return instanceByProviderId(view, n.providerId);
  if (!n.name) throw new InvalidArgumentError('node has neither a provider_id nor a name');
  return instanceByNodeName(view, n.name);
}

/** The instance behind a node, or undefined when it does not exist (other errors throw). */
function maybeInstanceOfNode(view: StateView, node: NodeRef | undefined): InstanceRecord | undefined {
  try {
    return instanceOfNode(view, node);
  } catch (err) {
    if (err instanceof InstanceNotFoundError) return undefined;
    throw err;
  }
}

/** InstanceMetadata of a stored instance. */
function metadataOf(inst: InstanceRecord): InstanceMetadata {
  return {
    providerId: providerIdOf(inst.id),
    instanceType: inst.type,
    nodeAddresses: toNodeAddresses(inst.addresses),
    zone: inst.zone,
    region: inst.region,
    additionalLabels: { ...inst.labels },
  };
}

function checkBatch(nodes: readonly NodeRef[]): void {
  if (nodes.length > MAX_BATCH_NODES) throw new InvalidArgumentError(`at most ${MAX_BATCH_NODES} nodes per call, got ${nodes.length}`);
}

/**
 * The InstancesService of the local cloud: InstancesV2 lookups, batches and
 * the legacy Instances (v1) calls, each a group of its own below.
 */
export function createInstancesService(c: CloudContext): InstancesProvider {
  return { ...instanceLookups(c), ...instanceBatches(c), ...legacyInstances(c) };
}

/** InstancesV2: one node's existence, shutdown state and metadata. */
function instanceLookups(c: CloudContext): Pick<InstancesProvider, 'instanceExists' | 'instanceShutdown' | 'instanceMetadata'> {
  return {
    async instanceExists(req) {
      return { exists: maybeInstanceOfNode(c.store.view(), req.node) !== undefined };
    },

    async instanceShutdown(req) {
      return { shutdown: instanceOfNode(c.store.view(), req.node).state === 'stopped' };
    },

    async instanceMetadata(req) {
      return { metadata: metadataOf(instanceOfNode(c.store.view(), req.node)) };
    },
  };
}

/** Batches: the status or metadata of up to MAX_BATCH_NODES nodes in one call. */
function instanceBatches(c: CloudContext): Pick<InstancesProvider, 'getInstancesStatus' | 'getInstancesMetadata'> {
  return {
    async getInstancesStatus(req) {
      checkBatch(req.nodes);
      const view = c.store.view();
      return {
        results: req.nodes.map((node) => {
          try {
            const inst = maybeInstanceOfNode(view, node);
            return { nodeName: node.name, exists: inst !== undefined, shutdown: inst?.state === 'stopped' };
          } catch (err) {
            return { nodeName: node.name, exists: false, shutdown: false, error: toStatus(err) };
          }
        }),
      };
    },

    async getInstancesMetadata(req) {
      checkBatch(req.nodes);
      const view = c.store.view();
      return {
        results: req.nodes.map((node) => {
          try {
            return { nodeName: node.name, metadata: metadataOf(instanceOfNode(view, node)) };
          } catch (err) {
            return { nodeName: node.name, error: toStatus(err) };
          }
        }),
      };
    },
  };
}

/** The legacy Instances (v1) calls. */
function legacyInstances(
  c: CloudContext,
): Pick<
  InstancesProvider,
  | 'nodeAddresses'
  | 'nodeAddressesByProviderId'
  | 'instanceId'
  | 'instanceType'
  | 'instanceTypeByProviderId'
  | 'addSshKeyToAllInstances'
  | 'currentNodeName'
> {
  return {
    async nodeAddresses(req) {
      return { addresses: toNodeAddresses(instanceByNodeName(c.store.view(), req.nodeName).addresses) };
    },

    async nodeAddressesByProviderId(req) {
      return { addresses: toNodeAddresses(instanceByProviderId(c.store.view(), required(req.providerId, 'provider_id')).addresses) };
    },

    async instanceId(req) {
      return { instanceId: instanceByNodeName(c.store.view(), req.nodeName).id };
    },

    async instanceType(req) {
      return { instanceType: instanceByNodeName(c.store.view(), req.nodeName).type };
    },

    async instanceTypeByProviderId(req) {
      return { instanceType: instanceByProviderId(c.store.view(), required(req.providerId, 'provider_id')).type };
    },

    async addSshKeyToAllInstances(req) {
      const user = required(req.user, 'user');
      if (req.keyData.length === 0) throw new InvalidArgumentError('key_data is required');
      const fingerprint = createHash('sha256').update(req.keyData).digest('hex');
      await c.store.update((draft) => {
        if (!draft.sshKeys.some((k) => k.user === user && k.fingerprint === fingerprint)) {
          draft.sshKeys.push({ user, fingerprint, key: Buffer.from(req.keyData).toString('base64') });
        }
      });
      return {};
    },

    async currentNodeName(req) {
      const hostname = required(req.hostname, 'hostname');
      const view = c.store.view();
      const byName = view.instanceByName(hostname);
      if (byName) return { nodeName: byName.name };
      const byHostname = view.state.instances.find((i) => i.addresses.some((a) => a.type === 'Hostname' && a.address === hostname));
      // Upstream providers answer the hostname itself when they know no better.
      return { nodeName: byHostname?.name ?? hostname };
    },
  };
}
