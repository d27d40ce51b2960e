/** LoadBalancersService checks: idempotent Ensure/Update/Delete, NOT_FOUND, batch shape and answers, listing. */
import { randomInt, randomUUID } from 'node:crypto';
import { isIP } from 'node:net';
import { Capability, Service } from '../../proto/gen/ccm/provider/v1/identity.js';
import {
  InternalTrafficPolicy,
  IpFamily,
  IpFamilyPolicy,
  Protocol,
  type EnsureLoadBalancerResponse,
  type EnsureLoadBalancersResponse,
  type GetLoadBalancerResponse,
  type ListLoadBalancersResponse,
  type LoadBalancerStatus,
  type LoadBalancerSummary,
  type ServiceRef,
  type UpdateLoadBalancerHostsResponse,
} from '../../proto/gen/ccm/provider/v1/load_balancers.js';
import { expect, skip, type Check, type Kit } from '../kit.js';
import { Code } from '../rpc.js';
import { expectCode } from './common.js';

/**
 * A Service of type LoadBalancer the kit owns, of `cls` if given; else, as
 * the host would send it, without a class, or of the first declared class
 * when the provider serves only its classes (load_balancer_classes_only).
 */
function service(k: Kit, suffix: string, cls?: string): ServiceRef {
  const loadBalancerClass = cls ?? (k.caps.loadBalancerClassesOnly ? (k.caps.loadBalancerClasses?.[0] ?? '') : '');
  return {
    uid: randomUUID(),
    namespace: 'ccm-conformance',
    name: `${k.prefix}-${suffix}`,
    annotations: {},
    labels: {},
    // A high, random port: a cloud that opens real listeners must not collide with another run.
    ports: [
      {
        name: 'web',
        protocol: Protocol.PROTOCOL_TCP,
        port: 20_000 + randomInt(20_000),
        nodePort: 30_000 + randomInt(2_000),
        appProtocol: '',
        targetPort: 0,
        targetPortName: 'http',
      },
    ],
    loadBalancerIp: '',
    loadBalancerSourceRanges: [],
    ipFamilies: [IpFamily.IP_FAMILY_IPV4],
    externalTrafficPolicy: 0,
    healthCheckNodePort: 0,
    sessionAffinity: 0,
    loadBalancerClass,
    sessionAffinityTimeoutSeconds: 0,
    // What the API server fills in for a Service of type LoadBalancer, as the host sends it.
    selector: { app: `${k.prefix}-${suffix}` },
    clusterIps: ['10.96.200.10'],
    ipFamilyPolicy: IpFamilyPolicy.IP_FAMILY_POLICY_SINGLE_STACK,
    externalIps: [],
    allocateLoadBalancerNodePorts: true,
    internalTrafficPolicy: InternalTrafficPolicy.INTERNAL_TRAFFIC_POLICY_CLUSTER,
    status: { ingress: [] },
    endpoints: [],
  };
}

/** Backend nodes: the test instance when there is one, else a made-up node. */
function nodes(k: Kit): object[] {
  return [k.nodeRef(k.testNode?.name ?? `${k.prefix}-backend`, k.testNode?.providerId ?? '')];
}

function ingressText(s: LoadBalancerStatus | undefined): string {
  return JSON.stringify((s?.ingress ?? []).map((i) => [i.ip, i.hostname]));
}

function checkStatus(s: LoadBalancerStatus | undefined): void {
  expect(s, 'no status');
  expect(s.ingress.length <= 64, `${s.ingress.length} ingress points; at most 64`);
  for (const i of s.ingress) {
    expect(i.ip || i.hostname, 'an ingress point has neither ip nor hostname');
    expect(!i.ip || isIP(i.ip) !== 0, `ingress ip ${JSON.stringify(i.ip)} is not an IP literal`);
  }
}

/** The kit's main load balancer, once load-balancers/ensure-twice made it. */
const mainLb = new WeakMap<Kit, ServiceRef>();

