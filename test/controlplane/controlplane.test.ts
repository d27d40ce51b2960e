/**
 * Smoke test of the real control plane: the API answers writes, reads and
 * watches through @kubernetes/client-node.
 */
import test from 'ava';
import { CoreV1Api, Watch, type V1ConfigMap } from '@kubernetes/client-node';
import { testKubeConfig } from './shared.js';

test('namespace and ConfigMap round-trip, and a watch sees ADDED', async (t) => {
  const kc = await testKubeConfig();
  const core = kc.makeApiClient(CoreV1Api);
  const ns = `smoke-${Date.now().toString(36)}`;

  await core.createNamespace({ body: { metadata: { name: ns } } });
  await core.createNamespacedConfigMap({
    namespace: ns,
    body: { metadata: { name: 'first' }, data: { greeting: 'hello' } },
  });
  const read = await core.readNamespacedConfigMap({ namespace: ns, name: 'first' });
  t.is(read.data?.greeting, 'hello');

  const added = new Promise<V1ConfigMap>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('no ADDED event within 15s')), 15_000);
    const controller = new Watch(kc).watch(
      `/api/v1/namespaces/${ns}/configmaps`,
      { resourceVersion: read.metadata?.resourceVersion },
      (phase, obj: V1ConfigMap) => {
        if (phase === 'ADDED' && obj.metadata?.name === 'second') {
          clearTimeout(timer);
          resolve(obj);
          void controller.then((c) => c.abort());
        }
      },
      (err: unknown) => {
        if (err && (err as Error).name !== 'AbortError') {
          clearTimeout(timer);
          reject(err instanceof Error ? err : new Error(String(err)));
        }
      },
    );
    controller.catch(reject);
  });
  // The watch starts from the resourceVersion read above, so creating after
  // issuing it cannot race: the event is delivered either way.
  await core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: 'second' }, data: { n: '2' } } });
  const ev = await added;
  t.is(ev.data?.n, '2');

  await core.deleteNamespace({ name: ns });
});
