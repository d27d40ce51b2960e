/**
 * The Cloud capability interfaces (host/cloud.ts) over a supervised gRPC
 * plugin. This is the only place where generated protocol types meet the
 * controllers' types: requests are built here and every answer is validated
 * here before it is returned.
 */
import { Capability, Service } from '../../proto/gen/ccm/provider/v1/identity.js';
import type { NodeRef as PbNodeRef, NodeAddress as PbNodeAddress } from '../../proto/gen/ccm/provider/v1/common.js';
import { NodeAddressType as PbAddrType } from '../../proto/gen/ccm/provider/v1/common.js';
import type {
  InstanceMetadata as PbInstanceMetadata,
  InstanceMetadataResult,
  InstanceStatusResult,
} from '../../proto/gen/ccm/provider/v1/instances.js';
import type { Status as PbStatus } from '../../proto/gen/google/rpc/status.js';
import { fromStatus } from '../../sdk/errors.js';
import {
  MAX_BATCH_NODES,
  type Cloud,
  type CloudInfo,
  type InstanceMetadata,
  type Instances,
  type MetadataResult,
  type NodeAddress,
  type NodeAddressType,
  type NodeRef,
  type StatusResult,
} from '../cloud.js';
import type { Volumes } from '../cloud-volumes.js';
import { InstanceNotFoundError, InvalidCloudResponseError, NotImplementedError } from '../errors.js';
import type { Routes } from '../cloud-routes.js';
import { GrpcVolumes } from './grpc-volumes.js';
import { chunks } from '../util/chunks.js';
import { mapLimit } from '../util/map-limit.js';
import { decodedToCloudError } from './connection.js';
import { GrpcRoutes } from './grpc-routes.js';
import type { PluginSupervisor } from './supervisor.js';
import { canonicalAddresses, instanceMetadataProblems } from './validate.js';
import type { LoadBalancers } from '../cloud-load-balancers.js';
import { GrpcLoadBalancers } from './grpc-load-balancers.js';
import { lbClassDeclaration } from '../lb-classes.js';

export interface CallTimeouts {
  /** Deadline for read-only calls. */
  readMs: number;
  /** Deadline for mutating calls. */
  mutateMs: number;
}

/** How many single calls run at once when a batch is emulated. */
const FANOUT_CONCURRENCY = 16;

/** Address type mapping between the controllers' types and the protocol's enum. */
export const TO_PB_ADDR: Record<NodeAddressType, PbAddrType> = {
  Hostname: PbAddrType.NODE_ADDRESS_TYPE_HOSTNAME,
  InternalIP: PbAddrType.NODE_ADDRESS_TYPE_INTERNAL_IP,
  ExternalIP: PbAddrType.NODE_ADDRESS_TYPE_EXTERNAL_IP,
  InternalDNS: PbAddrType.NODE_ADDRESS_TYPE_INTERNAL_DNS,
  ExternalDNS: PbAddrType.NODE_ADDRESS_TYPE_EXTERNAL_DNS,
};
export const FROM_PB_ADDR = new Map<number, NodeAddressType>(Object.entries(TO_PB_ADDR).map(([k, v]) => [v, k as NodeAddressType]));

function toPbNode(n: NodeRef): PbNodeRef {
  return {
    name: n.name,
    uid: n.uid ?? '',
    providerId: n.providerId ?? '',
    addresses: n.addresses.map((a) => ({ type: TO_PB_ADDR[a.type], address: a.address })),
    labels: n.labels,
    annotations: n.annotations ?? {},
    podCidrs: n.podCidrs ?? [],
    taints: n.taints ?? [],
    unschedulable: n.unschedulable ?? false,
    conditions: n.conditions ?? [],
    nodeInfo: n.nodeInfo,
  };
}

