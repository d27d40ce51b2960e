/**
 * LeaderElector over a real coordination.k8s.io/v1 Lease in kube-apiserver:
 * creation, renewal with MicroTime timestamps (keeping others' labels),
 * exclusive holding, release and take-over. Each test uses its own namespace and lease name.
 */
import test from 'ava';
import { CoordinationV1Api, CoreV1Api } from '@kubernetes/client-node';
import { makeClients } from '../../../host/kube/client.js';
import { KubeLeaseLock, LeaderElector, newLeaderIdentity } from '../../../host/kube/leader-election.js';
import { createLogger } from '../../../host/log.js';
import { testKubeConfig } from '../../controlplane/shared.js';
import { waitFor } from '../../helpers/wait.js';

const log = createLogger({ verbosity: 0, destination: { write: () => true } as never });
const TIMING = { leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 300 };

test('two electors on one real Lease: one leads, renews with microsecond timestamps, releases, the other takes over', async (t) => {
  const kc = await testKubeConfig();
  const core = kc.makeApiClient(CoreV1Api);
  const coordination = kc.makeApiClient(CoordinationV1Api);
  const hostCoordination = makeClients(kc, { userAgent: 'ha-lease-test' }).coordination;
  const namespace = `ha-lease-${Date.now().toString(36)}`;
  await core.createNamespace({ body: { metadata: { name: namespace } } });
  t.teardown(() =>
    core.deleteNamespace({ name: namespace }).then(
      () => undefined,
      () => undefined,
    ),
  );

  const make = () => {
    const identity = newLeaderIdentity();
    const elector = new LeaderElector({ lock: new KubeLeaseLock(hostCoordination, namespace, 'ccm'), identity, log, ...TIMING });
    const stop = new AbortController();
    let leading = false;
    const outcome = elector.run(stop.signal, async (signal) => {
      leading = true;
      await new Promise<void>((r) => signal.addEventListener('abort', () => r(), { once: true }));
      leading = false;
    });
    return { identity, elector, stop, outcome, isLeading: () => leading };
  };
  const a = make();
  await waitFor(() => a.isLeading(), { what: 'first elector leads' });
  const b = make();
  const first = await coordination.readNamespacedLease({ name: 'ccm', namespace });
  t.is(first.spec?.holderIdentity, a.identity);
  t.is(first.spec?.leaseDurationSeconds, 3);
  t.truthy(first.spec?.acquireTime);
  // Renewals move renewTime; the holder stays.
  const renewed = await waitFor(
    async () => {
      const l = await coordination.readNamespacedLease({ name: 'ccm', namespace });
      return l.metadata?.resourceVersion !== first.metadata?.resourceVersion ? l : undefined;
    },
    { what: 'a renewal' },
  );
  t.is(renewed.spec?.holderIdentity, a.identity);
  t.true(new Date(renewed.spec!.renewTime as unknown as string).getTime() >= new Date(first.spec!.renewTime as unknown as string).getTime());
  // A label someone else sets survives the renewals (a replace carries back what it read, as client-go's LeaseLock).
  const labelled = await waitFor(
    async () => {
      const l = await coordination.readNamespacedLease({ name: 'ccm', namespace });
      l.metadata!.labels = { ...l.metadata!.labels, 'example.com/team': 'ops' };
      return coordination.replaceNamespacedLease({ name: 'ccm', namespace, body: l }).catch(() => undefined);
    },
    { what: 'a label set on the Lease' },
  );
  const relabelled = await waitFor(
    async () => {
      const l = await coordination.readNamespacedLease({ name: 'ccm', namespace });
      return l.metadata?.resourceVersion !== labelled.metadata?.resourceVersion ? l : undefined;
    },
    { what: 'a renewal after the label' },
  );
  t.is(relabelled.spec?.holderIdentity, a.identity);
  t.is(relabelled.metadata?.labels?.['example.com/team'], 'ops', 'the renewal kept the label');
  await new Promise((r) => setTimeout(r, 2 * TIMING.leaseDurationMs));
  t.false(b.isLeading(), 'the second never leads while the first renews');

  a.stop.abort();
  t.is(await a.outcome, 'released');
  await waitFor(() => b.isLeading(), { what: 'second elector takes over' });
  const taken = await coordination.readNamespacedLease({ name: 'ccm', namespace });
  t.is(taken.spec?.holderIdentity, b.identity);
  t.is(taken.spec?.leaseTransitions, 1);
  b.stop.abort();
  t.is(await b.outcome, 'released');
  const released = await coordination.readNamespacedLease({ name: 'ccm', namespace });
  t.is(released.spec?.holderIdentity ?? '', '');
});
