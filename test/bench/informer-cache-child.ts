/**
 * Child process of the informer-cache benchmark (run with --expose-gc):
 * syncs one Nodes informer and prints, as one JSON line, how much heap the
 * cache added and the process RSS. Arguments: kubeconfig path, label
 * selector, and `raw` (an informer that keeps objects as listed) or `host`
 * (the host's shared Nodes informer, with its cache transform).
 */
import { KubeConfig } from '@kubernetes/client-node';
import { makeClients } from '../../host/kube/client.js';
import { InformerFactory } from '../../host/kube/informer-factory.js';
import { Informer } from '../../host/kube/informer.js';
import { silentLogger } from '../../host/log.js';

const [kubeconfig, selector, mode] = process.argv.slice(2);
const gc = (globalThis as { gc?: () => void }).gc;
if (!kubeconfig || !selector || (mode !== 'raw' && mode !== 'host') || !gc) {
  throw new Error('usage: node --expose-gc informer-cache-child.js <kubeconfig> <label selector> raw|host');
}
const kc = new KubeConfig();
kc.loadFromFile(kubeconfig);
const log = silentLogger();
const clients = makeClients(kc, { userAgent: 'bench-informer-cache', qps: 1000, burst: 1000 });
// Warm up what both modes load (client, serializer) before the baseline.
await clients.core.listNode({ labelSelector: selector, limit: 1 });
gc();
const before = process.memoryUsage().heapUsed;
const factory = new InformerFactory({ clients, log, nodeSelector: selector, namespace: '' });
const informer =
  mode === 'host'
    ? factory.nodes()
    : new Informer(clients.rest, '/api/v1/nodes', () => clients.core.listNode({ labelSelector: selector }), { log, labelSelector: selector });
if (mode === 'host') factory.start();
else informer.start();
await informer.waitForSync();
await new Promise((r) => setTimeout(r, 500));
gc();
gc();
const usage = process.memoryUsage();
process.stdout.write(
  `${JSON.stringify({ mode, nodes: informer.list().length, cacheHeapMb: (usage.heapUsed - before) / 2 ** 20, rssMb: usage.rss / 2 ** 20 })}\n`,
);
await (mode === 'host' ? factory.stop() : informer.stop());
clients.connections.destroy();
