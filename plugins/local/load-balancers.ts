/**
 * LoadBalancersService of the local cloud. A load balancer is a record: an
 * ingress IP from the pool (default 127.0.10.0/24, loopback), its listeners
 * (port → nodePort) and its backends (node name → address). The provider
 * process's forwarder (forwarder.ts) carries the traffic:
 * `ingressIp:port/protocol` goes to `<backend address>:nodePort`.
 *
 * Annotation `local.ccm.dev/ip-mode: Proxy|VIP` selects the ingress ipMode
 * (default VIP).
 */
import {
  AlreadyExistsError,
  DeferredError,
  InUseError,
  InvalidArgumentError,
  NotFoundError,
  QuotaExceededError,
  toStatus,
} from '../../sdk/errors.js';
import type { LoadBalancersProvider, ProviderSchema } from '../../sdk/provider.js';
import { SchemaObjectKind, SchemaValueType } from '../../proto/gen/ccm/provider/v1/identity.js';
import { NodeAddressType, type NodeRef, type RequestMeta } from '../../proto/gen/ccm/provider/v1/common.js';
import {
  ExternalTrafficPolicy,
  IpMode,
  Protocol,
  SessionAffinity,
  type LoadBalancerStatus,
  type ServiceRef,
} from '../../proto/gen/ccm/provider/v1/load_balancers.js';
import { clusterOf, nowIso, required, type CloudContext } from './context.js';
import ipaddr from 'ipaddr.js';
import { canonicalIp, type Cidr } from './ip.js';
import { markCreated, markCreatedKeys } from './journal.js';
import { paginate } from './paging.js';
import { isForeignProviderId, loadBalancerName } from './names.js';
import type { LbBackendRecord, LbPodBackendRecord, LbPortRecord, LbProtocol, LoadBalancerRecord, StateView } from './state.js';
import { LbIndex } from './lb-index.js';
import { podBackendsOf, podTargets } from '../../sdk/pod-backends.js';

/** Service annotation selecting the ingress ipMode (VIP or Proxy). */
const IP_MODE_ANNOTATION = 'local.ccm.dev/ip-mode';
/**
 * The earlier name of IP_MODE_ANNOTATION, deprecated (the schema says so, with
 * its replacement) and still read when IP_MODE_ANNOTATION is absent.
 */
const DEPRECATED_IP_MODE_ANNOTATION = 'local.ccm.dev/ingress-ip-mode';

/** The annotation prefix the local cloud owns: any other key under it is a misspelling. */
export const LOCAL_ANNOTATION_PREFIX = 'local.ccm.dev/';

/**
 * The Service annotations the local cloud reads (GetProviderSchema): the
 * host refuses a Service whose annotations under LOCAL_ANNOTATION_PREFIX do
 * not fit, before any cloud call. Keep in step with ipModeOf.
 */
export const LOCAL_SERVICE_ANNOTATIONS: ProviderSchema['annotations'] = [
  {
    key: IP_MODE_ANNOTATION,
    objectKind: SchemaObjectKind.SCHEMA_OBJECT_KIND_SERVICE,
    type: SchemaValueType.SCHEMA_VALUE_TYPE_ENUM,
    allowedValues: ['VIP', 'Proxy'],
    caseInsensitive: true,
    defaultValue: 'VIP',
    description:
      'The ipMode of the load balancer ingress: VIP (traffic to the address stays on the node) or Proxy (it goes through the load balancer).',
  },
  {
    key: DEPRECATED_IP_MODE_ANNOTATION,
    objectKind: SchemaObjectKind.SCHEMA_OBJECT_KIND_SERVICE,
    type: SchemaValueType.SCHEMA_VALUE_TYPE_ENUM,
    allowedValues: ['VIP', 'Proxy'],
    caseInsensitive: true,
    deprecated: true,
    replacement: IP_MODE_ANNOTATION,
    description: `The earlier name of ${IP_MODE_ANNOTATION}, read only when that is absent.`,
  },
];

const PROTOCOLS: Readonly<Partial<Record<Protocol, LbProtocol>>> = {
  [Protocol.PROTOCOL_TCP]: 'TCP',
  [Protocol.PROTOCOL_UDP]: 'UDP',
  [Protocol.PROTOCOL_SCTP]: 'SCTP',
};

