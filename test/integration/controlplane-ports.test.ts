/**
 * The control plane's ports are picked free (freePorts) and released before
 * etcd and kube-apiserver bind them, so another test's cluster can take one in
 * between. When another cluster's etcd holds the port picked for ours, our etcd
 * exits (address in use) while the other answers /health: the start must not
 * take that for ours (a kube-apiserver on another test's etcd: two tests'
 * objects in one store, docs/testing.md "Ports picked free") but retry on new
 * ports. Two real clusters; the second is handed the first one's etcd port.
 */
import test from 'ava';
import { randomBytes } from 'node:crypto';
import { CoreV1Api } from '@kubernetes/client-node';
import { ControlPlane } from '../controlplane/controlplane.js';
import { freePorts } from '../controlplane/probe.js';

test("a cluster handed a port another cluster's etcd holds starts on an etcd of its own: retried on new ports, none of the other's objects", async (t) => {
  const other = await ControlPlane.start({ controllerManager: false });
  t.teardown(() => other.stop());
  const ns = `only-in-other-${randomBytes(3).toString('hex')}`;
  await other
    .kubeConfig()
    .makeApiClient(CoreV1Api)
    .createNamespace({ body: { metadata: { name: ns } } });
  const taken = Number(new URL(other.etcdEndpoint).port);

  const picked: number[][] = [];
  const pickPorts = async (n: number) => {
    const ports = await freePorts(n);
    if (picked.length === 0) ports[0] = taken; // the etcd client port: the other cluster's
    picked.push(ports);
    return ports;
  };
  const ours = await ControlPlane.start({ controllerManager: false, pickPorts });
  t.teardown(() => ours.stop());

  t.is(picked.length, 2, 'the clash was retried once, on new ports');
  t.not(new URL(ours.etcdEndpoint).port, String(taken));
  const names = (await ours.kubeConfig().makeApiClient(CoreV1Api).listNamespace()).items.map((n) => n.metadata?.name);
  t.false(names.includes(ns), "our apiserver stores into our etcd: the other cluster's namespace is not there");
  t.true(names.includes('kube-system'));
});
