/**
 * LoadBalancers (host/cloud-load-balancers.ts) over the plugin's
 * LoadBalancersService: builds requests from the host's types and validates
 * every answer (validate-load-balancers.ts) before returning it.
 */
import type { NodeRef as PbNodeRef } from '../../proto/gen/ccm/provider/v1/common.js';
import {
  ExternalTrafficPolicy,
  InternalTrafficPolicy,
  IpFamily,
  IpFamilyPolicy,
  IpMode,
  Protocol,
  SessionAffinity,
  type ListLoadBalancersResponse,
  type LoadBalancerStatus as PbStatus,
  type ServiceRef as PbServiceRef,
  type EnsureLoadBalancersResult,
  type UpdateLoadBalancerHostsResult,
} from '../../proto/gen/ccm/provider/v1/load_balancers.js';
import { fromStatus } from '../../sdk/errors.js';
import type { NodeRef } from '../cloud.js';
import type {
  EnsureResult,
  HostsUpdateResult,
  LbIngress,
  LbProtocol,
  LbStatus,
  LbSummary,
  LoadBalancers,
  ServiceRef,
} from '../cloud-load-balancers.js';
import { InvalidCloudResponseError } from '../errors.js';
import { decodedToCloudError } from './connection.js';
import { lbStatusProblems, lbSummaryProblems } from './validate-load-balancers.js';
import { canonicalIpText } from './validate.js';
import type { LbClassDeclaration } from '../lb-classes.js';
import type { AnnotationSchema } from './provider-schema.js';

/** Load balancers asked for per ListLoadBalancers page. */
const LIST_PAGE_SIZE = 500;
/** Most load balancers one listing may hold (memory bound against a provider that never stops paging). */
const MAX_LISTED_LOAD_BALANCERS = 100_000;

/** What GrpcLoadBalancers needs from GrpcCloud. */
export interface LbTransport {
  /** One call to LoadBalancersService; `mutating` selects the longer deadline. */
  callLb<Res>(method: string, request: object, mutating: boolean): Promise<Res>;
  hasBatchHosts(): boolean;
  hasList(): boolean;
  hasBatchEnsure(): boolean;
  /** CAPABILITY_LOAD_BALANCER_POD_BACKENDS (protocol 1.1); absent: no. */
  hasPodBackends?(): boolean;
  /** The provider's load balancer class declaration (GetPluginCapabilities). */
  classes?(): LbClassDeclaration;
  /** The provider's schema (GetProviderSchema, read once per process); undefined: none. */
  schema?(): AnnotationSchema | undefined;
  toPbNode(n: NodeRef): PbNodeRef;
  /** RequestMeta.cluster_uid of every call. */
  clusterUid(): string;
}

const TO_PB_PROTOCOL: Record<LbProtocol, Protocol> = { TCP: Protocol.PROTOCOL_TCP, UDP: Protocol.PROTOCOL_UDP, SCTP: Protocol.PROTOCOL_SCTP };
const FROM_PB_PROTOCOL = new Map<number, LbProtocol>(Object.entries(TO_PB_PROTOCOL).map(([k, v]) => [v, k as LbProtocol]));

