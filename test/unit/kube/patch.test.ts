import test from 'ava';
import { isConflict, isNotFound, makeClients } from '../../../host/kube/client.js';
import { patchEvent, patchNode, patchNodeStatus, patchServiceStatus, type PatchType } from '../../../host/kube/patch.js';
import { startCaptureServer } from './capture-server.js';

const CONTENT_TYPES: Record<PatchType, string> = {
  merge: 'application/merge-patch+json',
  strategic: 'application/strategic-merge-patch+json',
  json: 'application/json-patch+json',
  apply: 'application/apply-patch+yaml',
};

const calls: {
  name: string;
  path: string;
  call: (core: ReturnType<typeof makeClients>['core'], patch: unknown, type: PatchType) => Promise<unknown>;
}[] = [
  { name: 'patchNode', path: '/api/v1/nodes/n1', call: (core, p, type) => patchNode(core, 'n1', p, type) },
  { name: 'patchNodeStatus', path: '/api/v1/nodes/n1/status', call: (core, p, type) => patchNodeStatus(core, 'n1', p, type) },
  {
    name: 'patchServiceStatus',
    path: '/api/v1/namespaces/ns1/services/s1/status',
    call: (core, p, type) => patchServiceStatus(core, 'ns1', 's1', p, type),
  },
  { name: 'patchEvent', path: '/api/v1/namespaces/ns1/events/e1', call: (core, p, type) => patchEvent(core, 'ns1', 'e1', p, type) },
];

for (const { name, path, call } of calls) {
  for (const type of ['merge', 'strategic', 'json', 'apply'] as const) {
    test(`${name} sends a ${type} patch`, async (t) => {
      const server = await startCaptureServer(() => ({ status: 200, body: { apiVersion: 'v1', kind: 'Node', metadata: { name: 'n1' } } }));
      t.teardown(() => server.close());
      const { core } = makeClients(server.kubeConfig(), { userAgent: 'ccm-test' });
      const patch = type === 'json' ? [{ op: 'replace', path: '/metadata/labels/a', value: 'b' }] : { metadata: { labels: { a: 'b', gone: null } } };
      await call(core, patch, type);
      t.is(server.requests.length, 1);
      const [req] = server.requests;
      t.is(req!.method, 'PATCH');
      t.is(req!.url, path);
      t.is(req!.headers['content-type'], CONTENT_TYPES[type]);
      t.deepEqual(JSON.parse(req!.body), patch, 'body sent as given, nulls kept');
    });
  }
}

// Answers nobody reads are not decoded (issue 34, per-object CPU): a helper that returns nothing resolves
// undefined even for an answer that is not JSON; an error answer still becomes its ApiError.
const NOT_JSON = { status: 200, raw: 'not json' };
const answerTable: {
  name: string;
  call: (core: ReturnType<typeof makeClients>['core']) => Promise<unknown>;
  answer: { status: number; raw: string };
  want: { resolves: unknown } | { code: number };
}[] = [
  {
    name: 'patchNode, 200 not JSON: not decoded',
    call: (core) => patchNode(core, 'n1', {}, 'merge'),
    answer: NOT_JSON,
    want: { resolves: undefined },
  },
  {
    name: 'patchEvent, 200 not JSON: not decoded',
    call: (core) => patchEvent(core, 'ns1', 'e1', {}, 'merge'),
    answer: NOT_JSON,
    want: { resolves: undefined },
  },
  {
    name: 'createNamespacedEvent with discardAnswer, 201 not JSON: not decoded',
    call: (core) => core.createNamespacedEvent({ namespace: 'ns1', body: { metadata: { name: 'e1' }, involvedObject: {} } }, { discardAnswer: true }),
    answer: { status: 201, raw: 'not json' },
    want: { resolves: undefined },
  },
  {
    name: 'patchNode, 409 Status: a conflict',
    call: (core) => patchNode(core, 'n1', {}, 'merge'),
    answer: { status: 409, raw: JSON.stringify({ kind: 'Status', code: 409, reason: 'Conflict', message: 'the object has been modified' }) },
    want: { code: 409 },
  },
  {
    name: 'patchEvent, 404 Status: not found',
    call: (core) => patchEvent(core, 'ns1', 'e1', {}, 'merge'),
    answer: { status: 404, raw: JSON.stringify({ kind: 'Status', code: 404, reason: 'NotFound', message: 'events "e1" not found' }) },
    want: { code: 404 },
  },
  {
    name: 'patchNodeStatus, 200: the answer is decoded (the caller reads it)',
    call: (core) => patchNodeStatus(core, 'n1', {}, 'merge'),
    answer: { status: 200, raw: JSON.stringify({ kind: 'Node', metadata: { name: 'n1', resourceVersion: '7' } }) },
    want: { resolves: { kind: 'Node', metadata: { name: 'n1', resourceVersion: '7' } } },
  },
];

for (const { name, call, answer, want } of answerTable) {
  test(`answers: ${name}`, async (t) => {
    const server = await startCaptureServer(() => answer);
    t.teardown(() => server.close());
    const { core } = makeClients(server.kubeConfig(), { userAgent: 'ccm-test' });
    if ('resolves' in want) t.deepEqual(await call(core), want.resolves);
    else {
      const err = await t.throwsAsync(call(core));
      t.is((err as { code?: number }).code, want.code);
      t.is(want.code === 409 ? isConflict(err) : isNotFound(err), true);
    }
  });
}
