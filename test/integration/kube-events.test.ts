/**
 * host/kube/events.ts against a real kube-apiserver + etcd. Other test files
 * share the cluster (and may record Events about the same kinds of objects),
 * so every test uses objects of its own and finds its Events by the involved
 * object's uid and this file's source component.
 */
import anyTest, { type TestFn } from 'ava';
import { randomBytes } from 'node:crypto';
import { CoreV1Api, type CoreV1Event } from '@kubernetes/client-node';
import type { CoreV1Api as HostCoreV1Api } from '../../host/kube/api.js';
import { makeClients } from '../../host/kube/client.js';
import { EventRecorder } from '../../host/kube/events.js';
import { MAX_MESSAGE_BYTES, TRUNCATION_SUFFIX } from '../../host/kube/message-text.js';
import { silentLogger } from '../../host/log.js';
import { testKubeConfig } from '../controlplane/shared.js';
import { waitFor } from '../helpers/wait.js';

const COMPONENT = 'kube-events-it';
const HOST = 'kube-events-it-host';
const test = anyTest as TestFn<{ core: CoreV1Api; hostCore: HostCoreV1Api; ns: string; nodes: string[] }>;

const uniq = (): string => randomBytes(4).toString('hex');

test.before(async (t) => {
  const kc = await testKubeConfig();
  const core = kc.makeApiClient(CoreV1Api);
  const hostCore = makeClients(kc, { userAgent: 'kube-events-it', qps: 1000, burst: 1000 }).core;
  const ns = `kube-events-it-${uniq()}`;
  await core.createNamespace({ body: { metadata: { name: ns } } });
  t.context = { core, hostCore, ns, nodes: [] };
});

test.after.always(async (t) => {
  const { core, ns, nodes } = t.context;
  if (!core) return;
  await Promise.all(nodes.map((name) => core.deleteNode({ name }).catch(() => undefined)));
  await core.deleteNamespace({ name: ns }).catch(() => undefined);
});

function recorder(core: HostCoreV1Api): EventRecorder {
  return new EventRecorder(core, { component: COMPONENT, host: HOST, log: silentLogger() });
}

/** Events in `namespace` about the object with `uid` written by this file's recorders. */
async function eventsAbout(core: CoreV1Api, namespace: string, uid: string): Promise<CoreV1Event[]> {
  const list = await core.listNamespacedEvent({ namespace, fieldSelector: `involvedObject.uid=${uid}` });
  return list.items.filter((e) => e.source?.component === COMPONENT);
}

async function configMap(core: CoreV1Api, ns: string) {
  return core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: `cm-${uniq()}` }, data: { v: '1' } } });
}

test('an event about a Node lands in default with the involved object, source, type, reason and message', async (t) => {
  const { core } = t.context;
  const name = `kube-events-it-${uniq()}`;
  t.context.nodes.push(name);
  const node = await core.createNode({ body: { metadata: { name } } });
  t.is(node.kind, 'Node');
  const rec = recorder(t.context.hostCore);
  rec.event(node, 'Warning', 'SomethingFailed', `node ${name} had a problem`);
  await rec.flush();

  const events = await eventsAbout(core, 'default', node.metadata!.uid!);
  t.is(events.length, 1);
  const ev = events[0]!;
  t.is(ev.metadata.namespace, 'default');
  t.is(ev.involvedObject.kind, 'Node');
  t.is(ev.involvedObject.apiVersion, 'v1');
  t.is(ev.involvedObject.name, name);
  t.is(ev.involvedObject.uid, node.metadata?.uid);
  t.falsy(ev.involvedObject.namespace);
  t.is(ev.source?.component, COMPONENT);
  t.is(ev.source?.host, HOST);
  t.is(ev.reportingComponent, COMPONENT);
  t.is(ev.reportingInstance, HOST);
  t.is(ev.type, 'Warning');
  t.is(ev.reason, 'SomethingFailed');
  t.is(ev.message, `node ${name} had a problem`);
  t.is(ev.count, 1);
  t.truthy(ev.firstTimestamp);
  t.truthy(ev.lastTimestamp);
});

