/**
 * The differential suite: the upstream cloud-controller-manager
 * (k8s.io/cloud-provider at the control plane's version, built from
 * tools/upstream-ccm, whose `grpc` provider forwards every call to our
 * protocol) and our host run the same table of scenarios, one after the other,
 * against one real API server of this test's own and the local cloud (a fresh
 * state directory each, seeded the same way: same addresses, same ingress
 * pool). Each side works on objects of its own names (`parity-upstream-…`,
 * `parity-ours-…`); upstream runs first, since it has no way to be limited to
 * its own Nodes, and ours then runs with --node-selector and
 * --watch-namespace so it leaves upstream's objects alone (ours only: flags
 * upstream does not have).
 *
 * After each side its Nodes, Services, events (reason, type, source, message)
 * and cloud state and calls are flattened and normalized
 * (test/helpers/parity.ts), and the two are compared: every difference must
 * be a row of the allowed table (parity-allowed.ts = docs/upstream-parity.md)
 * and every row must be seen, so a new difference and a vanished one both
 * fail. Ours runs as the shipped ServiceAccount and must meet no 403;
 * upstream runs as the admin.
 */
import test from 'ava';
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, type V1Node, type V1Service } from '@kubernetes/client-node';
import { readJournal } from '../../../plugins/local/journal.js';
import { ControlPlane } from '../../controlplane/controlplane.js';
import { startCcm, type CommonSettings, type Side } from '../../helpers/ccm-side.js';
import { forbiddenInLog } from '../../helpers/forbidden.js';
import { patchNode, patchNodeStatus, patchService } from '../../helpers/kube-patch.js';
import { cloudLbs, ensureNamespace, fromApiServerRepair, LB_FINALIZER, lbService } from '../../helpers/lb.js';
import { localcloud } from '../../helpers/localcloud.js';
import { readNodeOrUndefined, setReady } from '../../helpers/nodes.js';
import { describe, differences, judge, normalizer, withoutErrorWording, type SideName, type Snapshot } from '../../helpers/parity.js';
import { applyShippedRbac, serviceAccountKubeConfig } from '../../helpers/service-account.js';
import { ensureUpstreamCcm } from '../../helpers/upstream-ccm.js';
import { waitFor } from '../../helpers/wait.js';
import { ALLOWED } from './parity-allowed.js';

const UNINITIALIZED = 'node.cloudprovider.kubernetes.io/uninitialized';
const SHUTDOWN = 'node.cloudprovider.kubernetes.io/shutdown';
const EXCLUDE = 'node.kubernetes.io/exclude-from-external-load-balancers';
const PROVIDED_IP = 'alpha.kubernetes.io/provided-node-ip';
const TO_BE_DELETED = 'ToBeDeletedByClusterAutoscaler';
const SIDE_LABEL = 'parity-side';
const CLUSTER_CIDR = '10.244.0.0/16';

/** What a scenario works with on one side. */
interface SideCtx {
  side: SideName;
  core: CoreV1Api;
  state: string;
  ns: string;
  log: string;
  /** This side's name for `short`: `parity-<side>-<short>`. */
  n(short: string): string;
  /** Nodes and Services the scenarios made (looked up even when deleted). */
  nodes: Set<string>;
  services: Map<string, string>;
}

const instance = (c: SideCtx, short: string, ...args: string[]) => localcloud(c.state, 'instance', 'add', c.n(short), ...args);

/** Registers a Node as kubelet --cloud-provider=external does: tainted, with its Hostname address. */
async function registerNode(
  c: SideCtx,
  short: string,
  o: { hostname?: string; annotations?: Record<string, string>; podCidr?: string } = {},
): Promise<void> {
  const name = c.n(short);
  c.nodes.add(name);
  await c.core.createNode({
    body: {
      metadata: { name, labels: { [SIDE_LABEL]: `parity-${c.side}`, 'kubernetes.io/hostname': name }, annotations: o.annotations },
      spec: {
        taints: [{ key: UNINITIALIZED, value: 'true', effect: 'NoSchedule' }],
        ...(o.podCidr ? { podCIDR: o.podCidr, podCIDRs: [o.podCidr] } : {}),
      },
      status: { addresses: [{ type: 'Hostname', address: o.hostname ?? name }] },
    },
  });
}

const initialized = (n: V1Node | undefined) => n !== undefined && !(n.spec?.taints ?? []).some((t) => t.key === UNINITIALIZED);

async function waitInitialized(c: SideCtx, short: string): Promise<void> {
  await waitFor(async () => initialized(await readNodeOrUndefined(c.core, c.n(short))), { what: `${c.n(short)} initialized`, log: c.log });
}

/** A LoadBalancer Service; `loadBalancerIP` pins its ingress where the order of ensures may differ between the sides. */
async function createService(c: SideCtx, short: string, ports: number[], loadBalancerIP?: string): Promise<V1Service> {
  const svc = await c.core.createNamespacedService({
    namespace: c.ns,
    body: lbService(
      short,
      c.ns,
      ports.map((port) => ({ port })),
      loadBalancerIP ? { loadBalancerIP } : {},
    ),
  });
  c.services.set(svc.metadata!.uid!, short);
  return svc;
}

