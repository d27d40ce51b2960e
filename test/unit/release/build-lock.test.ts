/**
 * The build lock (tools/release/build-lock.ts) that buildOnce and the
 * control plane's build take: stale when its owner is gone (dead pid here, a
 * heartbeat minutes old, no owner file for 15 minutes), never for its age
 * alone; a wait is bounded and names the lock and its holder.
 */
import test from 'ava';
import { spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, readdir, stat, utimes, writeFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { acquireLock, lockIsStale, type LockSeen } from '../../../tools/release/build-lock.js';
import { buildOnce, exists } from '../../../tools/release/build-once.js';
import { waitFor } from '../../helpers/wait.js';

const MIN = 60_000;
const NOW = 1_800_000_000_000;
const ALIVE = 100;
const alive = (pid: number) => pid === ALIVE;

const STALENESS: { what: string; seen: LockSeen; stale: boolean }[] = [
  {
    what: 'a live owner here, heartbeat 10 s old',
    seen: { owner: { pid: ALIVE, host: 'h1', heartbeatMs: 30_000 }, mtimeMs: NOW - 10_000 },
    stale: false,
  },
  {
    what: 'a live owner here, heartbeat 4 min old',
    seen: { owner: { pid: ALIVE, host: 'h1', heartbeatMs: 30_000 }, mtimeMs: NOW - 4 * MIN },
    stale: false,
  },
  {
    what: 'a live pid here, heartbeat 6 min old (reused pid, or wedged)',
    seen: { owner: { pid: ALIVE, host: 'h1', heartbeatMs: 30_000 }, mtimeMs: NOW - 6 * MIN },
    stale: true,
  },
  { what: 'a dead owner here, heartbeat fresh', seen: { owner: { pid: 7, host: 'h1', heartbeatMs: 30_000 }, mtimeMs: NOW - 1_000 }, stale: true },
  {
    what: 'an owner on another host, heartbeat 4 min old',
    seen: { owner: { pid: 7, host: 'h2', heartbeatMs: 30_000 }, mtimeMs: NOW - 4 * MIN },
    stale: false,
  },
  {
    what: 'an owner on another host, heartbeat 6 min old',
    seen: { owner: { pid: 7, host: 'h2', heartbeatMs: 30_000 }, mtimeMs: NOW - 6 * MIN },
    stale: true,
  },
  { what: "older code's owner (no heartbeat), alive, 2 h old", seen: { owner: { pid: ALIVE, host: 'h1' }, mtimeMs: NOW - 120 * MIN }, stale: false },
  { what: "older code's owner (no heartbeat), dead", seen: { owner: { pid: 7, host: 'h1' }, mtimeMs: NOW - 1_000 }, stale: true },
  { what: 'no owner file, 1 min old (being written, or older code building)', seen: { mtimeMs: NOW - MIN }, stale: false },
  { what: 'no owner file, 16 min old', seen: { mtimeMs: NOW - 16 * MIN }, stale: true },
];

for (const row of STALENESS)
  test(`stale: ${row.what} -> ${row.stale}`, (t) => {
    t.is(lockIsStale(row.seen, NOW, 'h1', alive), row.stale);
  });

/** A lock directory as another process holding it leaves it: its owner file, dated `heartbeatAgoMs` ago, and the directory made `madeAgoMs` ago. */
async function foreignLock(lock: string, pid: number, madeAgoMs: number, heartbeatAgoMs: number): Promise<void> {
  await mkdir(lock);
  const file = join(lock, 'owner');
  await writeFile(file, JSON.stringify({ pid, host: hostname(), token: 'theirs', heartbeatMs: 30_000 }));
  const at = (ago: number) => new Date(Date.now() - ago);
  await utimes(file, at(heartbeatAgoMs), at(heartbeatAgoMs));
  await utimes(lock, at(madeAgoMs), at(madeAgoMs));
}

/** The pid of a process that has exited. */
const deadPid = () => spawnSync(process.execPath, ['-e', '']).pid;

test('a build 20 minutes old whose owner is alive and heartbeating is waited for, not built beside; the bounded wait names the lock and its pid', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'ccm-lock-'));
  const final = join(dir, 'thing');
  await foreignLock(`${final}.lock`, process.pid, 20 * MIN, 1_000);
  let built = false;
  const err = await t.throwsAsync(
    buildOnce(
      final,
      async () => {
        built = true;
      },
      { waitMs: 1_500, pollMs: 100 },
    ),
  );
  t.false(built);
  t.regex(err!.message, new RegExp(`build lock ${final}\\.lock, held by pid ${process.pid} on `));
  t.false(err!.message.includes('\n'), 'one line');
});

test("a dead owner's lock is broken at once and the build runs", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'ccm-lock-'));
  const final = join(dir, 'thing');
  await foreignLock(`${final}.lock`, deadPid(), 1_000, 1_000);
  const broken: string[] = [];
  await buildOnce(final, (tmp) => mkdir(tmp), { waitMs: 60_000, pollMs: 100, onBreak: (l) => broken.push(l) });
  t.true(await exists(final));
  t.is(broken.length, 1);
  t.false(await exists(`${final}.lock`), 'released');
  t.deepEqual(await readdir(dir), ['thing']);
});

test('the owner refreshes its heartbeat while it holds the lock', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'ccm-lock-'));
  const lock = join(dir, 'x.lock');
  const held = (await acquireLock(lock, { heartbeatMs: 50 }))!;
  const owner = join(lock, 'owner');
  const old = new Date(Date.now() - 10 * MIN);
  await utimes(owner, old, old);
  await waitFor(async () => (await stat(owner)).mtimeMs > Date.now() - MIN, { timeoutMs: 30_000, what: 'a heartbeat' });
  await held.release();
  t.false(await exists(lock));
});

test('a waiter returns without building when the owner finishes the build', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'ccm-lock-'));
  const final = join(dir, 'thing');
  const first = (await acquireLock(`${final}.lock`))!;
  let built = 0;
  const waiter = buildOnce(final, async (tmp) => {
    built++;
    await mkdir(tmp);
  });
  await mkdir(final);
  await first.release();
  await waiter;
  t.is(built, 0);
});

test("releasing a lock broken as stale and taken by another process leaves the other's lock", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'ccm-lock-'));
  const lock = join(dir, 'x.lock');
  const held = (await acquireLock(lock))!;
  // As another process breaking it and taking it: the owner file is now another holding's.
  await writeFile(join(lock, 'owner'), JSON.stringify({ pid: process.pid, host: hostname(), token: 'other', heartbeatMs: 30_000 }));
  await held.release();
  t.true(await exists(join(lock, 'owner')));
});
