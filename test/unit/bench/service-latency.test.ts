/**
 * ClusterLoader2's ServiceCreationLatency phases as the bench records them
 * (test/bench/service-latency.ts, latency.ts): which watch event sets which
 * phase, the transitions between them, and the ping checker's "three answers
 * in a row".
 */
import test from 'ava';
import type { KubeConfig, V1Service } from '@kubernetes/client-node';
import { PhaseWatch } from '../../bench/latency.js';
import { ingressOf, LB_TRANSITIONS, probeUntilAvailable } from '../../bench/service-latency.js';

type Ev = [type: 'ADDED' | 'MODIFIED' | 'DELETED', atMs: number, svc: V1Service];

const svc = (name: string, o: { ingress?: string; deleting?: boolean } = {}): V1Service => ({
  metadata: { name, namespace: 'ns', ...(o.deleting ? { deletionTimestamp: new Date(0) } : {}) },
  spec: { type: 'LoadBalancer' },
  status: o.ingress ? { loadBalancer: { ingress: [{ ip: o.ingress }] } } : {},
});

/** A watch fed by hand: `handle` is what every watch event goes through. */
function watchOf(events: Ev[]): PhaseWatch<V1Service> {
  const w = new PhaseWatch<V1Service>(
    {} as KubeConfig,
    '/unused',
    undefined,
    { assigned: (s) => ingressOf(s) !== undefined, deleting: (s) => Boolean(s.metadata?.deletionTimestamp) },
    () => Promise.resolve({}),
  );
  for (const [type, at, s] of events) w.handle(type, s, at);
  return w;
}

const CASES: { name: string; events: Ev[]; transition: keyof typeof LB_TRANSITIONS; ms: number[] }[] = [
  {
    name: 'created → first ingress',
    events: [
      ['ADDED', 1000, svc('a')],
      ['MODIFIED', 1200, svc('a')],
      ['MODIFIED', 1700, svc('a', { ingress: '10.0.0.1' })],
    ],
    transition: 'create_to_assigned_loadbalancer',
    ms: [700],
  },
  {
    name: 'a later event with the ingress still there does not move the phase',
    events: [
      ['ADDED', 0, svc('a')],
      ['MODIFIED', 300, svc('a', { ingress: '10.0.0.1' })],
      ['MODIFIED', 900, svc('a', { ingress: '10.0.0.2' })],
    ],
    transition: 'create_to_assigned_loadbalancer',
    ms: [300],
  },
  {
    name: 'a Service with no ingress yet has no sample',
    events: [
      ['ADDED', 0, svc('a')],
      ['ADDED', 10, svc('b')],
      ['MODIFIED', 50, svc('b', { ingress: '10.0.0.2' })],
    ],
    transition: 'create_to_assigned_loadbalancer',
    ms: [40],
  },
  {
    name: 'deletionTimestamp → DELETED',
    events: [
      ['ADDED', 0, svc('a', { ingress: '10.0.0.1' })],
      ['MODIFIED', 5000, svc('a', { ingress: '10.0.0.1', deleting: true })],
      ['MODIFIED', 5100, svc('a', { deleting: true })],
      ['DELETED', 5400, svc('a', { deleting: true })],
    ],
    transition: 'delete_loadbalancer',
    ms: [400],
  },
  {
    name: 'a DELETED without a deleting event first (none seen) has no sample',
    events: [
      ['ADDED', 0, svc('a')],
      ['DELETED', 100, svc('a')],
    ],
    transition: 'delete_loadbalancer',
    ms: [],
  },
  {
    name: 'the same name in two namespaces is two Services',
    events: [
      ['ADDED', 0, svc('a')],
      ['ADDED', 5, { ...svc('a'), metadata: { name: 'a', namespace: 'other' } }],
      ['MODIFIED', 20, { ...svc('a', { ingress: '10.0.0.9' }), metadata: { name: 'a', namespace: 'other' } }],
    ],
    transition: 'create_to_assigned_loadbalancer',
    ms: [15],
  },
];

for (const c of CASES) {
  test(`phases: ${c.name}`, (t) => {
    const [from, to] = LB_TRANSITIONS[c.transition];
    t.deepEqual(watchOf(c.events).between(from, to), c.ms);
  });
}

test('phases: available is marked from outside, once, and gives both availability transitions', (t) => {
  const w = watchOf([
    ['ADDED', 100, svc('a')],
    ['MODIFIED', 400, svc('a', { ingress: '10.0.0.1' })],
  ]);
  t.true(w.mark('ns/a', 'available', 1000));
  t.false(w.mark('ns/a', 'available', 2000));
  t.is(w.count('available'), 1);
  t.deepEqual(w.between(...LB_TRANSITIONS.assigned_to_available_loadbalancer), [600]);
  t.deepEqual(w.between(...LB_TRANSITIONS.create_to_available_loadbalancer), [900]);
});

/** The ping checker: each outcome in turn (true: answered), then `stop` once the list runs out. */
const PROBES: { name: string; outcomes: boolean[]; available: boolean; requests: number }[] = [
  { name: 'three answers in a row', outcomes: [true, true, true], available: true, requests: 3 },
  { name: 'refused until the listener is bound', outcomes: [false, false, true, true, true], available: true, requests: 5 },
  { name: 'a failure in between starts the count again', outcomes: [true, true, false, true, true, true], available: true, requests: 6 },
  { name: 'never three in a row: not available', outcomes: [true, true, false, true, false], available: false, requests: 5 },
];

for (const c of PROBES) {
  test(`probe: ${c.name}`, async (t) => {
    let i = 0;
    const at = await probeUntilAvailable(
      () => (c.outcomes[i++] ? Promise.resolve('backend') : Promise.reject(new Error('ECONNREFUSED'))),
      () => i >= c.outcomes.length && c.outcomes[c.outcomes.length - 1] === false,
      3,
      0,
    );
    t.is(at !== undefined, c.available);
    t.is(i, c.requests);
  });
}
