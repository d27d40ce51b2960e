/**
 * EnsureBatcher (host/controllers/service/ensure-batcher.ts) with a fake
 * LoadBalancers that records calls: concurrent ensures with one backend set
 * share a batch call, other backend sets get their own, a lone ensure is a
 * single call, per-entry errors reach only their caller, a failed call
 * rejects every caller; companions ride along, are released after the call,
 * and their results serve one later ensure of the very same request within
 * the TTL; a provider without the batch capability gets single calls.
 */
import test from 'ava';
import type { NodeRef } from '../../../host/cloud.js';
import type { EnsureResult, LbStatus, LoadBalancers, ServiceRef } from '../../../host/cloud-load-balancers.js';
import { EnsureBatcher, type Companion, type EnsureWork } from '../../../host/controllers/service/ensure-batcher.js';
import { CloudCallError, ImplementedElsewhereError } from '../../../host/errors.js';
import { silentLogger } from '../../../host/log.js';

const ref = (name: string, annotations: Record<string, string> = {}): ServiceRef => ({
  uid: `uid-${name}`,
  namespace: 'ns',
  name,
  annotations,
  labels: {},
  ports: [{ name: '', protocol: 'TCP', port: 80, nodePort: 30080, appProtocol: '' }],
  loadBalancerIp: '',
  loadBalancerSourceRanges: [],
  ipFamilies: ['IPv4'],
  externalTrafficPolicy: 'Cluster',
  healthCheckNodePort: 0,
  sessionAffinity: 'None',
  sessionAffinityTimeoutSeconds: 0,
  loadBalancerClass: '',
});
const nodes = (sig: string): NodeRef[] => [{ name: sig, addresses: [], labels: {} }];
const work = (name: string, sig = 'n1', annotations: Record<string, string> = {}): EnsureWork => ({
  key: `ns/${name}`,
  ref: ref(name, annotations),
  nodes: nodes(sig),
  nodesSig: sig,
});
const statusFor = (name: string): LbStatus => ({ ingress: [{ ip: `10.0.0.${name.length}` }] });

/** A fake LoadBalancers recording ensure calls as `single:<name>` or `batch:<names>@<node>`. */
class FakeLbs {
  readonly calls: string[] = [];
  callError?: Error;
  constructor(
    readonly batchEnsure: boolean,
    private readonly itemErrors: Record<string, Error> = {},
  ) {}

  async ensureLoadBalancer(_c: string, svc: ServiceRef, n: NodeRef[]): Promise<LbStatus> {
    this.calls.push(`single:${svc.name}@${n[0]?.name}`);
    if (this.itemErrors[svc.name]) throw this.itemErrors[svc.name];
    return statusFor(svc.name);
  }

  async ensureLoadBalancers(_c: string, svcs: ServiceRef[], n: NodeRef[]): Promise<EnsureResult[]> {
    this.calls.push(`batch:${svcs.map((s) => s.name).join(',')}@${n[0]?.name}`);
    await new Promise((r) => setTimeout(r, 5));
    if (this.callError) throw this.callError;
    return svcs.map((s) => (this.itemErrors[s.name] ? { uid: s.uid, error: this.itemErrors[s.name]! } : { uid: s.uid, status: statusFor(s.name) }));
  }
}

interface Setup {
  lbs: FakeLbs;
  batcher: EnsureBatcher;
  clock: { t: number };
  released: string[];
  /** Keys the companion source was told to skip, per call. */
  skipped: string[][];
}

function setup(batchEnsure: boolean, opts: { companions?: string[]; itemErrors?: Record<string, Error> } = {}): Setup {
  const lbs = new FakeLbs(batchEnsure, opts.itemErrors);
  const clock = { t: 0 };
  const released: string[] = [];
  const skipped: string[][] = [];
  let offered = opts.companions ?? [];
  const batcher = new EnsureBatcher(lbs as unknown as LoadBalancers, 'c', silentLogger(), {
    now: () => clock.t,
    resultTtlMs: 1000,
    companions: async (room, _sig, skip) => {
      skipped.push(['ns/a', 'ns/b', 'ns/c', 'ns/x', 'ns/y'].filter(skip));
      const out: Companion[] = offered
        .filter((n) => !skip(`ns/${n}`))
        .slice(0, room)
        .map((n) => ({ key: `ns/${n}`, ref: ref(n), release: () => released.push(n) }));
      offered = [];
      return out;
    },
  });
  return { lbs, batcher, clock, released, skipped };
}

const settle = async (p: Promise<LbStatus>) =>
  p.then(
    (s) => s.ingress[0]?.ip ?? '',
    (e: Error) => `error: ${e.name}`,
  );

interface Case {
  name: string;
  batchEnsure: boolean;
  companions?: string[];
  itemErrors?: Record<string, Error>;
  callError?: Error;
  /** Rounds of concurrent ensures, each settled before the next; a number advances the clock by that many ms. */
  rounds: (EnsureWork[] | number)[];
  calls: string[];
  /** Outcomes per ensure, in order. */
  outcomes: string[];
  released?: string[];
}