async function lbOf(c: SideCtx, svc: string) {
  return (await cloudLbs(c.state)).find((l) => l.serviceName === svc && l.serviceNamespace === c.ns);
}

const backendNames = (lb: { backends: { nodeName: string }[] } | undefined) => (lb?.backends ?? []).map((b) => b.nodeName).sort();

/** Sets the local cloud's `fail` knob (plugins/local/knobs.ts): `method@object=ERROR` rules; none clears it. */
async function setFail(c: SideCtx, ...rules: string[]): Promise<void> {
  if (rules.length === 0) await localcloud(c.state, 'knobs', 'unset', 'fail');
  else await localcloud(c.state, 'knobs', 'set', `fail=${rules.join(',')}`);
}

/** `fail` rules giving `error` to the single and batch calls of `methods` on `object`. */
const failing = (object: string, error: string, ...methods: string[]) => methods.map((m) => `${m}@${object}=${error}`);
const ENSURES = ['ensureLoadBalancer', 'ensureLoadBalancers'];
const METADATA = ['instanceMetadata', 'getInstancesMetadata'];
const STATUS = ['instanceExists', 'instanceShutdown', 'getInstancesStatus'];

/** Whether the cloud answered a call of a method matching `method` about `key` (a Service uid or node name) with an error. */
async function cloudFailed(c: SideCtx, method: RegExp, key: string): Promise<boolean> {
  return (await readJournal(c.state)).some(
    (e) => method.test(e.method) && ((!e.ok && (e.key === key || e.keys?.includes(key))) || e.failedKeys?.includes(key)),
  );
}

/** `fail` rules giving `error` to every change of `node`'s routes: CreateRoute and DeleteRoute (upstream), ReconcileRoutes' entries (ours). */
const routeFaults = (node: string, error: string) => failing(node, error, 'createRoute', 'deleteRoute', 'reconcileRoutes');

/** Whether the cloud answered a change (`create` or `delete`) of `node`'s route with an error, as a single call or a batch entry. */
async function routeChangeFailed(c: SideCtx, change: 'create' | 'delete', node: string): Promise<boolean> {
  return (await readJournal(c.state)).some((e) => (change === 'create' ? e.routesCreateFailed : e.routesDeleteFailed)?.includes(node));
}

const networkUnavailable = async (c: SideCtx, short: string) =>
  (await readNodeOrUndefined(c.core, c.n(short)))?.status?.conditions?.find((x) => x.type === 'NetworkUnavailable')?.status;

const ingressOf = async (c: SideCtx, svc: string) => (await readSvc(c, svc))?.status?.loadBalancer?.ingress?.[0]?.ip;

/**
 * Services whose first ensures the cloud answers with an error each (`short → error`), all at once
 * (their retries wait out their backoffs side by side): each failure is seen, the faults cleared,
 * and every Service then gets its load balancer.
 */
async function servicesRecoverFrom(c: SideCtx, errors: [short: string, port: number, error: string][]): Promise<void> {
  await setFail(c, ...errors.flatMap(([short, , error]) => failing(short, error, ...ENSURES)));
  for (const [i, [short, port, error]] of errors.entries()) {
    // Their retries may succeed in either order: each gets an ingress IP of its own.
    const svc = await createService(c, short, [port], `127.0.63.${100 + i}`);
    await waitFor(async () => cloudFailed(c, /ensureLoadBalancers?$/, svc.metadata!.uid!), {
      what: `${short}: an ensure failed with ${error}`,
      log: c.log,
    });
  }
  await setFail(c);
  for (const [short] of errors)
    await waitFor(async () => ingressOf(c, short), { what: `${short}: ingress after the fault cleared`, log: c.log, timeoutMs: 120_000 });
}

interface Scenario {
  name: string;
  run(c: SideCtx): Promise<void>;
}

/**
 * The table: each row runs on both sides, in order, while that side's CCM runs. The load balancer
 * comes last, so every other node change is done before its first ensure and its backends are settled.
 */