function toPbService(s: ServiceRef): PbServiceRef {
  return {
    uid: s.uid,
    namespace: s.namespace,
    name: s.name,
    annotations: s.annotations,
    labels: s.labels,
    ports: s.ports.map((p) => ({
      name: p.name,
      protocol: TO_PB_PROTOCOL[p.protocol],
      port: p.port,
      nodePort: p.nodePort,
      appProtocol: p.appProtocol,
      targetPort: typeof p.targetPort === 'number' ? p.targetPort : 0,
      targetPortName: typeof p.targetPort === 'string' ? p.targetPort : '',
    })),
    loadBalancerIp: s.loadBalancerIp,
    loadBalancerSourceRanges: s.loadBalancerSourceRanges,
    ipFamilies: s.ipFamilies.map((f) => (f === 'IPv6' ? IpFamily.IP_FAMILY_IPV6 : IpFamily.IP_FAMILY_IPV4)),
    externalTrafficPolicy:
      s.externalTrafficPolicy === 'Local'
        ? ExternalTrafficPolicy.EXTERNAL_TRAFFIC_POLICY_LOCAL
        : ExternalTrafficPolicy.EXTERNAL_TRAFFIC_POLICY_CLUSTER,
    healthCheckNodePort: s.healthCheckNodePort,
    sessionAffinity: s.sessionAffinity === 'ClientIP' ? SessionAffinity.SESSION_AFFINITY_CLIENT_IP : SessionAffinity.SESSION_AFFINITY_NONE,
    loadBalancerClass: s.loadBalancerClass,
    sessionAffinityTimeoutSeconds: s.sessionAffinityTimeoutSeconds,
    selector: s.selector ?? {},
    clusterIps: s.clusterIps ?? [],
    ipFamilyPolicy: s.ipFamilyPolicy ? TO_PB_FAMILY_POLICY[s.ipFamilyPolicy] : IpFamilyPolicy.IP_FAMILY_POLICY_UNSPECIFIED,
    externalIps: s.externalIps ?? [],
    allocateLoadBalancerNodePorts: s.allocateLoadBalancerNodePorts,
    internalTrafficPolicy:
      s.internalTrafficPolicy === 'Local'
        ? InternalTrafficPolicy.INTERNAL_TRAFFIC_POLICY_LOCAL
        : s.internalTrafficPolicy === 'Cluster'
          ? InternalTrafficPolicy.INTERNAL_TRAFFIC_POLICY_CLUSTER
          : InternalTrafficPolicy.INTERNAL_TRAFFIC_POLICY_UNSPECIFIED,
    status: { ingress: (s.status?.ingress ?? []).map(toPbIngress) },
    endpoints: (s.podBackends?.endpoints ?? []).map((e) => ({
      addresses: e.addresses,
      ipFamily: e.ipFamily === 'IPv6' ? IpFamily.IP_FAMILY_IPV6 : IpFamily.IP_FAMILY_IPV4,
      ports: e.ports.map((p) => ({ name: p.name, servicePort: p.servicePort, protocol: TO_PB_PROTOCOL[p.protocol], port: p.port })),
      ready: e.ready,
      serving: e.serving,
      terminating: e.terminating,
      nodeName: e.nodeName,
      zone: e.zone,
      pod: e.pod,
    })),
    podBackends: s.podBackends
      ? { trafficDistribution: s.podBackends.trafficDistribution, omittedEndpoints: s.podBackends.omittedEndpoints }
      : undefined,
  };
}

const TO_PB_FAMILY_POLICY: Record<NonNullable<ServiceRef['ipFamilyPolicy']>, IpFamilyPolicy> = {
  SingleStack: IpFamilyPolicy.IP_FAMILY_POLICY_SINGLE_STACK,
  PreferDualStack: IpFamilyPolicy.IP_FAMILY_POLICY_PREFER_DUAL_STACK,
  RequireDualStack: IpFamilyPolicy.IP_FAMILY_POLICY_REQUIRE_DUAL_STACK,
};

/** One ingress point of the Service's current status, as the protocol carries it. */
function toPbIngress(i: LbIngress): PbStatus['ingress'][number] {
  return {
    ip: i.ip ?? '',
    hostname: i.hostname ?? '',
    ipMode: i.ipMode === 'VIP' ? IpMode.IP_MODE_VIP : i.ipMode === 'Proxy' ? IpMode.IP_MODE_PROXY : IpMode.IP_MODE_UNSPECIFIED,
    ports: (i.ports ?? []).map((p) => ({ port: p.port, protocol: TO_PB_PROTOCOL[p.protocol], error: p.error ?? '' })),
  };
}

