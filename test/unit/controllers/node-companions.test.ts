/**
 * The cloud node controller's batch companions (host/controllers/node/node-controller.ts): a lookup for one
 * tainted Node also asks for the other owned Nodes still tainted, found through the controller's index of
 * tainted Nodes (kept by its informer handlers) rather than by listing every Node per lookup, and each
 * re-read from the cache, so a Node initialized, deleted or another provider's since it was indexed is not sent.
 */
import test from 'ava';
import type { V1Node } from '@kubernetes/client-node';
import type { InstanceMetadata, Instances, MetadataResult, NodeRef, StatusResult } from '../../../host/cloud.js';
import { CloudNodeController } from '../../../host/controllers/node/node-controller.js';
import type { CoreV1Api } from '../../../host/kube/api.js';
import type { EventRecorder } from '../../../host/kube/events.js';
import type { InformerHandler } from '../../../host/kube/informer.js';
import type { InformerView } from '../../../host/kube/shard-view.js';
import { silentLogger } from '../../../host/log.js';
import { Taints } from '../../../host/names.js';

const TAINT = { key: Taints.UNINITIALIZED, value: 'true', effect: 'NoSchedule' };

function node(name: string, opts: { tainted?: boolean; providerID?: string } = {}): V1Node {
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name, uid: `uid-${name}`, resourceVersion: '1' },
    spec: { taints: opts.tainted === false ? [] : [TAINT], ...(opts.providerID ? { providerID: opts.providerID } : {}) },
  };
}

/** An informer view over a map, counting `list()` calls, whose changes reach the handlers as the informer's do. */
class FakeNodes implements InformerView<V1Node> {
  readonly cache = new Map<string, V1Node>();
  listCalls = 0;
  /** Names read with get(), in order. */
  readonly reads: string[] = [];
  private readonly handlers: InformerHandler<V1Node>[] = [];
  addEventHandler(h: InformerHandler<V1Node>): void {
    this.handlers.push(h);
    for (const n of this.cache.values()) h.onAdd?.(n);
  }
  hasSynced(): boolean {
    return true;
  }
  waitForSync(): Promise<boolean> {
    return Promise.resolve(true);
  }
  list(): V1Node[] {
    this.listCalls++;
    return [...this.cache.values()];
  }
  get(key: string): V1Node | undefined {
    this.reads.push(key);
    return this.cache.get(key);
  }
  set(n: V1Node): void {
    const old = this.cache.get(n.metadata!.name!);
    this.cache.set(n.metadata!.name!, n);
    for (const h of this.handlers) {
      if (old) h.onUpdate?.(old, n);
      else h.onAdd?.(n);
    }
  }
  delete(name: string): void {
    const old = this.cache.get(name)!;
    this.cache.delete(name);
    for (const h of this.handlers) h.onDelete?.(old);
  }
}

/** A batched provider recording each batch call's node names; every call fails, so sync ends before any write. */
class RecordingInstances implements Instances {
  readonly batched = true;
  readonly calls: string[][] = [];
  instancesMetadata(nodes: NodeRef[]): Promise<MetadataResult[]> {
    this.calls.push(nodes.map((n) => n.name));
    return Promise.reject(new Error('cloud unavailable'));
  }
  instanceMetadata(): Promise<InstanceMetadata> {
    throw new Error('not used');
  }
  instanceExists(): Promise<boolean> {
    throw new Error('not used');
  }
  instanceShutdown(): Promise<boolean> {
    throw new Error('not used');
  }
  instancesStatus(): Promise<StatusResult[]> {
    throw new Error('not used');
  }
}

function controller(nodes: FakeNodes, instances: Instances): CloudNodeController {
  return new CloudNodeController({
    core: {} as CoreV1Api,
    nodes,
    instances,
    providerName: 'fake',
    recorder: { event: () => undefined } as unknown as EventRecorder,
    log: silentLogger(),
    workers: 1,
    statusUpdateFrequencyMs: 300_000,
    statusUpdateConcurrency: 1,
  });
}

/** The companions the batch call for `name` carried (sorted), and how often the Nodes were listed meanwhile. */
async function companionsOf(nodes: FakeNodes, ctl: CloudNodeController, instances: RecordingInstances, name: string) {
  const listed = nodes.listCalls;
  await ctl.sync(name).catch(() => undefined);
  const call = instances.calls.at(-1) ?? [];
  return { first: call[0], companions: call.slice(1).sort(), lists: nodes.listCalls - listed };
}

test('a batched lookup asks for the other tainted owned Nodes, without listing every Node', async (t) => {
  const nodes = new FakeNodes();
  for (let i = 0; i < 4; i++) nodes.cache.set(`t${i}`, node(`t${i}`));
  nodes.cache.set('done', node('done', { tainted: false, providerID: 'fake://done' }));
  nodes.cache.set('other', node('other', { providerID: 'other://x' }));
  const instances = new RecordingInstances();
  const ctl = controller(nodes, instances);
  // A Node tainted after the controller started, one initialized since it was indexed, one deleted.
  nodes.set(node('late'));
  nodes.set(node('t3', { tainted: false, providerID: 'fake://t3' }));
  nodes.delete('t2');
  const r = await companionsOf(nodes, ctl, instances, 't0');
  t.is(r.first, 't0');
  t.deepEqual(r.companions, ['late', 't1']);
  t.is(r.lists, 0, 'companions come from the tainted index, not from listing every Node');
});

test('a companion is re-read from the cache: a Node the index still names but initialized or deleted since is not sent', async (t) => {
  const nodes = new FakeNodes();
  for (const n of ['a', 'b', 'c']) nodes.cache.set(n, node(n));
  const instances = new RecordingInstances();
  const ctl = controller(nodes, instances);
  // Changed in the cache without the handlers hearing of it yet (the index is stale).
  nodes.cache.set('b', node('b', { tainted: false, providerID: 'fake://b' }));
  nodes.cache.delete('c');
  const r = await companionsOf(nodes, ctl, instances, 'a');
  t.deepEqual(r.companions, []);
});

test('a Node the batcher asked for within the TTL is passed over without being read from the cache', async (t) => {
  const nodes = new FakeNodes();
  for (const n of ['a', 'b', 'c', 'd']) nodes.cache.set(n, node(n));
  const instances = new RecordingInstances();
  const ctl = controller(nodes, instances);
  t.deepEqual((await companionsOf(nodes, ctl, instances, 'a')).companions, ['b', 'c', 'd']);
  // The call failed, so nothing was prefetched, but every companion counts as asked for: b's own lookup
  // carries none, and reads no Node but b.
  nodes.reads.length = 0;
  const second = await companionsOf(nodes, ctl, instances, 'b');
  t.is(second.first, 'b');
  t.deepEqual(second.companions, []);
  t.deepEqual(nodes.reads, ['b']);
});