function requireService(service: ServiceRef | undefined): ServiceRef {
  const svc = required(service, 'service');
  required(svc.uid, 'service.uid');
  return svc;
}

function nameOf(c: CloudContext, meta: RequestMeta | undefined, svc: ServiceRef): string {
  return loadBalancerName(clusterOf(c, meta), svc.uid);
}

function ipModeOf(svc: ServiceRef): 'VIP' | 'Proxy' {
  const key =
    svc.annotations[IP_MODE_ANNOTATION] === undefined && svc.annotations[DEPRECATED_IP_MODE_ANNOTATION] !== undefined
      ? DEPRECATED_IP_MODE_ANNOTATION
      : IP_MODE_ANNOTATION;
  const v = svc.annotations[key]?.trim();
  if (v === undefined || v === '' || /^vip$/i.test(v)) return 'VIP';
  if (/^proxy$/i.test(v)) return 'Proxy';
  throw new InvalidArgumentError(`annotation ${key} must be VIP or Proxy, got ${JSON.stringify(v)}`);
}

function portsOf(svc: ServiceRef): LbPortRecord[] {
  if (svc.ports.length === 0) throw new InvalidArgumentError(`service ${svc.namespace}/${svc.name} has no ports`);
  const seen = new Set<string>();
  return svc.ports.map((p) => {
    const protocol = PROTOCOLS[p.protocol];
    if (!protocol) throw new InvalidArgumentError(`port ${p.port} of service ${svc.namespace}/${svc.name} has no valid protocol`);
    if (!(p.port >= 1 && p.port <= 65535)) throw new InvalidArgumentError(`port ${p.port} is outside 1..65535`);
    if (!(p.nodePort >= 0 && p.nodePort <= 65535)) throw new InvalidArgumentError(`nodePort ${p.nodePort} is outside 0..65535`);
    const key = `${protocol}/${p.port}`;
    if (seen.has(key)) throw new InvalidArgumentError(`port ${key} appears twice in service ${svc.namespace}/${svc.name}`);
    seen.add(key);
    return { name: p.name, protocol, port: p.port, nodePort: p.nodePort };
  });
}

/**
 * Backends of a node set: deduplicated, sorted by name, InternalIP
 * preferred. A Node of another provider (its providerID has another
 * prefix: a node of another cloud in a cluster that mixes clouds) is
 * skipped, as cloud-provider-aws skips the Nodes it cannot map to an
 * instance: this cloud's load balancers reach only its own network, and
 * the host gives every load-balancer provider every eligible Node, as
 * upstream's service controller does.
 */
function backendsOf(base: StateView, nodes: readonly NodeRef[]): LbBackendRecord[] {
  const byName = new Map<string, LbBackendRecord>();
  for (const node of nodes) {
    if (!node.name) throw new InvalidArgumentError('a backend node has no name');
    if (isForeignProviderId(node.providerId)) continue;
    const fromNode = (type: NodeAddressType) => node.addresses.find((a) => a.type === type && a.address)?.address;
    // Instances are not changed by load balancer updates: the base view's are current.
    const inst = base.instanceByName(node.name);
    const fromInstance = (type: string) => inst?.addresses.find((a) => a.type === type)?.address;
    const address =
      fromNode(NodeAddressType.NODE_ADDRESS_TYPE_INTERNAL_IP) ??
      fromNode(NodeAddressType.NODE_ADDRESS_TYPE_EXTERNAL_IP) ??
      fromInstance('InternalIP') ??
      fromInstance('ExternalIP') ??
      '';
    byName.set(node.name, { nodeName: node.name, address });
  }
  return [...byName.values()].sort((a, b) => (a.nodeName < b.nodeName ? -1 : a.nodeName > b.nodeName ? 1 : 0));
}

/**
 * Pod backends of `svc` (protocol 1.1), or undefined when the host sent none
 * (node-port backends). The load balancer is "in" the cloud's configured
 * zone (settings.zone, what GetZone answers): under trafficDistribution
 * PreferClose each listener keeps only the endpoints of that zone when
 * there is any. An endpoint no listener reaches is left out.
 */