/** Converts and validates a status answer; throws InvalidCloudResponseError. */
function checkedStatus(method: string, pb: PbStatus | undefined): LbStatus {
  if (!pb) throw new InvalidCloudResponseError(method, ['status is missing']);
  const problems: string[] = [];
  const ingress = pb.ingress.map((i, n): LbIngress => {
    const out: LbIngress = {};
    if (i.ip) out.ip = i.ip;
    if (i.hostname) out.hostname = i.hostname;
    if (i.ipMode === IpMode.IP_MODE_VIP) out.ipMode = 'VIP';
    else if (i.ipMode === IpMode.IP_MODE_PROXY) out.ipMode = 'Proxy';
    else if (i.ipMode !== IpMode.IP_MODE_UNSPECIFIED) problems.push(`ingress[${n}]: unknown ipMode ${i.ipMode}`);
    if (i.ports.length > 0) {
      out.ports = i.ports.map((p) => {
        const protocol = FROM_PB_PROTOCOL.get(p.protocol);
        if (!protocol) problems.push(`ingress[${n}]: port ${p.port} has no valid protocol`);
        return p.error ? { port: p.port, protocol: protocol ?? 'TCP', error: p.error } : { port: p.port, protocol: protocol ?? 'TCP' };
      });
    }
    return out;
  });
  const status = { ingress };
  problems.push(...lbStatusProblems(status));
  if (problems.length) throw new InvalidCloudResponseError(method, problems);
  // KEP-4858: status.loadBalancer.ingress[].ip is written in canonical text, whatever spelling the provider used.
  return { ingress: status.ingress.map((i) => (i.ip ? { ...i, ip: canonicalIpText(i.ip) } : i)) };
}

export class GrpcLoadBalancers implements LoadBalancers {
  constructor(private readonly t: LbTransport) {}

  get batchHosts(): boolean {
    return this.t.hasBatchHosts();
  }

  get batchEnsure(): boolean {
    return this.t.hasBatchEnsure();
  }

  get canList(): boolean {
    return this.t.hasList();
  }

  get podBackends(): boolean {
    return this.t.hasPodBackends?.() ?? false;
  }

  get classes(): LbClassDeclaration | undefined {
    return this.t.classes?.();
  }

  annotationProblems(annotations: Readonly<Record<string, string>> | undefined): string[] {
    return this.t.schema?.()?.serviceProblems(annotations) ?? [];
  }

  annotationDeprecations(annotations: Readonly<Record<string, string>> | undefined): string[] {
    return this.t.schema?.()?.serviceDeprecations(annotations) ?? [];
  }

  /** RequestMeta: the operation id is stable per Service so a provider can use it as an idempotency token. */
  private meta(clusterName: string, svc?: ServiceRef) {
    return { clusterName, clusterUid: this.t.clusterUid(), operationId: svc ? `svc-${svc.uid}` : '', attempt: 1 };
  }

  async ensureLoadBalancer(clusterName: string, svc: ServiceRef, nodes: NodeRef[]): Promise<LbStatus> {
    const r = await this.t.callLb<{ status?: PbStatus }>(
      'EnsureLoadBalancer',
      { meta: this.meta(clusterName, svc), service: toPbService(svc), nodes: nodes.map((n) => this.t.toPbNode(n)) },
      true,
    );
    return checkedStatus('EnsureLoadBalancer', r.status);
  }

