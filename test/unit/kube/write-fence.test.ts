/**
 * Write fencing at the API client (rest.ts): a client made with a fence asks
 * it before every write, early (before the throttle) and again right before
 * the bytes leave; a refusal sends nothing and fails with FencedWriteError,
 * which is neither NotFound, Conflict nor "gone". Reads are never fenced;
 * a client without a fence (no --leader-elect) sends every write.
 */
import test from 'ava';
import { Registry } from 'prom-client';
import type { CoreV1Api } from '../../../host/kube/api.js';
import { isConflict, isGoneOrReplaced, isNotFound, makeClients } from '../../../host/kube/client.js';
import { FencedWriteError } from '../../../host/kube/rest.js';
import { startCaptureServer } from './capture-server.js';

type Call = { name: string; method: string; path: string; run: (core: CoreV1Api) => Promise<unknown> };

const patchStatus: Call = {
  name: 'patch Node status',
  method: 'PATCH',
  path: '/api/v1/nodes/n1/status',
  run: (c) => c.patchNodeStatus({ name: 'n1', body: { status: {} } }, { patchType: 'merge' }),
};
const calls: Record<string, Call> = {
  patchStatus,
  deleteNode: { name: 'delete Node', method: 'DELETE', path: '/api/v1/nodes/n1', run: (c) => c.deleteNode({ name: 'n1' }) },
  patchService: {
    name: 'patch Service status',
    method: 'PATCH',
    path: '/api/v1/namespaces/ns/services/s/status',
    run: (c) => c.patchNamespacedServiceStatus({ namespace: 'ns', name: 's', body: {} }, { patchType: 'merge' }),
  },
  createPv: {
    name: 'create PV',
    method: 'POST',
    path: '/api/v1/persistentvolumes',
    run: (c) => c.createPersistentVolume({ body: { metadata: { name: 'pv1' } } }),
  },
  createEvent: {
    name: 'create Event',
    method: 'POST',
    path: '/api/v1/namespaces/ns/events',
    run: (c) => c.createNamespacedEvent({ namespace: 'ns', body: { metadata: { name: 'e1' }, involvedObject: {} } }),
  },
  readNode: { name: 'read Node', method: 'GET', path: '/api/v1/nodes/n1', run: (c) => c.readNode({ name: 'n1' }) },
};

/** `answers`: what the fence says on its 1st, 2nd, ... ask (the last repeats); undefined: no fence at all. */
const table: { call: Call; answers?: (string | undefined)[]; sent: boolean; asks: number }[] = [
  { call: patchStatus, answers: [undefined], sent: true, asks: 2 },
  { call: patchStatus, answers: ['no lease'], sent: false, asks: 1 },
  { call: patchStatus, answers: [undefined, 'no lease'], sent: false, asks: 2 },
  { call: calls.deleteNode!, answers: [undefined, 'no lease'], sent: false, asks: 2 },
  { call: calls.patchService!, answers: ['no lease'], sent: false, asks: 1 },
  { call: calls.createPv!, answers: ['no lease'], sent: false, asks: 1 },
  { call: calls.createEvent!, answers: ['no lease'], sent: false, asks: 1 },
  { call: calls.readNode!, answers: ['no lease'], sent: true, asks: 0 },
  { call: patchStatus, answers: undefined, sent: true, asks: 0 },
];

for (const { call, answers, sent, asks } of table) {
  const says = answers === undefined ? 'no fence' : `fence says ${answers.map((a) => a ?? 'ok').join(', then ')}`;
  test(`${call.name}, ${says}: ${sent ? 'sent' : 'not sent, FencedWriteError'} (${asks} asks)`, async (t) => {
    const server = await startCaptureServer(() => ({ status: 200, body: {} }));
    t.teardown(() => server.close());
    let asked = 0;
    const fence = answers && (() => answers[Math.min(asked++, answers.length - 1)]);
    const registry = new Registry();
    const { core } = makeClients(server.kubeConfig(), { userAgent: 'ccm-test', registry, fence });
    if (sent) {
      await call.run(core);
    } else {
      const err = await t.throwsAsync(call.run(core), { instanceOf: FencedWriteError });
      t.is(err!.message, `${call.method} ${call.path} not sent: no lease`);
      t.true((err as FencedWriteError).transient);
      t.false(isNotFound(err) || isConflict(err) || isGoneOrReplaced(err), 'never an answer about the object');
    }
    t.is(asked, asks);
    t.deepEqual(
      server.requests.map((r) => `${r.method} ${r.url.split('?')[0]}`),
      sent ? [`${call.method} ${call.path}`] : [],
    );
    // A refusal at the last check is counted as fenced, not as an error of the API server.
    const counted = (await registry.getSingleMetric('rest_client_requests_total')!.get()).values.filter((v) => v.labels.code === '<fenced>');
    t.is(
      counted.reduce((n, v) => n + v.value, 0),
      !sent && asks === 2 ? 1 : 0,
    );
  });
}