const SCENARIOS: Scenario[] = [
  {
    name: 'node init: providerID, zone/region/instance-type labels (GA and beta), cloud labels, addresses, taint removed, event',
    async run(c) {
      await instance(c, 'init', '--zone', 'zone-1', '--region', 'region-1', '--type', 'm.large', '--address', '127.0.40.1');
      await registerNode(c, 'init');
      await waitInitialized(c, 'init');
    },
  },
  {
    name: 'node init with cloud labels and an ExternalIP',
    async run(c) {
      await instance(c, 'labelled', '--address', '127.0.40.2', '--address', 'ExternalIP=127.0.41.2', '--label', 'example.com/pool=blue');
      await registerNode(c, 'labelled');
      await waitInitialized(c, 'labelled');
    },
  },
  {
    name: 'provided-node-ip: that IP the only InternalIP (fd00::12 dropped too), ExternalIP kept',
    async run(c) {
      await instance(
        c,
        'provided',
        '--address',
        '127.0.40.3',
        '--address',
        '127.0.40.4',
        '--address',
        'InternalIP=fd00::12',
        '--address',
        'ExternalIP=127.0.41.3',
      );
      await registerNode(c, 'provided', { annotations: { [PROVIDED_IP]: '127.0.40.4' } });
      await waitInitialized(c, 'provided');
    },
  },
  {
    name: "provided-node-ip that only the kubelet's Hostname address holds: not initialized (the cloud does not report it)",
    async run(c) {
      await instance(c, 'provided-hostname', '--address', '127.0.40.5', '--no-hostname');
      await registerNode(c, 'provided-hostname', { hostname: '127.0.40.9', annotations: { [PROVIDED_IP]: '127.0.40.9' } });
      // One worker, in order: once the next node is initialized, this one was tried.
      await instance(c, 'after-provided-hostname', '--address', '127.0.40.6');
      await registerNode(c, 'after-provided-hostname');
      await waitInitialized(c, 'after-provided-hostname');
    },
  },
  {
    name: 'node lifecycle: NotReady and instance deleted → Node deleted; NotReady and shut down → shutdown taint',
    async run(c) {
      for (const [i, short] of ['dead', 'down'].entries()) {
        await instance(c, short, '--address', `127.0.40.${21 + i}`);
        await registerNode(c, short);
        await waitInitialized(c, short);
        await setReady(c.core, c.n(short), false);
      }
      await localcloud(c.state, 'instance', 'delete', c.n('dead'));
      await localcloud(c.state, 'instance', 'shutdown', c.n('down'));
      await waitFor(async () => !(await readNodeOrUndefined(c.core, c.n('dead'))), { what: 'dead node deleted', log: c.log });
      await waitFor(async () => (await readNodeOrUndefined(c.core, c.n('down')))?.spec?.taints?.some((t) => t.key === SHUTDOWN), {
        what: 'shutdown taint',
        log: c.log,
      });
    },
  },
  {
    name: "routes: NetworkUnavailable False/RouteCreated once routed; a network plugin's own reason (CalicoIsUp) kept",
    async run(c) {
      for (const [i, short] of ['rt-1', 'rt-2'].entries()) {
        await instance(c, short, '--address', `127.0.40.${31 + i}`);
        await registerNode(c, short, { podCidr: `10.244.${1 + i}.0/24` });
      }
      await waitInitialized(c, 'rt-1');
      await waitInitialized(c, 'rt-2');
      // The network plugin speaks after the route controller has: a patch sent while a reconcile is between its
      // read and its own patch would be overwritten on either side (upstream patches from its cache too).
      await waitFor(async () => (await readNodeOrUndefined(c.core, c.n('rt-2')))?.status?.conditions?.some((x) => x.type === 'NetworkUnavailable'), {
        what: 'rt-2 NetworkUnavailable set by the route controller',
        log: c.log,
        timeoutMs: 120_000,
      });
      await patchNodeStatus(
        c.core,
        c.n('rt-2'),
        {
          status: { conditions: [{ type: 'NetworkUnavailable', status: 'False', reason: 'CalicoIsUp', message: 'Calico is running on this node' }] },
        },
        'strategic',
      );
      // A node added after that patch: once its route is in and its condition set, a reconcile has seen rt-2's.
      await instance(c, 'rt-3', '--address', '127.0.40.33');
      await registerNode(c, 'rt-3', { podCidr: '10.244.3.0/24' });
      await waitFor(
        async () =>
          (await readNodeOrUndefined(c.core, c.n('rt-3')))?.status?.conditions?.some((x) => x.type === 'NetworkUnavailable') &&
          (await routes(c)).length === 3,
        { what: 'three routes and rt-3 NetworkUnavailable set', log: c.log, timeoutMs: 120_000 },
      );
    },
  },
  {
    name: 'node init while the cloud answers NotFound, Unimplemented, RetryInfo (a retry delay) for its instance metadata: retried, initialized once it answers',
    async run(c) {
      // All three at once (their retries wait side by side), each with its own error.
      const errors: [short: string, error: string][] = [
        ['md-notfound', 'NOT_FOUND'],
        ['md-unimpl', 'UNIMPLEMENTED'],
        ['md-retry', 'RETRY:1500'],
      ];
      await setFail(c, ...errors.flatMap(([short, error]) => failing(c.n(short), error, ...METADATA)));
      for (const [i, [short]] of errors.entries()) {
        await instance(c, short, '--address', `127.0.40.${41 + i}`);
        await registerNode(c, short);
      }
      for (const [short, error] of errors)
        await waitFor(async () => cloudFailed(c, /nstancesMetadata$|instanceMetadata$/, c.n(short)), {
          what: `${short}: metadata read failed with ${error}`,
          log: c.log,
        });
      await setFail(c);
      for (const [short] of errors) await waitInitialized(c, short);
    },
  },
  {
    name: 'node init during an outage (every cloud call UNAVAILABLE): retried, initialized once the cloud is back',
    async run(c) {
      await instance(c, 'md-outage', '--address', '127.0.40.44');
      await localcloud(c.state, 'knobs', 'set', 'failAll=true');
      await registerNode(c, 'md-outage');
      await waitFor(async () => cloudFailed(c, /nstancesMetadata$|instanceMetadata$/, c.n('md-outage')), {
        what: 'md-outage: metadata read failed',
        log: c.log,
      });
      await localcloud(c.state, 'knobs', 'unset', 'failAll');
      await waitInitialized(c, 'md-outage');
    },
  },
  {
    name: "node lifecycle while the cloud answers UNAVAILABLE for a NotReady node's instance status: kept; deleted once the cloud says its instance is gone",
    async run(c) {
      await instance(c, 'lc-unavail', '--address', '127.0.40.23');
      await registerNode(c, 'lc-unavail');
      await waitInitialized(c, 'lc-unavail');
      await setFail(c, ...failing(c.n('lc-unavail'), 'UNAVAILABLE', ...STATUS));
      await localcloud(c.state, 'instance', 'delete', c.n('lc-unavail'));
      await setReady(c.core, c.n('lc-unavail'), false);
      await waitFor(async () => cloudFailed(c, /instanceExists$|instanceShutdown$|getInstancesStatus$/, c.n('lc-unavail')), {
        what: 'lc-unavail: status read failed',
        log: c.log,
      });
      if (!(await readNodeOrUndefined(c.core, c.n('lc-unavail'))))
        throw new Error(`${c.n('lc-unavail')} deleted while the cloud could not say its instance is gone`);
      await setFail(c);
      await waitFor(async () => !(await readNodeOrUndefined(c.core, c.n('lc-unavail'))), { what: 'lc-unavail deleted', log: c.log });
    },
  },
  {
    name: 'routes: a pod CIDR given to a node after it joined gets its route; a deleted node loses its route',
    async run(c) {
      await instance(c, 'rt-late', '--address', '127.0.40.34');
      await registerNode(c, 'rt-late');
      await instance(c, 'rt-gone', '--address', '127.0.40.35');
      await registerNode(c, 'rt-gone', { podCidr: '10.244.5.0/24' });
      await waitInitialized(c, 'rt-late');
      await waitInitialized(c, 'rt-gone');
      await waitFor(async () => (await routes(c)).some((r) => r.targetNode === c.n('rt-gone')), { what: 'rt-gone: route', log: c.log });
      await patchNode(c.core, c.n('rt-late'), { spec: { podCIDR: '10.244.4.0/24', podCIDRs: ['10.244.4.0/24'] } }, 'merge');
      await c.core.deleteNode({ name: c.n('rt-gone') });
      await waitFor(
        async () => {
          const rs = await routes(c);
          const late = await readNodeOrUndefined(c.core, c.n('rt-late'));
          return (
            rs.some((r) => r.targetNode === c.n('rt-late')) &&
            !rs.some((r) => r.targetNode === c.n('rt-gone')) &&
            late?.status?.conditions?.some((x) => x.type === 'NetworkUnavailable' && x.status === 'False')
          );
        },
        { what: 'rt-late routed, rt-gone route deleted', log: c.log, timeoutMs: 120_000 },
      );
    },
  },
  {
    name: "routes while the cloud answers UNAVAILABLE, RetryInfo, Unimplemented for creating one node's route each, and UNAVAILABLE for deleting a deleted node's: NetworkUnavailable True meanwhile, all done once it answers",
    async run(c) {
      await instance(c, 'rt-del', '--address', '127.0.40.36');
      await registerNode(c, 'rt-del', { podCidr: '10.244.6.0/24' });
      await waitFor(async () => (await routes(c)).some((r) => r.targetNode === c.n('rt-del')), { what: 'rt-del: route', log: c.log });
      const errors: [short: string, error: string][] = [
        ['rt-unavail', 'UNAVAILABLE'],
        ['rt-retry', 'RETRY:1500'],
        ['rt-unimpl', 'UNIMPLEMENTED'],
      ];
      await setFail(c, ...routeFaults(c.n('rt-del'), 'UNAVAILABLE'), ...errors.flatMap(([short, error]) => routeFaults(c.n(short), error)));
      for (const [i, [short]] of errors.entries()) {
        await instance(c, short, '--address', `127.0.40.${37 + i}`);
        await registerNode(c, short, { podCidr: `10.244.${7 + i}.0/24` });
      }
      await c.core.deleteNode({ name: c.n('rt-del') });
      for (const [short, error] of errors)
        await waitFor(async () => (await routeChangeFailed(c, 'create', c.n(short))) && (await networkUnavailable(c, short)) === 'True', {
          what: `${short}: route create failed with ${error}, NetworkUnavailable True`,
          log: c.log,
        });
      await waitFor(async () => routeChangeFailed(c, 'delete', c.n('rt-del')), { what: 'rt-del: route delete failed', log: c.log });
      if (!(await routes(c)).some((r) => r.targetNode === c.n('rt-del'))) throw new Error(`${c.n('rt-del')}: route deleted while its delete fails`);
      await setFail(c);
      await waitFor(
        async () => {
          const targets = (await routes(c)).map((r) => r.targetNode);
          for (const [short] of errors) if (!targets.includes(c.n(short)) || (await networkUnavailable(c, short)) !== 'False') return false;
          return !targets.includes(c.n('rt-del'));
        },
        { what: 'routes made once the cloud answers, rt-del route deleted', log: c.log, timeoutMs: 120_000 },
      );
    },
  },
  {
    name: "node lifecycle while the cloud answers Unimplemented (instance gone) and RetryInfo (instance shut down) for a NotReady node's instance status: kept as is; deleted, tainted once it answers",
    async run(c) {
      const nodes: [short: string, error: string, state: 'delete' | 'shutdown'][] = [
        ['lc-unimpl', 'UNIMPLEMENTED', 'delete'],
        ['lc-retry', 'RETRY:1500', 'shutdown'],
      ];
      for (const [i, [short]] of nodes.entries()) {
        await instance(c, short, '--address', `127.0.40.${24 + i}`);
        await registerNode(c, short);
        await waitInitialized(c, short);
      }
      await setFail(c, ...nodes.flatMap(([short, error]) => failing(c.n(short), error, ...STATUS)));
      for (const [short, , state] of nodes) {
        await localcloud(c.state, 'instance', state, c.n(short));
        await setReady(c.core, c.n(short), false);
      }
      for (const [short, error] of nodes)
        await waitFor(async () => cloudFailed(c, /instanceExists$|instanceShutdown$|getInstancesStatus$/, c.n(short)), {
          what: `${short}: status read failed with ${error}`,
          log: c.log,
        });
      for (const [short] of nodes) {
        const node = await readNodeOrUndefined(c.core, c.n(short));
        if (!node || node.spec?.taints?.some((t) => t.key === SHUTDOWN))
          throw new Error(`${c.n(short)} ${node ? 'tainted' : 'deleted'} while the cloud could not say what its instance is`);
      }
      await setFail(c);
      await waitFor(async () => !(await readNodeOrUndefined(c.core, c.n('lc-unimpl'))), { what: 'lc-unimpl deleted', log: c.log });
      await waitFor(async () => (await readNodeOrUndefined(c.core, c.n('lc-retry')))?.spec?.taints?.some((t) => t.key === SHUTDOWN), {
        what: 'lc-retry: shutdown taint',
        log: c.log,
      });
    },
  },
  {
    name: "LoadBalancer Service: created (finalizer, ingress, events), a port added, a node excluded by label, the autoscaler's taint applied at the next update, another Service deleted",
    async run(c) {
      for (const [i, be] of ['be-1', 'be-2'].entries()) {
        await instance(c, be, '--address', `127.0.40.${11 + i}`);
        await registerNode(c, be);
        await waitInitialized(c, be);
        await setReady(c.core, c.n(be), true);
      }
      await createService(c, 'web', [80]);
      const backends = async () => backendNames(await lbOf(c, 'web'));
      const hasBackends = async (...names: string[]) => {
        const now = await backends();
        return names.every((b) => now.includes(c.n(b)));
      };
      await waitFor(async () => (await hasBackends('be-1', 'be-2')) && (await readSvc(c, 'web'))?.status?.loadBalancer?.ingress?.[0]?.ip, {
        what: 'web: ingress, be-1 and be-2 backends',
        log: c.log,
      });
      await patchService(c.core, c.ns, 'web', { spec: { ports: [...lbService('web', c.ns, [{ port: 80 }, { port: 443 }]).spec!.ports!] } }, 'merge');
      await waitFor(async () => (await lbOf(c, 'web'))?.ports.length === 2, { what: 'web: second port in the cloud', log: c.log });
      await patchNode(c.core, c.n('be-2'), { metadata: { labels: { [EXCLUDE]: 'true' } } }, 'merge');
      await waitFor(async () => !(await backends()).includes(c.n('be-2')), { what: 'web: be-2 excluded', log: c.log });
      // The Cluster Autoscaler's taint starts no update of its own (KEP-3458); the next update, started by a new node, applies it.
      await patchNode(c.core, c.n('be-1'), { spec: { taints: [{ key: TO_BE_DELETED, value: '1700000000', effect: 'NoSchedule' }] } }, 'merge');
      await instance(c, 'be-3', '--address', '127.0.40.13');
      await registerNode(c, 'be-3');
      await waitInitialized(c, 'be-3');
      await setReady(c.core, c.n('be-3'), true);
      await waitFor(async () => hasBackends('be-3'), { what: 'web: be-3 a backend', log: c.log });
      await createService(c, 'gone', [81]);
      await waitFor(async () => (await readSvc(c, 'gone'))?.status?.loadBalancer?.ingress?.[0]?.ip, { what: 'gone: ingress', log: c.log });
      await c.core.deleteNamespacedService({ name: 'gone', namespace: c.ns });
      await waitFor(async () => !(await readSvc(c, 'gone')) && !(await lbOf(c, 'gone')), {
        what: 'gone: Service and load balancer deleted',
        log: c.log,
      });
    },
  },
  {
    name: 'LoadBalancer Services, provider errors on ensure, cleared after one failure each: NotFound, Unimplemented, RetryInfo (a retry delay)',
    async run(c) {
      await servicesRecoverFrom(c, [
        ['ensure-notfound', 82, 'NOT_FOUND'],
        ['ensure-unimpl', 83, 'UNIMPLEMENTED'],
        ['ensure-retry', 84, 'RETRY:1500'],
      ]);
    },
  },
  {
    name: 'LoadBalancer Service during an outage (every cloud call UNAVAILABLE) until the cloud is back',
    async run(c) {
      await localcloud(c.state, 'knobs', 'set', 'failAll=true');
      const svc = await createService(c, 'outage', [85]);
      await waitFor(async () => cloudFailed(c, /ensureLoadBalancers?$/, svc.metadata!.uid!), { what: 'outage: an ensure failed', log: c.log });
      await localcloud(c.state, 'knobs', 'unset', 'failAll');
      await waitFor(async () => ingressOf(c, 'outage'), { what: 'outage: ingress once the cloud is back', log: c.log, timeoutMs: 120_000 });
    },
  },
  {
    name: 'LoadBalancer Service implemented elsewhere (ensure and delete answer ImplementedElsewhere): no load balancer, deleted with its finalizer removed',
    async run(c) {
      await setFail(c, ...failing('elsewhere', 'IMPLEMENTED_ELSEWHERE', ...ENSURES, 'ensureLoadBalancerDeleted'));
      const svc = await createService(c, 'elsewhere', [86]);
      await waitFor(async () => cloudFailed(c, /ensureLoadBalancers?$/, svc.metadata!.uid!), { what: 'elsewhere: ensure answered', log: c.log });
      await c.core.deleteNamespacedService({ name: 'elsewhere', namespace: c.ns });
      await waitFor(async () => !(await readSvc(c, 'elsewhere')), { what: 'elsewhere: Service deleted', log: c.log, timeoutMs: 120_000 });
      await setFail(c);
    },
  },
  {
    name: "backends changed while the cloud answers UNAVAILABLE to one load balancer's host update: that Service re-ensured, the others updated",
    async run(c) {
      const web = [...c.services].find(([, short]) => short === 'web')![0];
      await setFail(c, ...failing('web', 'UNAVAILABLE', 'updateLoadBalancer', 'updateLoadBalancerHosts'));
      await patchNode(c.core, c.n('be-2'), { metadata: { labels: { [EXCLUDE]: null } } }, 'merge');
      await waitFor(async () => cloudFailed(c, /updateLoadBalancer(Hosts)?$/, web), { what: 'web: host update failed', log: c.log });
      for (const lb of ['web', 'ensure-notfound', 'ensure-unimpl', 'ensure-retry', 'outage'])
        await waitFor(async () => backendNames(await lbOf(c, lb)).includes(c.n('be-2')), {
          what: `${lb}: be-2 a backend again`,
          log: c.log,
          timeoutMs: 120_000,
        });
      await setFail(c);
    },
  },
  {
    name: 'LoadBalancer Services deleted while the cloud answers Unimplemented, UNAVAILABLE for deleting their load balancers: finalizer kept, deleted once it answers',
    async run(c) {
      const errors: [short: string, port: number, error: string][] = [
        ['del-unimpl', 87, 'UNIMPLEMENTED'],
        ['del-unavail', 88, 'UNAVAILABLE'],
      ];
      const uids = new Map<string, string>();
      for (const [i, [short, port]] of errors.entries()) {
        uids.set(short, (await createService(c, short, [port], `127.0.63.${110 + i}`)).metadata!.uid!);
        await waitFor(async () => ingressOf(c, short), { what: `${short}: ingress`, log: c.log });
      }
      await setFail(c, ...errors.flatMap(([short, , error]) => failing(short, error, 'ensureLoadBalancerDeleted')));
      for (const [short] of errors) await c.core.deleteNamespacedService({ name: short, namespace: c.ns });
      for (const [short, , error] of errors)
        await waitFor(async () => cloudFailed(c, /ensureLoadBalancerDeleted$/, uids.get(short)!), {
          what: `${short}: delete failed with ${error}`,
          log: c.log,
        });
      for (const [short] of errors) {
        const svc = await readSvc(c, short);
        if (!svc?.metadata?.finalizers?.includes(LB_FINALIZER) || !(await lbOf(c, short)))
          throw new Error(`${short}: Service or load balancer gone while the cloud could not delete it`);
      }
      await setFail(c);
      for (const [short] of errors)
        await waitFor(async () => !(await readSvc(c, short)) && !(await lbOf(c, short)), {
          what: `${short}: Service and load balancer deleted once the cloud answers`,
          log: c.log,
          timeoutMs: 120_000,
        });
    },
  },
];

