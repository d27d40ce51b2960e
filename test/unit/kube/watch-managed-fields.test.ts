/**
 * Watch events parsed without `metadata.managedFields` (host/kube/watch.ts withoutManagedFields, used by
 * informers whose transform drops them): the cut text parses to the event with exactly that field gone,
 * whatever its entries hold (escaped quotes, brackets in keys); any other shape is left whole; and an
 * informer of the factory gets its Nodes without the managedFields ever decoded.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import test from 'ava';
import type { V1Node } from '@kubernetes/client-node';
import { makeClients } from '../../../host/kube/client.js';
import { singleConfig } from '../../../host/kube/kubeconfig.js';
import { InformerFactory } from '../../../host/kube/informer-factory.js';
import { watch, withoutManagedFields } from '../../../host/kube/watch.js';
import { silentLogger } from '../../../host/log.js';
import { waitFor } from '../../helpers/wait.js';

/** managedFields as the API server writes them, with the characters a naive cut trips on. */
const MANAGED = [
  {
    manager: 'kubelet',
    operation: 'Update',
    apiVersion: 'v1',
    time: '2026-11-28T22:04:01Z',
    fieldsType: 'FieldsV1',
    fieldsV1: { 'f:status': { 'f:addresses': { '.': {}, 'k:{"type":"Hostname"}': { '.': {}, 'f:address': {} } }, 'f:conditions': {} } },
  },
  { manager: 'x]}", \\"tricky\\\\', operation: 'Apply', apiVersion: 'v1', fieldsType: 'FieldsV1', fieldsV1: { 'f:spec': { 'f:taints': {} } } },
];

const event = (metadata: Record<string, unknown>, rest: Record<string, unknown> = {}) =>
  JSON.stringify({ type: 'MODIFIED', object: { kind: 'Node', apiVersion: 'v1', metadata, ...rest } });

const CUT: { name: string; line: string }[] = [
  {
    name: 'a Node as the API server writes it (managedFields last)',
    line: event(
      {
        name: 'n1',
        uid: 'u1',
        resourceVersion: '5',
        labels: { a: 'b' },
        annotations: { note: 'has "managedFields":[1] in text' },
        managedFields: MANAGED,
      },
      { spec: { providerID: 'local://i-1' }, status: { addresses: [{ type: 'InternalIP', address: '10.0.0.1' }] } },
    ),
  },
  { name: 'managedFields as the only member of metadata', line: event({ managedFields: MANAGED }) },
  {
    name: 'an annotation named managedFields (a string, not the field)',
    line: event({ name: 'n', annotations: { managedFields: '[]' }, managedFields: MANAGED }),
  },
  { name: 'an empty managedFields', line: event({ name: 'n', managedFields: [] }) },
];

for (const row of CUT) {
  test(`withoutManagedFields cuts: ${row.name}`, (t) => {
    const cut = withoutManagedFields(row.line);
    t.not(cut, row.line);
    const want = JSON.parse(row.line) as { object: { metadata: Record<string, unknown> } };
    delete want.object.metadata.managedFields;
    t.deepEqual(JSON.parse(cut), want);
  });
}

const WHOLE: { name: string; line: string }[] = [
  { name: 'no managedFields', line: event({ name: 'n', labels: { a: 'b' } }, { spec: {} }) },
  { name: 'managedFields not last (a custom resource, keys sorted)', line: event({ managedFields: MANAGED, name: 'n' }) },
  { name: 'managedFields only deeper than metadata', line: event({ name: 'n', ownerReferences: [{ managedFields: [1] }] }) },
  { name: 'managedFields in spec only', line: event({ name: 'n' }, { spec: { managedFields: [1] } }) },
  { name: 'a bookmark', line: JSON.stringify({ type: 'BOOKMARK', object: { kind: 'Node', apiVersion: 'v1', metadata: { resourceVersion: '9' } } }) },
  { name: 'an error Status', line: JSON.stringify({ type: 'ERROR', object: { kind: 'Status', metadata: {}, code: 410 } }) },
  { name: 'text cut short', line: event({ name: 'n', managedFields: MANAGED }).slice(0, 120) },
];

for (const row of WHOLE) {
  test(`withoutManagedFields leaves whole: ${row.name}`, (t) => {
    t.is(withoutManagedFields(row.line), row.line);
  });
}

/** A server answering every watch with `lines` and every list with an empty NodeList. */
async function server(lines: string[]): Promise<{ url: string; close(): Promise<void> }> {
  const s = http.createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    if (req.url?.includes('watch=true')) {
      res.write(lines.map((l) => l + '\n').join(''));
      // Left open: the informer's watch stays up, as against a real API server.
    } else res.end(JSON.stringify({ kind: 'NodeList', apiVersion: 'v1', metadata: { resourceVersion: '1' }, items: [] }));
  });
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(s.address() as AddressInfo).port}`,
    close: () => new Promise((resolve) => (s.closeAllConnections(), s.close(() => resolve()))),
  };
}

test('watch: with skipManagedFields the object arrives without them; without, with them', async (t) => {
  const line = CUT[0]!.line;
  const srv = await server([line]);
  t.teardown(() => srv.close());
  const clients = makeClients(singleConfig({ name: 'c', server: srv.url, skipTLSVerify: true }, { name: 'u', token: 't' }), {
    userAgent: 't',
    qps: 1000,
    burst: 1000,
  });
  t.teardown(() => clients.connections.destroy());
  for (const skipManagedFields of [true, false]) {
    const ac = new AbortController();
    let got: { metadata?: Record<string, unknown> } | undefined;
    await watch(
      clients.rest,
      '/api/v1/nodes',
      {},
      (_type, obj) => {
        got = obj as typeof got;
        ac.abort();
      },
      ac.signal,
      { skipManagedFields },
    );
    t.is('managedFields' in (got?.metadata ?? {}), !skipManagedFields);
    t.is(got?.metadata?.name, 'n1');
  }
});

test('the factory’s Node informer never decodes managedFields', async (t) => {
  const srv = await server([CUT[0]!.line]);
  t.teardown(() => srv.close());
  const clients = makeClients(singleConfig({ name: 'c', server: srv.url, skipTLSVerify: true }, { name: 'u', token: 't' }), {
    userAgent: 't',
    qps: 1000,
    burst: 1000,
  });
  t.teardown(() => clients.connections.destroy());
  const factory = new InformerFactory({ clients, log: silentLogger(), nodeSelector: '', namespace: '' });
  const nodes = factory.nodes();
  // The transform sees what was decoded: without managedFields, the key is absent (the transform would set it to undefined).
  const seen: V1Node[] = [];
  nodes.addEventHandler({ onAdd: (n) => seen.push(n) });
  factory.start();
  t.teardown(() => factory.stop());
  await waitFor(() => seen.length > 0, { what: 'the watched Node in the cache', timeoutMs: 10_000 });
  t.is(seen.length, 1);
  t.false('managedFields' in (seen[0]!.metadata ?? {}));
  t.deepEqual(seen[0]!.spec, { providerID: 'local://i-1' });
});