const elsewhere = new ImplementedElsewhereError('EnsureLoadBalancers', 'FAILED_PRECONDITION', 'elsewhere', 'IMPLEMENTED_ELSEWHERE');
const unavailable = new CloudCallError('EnsureLoadBalancers', 'UNAVAILABLE', 'down');

const cases: Case[] = [
  {
    name: 'no capability: one single call per ensure',
    batchEnsure: false,
    companions: ['x'],
    rounds: [[work('a'), work('b')]],
    calls: ['single:a@n1', 'single:b@n1'],
    outcomes: ['10.0.0.1', '10.0.0.1'],
  },
  {
    name: 'a lone ensure without companions is a single call',
    batchEnsure: true,
    rounds: [[work('a')]],
    calls: ['single:a@n1'],
    outcomes: ['10.0.0.1'],
  },
  {
    name: 'concurrent ensures share one call',
    batchEnsure: true,
    rounds: [[work('a'), work('bb'), work('ccc')]],
    calls: ['batch:a,bb,ccc@n1'],
    outcomes: ['10.0.0.1', '10.0.0.2', '10.0.0.3'],
  },
  {
    name: 'other backend sets get their own call',
    batchEnsure: true,
    rounds: [[work('a'), work('b', 'n2'), work('c')]],
    calls: ['batch:a,c@n1', 'single:b@n2'],
    outcomes: ['10.0.0.1', '10.0.0.1', '10.0.0.1'],
  },
  {
    name: 'a companion rides along, is released, and serves its own ensure once',
    batchEnsure: true,
    companions: ['x'],
    rounds: [[work('a')], [work('x')], [work('x')]],
    calls: ['batch:a,x@n1', 'single:x@n1'],
    outcomes: ['10.0.0.1', '10.0.0.1', '10.0.0.1'],
    released: ['x'],
  },
  {
    name: 'a changed Service does not use the kept result',
    batchEnsure: true,
    companions: ['x'],
    rounds: [[work('a')], [work('x', 'n1', { k: 'v' })]],
    calls: ['batch:a,x@n1', 'single:x@n1'],
    outcomes: ['10.0.0.1', '10.0.0.1'],
    released: ['x'],
  },
  {
    name: "a Service whose status changed still uses the kept result (the status is an earlier answer, not the request's)",
    batchEnsure: true,
    companions: ['x'],
    rounds: [[work('a')], [{ ...work('x'), ref: { ...ref('x'), status: { ingress: [{ ip: '10.0.0.1' }] } } }]],
    calls: ['batch:a,x@n1'],
    outcomes: ['10.0.0.1', '10.0.0.1'],
    released: ['x'],
  },
  {
    name: 'a changed backend set does not use the kept result',
    batchEnsure: true,
    companions: ['x'],
    rounds: [[work('a')], [work('x', 'n2')]],
    calls: ['batch:a,x@n1', 'single:x@n2'],
    outcomes: ['10.0.0.1', '10.0.0.1'],
    released: ['x'],
  },
  {
    name: 'a kept result expires',
    batchEnsure: true,
    companions: ['x'],
    rounds: [[work('a')], 1000, [work('x')]],
    calls: ['batch:a,x@n1', 'single:x@n1'],
    outcomes: ['10.0.0.1', '10.0.0.1'],
    released: ['x'],
  },
  {
    name: 'per-entry errors reach only their caller; a companion error is kept like a result',
    batchEnsure: true,
    companions: ['x'],
    itemErrors: { b: unavailable, x: elsewhere },
    rounds: [[work('a'), work('b')], [work('x')]],
    calls: ['batch:a,b,x@n1'],
    outcomes: ['10.0.0.1', 'error: CloudCallError', 'error: ImplementedElsewhereError'],
    released: ['x'],
  },
  {
    name: 'a failed call rejects every caller, releases companions and keeps nothing',
    batchEnsure: true,
    companions: ['x'],
    callError: unavailable,
    rounds: [[work('a'), work('b')], [work('x')]],
    calls: ['batch:a,b,x@n1', 'single:x@n1'],
    outcomes: ['error: CloudCallError', 'error: CloudCallError', '10.0.0.1'],
    released: ['x'],
  },
];

for (const c of cases) {
  test(c.name, async (t) => {
    const s = setup(c.batchEnsure, { companions: c.companions, itemErrors: c.itemErrors });
    const outcomes: string[] = [];
    s.lbs.callError = c.callError; // the first call only
    for (const round of c.rounds) {
      if (typeof round === 'number') {
        s.clock.t += round;
        continue;
      }
      outcomes.push(...(await Promise.all(round.map((w) => settle(s.batcher.ensure(w))))));
      s.lbs.callError = undefined;
    }
    t.deepEqual(s.lbs.calls, c.calls);
    t.deepEqual(outcomes, c.outcomes);
    t.deepEqual(s.released, c.released ?? []);
  });
}

test('the companion source is told to skip Services in the call, kept and recently asked', async (t) => {
  const s = setup(true, { companions: ['x'] });
  await s.batcher.ensure(work('a'));
  await s.batcher.ensure(work('b'));
  t.deepEqual(s.skipped, [['ns/a'], ['ns/b', 'ns/x']]);
});