async function readSvc(c: SideCtx, name: string): Promise<V1Service | undefined> {
  return c.core.readNamespacedService({ name, namespace: c.ns }).catch((err: { code?: number }) => {
    if (err.code === 404) return undefined;
    throw err;
  });
}

async function routes(c: SideCtx): Promise<{ targetNode: string; destinationCidr: string; blackhole?: boolean }[]> {
  return JSON.parse(await localcloud(c.state, 'route', 'list', '-o', 'json')) as {
    targetNode: string;
    destinationCidr: string;
    blackhole?: boolean;
  }[];
}

/** What one side left: Nodes, Services, events, cloud state and calls, normalized (see test/helpers/parity.ts). */
async function collect(c: SideCtx): Promise<Snapshot> {
  const instances = JSON.parse(await localcloud(c.state, 'instance', 'list', '-o', 'json')) as { id: string; name: string }[];
  const norm = normalizer(c.side, new Map(instances.map((i) => [i.id, i.name])));
  const snap: Snapshot = new Map();
  const put = (path: string, value: string) => snap.set(norm(path), norm(value));
  for (const name of [...c.nodes].sort()) {
    const node = await readNodeOrUndefined(c.core, name);
    put(`node/${name}/exists`, node ? 'yes' : 'no');
    if (!node) continue;
    for (const [k, v] of Object.entries(node.metadata?.labels ?? {})) put(`node/${name}/label/${k}`, v);
    for (const [k, v] of Object.entries(node.metadata?.annotations ?? {})) put(`node/${name}/annotation/${k}`, v);
    for (const t of node.spec?.taints ?? []) put(`node/${name}/taint/${t.key}`, `${t.value ?? ''}:${t.effect}`);
    put(`node/${name}/providerID`, node.spec?.providerID ?? '');
    put(`node/${name}/addresses`, (node.status?.addresses ?? []).map((a) => `${a.type}=${a.address}`).join(', '));
    for (const x of node.status?.conditions ?? []) put(`node/${name}/condition/${x.type}`, `${x.status}/${x.reason ?? ''}: ${x.message ?? ''}`);
  }
  const svcs = [...new Set(c.services.values())].sort();
  for (const name of svcs) {
    const svc = await readSvc(c, name);
    put(`svc/${name}/exists`, svc ? 'yes' : 'no');
    if (!svc) continue;
    put(`svc/${name}/finalizers`, (svc.metadata?.finalizers ?? []).join(', '));
    for (const [k, v] of Object.entries(svc.metadata?.annotations ?? {})) put(`svc/${name}/annotation/${k}`, v);
    put(
      `svc/${name}/ports`,
      (svc.spec?.ports ?? []).map((p) => `${p.name}:${p.port}/${p.protocol} nodePort ${p.nodePort ? 'set' : 'none'}`).join(', '),
    );
    put(
      `svc/${name}/ingress`,
      (svc.status?.loadBalancer?.ingress ?? []).map((i) => `${i.ip ?? i.hostname} ${i.ipMode ?? ''} ${JSON.stringify(i.ports ?? [])}`).join(', '),
    );
    put(`svc/${name}/conditions`, JSON.stringify(svc.status?.conditions ?? []));
  }
  // Events: per object and reason, every distinct type/source/message (counts and times differ by timing alone).
  const events = [
    ...(await c.core.listNamespacedEvent({ namespace: 'default' })).items.filter((e) => c.nodes.has(e.involvedObject.name ?? '')),
    ...(await c.core.listNamespacedEvent({ namespace: c.ns })).items,
  ];
  const byKey = new Map<string, Set<string>>();
  for (const e of events) {
    if (fromApiServerRepair(e)) continue;
    const key = `event/${e.involvedObject.kind}/${e.involvedObject.name}/${e.reason}`;
    const set = byKey.get(key) ?? new Set<string>();
    set.add(`${e.type} from ${e.source?.component || e.reportingComponent || '?'}: ${withoutErrorWording(e.message ?? '')}`);
    byKey.set(key, set);
  }
  for (const [k, v] of byKey) put(k, [...v].map(norm).sort().join(' ¦ '));
  // The cloud: load balancers, routes, and which mutating calls were made on what (not how many, nor batched how).
  for (const lb of await cloudLbs(c.state)) {
    const at = `cloud/lb/${lb.serviceName}`;
    put(`${at}/name`, lb.name);
    put(`${at}/ingress`, `${lb.ingressIp} ${lb.ipMode}`);
    put(`${at}/ports`, lb.ports.map((p) => `${p.port}/${p.protocol}`).join(', '));
    put(
      `${at}/backends`,
      lb.backends
        .map((b) => `${b.nodeName}=${b.address}`)
        .sort()
        .join(', '),
    );
  }
  for (const r of await routes(c)) put(`cloud/route/${r.targetNode}`, `${r.destinationCidr}${r.blackhole ? ' blackhole' : ''}`);
  const calls = new Map<string, Set<string>>();
  const reads = new Set<string>();
  const deletes = new Map<string, number>();
  const addCall = (object: string, op: string) => {
    const set = calls.get(object) ?? new Set<string>();
    set.add(op);
    calls.set(object, set);
  };
  for (const e of await readJournal(c.state)) {
    const method = e.method.replace(/^.*\./, '');
    if (!e.mutating) {
      reads.add(CANONICAL_READS[method] ?? method);
      continue;
    }
    if (method === 'reconcileRoutes') {
      // The batch names its changes in its answer; one that failed as a whole changed
      // nothing, as upstream's route list read that fails before any change.
      if (e.routesCreated) addCall('routes', 'create route');
      if (e.routesDeleted) addCall('routes', 'delete route');
      // Its failed entries, as upstream's failed CreateRoute and DeleteRoute calls.
      if (e.routesCreateFailed) addCall('routes', 'create route (failed)');
      if (e.routesDeleteFailed) addCall('routes', 'delete route (failed)');
      continue;
    }
    if (method === 'ensureLoadBalancerDeleted' && e.ok && e.key) {
      const object = c.services.get(e.key) ?? e.key;
      deletes.set(object, (deletes.get(object) ?? 0) + 1);
    }
    const op = CANONICAL_OPS[method] ?? method;
    // Routes as one object: batch ReconcileRoutes names no route (the cloud's routes are compared above).
    const keys = e.method.startsWith('routes.') ? ['routes'] : (e.keys ?? (e.key !== undefined ? [e.key] : ['(none)']));
    for (const key of keys) addCall(c.services.get(key) ?? key, e.ok && !e.failedKeys?.includes(key) ? op : `${op} (failed)`);
  }
  for (const [object, ops] of calls) put(`cloud/calls/${object}`, [...ops].sort().join(', '));
  // How often a load balancer was deleted: once per Service deletion (upstream drops its cache entry after cleanup).
  for (const [object, n] of deletes) put(`cloud/deletes/${object}`, String(n));
  put('cloud/reads', [...reads].sort().join(', '));
  return snap;
}