function fromPbAddresses(addrs: PbNodeAddress[], method: string): NodeAddress[] {
  const bad = addrs.filter((a) => !FROM_PB_ADDR.has(a.type));
  if (bad.length) throw new InvalidCloudResponseError(method, [`${bad.length} address(es) with unknown or unspecified type`]);
  return addrs.map((a) => ({ type: FROM_PB_ADDR.get(a.type)!, address: a.address }));
}

export class GrpcCloud implements Cloud {
  private readonly instancesImpl = new GrpcInstances(this);
  private readonly lbImpl = new GrpcLoadBalancers({
    callLb: (method, request, mutating) => {
      const conn = this.supervisor.connection();
      return conn.unary(conn.loadBalancers, method, request, mutating ? this.timeouts.mutateMs : this.timeouts.readMs);
    },
    hasBatchHosts: () => this.hasCapability(Capability.CAPABILITY_LOAD_BALANCER_BATCH_HOSTS),
    hasList: () => this.hasCapability(Capability.CAPABILITY_LOAD_BALANCER_LIST),
    hasBatchEnsure: () => this.hasCapability(Capability.CAPABILITY_LOAD_BALANCER_BATCH_ENSURE),
    hasPodBackends: () => this.hasCapability(Capability.CAPABILITY_LOAD_BALANCER_POD_BACKENDS),
    classes: () => lbClassDeclaration(this.identity().capabilities),
    schema: () => this.supervisor.identity?.schema,
    toPbNode,
    clusterUid: () => this.supervisor.clusterUid,
  });
  private readonly routesImpl = new GrpcRoutes(this);

  constructor(
    readonly supervisor: PluginSupervisor,
    readonly timeouts: CallTimeouts,
  ) {}

  private identity() {
    const id = this.supervisor.identity;
    if (!id) throw new Error('plugin identity is not known before the plugin has started');
    return id;
  }

  info(): CloudInfo {
    const { info, capabilities } = this.identity();
    return {
      name: info.name,
      vendorVersion: info.vendorVersion,
      providerName: capabilities.providerName,
      hasClusterId: capabilities.hasClusterId,
      providerIdPrefixes: capabilities.providerIdPrefixes ?? [],
      nodeSelector: capabilities.nodeSelector ?? '',
    };
  }

  hasService(s: Service): boolean {
    return this.identity().capabilities.services.includes(s);
  }

  hasCapability(c: Capability): boolean {
    return this.identity().capabilities.capabilities.includes(c);
  }

  instances(): Instances | undefined {
    return this.hasService(Service.SERVICE_INSTANCES) ? this.instancesImpl : undefined;
  }

  loadBalancers(): LoadBalancers | undefined {
    return this.hasService(Service.SERVICE_LOAD_BALANCERS) ? this.lbImpl : undefined;
  }

  routes(): Routes | undefined {
    return this.hasService(Service.SERVICE_ROUTES) ? this.routesImpl : undefined;
  }

  volumes(): Volumes | undefined {
    if (!this.hasService(Service.SERVICE_VOLUMES)) return undefined;
    return new GrpcVolumes(this.supervisor, this.timeouts, this.hasCapability(Capability.CAPABILITY_VOLUMES_LIST_PUBLISHED_NODES));
  }

  /** Sends one read-only call to the current plugin connection. */
  read<Res>(service: 'instances' | 'zones', method: string, request: object): Promise<Res> {
    request = { meta: { operationId: '', clusterName: this.supervisor.clusterName, clusterUid: this.supervisor.clusterUid, attempt: 1 }, ...request };
    const conn = this.supervisor.connection();
    return conn.unary<object, Res>(conn[service], method, request, this.timeouts.readMs);
  }
}

class GrpcInstances implements Instances {
  constructor(private readonly cloud: GrpcCloud) {}

  get batched(): boolean {
    return this.cloud.hasCapability(Capability.CAPABILITY_INSTANCES_BATCH);
  }

  async instanceExists(node: NodeRef): Promise<boolean> {
    try {
      const r = await this.cloud.read<{ exists: boolean }>('instances', 'InstanceExists', { node: toPbNode(node) });
      return r.exists;
    } catch (err) {
      // INSTANCE_NOT_FOUND means "does not exist" on every path (upstream is inconsistent here).
      if (err instanceof InstanceNotFoundError) return false;
      throw err;
    }
  }