  async ensureLoadBalancers(clusterName: string, svcs: ServiceRef[], nodes: NodeRef[]): Promise<EnsureResult[]> {
    const method = 'EnsureLoadBalancers';
    const r = await this.t.callLb<{ results: EnsureLoadBalancersResult[] }>(
      method,
      { meta: this.meta(clusterName), services: svcs.map(toPbService), nodes: nodes.map((n) => this.t.toPbNode(n)) },
      true,
    );
    if (r.results.length !== svcs.length) throw new InvalidCloudResponseError(method, [`${r.results.length} results for ${svcs.length} services`]);
    return svcs.map((s, i): EnsureResult => {
      const item = r.results[i]!;
      try {
        if (item.serviceUid !== s.uid)
          throw new InvalidCloudResponseError(method, [`result ${i} is for service uid ${JSON.stringify(item.serviceUid)}, expected ${s.uid}`]);
        if (item.error && item.error.code !== 0) return { uid: s.uid, error: decodedToCloudError(method, fromStatus(item.error)) };
        return { uid: s.uid, status: checkedStatus(method, item.status) };
      } catch (error) {
        return { uid: s.uid, error: error as Error };
      }
    });
  }

  async updateLoadBalancer(clusterName: string, svc: ServiceRef, nodes: NodeRef[]): Promise<void> {
    await this.t.callLb(
      'UpdateLoadBalancer',
      { meta: this.meta(clusterName, svc), service: toPbService(svc), nodes: nodes.map((n) => this.t.toPbNode(n)) },
      true,
    );
  }

  async updateLoadBalancerHosts(clusterName: string, svcs: ServiceRef[], nodes: NodeRef[]): Promise<HostsUpdateResult[]> {
    const r = await this.t.callLb<{ results: UpdateLoadBalancerHostsResult[] }>(
      'UpdateLoadBalancerHosts',
      { meta: this.meta(clusterName), services: svcs.map(toPbService), nodes: nodes.map((n) => this.t.toPbNode(n)) },
      true,
    );
    if (r.results.length !== svcs.length) {
      throw new InvalidCloudResponseError('UpdateLoadBalancerHosts', [`${r.results.length} results for ${svcs.length} services`]);
    }
    return svcs.map((s, i) => {
      const item = r.results[i]!;
      if (item.serviceUid !== s.uid) {
        return {
          uid: s.uid,
          error: new InvalidCloudResponseError('UpdateLoadBalancerHosts', [
            `result ${i} is for service uid ${JSON.stringify(item.serviceUid)}, expected ${s.uid}`,
          ]),
        };
      }
      if (item.error && item.error.code !== 0) return { uid: s.uid, error: decodedToCloudError('UpdateLoadBalancerHosts', fromStatus(item.error)) };
      return { uid: s.uid };
    });
  }

  async listLoadBalancers(clusterName: string): Promise<LbSummary[]> {
    const out: LbSummary[] = [];
    const tokens = new Set<string>();
    let pageToken = '';
    do {
      const r = await this.t.callLb<ListLoadBalancersResponse>(
        'ListLoadBalancers',
        { meta: this.meta(clusterName), pageSize: LIST_PAGE_SIZE, pageToken },
        false,
      );
      const problems: string[] = [];
      for (const [i, lb] of r.loadBalancers.entries()) {
        problems.push(...lbSummaryProblems(lb, clusterName).map((p) => `load_balancers[${i}]: ${p}`));
        out.push({
          name: lb.name,
          serviceUid: lb.serviceUid,
          serviceNamespace: lb.serviceNamespace,
          serviceName: lb.serviceName,
          clusterUid: lb.clusterUid,
        });
      }
      if (out.length > MAX_LISTED_LOAD_BALANCERS) problems.push(`more than ${MAX_LISTED_LOAD_BALANCERS} load balancers`);
      pageToken = r.nextPageToken;
      if (pageToken && tokens.has(pageToken))
        problems.push(`next_page_token ${JSON.stringify(pageToken.slice(0, 64))} was already returned (the listing would never end)`);
      tokens.add(pageToken);
      if (problems.length) throw new InvalidCloudResponseError('ListLoadBalancers', problems);
    } while (pageToken);
    return out;
  }

  async ensureLoadBalancerDeleted(clusterName: string, svc: ServiceRef): Promise<void> {
    await this.t.callLb('EnsureLoadBalancerDeleted', { meta: this.meta(clusterName, svc), service: toPbService(svc) }, true);
  }
}
