/**
 * The informer-sync readiness check: when a replica counts as needing synced caches.
 */
import test from 'ava';
import type { KubeClients } from '../../../host/kube/client.js';
import { InformerFactory } from '../../../host/kube/informer-factory.js';
import { silentLogger } from '../../../host/log.js';
import { informerSyncProblem } from '../../../host/start/controllers.js';

const ROWS: { what: string; leaderElect: boolean; leading: boolean; synced: boolean | undefined; problem: string | undefined }[] = [
  { what: 'standby replica, no caches', leaderElect: true, leading: false, synced: undefined, problem: undefined },
  { what: 'leader, caches listing', leaderElect: true, leading: true, synced: false, problem: 'informer caches are not synced yet' },
  { what: 'leader, caches synced', leaderElect: true, leading: true, synced: true, problem: undefined },
  // The CI flake this row pins: without leader election /readyz answered 200 before the controllers started.
  {
    what: 'no leader election, before the controllers start',
    leaderElect: false,
    leading: false,
    synced: undefined,
    problem: 'controllers have not started yet',
  },
  { what: 'no leader election, caches listing', leaderElect: false, leading: true, synced: false, problem: 'informer caches are not synced yet' },
  { what: 'no leader election, caches synced', leaderElect: false, leading: true, synced: true, problem: undefined },
];

for (const r of ROWS) {
  test(`informer-sync: ${r.what}`, (t) => {
    t.is(informerSyncProblem(r), r.problem);
  });
}

// The second half of the same CI flake: `informers` is set before the controllers create theirs, so a factory with
// no informers yet must not count as synced (every() of nothing is true).
test('InformerFactory.hasSynced: false before start(), even with no informers; then each informer decides', (t) => {
  const empty = new InformerFactory({ clients: {} as KubeClients, log: silentLogger(), nodeSelector: '', namespace: '' });
  t.false(empty.hasSynced(), 'not started, no informers');
  empty.start();
  t.true(empty.hasSynced(), 'started, no informers to wait for');
  const one = new InformerFactory({ clients: {} as KubeClients, log: silentLogger(), nodeSelector: '', namespace: '' });
  one.nodes();
  t.false(one.hasSynced(), 'not started, one informer that has not listed');
});