export const loadBalancerChecks: Check[] = [
  {
    id: 'load-balancers/name',
    title: 'GetLoadBalancerName is non-empty and deterministic',
    run: async (k) => {
      k.needService(Service.SERVICE_LOAD_BALANCERS);
      const svc = service(k, 'name');
      const lb = k.rpc.conn.loadBalancers;
      const a = await k.rpc.call<{ name: string }>(lb, 'GetLoadBalancerName', { meta: k.meta(), service: svc });
      const b = await k.rpc.call<{ name: string }>(lb, 'GetLoadBalancerName', { meta: k.meta(), service: svc });
      expect(a.name.length > 0, 'empty name');
      expect(a.name === b.name, `two calls gave ${a.name} and ${b.name}`);
    },
  },
  {
    id: 'load-balancers/absent',
    title: 'for a Service without a load balancer: GetLoadBalancer exists=false, UpdateLoadBalancer NOT_FOUND, EnsureLoadBalancerDeleted succeeds',
    run: async (k) => {
      k.needService(Service.SERVICE_LOAD_BALANCERS);
      const svc = service(k, 'absent');
      const lb = k.rpc.conn.loadBalancers;
      const got = await k.rpc.call<GetLoadBalancerResponse>(lb, 'GetLoadBalancer', { meta: k.meta(), service: svc });
      expect(!got.exists, 'GetLoadBalancer says a never-created load balancer exists');
      await expectCode(k, lb, 'UpdateLoadBalancer', { meta: k.meta(), service: svc, nodes: nodes(k) }, Code.NOT_FOUND);
      await k.rpc.call(lb, 'EnsureLoadBalancerDeleted', { meta: k.meta(), service: svc });
    },
  },
  {
    id: 'load-balancers/ensure-twice',
    title: 'EnsureLoadBalancer twice with the same input succeeds both times with the same status; GetLoadBalancer agrees',
    run: async (k) => {
      k.needService(Service.SERVICE_LOAD_BALANCERS);
      const svc = service(k, 'lb');
      const lb = k.rpc.conn.loadBalancers;
      const req = { meta: k.meta(`svc-${svc.uid}`), service: svc, nodes: nodes(k) };
      k.created.loadBalancers.set(svc.uid, svc);
      const a = await k.rpc.call<EnsureLoadBalancerResponse>(lb, 'EnsureLoadBalancer', req);
      checkStatus(a.status);
      mainLb.set(k, svc);
      const b = await k.rpc.call<EnsureLoadBalancerResponse>(lb, 'EnsureLoadBalancer', { ...req, meta: { ...req.meta, attempt: 2 } });
      expect(
        ingressText(a.status) === ingressText(b.status),
        `the second EnsureLoadBalancer changed the ingress from ${ingressText(a.status)} to ${ingressText(b.status)}`,
      );
      const got = await k.rpc.call<GetLoadBalancerResponse>(lb, 'GetLoadBalancer', { meta: k.meta(), service: svc });
      expect(got.exists, 'GetLoadBalancer says the ensured load balancer does not exist');
      expect(
        ingressText(got.status) === ingressText(a.status),
        `GetLoadBalancer status ${ingressText(got.status)} differs from EnsureLoadBalancer's ${ingressText(a.status)}`,
      );
    },
  },
  {
    id: 'load-balancers/update-twice',
    title: 'UpdateLoadBalancer twice with the same nodes succeeds both times',
    run: async (k) => {
      const svc = mainLb.get(k) ?? skip('needs the load balancer of load-balancers/ensure-twice');
      const req = { meta: k.meta(), service: svc, nodes: nodes(k) };
      await k.rpc.call(k.rpc.conn.loadBalancers, 'UpdateLoadBalancer', req);
      await k.rpc.call(k.rpc.conn.loadBalancers, 'UpdateLoadBalancer', req);
    },
  },
  {
    id: 'load-balancers/pod-backends',
    title:
      'with CAPABILITY_LOAD_BALANCER_POD_BACKENDS: EnsureLoadBalancer takes endpoints (ready, zoned, PreferClose) twice with the same status, then none, then is deleted',
    run: async (k) => {
      k.needCapability(Capability.CAPABILITY_LOAD_BALANCER_POD_BACKENDS);
      const base = service(k, 'pods');
      const web = base.ports[0]!;
      // Documentation addresses (TEST-NET-2): a cloud that dials them reaches nothing.
      const endpoint = (address: string, zone: string) => ({
        addresses: [address],
        ipFamily: IpFamily.IP_FAMILY_IPV4,
        ports: [{ name: web.name, servicePort: web.port, protocol: web.protocol, port: 8080 }],
        ready: true,
        serving: true,
        terminating: false,
        nodeName: k.testNode?.name ?? `${k.prefix}-backend`,
        zone,
        pod: `ccm-conformance/${k.prefix}-pod-${address.split('.').pop()}`,
      });
      const svc: ServiceRef = {
        ...base,
        annotations: { 'service.ccm.dev/load-balancer-backends': 'pods' },
        endpoints: [endpoint('198.51.100.10', 'zone-a'), endpoint('198.51.100.11', 'zone-b')],
        podBackends: { trafficDistribution: 'PreferClose', omittedEndpoints: 0 },
      };
      const lb = k.rpc.conn.loadBalancers;
      k.created.loadBalancers.set(svc.uid, svc);
      const req = { meta: k.meta(`svc-${svc.uid}`), service: svc, nodes: nodes(k) };
      const a = await k.rpc.call<EnsureLoadBalancerResponse>(lb, 'EnsureLoadBalancer', req);
      checkStatus(a.status);
      const b = await k.rpc.call<EnsureLoadBalancerResponse>(lb, 'EnsureLoadBalancer', { ...req, meta: { ...req.meta, attempt: 2 } });
      expect(ingressText(a.status) === ingressText(b.status), `the same endpoints twice changed the ingress to ${ingressText(b.status)}`);
      // No ready endpoint now: still a valid ensure (the load balancer has no backend).
      const none = await k.rpc.call<EnsureLoadBalancerResponse>(lb, 'EnsureLoadBalancer', { ...req, service: { ...svc, endpoints: [] } });
      checkStatus(none.status);
      await k.rpc.call(lb, 'EnsureLoadBalancerDeleted', { meta: k.meta(), service: svc });
      k.created.loadBalancers.delete(svc.uid);
    },
  },
  {
    id: 'load-balancers/batch-hosts',
    title: 'UpdateLoadBalancerHosts answers one result per Service, in input order; a missing one fails alone',
    run: async (k) => {
      k.needCapability(Capability.CAPABILITY_LOAD_BALANCER_BATCH_HOSTS);
      const svc = mainLb.get(k) ?? skip('needs the load balancer of load-balancers/ensure-twice');
      const absent = service(k, 'absent-batch');
      const req = { meta: k.meta(), services: [absent, svc], nodes: nodes(k) };
      for (let attempt = 0; attempt < 2; attempt++) {
        const r = await k.rpc.call<UpdateLoadBalancerHostsResponse>(k.rpc.conn.loadBalancers, 'UpdateLoadBalancerHosts', req);
        expect(r.results.length === 2, `${r.results.length} results for 2 services`);
        expect(r.results[0]!.serviceUid === absent.uid && r.results[1]!.serviceUid === svc.uid, 'results are not in input order');
        expect(r.results[0]!.error && r.results[0]!.error.code !== Code.OK, 'no per-item error for a Service without a load balancer');
        expect(!r.results[1]!.error || r.results[1]!.error.code === Code.OK, `the existing load balancer failed: ${r.results[1]!.error?.message}`);
      }
    },
  },
  {
    id: 'load-balancers/batch-ensure',
    title:
      'EnsureLoadBalancers answers each entry, in input order, as EnsureLoadBalancer does; a bad entry fails alone; a uid twice is INVALID_ARGUMENT',
    run: async (k) => {
      k.needCapability(Capability.CAPABILITY_LOAD_BALANCER_BATCH_ENSURE);
      const existing = mainLb.get(k) ?? skip('needs the load balancer of load-balancers/ensure-twice');
      const lb = k.rpc.conn.loadBalancers;
      const fresh = service(k, 'batch-new');
      const bad = {
        ...service(k, 'batch-bad'),
        ports: [
          { name: 'web', protocol: Protocol.PROTOCOL_UNSPECIFIED, port: 80, nodePort: 30080, appProtocol: '', targetPort: 8080, targetPortName: '' },
        ],
      };
      k.created.loadBalancers.set(fresh.uid, fresh);
      k.created.loadBalancers.set(bad.uid, bad);
      // What the single call answers for the bad entry (an error code, or OK): the batch must answer alike.
      const single = await k.rpc.call(lb, 'EnsureLoadBalancer', { meta: k.meta(), service: bad, nodes: nodes(k) }).then(
        () => Code.OK,
        (err: { code?: number }) => err.code ?? Code.UNKNOWN,
      );
      const before = await k.rpc.call<GetLoadBalancerResponse>(lb, 'GetLoadBalancer', { meta: k.meta(), service: existing });
      const req = { meta: k.meta(), services: [existing, bad, fresh], nodes: nodes(k) };
      for (let attempt = 0; attempt < 2; attempt++) {
        const r = await k.rpc.call<EnsureLoadBalancersResponse>(lb, 'EnsureLoadBalancers', req);
        expect(r.results.length === 3, `${r.results.length} results for 3 services`);
        expect(
          r.results.every((x, i) => x.serviceUid === req.services[i]!.uid),
          'results are not in input order',
        );
        const [a, b, c] = r.results as [(typeof r.results)[0], (typeof r.results)[0], (typeof r.results)[0]];
        expect(!a.error || a.error.code === Code.OK, `the existing load balancer failed: ${a.error?.message}`);
        checkStatus(a.status);
        expect(
          ingressText(a.status) === ingressText(before.status),
          `the batch changed the existing load balancer's ingress from ${ingressText(before.status)} to ${ingressText(a.status)}`,
        );
        expect(
          (b.error?.code ?? Code.OK) === single,
          `the bad entry answered code ${b.error?.code ?? Code.OK}, EnsureLoadBalancer answered ${single}`,
        );
        expect(!c.error || c.error.code === Code.OK, `the new load balancer failed: ${c.error?.message}`);
        checkStatus(c.status);
        const got = await k.rpc.call<GetLoadBalancerResponse>(lb, 'GetLoadBalancer', { meta: k.meta(), service: fresh });
        expect(
          got.exists && ingressText(got.status) === ingressText(c.status),
          `GetLoadBalancer status ${ingressText(got.status)} differs from the batch's ${ingressText(c.status)}`,
        );
        const again = await k.rpc.call<EnsureLoadBalancerResponse>(lb, 'EnsureLoadBalancer', { meta: k.meta(), service: fresh, nodes: nodes(k) });
        expect(
          ingressText(again.status) === ingressText(c.status),
          `EnsureLoadBalancer after the batch changed the ingress from ${ingressText(c.status)} to ${ingressText(again.status)}`,
        );
      }
      await expectCode(k, lb, 'EnsureLoadBalancers', { meta: k.meta(), services: [fresh, fresh], nodes: nodes(k) }, Code.INVALID_ARGUMENT);
      await k.rpc.call(lb, 'EnsureLoadBalancerDeleted', { meta: k.meta(), service: fresh });
      await k.rpc.call(lb, 'EnsureLoadBalancerDeleted', { meta: k.meta(), service: bad });
    },
  },
  {
    id: 'load-balancers/list',
    title:
      'ListLoadBalancers lists the ensured load balancer with its Service and the cluster UID it was ensured with, once, across pages of one; an ensure with another cluster UID re-tags it (adoption); never for another cluster name; a bad token answers ABORTED',
    run: async (k) => {
      k.needCapability(Capability.CAPABILITY_LOAD_BALANCER_LIST);
      const svc = mainLb.get(k) ?? skip('needs the load balancer of load-balancers/ensure-twice');
      const lb = k.rpc.conn.loadBalancers;
      const listAll = async (clusterName: string): Promise<LoadBalancerSummary[]> => {
        const out: LoadBalancerSummary[] = [];
        let pageToken = '';
        for (let pages = 0; pages < 10_000; pages++) {
          const r = await k.rpc.call<ListLoadBalancersResponse>(lb, 'ListLoadBalancers', {
            meta: { ...k.meta(), clusterName },
            pageSize: 1,
            pageToken,
          });
          expect(r.loadBalancers.length <= 1, `page_size 1 gave ${r.loadBalancers.length} entries`);
          out.push(...r.loadBalancers);
          if (!r.nextPageToken) return out;
          pageToken = r.nextPageToken;
        }
        throw new Error('ListLoadBalancers did not end within 10,000 pages');
      };
      const mine = (await listAll(k.cluster)).filter((l) => l.serviceUid === svc.uid);
      expect(mine.length === 1, `the ensured load balancer is listed ${mine.length} times`);
      const [entry] = mine;
      expect(entry!.clusterName === k.cluster, `cluster_name ${JSON.stringify(entry!.clusterName)}, expected ${JSON.stringify(k.cluster)}`);
      expect(
        entry!.serviceNamespace === svc.namespace && entry!.serviceName === svc.name,
        `listed for ${entry!.serviceNamespace}/${entry!.serviceName}, made for ${svc.namespace}/${svc.name}`,
      );
      expect(
        entry!.clusterUid === k.clusterUid,
        `cluster_uid ${JSON.stringify(entry!.clusterUid)}, expected the RequestMeta.cluster_uid it was ensured with, ${JSON.stringify(k.clusterUid)} (the host's orphan sweep deletes only load balancers of its own cluster UID)`,
      );
      // A cluster restored from backup sends its old UID (--cluster-uid) and adopts the load balancer; then back.
      const restored = `${k.clusterUid}-restored`;
      const adopt = async (clusterUid: string) => {
        await k.rpc.call(lb, 'EnsureLoadBalancer', { meta: { ...k.meta(`svc-${svc.uid}`), clusterUid }, service: svc, nodes: nodes(k) });
        const again = (await listAll(k.cluster)).filter((l) => l.serviceUid === svc.uid);
        expect(
          again.length === 1 && again[0]!.clusterUid === clusterUid,
          `after an ensure with cluster UID ${JSON.stringify(clusterUid)}: listed ${again.length} times with cluster_uid ${JSON.stringify(again[0]?.clusterUid)}`,
        );
      };
      await adopt(restored);
      await adopt(k.clusterUid);
      const name = await k.rpc.call<{ name: string }>(lb, 'GetLoadBalancerName', { meta: k.meta(), service: svc });
      expect(entry!.name === name.name, `listed as ${JSON.stringify(entry!.name)}, GetLoadBalancerName says ${JSON.stringify(name.name)}`);
      const other = await listAll(`${k.cluster}-other`);
      expect(
        !other.some((l) => l.serviceUid === svc.uid || l.clusterName !== `${k.cluster}-other`),
        'a listing for another cluster name shows load balancers not made for it',
      );
      await expectCode(k, lb, 'ListLoadBalancers', { meta: k.meta(), pageSize: 1, pageToken: 'not-a-token' }, Code.ABORTED);
    },
  },
  {
    id: 'load-balancers/classes',
    title:
      'a Service of each declared load_balancer_classes value (the first 4) gets its load balancer as the host asks for it: EnsureLoadBalancer, GetLoadBalancer agrees, ListLoadBalancers lists it once, EnsureLoadBalancerDeleted removes it',
    run: async (k) => {
      k.needService(Service.SERVICE_LOAD_BALANCERS);
      const classes = (k.caps.loadBalancerClasses ?? []).slice(0, 4);
      if (classes.length === 0) skip('the provider declares no load balancer class');
      const lb = k.rpc.conn.loadBalancers;
      const listed = async (uid: string): Promise<number> => {
        let n = 0;
        let pageToken = '';
        for (let pages = 0; pages < 10_000; pages++) {
          const r = await k.rpc.call<ListLoadBalancersResponse>(lb, 'ListLoadBalancers', { meta: k.meta(), pageSize: 100, pageToken });
          n += r.loadBalancers.filter((l) => l.serviceUid === uid).length;
          if (!r.nextPageToken) return n;
          pageToken = r.nextPageToken;
        }
        throw new Error('ListLoadBalancers did not end within 10,000 pages');
      };
      for (const [i, cls] of classes.entries()) {
        const svc = service(k, `class-${i}`, cls);
        k.created.loadBalancers.set(svc.uid, svc);
        const of = `for a Service of declared class ${JSON.stringify(cls)}`;
        const made = await k.rpc.call<EnsureLoadBalancerResponse>(lb, 'EnsureLoadBalancer', {
          meta: k.meta(`svc-${svc.uid}`),
          service: svc,
          nodes: nodes(k),
        });
        checkStatus(made.status);
        const got = await k.rpc.call<GetLoadBalancerResponse>(lb, 'GetLoadBalancer', { meta: k.meta(), service: svc });
        expect(
          got.exists && ingressText(got.status) === ingressText(made.status),
          `GetLoadBalancer ${of}: exists=${got.exists}, status ${ingressText(got.status)}; EnsureLoadBalancer answered ${ingressText(made.status)}`,
        );
        if (k.caps.capabilities.includes(Capability.CAPABILITY_LOAD_BALANCER_LIST)) {
          const n = await listed(svc.uid);
          expect(n === 1, `ListLoadBalancers lists the load balancer ${of} ${n} times; the orphan sweep needs it once`);
        }
        await k.rpc.call(lb, 'EnsureLoadBalancerDeleted', { meta: k.meta(), service: svc });
        const gone = await k.rpc.call<GetLoadBalancerResponse>(lb, 'GetLoadBalancer', { meta: k.meta(), service: svc });
        expect(!gone.exists, `GetLoadBalancer still finds the load balancer ${of} after EnsureLoadBalancerDeleted`);
        k.created.loadBalancers.delete(svc.uid);
      }
    },
  },
  {
    id: 'load-balancers/delete-twice',
    title: 'EnsureLoadBalancerDeleted twice succeeds both times, and the load balancer is gone',
    run: async (k) => {
      const svc = mainLb.get(k) ?? skip('needs the load balancer of load-balancers/ensure-twice');
      const lb = k.rpc.conn.loadBalancers;
      await k.rpc.call(lb, 'EnsureLoadBalancerDeleted', { meta: k.meta(), service: svc });
      await k.rpc.call(lb, 'EnsureLoadBalancerDeleted', { meta: k.meta(), service: svc });
      const got = await k.rpc.call<GetLoadBalancerResponse>(lb, 'GetLoadBalancer', { meta: k.meta(), service: svc });
      expect(!got.exists, 'GetLoadBalancer still finds the deleted load balancer');
    },
  },
];