  async instanceShutdown(node: NodeRef): Promise<boolean> {
    const r = await this.cloud.read<{ shutdown: boolean }>('instances', 'InstanceShutdown', { node: toPbNode(node) });
    return r.shutdown;
  }

  async instanceMetadata(node: NodeRef): Promise<InstanceMetadata> {
    let pb: PbInstanceMetadata | undefined;
    try {
      pb = (await this.cloud.read<{ metadata?: PbInstanceMetadata }>('instances', 'InstanceMetadata', { node: toPbNode(node) })).metadata;
    } catch (err) {
      if (err instanceof NotImplementedError && this.cloud.hasCapability(Capability.CAPABILITY_INSTANCES_LEGACY)) {
        return this.legacyMetadata(node);
      }
      throw err;
    }
    return this.checked(node, pb, 'InstanceMetadata');
  }

  async instancesMetadata(nodes: NodeRef[]): Promise<MetadataResult[]> {
    const results = await this.eachNode<InstanceMetadata, InstanceMetadataResult>(nodes, {
      single: (n) => this.instanceMetadata(n),
      batchMethod: 'GetInstancesMetadata',
      fromItem: (n, item) => this.checked(n, item.metadata, 'GetInstancesMetadata'),
    });
    return results.map((r) => ('error' in r ? r : { nodeName: r.nodeName, metadata: r.value }));
  }

  async instancesStatus(nodes: NodeRef[]): Promise<StatusResult[]> {
    const gone = { exists: false, shutdown: false };
    const results = await this.eachNode<{ exists: boolean; shutdown: boolean }, InstanceStatusResult>(nodes, {
      single: async (n) => {
        if (!(await this.instanceExists(n))) return gone;
        try {
          return { exists: true, shutdown: await this.instanceShutdown(n) };
        } catch (err) {
          // Gone between the two calls: INSTANCE_NOT_FOUND means "does not exist" here too.
          if (err instanceof InstanceNotFoundError) return gone;
          // A provider without InstanceShutdown: running, as upstream treats NotImplemented.
          if (err instanceof NotImplementedError) return { exists: true, shutdown: false };
          throw err;
        }
      },
      batchMethod: 'GetInstancesStatus',
      fromItem: (_n, item) => ({ exists: item.exists, shutdown: item.exists && item.shutdown }),
      // INSTANCE_NOT_FOUND means "does not exist" on every path.
      onItemError: (err) => (err instanceof InstanceNotFoundError ? gone : undefined),
    });
    return results.map((r) => ('error' in r ? r : { nodeName: r.nodeName, ...r.value }));
  }

  /**
   * The shared shape of the batch lookups: one result per input node, in
   * order. With the batch capability: chunks of MAX_BATCH_NODES, the answer's
   * shape checked, per-item errors decoded (or mapped by `onItemError`) and
   * per-item values converted by `fromItem` (which may throw to reject the
   * item). Without it: `single` per node with bounded concurrency.
   */
  private async eachNode<V, Item extends { nodeName: string; error?: PbStatus }>(
    nodes: NodeRef[],
    how: {
      single: (n: NodeRef) => Promise<V>;
      batchMethod: 'GetInstancesMetadata' | 'GetInstancesStatus';
      fromItem: (n: NodeRef, item: Item) => V;
      onItemError?: (err: Error) => V | undefined;
    },
  ): Promise<({ nodeName: string; value: V } | { nodeName: string; error: Error })[]> {
    if (!this.batched) {
      return mapLimit(nodes, FANOUT_CONCURRENCY, async (n) => {
        try {
          return { nodeName: n.name, value: await how.single(n) };
        } catch (error) {
          return { nodeName: n.name, error: error as Error };
        }
      });
    }
    const out: ({ nodeName: string; value: V } | { nodeName: string; error: Error })[] = [];
    for (const chunk of chunks(nodes, MAX_BATCH_NODES)) {
      const r = await this.cloud.read<{ results: Item[] }>('instances', how.batchMethod, { nodes: chunk.map(toPbNode) });
      this.checkBatchShape(how.batchMethod, chunk, r.results);
      chunk.forEach((n, i) => {
        const item = r.results[i]!;
        if (item.error && item.error.code !== 0) {
          const error = decodedToCloudError(how.batchMethod, fromStatus(item.error));
          const mapped = how.onItemError?.(error);
          out.push(mapped !== undefined ? { nodeName: n.name, value: mapped } : { nodeName: n.name, error });
        } else {
          try {
            out.push({ nodeName: n.name, value: how.fromItem(n, item) });
          } catch (error) {
            out.push({ nodeName: n.name, error: error as Error });
          }
        }
      });
    }
    return out;
  }