/** One name per kind of read, whether it came as a single or a batch call. */
const CANONICAL_READS: Record<string, string> = {
  instanceMetadata: 'instance metadata',
  getInstancesMetadata: 'instance metadata',
  instanceExists: 'instance status',
  instanceShutdown: 'instance status',
  getInstancesStatus: 'instance status',
  getLoadBalancer: 'load balancer status',
  listLoadBalancers: 'load balancer list',
  listRoutes: 'route list',
};

/** One name per kind of change, whether it came as a single or a batch call. */
const CANONICAL_OPS: Record<string, string> = {
  ensureLoadBalancer: 'ensure',
  ensureLoadBalancers: 'ensure',
  updateLoadBalancer: 'update hosts',
  updateLoadBalancerHosts: 'update hosts',
  ensureLoadBalancerDeleted: 'delete',
  createRoute: 'create route',
  deleteRoute: 'delete route',
};

async function runSide(cp: ControlPlane, side: Side, name: SideName, dir: string, progress: (line: string) => void): Promise<Snapshot> {
  const core = cp.kubeConfig().makeApiClient(CoreV1Api);
  const sideDir = join(dir, name);
  const state = join(sideDir, 'cloud');
  await mkdir(state, { recursive: true });
  const ns = `parity-${name}`;
  await ensureNamespace(core, ns);
  const settings: CommonSettings = {
    controllers: 'cloud-node,cloud-node-lifecycle,service,route',
    qps: 50,
    burst: 100,
    clusterName: 'parity',
    flags: [
      `--cluster-cidr=${CLUSTER_CIDR}`,
      '--allocate-node-cidrs=true',
      '--configure-cloud-routes=true',
      '--node-monitor-period=2s',
      '--route-reconciliation-period=2s',
      '--concurrent-service-syncs=1',
      '-v=2',
      // Ours only: flags upstream does not have, so ours leaves upstream's objects alone.
      ...(name === 'ours' ? [`--node-selector=${SIDE_LABEL}=parity-ours`, `--watch-namespace=${ns}`] : []),
    ],
  };
  if (name === 'ours') {
    const kubeconfig = join(sideDir, 'kubeconfig');
    await writeFile(kubeconfig, (await serviceAccountKubeConfig(cp.kubeConfig())).exportConfig(), { mode: 0o600 });
    settings.kubeconfig = kubeconfig;
  }
  const ccm = await startCcm(cp, side, settings, state, sideDir, { LOCALCLOUD_LB_CIDR: '127.0.63.0/24' });
  const c: SideCtx = { side: name, core, state, ns, log: ccm.logFile, n: (s) => `parity-${name}-${s}`, nodes: new Set(), services: new Map() };
  try {
    for (const s of SCENARIOS) {
      const started = Date.now();
      await s.run(c);
      progress(`${name}: ${((Date.now() - started) / 1000).toFixed(1)} s: ${s.name}`);
    }
  } finally {
    await ccm.stop();
  }
  if (name === 'ours') {
    const forbidden = await forbiddenInLog(ccm.logFile);
    if (forbidden > 0) throw new Error(`our host met ${forbidden} 403 answer(s) under the shipped RBAC; see ${ccm.logFile}`);
  }
  return collect(c);
}