function podBackendsFor(svc: ServiceRef, zone: string, podCidr: Cidr | undefined): LbPodBackendRecord[] | undefined {
  const view = podBackendsOf(svc);
  if (!view) return undefined;
  const byAddress = new Map<string, LbPodBackendRecord>();
  for (const p of svc.ports) {
    const protocol = PROTOCOLS[p.protocol];
    if (!protocol) continue;
    for (const t of podTargets(view, p.protocol, p.port, zone)) {
      const address = podDialAddress(t.address, podCidr);
      const rec = byAddress.get(address) ?? { address, zone: t.zone, nodeName: t.nodeName, ports: {} };
      rec.ports[`${protocol}/${p.port}`] = t.port;
      byAddress.set(address, rec);
    }
  }
  return [...byAddress.values()].sort((a, b) => (a.address < b.address ? -1 : a.address > b.address ? 1 : 0));
}

/**
 * Where the local cloud dials a pod address: one in LOCALCLOUD_POD_CIDR on
 * loopback at 127.b.c.d (the API server refuses loopback addresses in
 * EndpointSlices, and this cloud's hosts are loopback addresses); any other
 * as it is.
 */
export function podDialAddress(address: string, podCidr: Cidr | undefined): string {
  if (!podCidr || !ipaddr.IPv4.isValidFourPartDecimal(address)) return address;
  const a = ipaddr.IPv4.parse(address);
  if (!a.match(ipaddr.IPv4.parse(podCidr.addr.toString()), podCidr.prefix)) return address;
  return `127.${a.octets[1]}.${a.octets[2]}.${a.octets[3]}`;
}

/** Service status of a load balancer record. */
function statusOf(lb: LoadBalancerRecord): LoadBalancerStatus {
  return {
    ingress: [{ ip: lb.ingressIp, hostname: '', ipMode: lb.ipMode === 'Proxy' ? IpMode.IP_MODE_PROXY : IpMode.IP_MODE_VIP, ports: [] }],
  };
}

/** Most entries of one EnsureLoadBalancers call (the protocol's bound). */
const MAX_BATCH_ENSURE = 500;

/** The checked inputs of one ensure. */
interface EnsurePlan {
  name: string;
  clusterName: string;
  /** RequestMeta.cluster_uid ('' from a host that sends none). */
  clusterUid: string;
  ports: LbPortRecord[];
  ipMode: 'VIP' | 'Proxy';
  /** The Service's loadBalancerIP, canonical, if set. */
  wanted?: string;
}

/**
 * The LoadBalancersService of the local cloud: reads, single-Service writes
 * and batch writes, each a group of its own below.
 */
export function createLoadBalancersService(c: CloudContext): LoadBalancersProvider {
  return { ...lbReads(c), ...lbWrites(c), ...lbBatchWrites(c) };
}

/** Read-only: a Service's load balancer, its name, and the cluster's load balancers (paged). */
function lbReads(c: CloudContext): Pick<LoadBalancersProvider, 'getLoadBalancer' | 'getLoadBalancerName' | 'listLoadBalancers'> {
  return {
    async getLoadBalancer(req) {
      const svc = requireService(req.service);
      const lb = c.store.view().loadBalancer(nameOf(c, req.meta, svc));
      return lb ? { exists: true, status: statusOf(lb) } : { exists: false };
    },

    async getLoadBalancerName(req) {
      return { name: nameOf(c, req.meta, requireService(req.service)) };
    },

    async listLoadBalancers(req) {
      const cluster = clusterOf(c, req.meta);
      const mine = c.store.view().state.loadBalancers.filter((l) => l.clusterName === cluster);
      const { page, nextPageToken } = paginate(mine, (l) => l.name, req, 'loadBalancers', cluster);
      return {
        loadBalancers: page.map((l) => ({
          name: l.name,
          clusterName: l.clusterName,
          clusterUid: l.clusterUid ?? '',
          serviceUid: l.serviceUid,
          serviceNamespace: l.serviceNamespace,
          serviceName: l.serviceName,
        })),
        nextPageToken,
      };
    },
  };
}