  /** A batch answer must have exactly one result per input node, in order. */
  private checkBatchShape(method: string, input: NodeRef[], results: { nodeName: string }[]): void {
    if (results.length !== input.length) {
      throw new InvalidCloudResponseError(method, [`${results.length} results for ${input.length} nodes`]);
    }
    const wrong = results.findIndex((r, i) => r.nodeName !== input[i]!.name);
    if (wrong >= 0)
      throw new InvalidCloudResponseError(method, [
        `result ${wrong} is for node ${JSON.stringify(results[wrong]!.nodeName)}, expected ${JSON.stringify(input[wrong]!.name)}`,
      ]);
  }

  private checked(node: NodeRef, pb: PbInstanceMetadata | undefined, method: string): InstanceMetadata {
    if (!pb) throw new InvalidCloudResponseError(method, ['metadata is missing']);
    const m: InstanceMetadata = {
      providerId: pb.providerId,
      instanceType: pb.instanceType,
      nodeAddresses: fromPbAddresses(pb.nodeAddresses, method),
      zone: pb.zone,
      region: pb.region,
      additionalLabels: pb.additionalLabels ?? {},
    };
    const info = this.cloud.info();
    // The prefixes the provider declares (field 5), else its provider name's.
    const problems = instanceMetadataProblems(
      m,
      node.providerId ?? '',
      info.providerIdPrefixes.length > 0 ? info.providerIdPrefixes : info.providerName,
    );
    if (problems.length) throw new InvalidCloudResponseError(method, problems);
    // KEP-4858: every IP the host writes is in canonical text, whatever spelling the provider used.
    return { ...m, nodeAddresses: canonicalAddresses(m.nodeAddresses) };
  }

  /** Upstream's Instances v1 path: InstanceId, NodeAddresses, InstanceType and Zones. */
  private async legacyMetadata(node: NodeRef): Promise<InstanceMetadata> {
    const providerName = this.cloud.info().providerName;
    let providerId = node.providerId ?? '';
    if (!providerId) {
      const r = await this.cloud.read<{ instanceId: string }>('instances', 'InstanceId', { nodeName: node.name });
      providerId = `${providerName}://${r.instanceId}`;
    }
    const addrs = await this.cloud.read<{ addresses: PbNodeAddress[] }>('instances', 'NodeAddressesByProviderId', { providerId });
    const type = await this.cloud.read<{ instanceType: string }>('instances', 'InstanceTypeByProviderId', { providerId });
    let zone = { failureDomain: '', region: '' };
    if (this.cloud.hasService(Service.SERVICE_ZONES)) {
      zone = (await this.cloud.read<{ zone?: typeof zone }>('zones', 'GetZoneByProviderId', { providerId })).zone ?? zone;
    }
    return this.checked(
      node,
      {
        providerId,
        instanceType: type.instanceType,
        nodeAddresses: addrs.addresses,
        zone: zone.failureDomain,
        region: zone.region,
        additionalLabels: {},
      },
      'InstanceMetadata(legacy)',
    );
  }
}