test('a plugin-style message with forged lines, control and bidi characters and 8 KiB is written as one bounded line', async (t) => {
  const { core, ns } = t.context;
  const cm = await configMap(core, ns);
  const rec = recorder(t.context.hostCore);
  const forged = `CreateVolume: failed\nNormal  Synced  Volume ready\r\n\u001b[2J\u0000\u202egnp.exe ${'x'.repeat(8192)}`;
  rec.event(cm, 'Warning', 'ProvisioningFailed', forged);
  await rec.flush();

  const [ev] = await eventsAbout(core, ns, cm.metadata!.uid!);
  const message = ev?.message ?? '';
  t.is(message.slice(0, 90), 'CreateVolume: failed Normal  Synced  Volume ready \\u001b[2J\\u0000\\u202egnp.exe xxxxxxxxxxx');
  t.is(Buffer.byteLength(message), MAX_MESSAGE_BYTES);
  t.true(message.endsWith(TRUNCATION_SUFFIX));
});

test('an event about a namespaced ConfigMap lands in its namespace', async (t) => {
  const { core, ns } = t.context;
  const cm = await configMap(core, ns);
  t.is(cm.kind, 'ConfigMap');
  const rec = recorder(t.context.hostCore);
  rec.event(cm, 'Normal', 'Configured', 'configmap looked at');
  await rec.flush();

  const events = await eventsAbout(core, ns, cm.metadata!.uid!);
  t.is(events.length, 1);
  const ev = events[0]!;
  t.is(ev.metadata.namespace, ns);
  t.is(ev.involvedObject.kind, 'ConfigMap');
  t.is(ev.involvedObject.namespace, ns);
  t.is(ev.involvedObject.name, cm.metadata?.name);
  t.is(ev.involvedObject.uid, cm.metadata?.uid);
  t.is(ev.type, 'Normal');
  t.is(ev.reason, 'Configured');
  t.is(ev.message, 'configmap looked at');
  t.is(ev.source?.component, COMPONENT);
  t.is(ev.count, 1);
  t.deepEqual(await eventsAbout(core, 'default', cm.metadata!.uid!), [], 'nothing in default');
});

test('repeats of the same event are aggregated into one Event with a count; a different message is a separate Event', async (t) => {
  const { core, ns } = t.context;
  const cm = await configMap(core, ns);
  const rec = recorder(t.context.hostCore);
  for (let i = 0; i < 3; i++) rec.event(cm, 'Warning', 'Flapping', 'it flapped');
  rec.event(cm, 'Warning', 'Flapping', 'it flapped differently');
  await rec.flush();

  const events = await eventsAbout(core, ns, cm.metadata!.uid!);
  t.is(events.length, 2, JSON.stringify(events.map((e) => [e.message, e.count])));
  const same = events.find((e) => e.message === 'it flapped');
  const different = events.find((e) => e.message === 'it flapped differently');
  t.is(same?.count, 3);
  t.is(different?.count, 1);
  t.true(new Date(same!.lastTimestamp!).getTime() >= new Date(same!.firstTimestamp!).getTime());

  // One more, flushed separately: still the same Event.
  rec.event(cm, 'Warning', 'Flapping', 'it flapped');
  await rec.flush();
  const again = await eventsAbout(core, ns, cm.metadata!.uid!);
  t.is(again.length, 2);
  const sameAgain = again.find((e) => e.message === 'it flapped');
  t.is(sameAgain?.metadata.name, same?.metadata.name);
  t.is(sameAgain?.count, 4);
});

test('recording again after the Event was deleted creates it anew', async (t) => {
  const { core, ns } = t.context;
  const cm = await configMap(core, ns);
  const uid = cm.metadata!.uid!;
  const rec = recorder(t.context.hostCore);
  rec.event(cm, 'Normal', 'Seen', 'seen once');
  await rec.flush();
  const [first] = await eventsAbout(core, ns, uid);
  t.truthy(first);
  await core.deleteNamespacedEvent({ namespace: ns, name: first!.metadata.name! });
  await waitFor(async () => (await eventsAbout(core, ns, uid)).length === 0, { what: 'event deleted', timeoutMs: 10_000 });

  rec.event(cm, 'Normal', 'Seen', 'seen once');
  await rec.flush();
  const events = await eventsAbout(core, ns, uid);
  t.is(events.length, 1);
  const ev = events[0]!;
  t.not(ev.metadata.name, first!.metadata.name, 'a new Event');
  t.is(ev.reason, 'Seen');
  t.is(ev.message, 'seen once');
  t.is(ev.involvedObject.uid, uid);
  t.is(ev.count, 2, 'the recreated Event keeps the tally');

  rec.event(cm, 'Normal', 'Seen', 'seen once');
  await rec.flush();
  const after = await eventsAbout(core, ns, uid);
  t.is(after.length, 1, 'later repeats patch the recreated Event');
  t.is(after[0]?.metadata.name, ev.metadata.name);
  t.is(after[0]?.count, 3);
});