/** One Service's load balancer: ensure (create or converge), backends, delete. */
function lbWrites(c: CloudContext): Pick<LoadBalancersProvider, 'ensureLoadBalancer' | 'updateLoadBalancer' | 'ensureLoadBalancerDeleted'> {
  return {
    async ensureLoadBalancer(req) {
      const svc = requireService(req.service);
      const plan = planEnsure(c, req.meta, svc);
      const { record, created } = await c.store.update((draft, base) => applyEnsure(c, new LbIndex(base, draft), base, plan, svc, req.nodes));
      await c.forwarder?.sync();
      return markCreated({ status: statusOf(record) }, created);
    },

    async updateLoadBalancer(req) {
      const svc = requireService(req.service);
      const name = nameOf(c, req.meta, svc);
      await c.store.update((draft, base) => setBackends(new LbIndex(base, draft), base, name, svc, req.nodes));
      await c.forwarder?.sync();
      return {};
    },

    async ensureLoadBalancerDeleted(req) {
      const svc = requireService(req.service);
      const name = nameOf(c, req.meta, svc);
      if (!c.store.view().loadBalancer(name)) return {};
      await c.store.update((draft, base) => {
        // A plain filtered list (frozen records), not a walk of the draft's proxies.
        if (!base.loadBalancer(name)) return;
        draft.loadBalancers = base.state.loadBalancers.filter((l) => l.name !== name);
        c.log.info({ lb: name }, 'load balancer deleted');
      });
      await c.forwarder?.sync();
      return {};
    },
  };
}

/** Batches in one state update, each entry failing on its own. */
function lbBatchWrites(c: CloudContext): Pick<LoadBalancersProvider, 'ensureLoadBalancers' | 'updateLoadBalancerHosts'> {
  return {
    async ensureLoadBalancers(req) {
      if (req.services.length > MAX_BATCH_ENSURE)
        throw new InvalidArgumentError(`at most ${MAX_BATCH_ENSURE} services per EnsureLoadBalancers call, got ${req.services.length}`);
      const uids = new Set(req.services.map((s) => s.uid));
      if (uids.size !== req.services.length) throw new InvalidArgumentError('a service uid appears twice in EnsureLoadBalancers');
      const created: string[] = [];
      // One state update for the whole batch; each entry fails on its own.
      const results = await c.store.update((draft, base) => {
        const index = new LbIndex(base, draft);
        return req.services.map((service) => {
          try {
            const svc = requireService(service);
            const r = applyEnsure(c, index, base, planEnsure(c, req.meta, svc), svc, req.nodes);
            if (r.created) created.push(svc.uid);
            return { serviceUid: service.uid, status: statusOf(r.record) };
          } catch (err) {
            return { serviceUid: service.uid, error: toStatus(err) };
          }
        });
      });
      await c.forwarder?.sync();
      return markCreatedKeys({ results }, created);
    },

    async updateLoadBalancerHosts(req) {
      const results = await c.store.update((draft, base) => {
        const index = new LbIndex(base, draft);
        return req.services.map((service) => {
          try {
            const svc = requireService(service);
            setBackends(index, base, nameOf(c, req.meta, svc), svc, req.nodes);
            return { serviceUid: service.uid };
          } catch (err) {
            return { serviceUid: service.uid, error: toStatus(err) };
          }
        });
      });
      await c.forwarder?.sync();
      return { results };
    },
  };
}

/** Replaces the backends of an existing load balancer inside an update; NotFoundError when absent. */
function setBackends(index: LbIndex, base: StateView, name: string, svc: ServiceRef, nodes: readonly NodeRef[]): void {
  const found = index.find(name);
  if (!found) throw new NotFoundError(`load balancer ${name} for service ${svc.namespace}/${svc.name} does not exist`);
  index.put({ ...found.lb, backends: backendsOf(base, nodes) });
}

