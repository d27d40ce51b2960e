/**
 * The informer-sync readiness check: when a replica counts as needing synced caches.
 */
import test from 'ava';
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
