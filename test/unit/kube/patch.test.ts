import test from 'ava';
import { makeClients } from '../../../host/kube/client.js';
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