/** What an ensure of `svc` will write, checked before the state update (InvalidArgumentError). */
function planEnsure(c: CloudContext, meta: RequestMeta | undefined, svc: ServiceRef): EnsurePlan {
  const pool = c.settings.lbPool;
  let wanted: string | undefined;
  if (svc.loadBalancerIp) {
    wanted = canonicalIp(svc.loadBalancerIp);
    if (!wanted) throw new InvalidArgumentError(`loadBalancerIP ${JSON.stringify(svc.loadBalancerIp)} is not an IP address`);
    if (!pool.has(wanted)) throw new InvalidArgumentError(`loadBalancerIP ${wanted} is not in the load balancer pool ${pool.cidr.text}`);
  }
  return {
    name: nameOf(c, meta, svc),
    clusterName: clusterOf(c, meta),
    clusterUid: meta?.clusterUid ?? '',
    ports: portsOf(svc),
    ipMode: ipModeOf(svc),
    wanted,
  };
}

/** Creates or converges the load balancer of `svc` inside a state update. */
function applyEnsure(
  c: CloudContext,
  index: LbIndex,
  base: StateView,
  plan: EnsurePlan,
  svc: ServiceRef,
  nodes: readonly NodeRef[],
): { record: LoadBalancerRecord; created: boolean } {
  const { name, wanted } = plan;
  const pool = c.settings.lbPool;
  const existing = index.find(name)?.lb;
  if (existing && existing.serviceUid !== svc.uid)
    throw new AlreadyExistsError(`load balancer ${name} belongs to service uid ${existing.serviceUid}`);
  const others = index.size - (existing ? 1 : 0);
  // The quota knob: one more load balancer is "not now" (protocol 1.1), not an error.
  const quota = c.lbQuota?.();
  if (!existing && quota && quota.limit > 0 && others >= quota.limit)
    throw new DeferredError(
      'QuotaExhausted',
      `load balancer quota of ${quota.limit} reached (${others} in use); ${name} is created once one is freed or the quota is raised`,
      quota.retryMs,
    );
  let ip: string;
  if (wanted) {
    const holderName = index.holderOf(wanted);
    const holder = holderName !== undefined && holderName !== name ? index.find(holderName)?.lb : undefined;
    if (holder)
      throw new InUseError(`loadBalancerIP ${wanted} is in use by load balancer ${holder.name} (${holder.serviceNamespace}/${holder.serviceName})`);
    ip = wanted;
  } else if (existing) {
    ip = existing.ingressIp;
  } else {
    const free = pool.allocate(index.usedIps());
    if (!free) throw new QuotaExceededError(`load balancer pool ${pool.cidr.text} has no free address`);
    ip = free;
  }
  const podBackends = podBackendsFor(svc, c.settings.zone, c.settings.podCidr);
  const lb: LoadBalancerRecord = {
    name,
    clusterName: plan.clusterName,
    serviceUid: svc.uid,
    serviceNamespace: svc.namespace,
    serviceName: svc.name,
    ingressIp: ip,
    ipMode: plan.ipMode,
    ports: plan.ports,
    backends: backendsOf(base, nodes),
    ...(podBackends ? { podBackends } : {}),
    sourceRanges: [...svc.loadBalancerSourceRanges],
    externalTrafficPolicy: svc.externalTrafficPolicy === ExternalTrafficPolicy.EXTERNAL_TRAFFIC_POLICY_LOCAL ? 'Local' : 'Cluster',
    healthCheckNodePort: svc.healthCheckNodePort,
    sessionAffinity: svc.sessionAffinity === SessionAffinity.SESSION_AFFINITY_CLIENT_IP ? 'ClientIP' : 'None',
    createdAt: existing?.createdAt ?? nowIso(),
  };
  // The cluster UID of this call tags it; one found untagged or with another UID
  // (a cluster restored from backup with --cluster-uid) is adopted. A host that
  // sends none leaves the tag as it was.
  const clusterUid = plan.clusterUid || existing?.clusterUid;
  if (clusterUid) lb.clusterUid = clusterUid;
  if (existing && plan.clusterUid && existing.clusterUid !== plan.clusterUid)
    c.log.info({ lb: name, clusterUid: plan.clusterUid, was: existing.clusterUid ?? '' }, 'load balancer tagged with the cluster UID (adopted)');
  index.put(lb);
  if (!existing) c.log.info({ lb: name, ip, service: `${svc.namespace}/${svc.name}` }, 'load balancer created');
  return { record: lb, created: !existing };
}