test('upstream CCM and our host leave the same Nodes, Services, events and cloud calls, but for the allowed differences', async (t) => {
  t.timeout(20 * 60_000);
  const bin = await ensureUpstreamCcm((line) => t.log(line));
  const cp = await ControlPlane.start({ controllerManager: false });
  t.teardown(() => cp.stop());
  await applyShippedRbac(cp.kubeConfig());
  const dir = await mkdtemp(join(tmpdir(), 'ccm-parity-'));
  const upstream = await runSide(cp, { kind: 'upstream', bin }, 'upstream', dir, (l) => t.log(l));
  const ours = await runSide(cp, { kind: 'ours', nodeFlags: [] }, 'ours', dir, (l) => t.log(l));
  await writeFile(join(dir, 'snapshots.json'), JSON.stringify({ ours: Object.fromEntries(ours), upstream: Object.fromEntries(upstream) }, null, 1));
  const { unexpected, unused, allowed } = judge(differences(ours, upstream), ALLOWED);
  for (const [id, ds] of allowed) for (const d of ds) t.log(`allowed (${id}): ${describe(d)}`);
  t.deepEqual(unexpected.map(describe), [], `differences no row of docs/upstream-parity.md allows (snapshots in ${dir})`);
  t.deepEqual(unused, [], 'rows of docs/upstream-parity.md that no scenario showed');
  t.true(ours.size > 50, `${ours.size} paths compared`);
});
