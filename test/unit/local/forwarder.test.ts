/**
 * The local cloud's load balancer data plane against real sockets: TCP and
 * UDP through the ingress address to backends at their node port, backend
 * changes, deletion, and restoring listeners from the state on disk.
 */
import test from 'ava';
import { defaultMaxListeners, Forwarder } from '../../../plugins/local/forwarder.js';
import { StateStore, type LoadBalancerRecord } from '../../../plugins/local/state.js';
import { silentLogger } from '../../../plugins/local/context.js';
import { freePorts } from '../../controlplane/probe.js';
import { startTcpBackend, startUdpBackend, tcpRequest, udpRequest, type Backend } from '../../helpers/backends.js';
import { tempDir } from './_helpers.js';

// Loopback addresses of this file only (other test files use other 127.x ranges).
const INGRESS = '127.0.59.1';
const NODE_A = '127.0.59.11';
const NODE_B = '127.0.59.12';

function lbRecord(port: number, nodePort: number, backends: string[], protocol: 'TCP' | 'UDP' = 'TCP'): LoadBalancerRecord {
  return {
    name: 'lb-test-1',
    clusterName: 'test',
    serviceUid: 'u1',
    serviceNamespace: 'ns',
    serviceName: 'svc',
    ingressIp: INGRESS,
    ipMode: 'VIP',
    ports: [{ name: '', protocol, port, nodePort }],
    backends: backends.map((address, i) => ({ nodeName: `n${i}`, address })),
    sourceRanges: [],
    externalTrafficPolicy: 'Cluster',
    healthCheckNodePort: 0,
    sessionAffinity: 'None',
    createdAt: new Date().toISOString(),
  };
}

test.serial('TCP: round-robin over backends, follows backend and port changes, closes on delete, restored by a new forwarder', async (t) => {
  const store = new StateStore(await tempDir(t));
  const [port, port2, nodePort] = await freePorts(3);
  const backends: Backend[] = [await startTcpBackend('a', NODE_A, nodePort!), await startTcpBackend('b', NODE_B, nodePort!)];
  t.teardown(() => Promise.all(backends.map((b) => b.close())).then(() => undefined));
  const fwd = new Forwarder(store, silentLogger, 100);
  t.teardown(() => fwd.close());

  await store.update((d) => void d.loadBalancers.push(lbRecord(port!, nodePort!, [NODE_A, NODE_B])));
  await fwd.start();
  const answers = new Set<string>();
  for (let i = 0; i < 4; i++) answers.add(await tcpRequest(INGRESS, port!));
  t.deepEqual([...answers].sort(), ['a', 'b'], 'both backends receive traffic');

  await store.update((d) => void (d.loadBalancers[0]!.backends = [{ nodeName: 'n0', address: NODE_A }]));
  await fwd.sync();
  for (let i = 0; i < 4; i++) t.is(await tcpRequest(INGRESS, port!), 'a', 'a removed node gets no traffic');

  await store.update((d) => void (d.loadBalancers[0]!.ports[0]!.port = port2!));
  await fwd.sync();
  t.is(await tcpRequest(INGRESS, port2!), 'a');
  await t.throwsAsync(tcpRequest(INGRESS, port!), undefined, 'the old port is closed');

  await fwd.close();
  const again = new Forwarder(store, silentLogger, 100);
  t.teardown(() => again.close());
  await again.start();
  t.is(await tcpRequest(INGRESS, port2!), 'a', 'a new forwarder restores listeners from the state');

  await store.update((d) => void (d.loadBalancers = []));
  await again.sync();
  await t.throwsAsync(tcpRequest(INGRESS, port2!), undefined, 'a deleted load balancer stops listening');
});

test.serial('UDP: datagrams are relayed to a backend and answered', async (t) => {
  const store = new StateStore(await tempDir(t));
  const [port, nodePort] = await freePorts(2);
  const backend = await startUdpBackend('u', NODE_A, nodePort!);
  t.teardown(() => backend.close());
  const fwd = new Forwarder(store, silentLogger, 100);
  t.teardown(() => fwd.close());
  await store.update((d) => void d.loadBalancers.push(lbRecord(port!, nodePort!, [NODE_A], 'UDP')));
  await fwd.start();
  t.is(await udpRequest(INGRESS, port!), 'u');
  t.is(await udpRequest(INGRESS, port!), 'u');
});

test.serial('source ranges: a client outside them is refused', async (t) => {
  const store = new StateStore(await tempDir(t));
  const [port, nodePort] = await freePorts(2);
  const backend = await startTcpBackend('a', NODE_A, nodePort!);
  t.teardown(() => backend.close());
  const fwd = new Forwarder(store, silentLogger, 100);
  t.teardown(() => fwd.close());
  const rec = lbRecord(port!, nodePort!, [NODE_A]);
  rec.sourceRanges = ['10.0.0.0/8'];
  await store.update((d) => void d.loadBalancers.push(rec));
  await fwd.start();
  await t.throwsAsync(tcpRequest(INGRESS, port!));
  await store.update((d) => void (d.loadBalancers[0]!.sourceRanges = ['127.0.0.0/8']));
  await fwd.sync();
  t.is(await tcpRequest(INGRESS, port!), 'a');
});

test.serial(
  'listeners are bounded: past maxListeners a load balancer stays a record without traffic, and gets its listener when another is deleted',
  async (t) => {
    const store = new StateStore(await tempDir(t));
    const [port1, port2, nodePort] = await freePorts(3);
    const backend = await startTcpBackend('a', NODE_A, nodePort!);
    t.teardown(() => backend.close());
    const fwd = new Forwarder(store, silentLogger, 100, 1);
    t.teardown(() => fwd.close());
    const first = { ...lbRecord(port1!, nodePort!, [NODE_A]), name: 'lb-cap-1' };
    const second = { ...lbRecord(port2!, nodePort!, [NODE_A]), name: 'lb-cap-2', serviceUid: 'u2' };
    await store.update((d) => void d.loadBalancers.push(first, second));
    await fwd.start();
    t.is(fwd.bound().length, 1, 'one listener, the bound');
    t.is(await tcpRequest(INGRESS, port1!), 'a', 'the first load balancer carries traffic');
    await t.throwsAsync(tcpRequest(INGRESS, port2!), undefined, 'the second has no listener');

    await store.update((d) => void (d.loadBalancers = d.loadBalancers.filter((l) => l.name !== 'lb-cap-1')));
    await fwd.sync();
    t.is(await tcpRequest(INGRESS, port2!), 'a', 'the freed place goes to the second');
    t.is(fwd.bound().length, 1);
  },
);

test('defaultMaxListeners: the soft open-file limit less the reserve', (t) => {
  const limits = (soft: string) =>
    `Limit                     Soft Limit           Hard Limit           Units\nMax open files            ${soft}                 1048576              files\n`;
  t.is(defaultMaxListeners(limits('20000')), 20000 - 1024);
  t.is(defaultMaxListeners(limits('512')), 1, 'never below one');
  t.is(defaultMaxListeners(limits('unlimited')), Infinity);
  t.is(defaultMaxListeners(''), 4096, 'no open-file line: the fixed default');
});
