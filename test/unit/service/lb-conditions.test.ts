/**
 * The load-balancer conditions of a Service (host/controllers/service/lb-conditions.ts):
 * what each outcome writes, that an unchanged outcome writes nothing, that
 * lastTransitionTime moves only with the status, and the guarded removal.
 */
import test from 'ava';
import type { V1Condition, V1Service } from '@kubernetes/client-node';
import { conditionPatch, desiredConditions, entersDeferral, removalPatch, type LbOutcome } from '../../../host/controllers/service/lb-conditions.js';

const T0 = new Date('2026-01-01T00:00:00Z');
const T1 = new Date('2026-01-01T00:05:00Z');

function svc(conditions: V1Condition[] = [], ingress: { ip: string }[] = [], generation = 1): V1Service {
  return {
    metadata: { name: 's', namespace: 'n', uid: 'u1', generation },
    spec: { type: 'LoadBalancer' },
    status: { conditions, loadBalancer: { ingress } },
  };
}

/** [Provisioning status/reason, Serving status/reason] of an outcome on a Service without an address, and with one. */
const TABLE: { outcome: LbOutcome; fresh: string[]; serving: string[] }[] = [
  {
    outcome: { kind: 'ensured', ingress: [{ ip: '10.0.0.1' }] },
    fresh: ['False/Complete', 'True/Serving'],
    serving: ['False/Complete', 'True/Serving'],
  },
  {
    outcome: { kind: 'waiting', message: 'address pending', retryAfterMs: 2000 },
    fresh: ['True/Provisioning', 'False/Provisioning'],
    serving: ['True/Provisioning', 'True/Serving'],
  },
  {
    outcome: { kind: 'deferred', reason: 'QuotaExhausted', message: 'quota of 1 reached', retryAfterMs: 3000 },
    fresh: ['True/Deferred', 'False/QuotaExhausted'],
    serving: ['True/Deferred', 'True/Serving'],
  },
  {
    outcome: { kind: 'error', message: 'cloud down', unsupported: false },
    fresh: ['False/Error', 'False/Infrastructure'],
    serving: ['False/Error', 'True/Serving'],
  },
  {
    outcome: { kind: 'error', message: 'bad annotation', unsupported: true },
    fresh: ['False/Error', 'False/Unsupported'],
    serving: ['False/Error', 'True/Serving'],
  },
];

for (const { outcome, fresh, serving } of TABLE) {
  test(`${outcome.kind}${outcome.kind === 'error' && outcome.unsupported ? ' (unsupported)' : ''}: ${fresh.join(', ')}; with an address: ${serving.join(', ')}`, (t) => {
    const show = (s: V1Service) => desiredConditions(s, outcome).map((c) => `${c.status}/${c.reason}`);
    t.deepEqual(show(svc()), fresh);
    t.deepEqual(show(svc([], [{ ip: '10.0.0.9' }])), serving);
  });
}

test('the deferral message names the provider reason and the delay', (t) => {
  const [p] = desiredConditions(svc(), { kind: 'deferred', reason: 'QuotaExhausted', message: 'quota of 1 reached', retryAfterMs: 3000 });
  t.is(p.message, 'QuotaExhausted: quota of 1 reached; retried in 3s');
});

test('an unchanged outcome writes nothing; a changed reason keeps lastTransitionTime when the status stays', (t) => {
  const outcome: LbOutcome = { kind: 'ensured', ingress: [{ ip: '10.0.0.1' }] };
  const first = conditionPatch(svc(), desiredConditions(svc(), outcome), T0);
  t.is(first.length, 2);
  t.true(first.every((c) => c.lastTransitionTime === T0 && c.observedGeneration === 1));
  const written = svc(first, [{ ip: '10.0.0.1' }]);
  t.deepEqual(conditionPatch(written, desiredConditions(written, outcome), T1), [], 'same outcome: no write');
  // A failed update: Provisioning False stays False (new reason, time kept); Serving stays True (untouched).
  const failed = conditionPatch(written, desiredConditions(written, { kind: 'error', message: 'boom', unsupported: false }), T1);
  t.deepEqual(
    failed.map((c) => [c.type, c.status, c.reason, c.lastTransitionTime]),
    [['LoadBalancerProvisioning', 'False', 'Error', T0]],
  );
  // Deferred: Provisioning turns True, so its time moves.
  const deferred = conditionPatch(written, desiredConditions(written, { kind: 'deferred', reason: 'Q', message: 'm', retryAfterMs: 1000 }), T1);
  t.deepEqual(
    deferred.map((c) => [c.type, c.status, c.lastTransitionTime]),
    [['LoadBalancerProvisioning', 'True', T1]],
  );
});

test('a new generation is written (observedGeneration), nothing else changing', (t) => {
  const outcome: LbOutcome = { kind: 'ensured', ingress: [{ ip: '10.0.0.1' }] };
  const written = conditionPatch(svc(), desiredConditions(svc(), outcome), T0);
  const next = svc(written, [{ ip: '10.0.0.1' }], 2);
  const patch = conditionPatch(next, desiredConditions(next, outcome), T1);
  t.deepEqual(
    patch.map((c) => [c.observedGeneration, c.lastTransitionTime]),
    [
      [2, T0],
      [2, T0],
    ],
  );
});

test('removal: only our conditions, highest index first, each guarded by the cached type/status/reason and the uid', (t) => {
  const conds: V1Condition[] = [
    { type: 'LoadBalancerServing', status: 'True', reason: 'Serving', message: '', lastTransitionTime: T0 },
    { type: 'Other', status: 'True', reason: 'Theirs', message: '', lastTransitionTime: T0 },
    { type: 'LoadBalancerProvisioning', status: 'False', reason: 'Complete', message: '', lastTransitionTime: T0 },
  ];
  const patch = removalPatch(svc(conds)) as { op: string; path: string; value?: string }[];
  t.deepEqual(patch[0], { op: 'test', path: '/metadata/uid', value: 'u1' });
  t.deepEqual(
    patch.filter((o) => o.op === 'remove').map((o) => o.path),
    ['/status/conditions/2', '/status/conditions/0'],
  );
  t.true(patch.some((o) => o.op === 'test' && o.path === '/status/conditions/2/reason' && o.value === 'Complete'));
  t.false(
    patch.some((o) => o.path.startsWith('/status/conditions/1')),
    'the other writer’s condition is not touched',
  );
  t.is(removalPatch(svc([conds[1]!])), undefined);
});

test('entersDeferral: true on entering, false on the same reason again, true on a new reason', (t) => {
  const deferred = (reason: string): V1Service =>
    svc(conditionPatch(svc(), desiredConditions(svc(), { kind: 'deferred', reason, message: 'm', retryAfterMs: 1000 }), T0));
  t.true(entersDeferral(svc(), 'QuotaExhausted'));
  t.false(entersDeferral(deferred('QuotaExhausted'), 'QuotaExhausted'));
  t.true(entersDeferral(deferred('QuotaExhausted'), 'WaitingForSubnet'));
});
