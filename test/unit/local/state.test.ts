import { execFile, spawn } from 'node:child_process';
import { mkdir, readFile, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import test from 'ava';
import { LOCK_OWNERLESS_STALE_MS, LockTimeoutError } from '../../../plugins/local/lock.js';
import { LOCK_DIR, LOG_FILE, StateStore, type InstanceRecord } from '../../../plugins/local/state.js';
import { tempDir } from './_helpers.js';

const run = promisify(execFile);
const STATE_MODULE = pathToFileURL(fileURLToPath(new URL('../../../plugins/local/state.js', import.meta.url))).href;

function fakeInstance(name: string): InstanceRecord {
  return { id: `i-${name}`, name, type: 't', zone: 'z', region: 'r', addresses: [], state: 'running', labels: {}, createdAt: '' };
}

test('a missing state reads as empty; the first write creates the directory and the log (header, snapshot)', async (t) => {
  const dir = join(await tempDir(t), 'nested', 'state');
  const store = new StateStore(dir);
  t.deepEqual(store.read().instances, []);
  await store.update((d) => void d.instances.push(fakeInstance('a')));
  const [header, snapshot, ...rest] = (await readFile(join(dir, LOG_FILE), 'utf8')).split('\n');
  t.like(JSON.parse(header!), { localcloudStateLog: 1, generation: 1 });
  t.is(JSON.parse(snapshot!).instances[0].name, 'a');
  t.deepEqual(rest, ['']);
});

test('views are deep-frozen: a caller cannot change the cached state by accident', async (t) => {
  const store = new StateStore(await tempDir(t));
  await store.update((d) => void d.instances.push(fakeInstance('a')));
  const state = store.read();
  t.throws(() => (state.instances as InstanceRecord[]).push(fakeInstance('b')), { instanceOf: TypeError });
  t.throws(() => void ((state.instances[0] as InstanceRecord).state = 'stopped'), { instanceOf: TypeError });
  t.is(store.read().instances.length, 1);
});

test('readers are cached until the file changes, including same-size rewrites by another store', async (t) => {
  const dir = await tempDir(t);
  const a = new StateStore(dir);
  const b = new StateStore(dir);
  await a.update((d) => void d.instances.push(fakeInstance('x1')));
  const v1 = b.view();
  t.is(b.view(), v1, 'unchanged file: same cached view');
  for (const name of ['x2', 'x3', 'x4']) {
    // Same size, back to back: the stat may look identical, the content must not be missed.
    await a.update((d) => void (d.instances[0] = fakeInstance(name)));
    t.is(b.read().instances[0]?.name, name);
  }
  await new Promise((r) => setTimeout(r, 80));
  const settled = b.view();
  t.is(b.view(), settled);
});

test('an update that throws writes nothing', async (t) => {
  const store = new StateStore(await tempDir(t));
  await store.update((d) => void d.instances.push(fakeInstance('keep')));
  await t.throwsAsync(
    store.update((d) => {
      d.instances = [];
      throw new Error('changed my mind');
    }),
    { message: 'changed my mind' },
  );
  t.is(store.read().instances.length, 1);
});

test('concurrent updates on one store run one at a time, in call order, and a failing one does not block the rest', async (t) => {
  const store = new StateStore(await tempDir(t));
  let inside = 0;
  let maxInside = 0;
  const order: number[] = [];
  const results = await Promise.allSettled(
    Array.from({ length: 20 }, (_, i) =>
      store.update(async (d) => {
        maxInside = Math.max(maxInside, ++inside);
        await new Promise((r) => setTimeout(r, 1));
        order.push(i);
        inside--;
        if (i === 5) throw new Error('update 5 fails');
        d.instances.push(fakeInstance(`i${i}`));
      }),
    ),
  );
  t.is(maxInside, 1);
  t.deepEqual(
    order,
    Array.from({ length: 20 }, (_, i) => i),
  );
  t.is(results.filter((r) => r.status === 'rejected').length, 1);
  t.is(store.read().instances.length, 19);
});

test('many async writers on separate stores lose no update', async (t) => {
  const dir = await tempDir(t);
  const stores = [new StateStore(dir), new StateStore(dir), new StateStore(dir)];
  const perStore = 30;
  await Promise.all(
    stores.flatMap((s, k) =>
      Array.from({ length: perStore }, (_, i) =>
        s.update((d) => {
          d.instances.push(fakeInstance(`s${k}-${i}`));
          d.knobs.latencyMs = (d.knobs.latencyMs ?? 0) + 1;
        }),
      ),
    ),
  );
  const state = new StateStore(dir).read();
  t.is(state.instances.length, stores.length * perStore);
  t.is(state.knobs.latencyMs, stores.length * perStore);
});

test('concurrent writers in separate processes lose no update', async (t) => {
  const dir = await tempDir(t);
  const writers = 3;
  const perWriter = 25;
  const script = `
    import { StateStore } from ${JSON.stringify(STATE_MODULE)};
    const [dir, tag, n] = process.argv.slice(1);
    const store = new StateStore(dir);
    for (let i = 0; i < Number(n); i++) {
      await store.update((d) => {
        d.instances.push({ id: 'i-' + tag + '-' + i, name: tag + '-' + i, type: 't', zone: 'z', region: 'r', addresses: [], state: 'running', labels: {}, createdAt: '' });
        d.knobs.latencyMs = (d.knobs.latencyMs ?? 0) + 1;
      });
    }
  `;
  await Promise.all(
    Array.from({ length: writers }, (_, k) => run(process.execPath, ['--input-type=module', '-e', script, dir, `w${k}`, String(perWriter)])),
  );
  const state = new StateStore(dir).read();
  t.is(state.instances.length, writers * perWriter);
  t.is(new Set(state.instances.map((i) => i.name)).size, writers * perWriter);
  t.is(state.knobs.latencyMs, writers * perWriter);
});

test('a lock left by a dead process is broken', async (t) => {
  const dir = await tempDir(t);
  const dead = spawn(process.execPath, ['-e', '']);
  await new Promise((r) => dead.once('exit', r));
  await mkdir(join(dir, LOCK_DIR), { recursive: true });
  await writeFile(
    join(dir, LOCK_DIR, 'owner'),
    JSON.stringify({ pid: dead.pid, host: (await import('node:os')).hostname(), token: 'dead', since: Date.now() }),
  );
  const store = new StateStore(dir, { lockWaitMs: 2_000 });
  await store.update((d) => void d.instances.push(fakeInstance('after')));
  t.is(store.read().instances.length, 1);
});

test('an ownerless lock directory becomes stale; a live holder makes writers time out', async (t) => {
  const dir = await tempDir(t);
  const lock = join(dir, LOCK_DIR);
  await mkdir(lock, { recursive: true });
  const past = (Date.now() - LOCK_OWNERLESS_STALE_MS - 1_000) / 1000;
  await utimes(lock, past, past);
  const store = new StateStore(dir, { lockWaitMs: 2_000 });
  await store.update((d) => void d.instances.push(fakeInstance('a')));

  await mkdir(lock);
  await writeFile(
    join(lock, 'owner'),
    JSON.stringify({ pid: process.pid, host: (await import('node:os')).hostname(), token: 'other', since: Date.now() }),
  );
  const quick = new StateStore(dir, { lockWaitMs: 100 });
  await t.throwsAsync(
    quick.update(() => undefined),
    { instanceOf: LockTimeoutError, message: new RegExp(`pid ${process.pid}`) },
  );
});

test('the CLI-side store sees provider-side writes and vice versa (sanity of the shared file)', async (t) => {
  const dir = await tempDir(t);
  const { stdout } = await run(process.execPath, [
    '--input-type=module',
    '-e',
    `import { StateStore } from ${JSON.stringify(STATE_MODULE)}; const s = new StateStore(process.argv[1]); await s.update((d) => { d.knobs.failAll = true; }); console.log(JSON.stringify(s.read().knobs));`,
    dir,
  ]);
  t.deepEqual(JSON.parse(stdout), { failAll: true });
  t.true(new StateStore(dir).read().knobs.failAll);
});
