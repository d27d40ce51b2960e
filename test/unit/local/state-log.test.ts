/**
 * The state log (plugins/local/state-log.ts) under the StateStore API: stores
 * on one directory agree with a reference model, a torn last line is ignored
 * and compacted away, compaction keeps readers cheap and correct, state.json
 * of older versions loads, drafts returned by updates stay usable, and a
 * writer SIGKILLed at any moment leaves a consistent state.
 */
import { execFile, spawn } from 'node:child_process';
import { appendFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { readdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import test from 'ava';
import fc from 'fast-check';
import {
  emptyState,
  LEGACY_STATE_FILE,
  LOG_FILE,
  StateStore,
  type InstanceRecord,
  type LoadBalancerRecord,
  type LocalCloudState,
} from '../../../plugins/local/state.js';
import { tempDir } from './_helpers.js';

const run = promisify(execFile);
const DIST = fileURLToPath(new URL('../../../', import.meta.url));
const STATE_MODULE = pathToFileURL(join(DIST, 'plugins/local/state.js')).href;
const CLI = join(DIST, 'plugins/local/cli.js');

function instance(name: string): InstanceRecord {
  return {
    id: `i-${name}`,
    name,
    type: 't',
    zone: 'z',
    region: 'r',
    addresses: [{ type: 'InternalIP', address: '10.0.0.1' }],
    state: 'running',
    labels: {},
    createdAt: '',
  };
}

function loadBalancer(name: string, nodes: readonly string[]): LoadBalancerRecord {
  return {
    name,
    clusterName: 'c',
    serviceUid: `uid-${name}`,
    serviceNamespace: 'ns',
    serviceName: name,
    ingressIp: '127.0.10.1',
    ipMode: 'VIP',
    ports: [{ name: 'p', protocol: 'TCP', port: 80, nodePort: 30080 }],
    backends: nodes.map((n) => ({ nodeName: n, address: '10.0.0.1' })),
    sourceRanges: [],
    externalTrafficPolicy: 'Cluster',
    healthCheckNodePort: 0,
    sessionAffinity: 'None',
    createdAt: '',
  };
}

function header(dir: string): { generation: number; id: string; base?: { id: string; size: number } } {
  return JSON.parse(readFileSync(join(dir, LOG_FILE), 'utf8').split('\n', 1)[0]!) as ReturnType<typeof header>;
}

// ---- random update sequences against a reference model ----

type OpKind =
  | 'addInstance'
  | 'deleteInstance'
  | 'toggleInstance'
  | 'ensureLb'
  | 'setBackends'
  | 'deleteLb'
  | 'knob'
  | 'addRoute'
  | 'deleteRoute'
  | 'addTwo'
  | 'noop'
  | 'fail';
interface Op {
  kind: OpKind;
  n: number;
  /** Which of the two stores runs it. */
  by: 0 | 1;
}

/** Applies `op` the way the cloud's update functions do (push, replace in place, filter, mutate a found record). */
function mutate(d: LocalCloudState, { kind, n }: Op): void {
  const lbName = `lb-${n % 4}`;
  const cidr = `10.0.${n % 6}.0/24`;
  switch (kind) {
    case 'addInstance':
      if (!d.instances.some((i) => i.name === `n${n}`)) d.instances.push(instance(`n${n}`));
      return;
    case 'deleteInstance':
      if (d.instances.length) d.instances = d.instances.filter((_, i) => i !== n % d.instances.length);
      return;
    case 'toggleInstance': {
      const inst = d.instances[n % Math.max(1, d.instances.length)];
      if (inst) inst.state = inst.state === 'running' ? 'stopped' : 'running';
      return;
    }
    case 'ensureLb': {
      const lb = loadBalancer(
        lbName,
        d.instances.slice(0, n % 3).map((i) => i.name),
      );
      const at = d.loadBalancers.findIndex((l) => l.name === lbName);
      if (at >= 0) d.loadBalancers[at] = lb;
      else d.loadBalancers.push(lb);
      return;
    }
    case 'setBackends': {
      const lb = d.loadBalancers.find((l) => l.name === lbName);
      if (lb) lb.backends = d.instances.filter((_, i) => i % 2 === n % 2).map((i) => ({ nodeName: i.name, address: i.addresses[0]!.address }));
      return;
    }
    case 'deleteLb':
      d.loadBalancers = d.loadBalancers.filter((l) => l.name !== lbName);
      return;
    case 'knob':
      if (n % 3 === 0) delete d.knobs.latencyMs;
      else d.knobs.latencyMs = n;
      return;
    case 'addRoute':
      if (!d.routes.some((r) => r.destinationCidr === cidr))
        d.routes.push({ name: `r-${n}`, clusterName: 'c', targetNode: `n${n}`, destinationCidr: cidr, targetNodeAddresses: [], createdAt: '' });
      return;
    case 'deleteRoute':
      d.routes = d.routes.filter((r) => r.destinationCidr !== cidr);
      return;
    case 'addTwo':
      mutate(d, { kind: 'addInstance', n, by: 0 });
      mutate(d, { kind: 'setBackends', n, by: 0 });
      return;
    case 'noop':
      return;
    case 'fail':
      d.instances = [];
      throw new Error('update fails');
  }
}

const opArb: fc.Arbitrary<Op> = fc.record({
  kind: fc.constantFrom<OpKind>(
    'addInstance',
    'deleteInstance',
    'toggleInstance',
    'ensureLb',
    'setBackends',
    'deleteLb',
    'knob',
    'addRoute',
    'deleteRoute',
    'addTwo',
    'noop',
    'fail',
  ),
  n: fc.nat({ max: 40 }),
  by: fc.constantFrom<0 | 1>(0, 1),
});

test('two stores on one directory agree with a reference model after any sequence of updates (compacting often, sometimes, never)', async (t) => {
  await fc.assert(
    fc.asyncProperty(fc.array(opArb, { minLength: 1, maxLength: 40 }), fc.constantFrom(0, 400, 1 << 20), async (ops, compactMinBytes) => {
      const dir = mkdtempSync(join(tmpdir(), 'localcloud-prop-'));
      try {
        const stores = [new StateStore(dir, { compactMinBytes }), new StateStore(dir, { compactMinBytes })];
        let model = emptyState();
        for (const op of ops) {
          const next = structuredClone(model);
          let failed = false;
          try {
            mutate(next, op);
          } catch {
            failed = true;
          }
          if (!failed) model = next;
          await stores[op.by]!.update((d) => mutate(d, op)).catch((err: Error) => {
            if (!failed) throw err;
          });
          for (const s of stores) t.deepEqual(s.read(), model);
        }
        t.deepEqual(new StateStore(dir).read(), model, 'a fresh store reads the same');
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    }),
    { numRuns: 40 },
  );
});

// ---- torn lines, compaction, older state ----

test('a torn last line (a writer killed mid-append) is ignored by readers and compacted away by the next writer', async (t) => {
  const dir = await tempDir(t);
  const a = new StateStore(dir);
  const b = new StateStore(dir);
  await a.update((d) => void d.instances.push(instance('x1')));
  t.is(b.read().instances.length, 1);
  appendFileSync(join(dir, LOG_FILE), '{"changes":[{"kind":"instances","key":"i-torn","value":{"id":"i-to');
  for (const s of [a, b, new StateStore(dir)])
    t.deepEqual(
      s.read().instances.map((i) => i.name),
      ['x1'],
    );
  await b.update((d) => void d.instances.push(instance('x2')));
  t.false(readFileSync(join(dir, LOG_FILE), 'utf8').includes('i-to'));
  t.is(header(dir).generation, 2);
  for (const s of [a, b, new StateStore(dir)])
    t.deepEqual(
      s.read().instances.map((i) => i.name),
      ['x1', 'x2'],
    );
});

test('compaction: a caught-up reader keeps its records without re-reading the snapshot; a reader that missed generations reloads; the file stays bounded', async (t) => {
  const dir = await tempDir(t);
  const writer = new StateStore(dir, { compactMinBytes: 0 });
  const follower = new StateStore(dir);
  const sleeper = new StateStore(dir);
  await writer.update((d) => {
    d.instances.push(instance('a'), instance('b'));
    d.loadBalancers.push(loadBalancer('lb-keep', ['a', 'b']));
  });
  const kept = follower.view().loadBalancer('lb-keep');
  t.truthy(kept);
  sleeper.view();
  await writeFile(join(dir, `${LOG_FILE}.0badc0de`), 'left by a compaction killed before its rename');
  let sizes = 0;
  for (let i = 0; i < 60; i++) {
    await writer.update((d) => void (d.knobs.latencyMs = i));
    t.is(follower.read().knobs.latencyMs, i);
    sizes = Math.max(sizes, readFileSync(join(dir, LOG_FILE)).length);
  }
  t.true(header(dir).generation >= 3, `generation ${header(dir).generation}: compacted more than once`);
  t.truthy(header(dir).base, 'a compaction names the file and length it continues');
  t.is(follower.view().loadBalancer('lb-keep'), kept, 'same record object: the follower never re-parsed a snapshot');
  t.deepEqual(sleeper.read(), writer.read());
  const snapshot = readFileSync(join(dir, LOG_FILE), 'utf8').split('\n')[1]!.length;
  t.true(sizes < 4 * snapshot + 1000, `log grew to ${sizes} bytes with a ${snapshot}-byte snapshot`);
  t.deepEqual(
    (await readdir(dir)).filter((f) => f !== 'volumes'),
    [LOG_FILE],
    'stray temporary files are removed',
  );
});

test('a directory written by an older version (state.json only) loads, and the first write moves it into the log', async (t) => {
  const dir = await tempDir(t);
  const old = { ...emptyState(), instances: [instance('old')], knobs: { failAll: true } };
  await writeFile(join(dir, LEGACY_STATE_FILE), JSON.stringify(old, null, 2) + '\n');
  const reader = new StateStore(dir);
  t.deepEqual(reader.read(), old);
  const writer = new StateStore(dir);
  await writer.update(() => undefined);
  t.deepEqual((await readdir(dir)).sort(), [LEGACY_STATE_FILE, 'volumes'], 'an update that changes nothing writes nothing');
  await writer.update((d) => void d.instances.push(instance('new')));
  t.deepEqual((await readdir(dir)).sort(), [LOG_FILE, 'volumes']);
  for (const s of [reader, writer, new StateStore(dir)]) {
    t.deepEqual(
      s.read().instances.map((i) => i.name),
      ['old', 'new'],
    );
    t.true(s.read().knobs.failAll);
  }
});

const LOG_HEADER = JSON.stringify({
  localcloudStateLog: 1,
  generation: 1,
  id: '0123456789abcdef',
  snapshotBytes: JSON.stringify(emptyState()).length + 1,
});
const CORRUPT: { what: string; file: string; text: string; message: RegExp }[] = [
  { what: 'state.json that is not JSON', file: LEGACY_STATE_FILE, text: '{"instances": [', message: /state\.json is not valid JSON/ },
  { what: 'state.json of another version', file: LEGACY_STATE_FILE, text: '{"version": 7}', message: /has version 7/ },
  {
    what: 'state.json with two instances of one id',
    file: LEGACY_STATE_FILE,
    text: JSON.stringify({ instances: [instance('a'), instance('a')] }),
    message: /two instances records have key "i-a"; remove one/,
  },
  { what: 'a log without a header', file: LOG_FILE, text: 'garbage', message: /has no header line; move it away/ },
  { what: 'a log of another format', file: LOG_FILE, text: '{"localcloudStateLog":2}\n', message: /has format 2; this build reads format 1/ },
  { what: 'a log with a cut snapshot', file: LOG_FILE, text: `${LOG_HEADER}\n{"version":1`, message: /truncated snapshot/ },
  {
    what: 'a log with a complete line that is not JSON',
    file: LOG_FILE,
    text: `${LOG_HEADER}\n${JSON.stringify(emptyState())}\nnot json\n`,
    message: /the update at byte \d+ is not valid JSON/,
  },
  {
    what: 'a log with an unknown kind',
    file: LOG_FILE,
    text: `${LOG_HEADER}\n${JSON.stringify(emptyState())}\n{"changes":[{"kind":"pets","key":"x"}]}\n`,
    message: /unknown kind "pets"/,
  },
];
for (const c of CORRUPT) {
  test(`${c.what} gives one clear error`, async (t) => {
    const dir = await tempDir(t);
    await writeFile(join(dir, c.file), c.text);
    t.throws(() => new StateStore(dir).read(), { message: c.message });
  });
}

// ---- the update contract ----

const RETURNS: { what: string; fn: (d: LocalCloudState) => unknown; want: unknown }[] = [
  { what: 'a record of the draft', fn: (d) => d.instances[0], want: instance('a') },
  {
    what: 'a changed record of the draft',
    fn: (d) => Object.assign(d.instances[0]!, { state: 'stopped' }),
    want: { ...instance('a'), state: 'stopped' },
  },
  {
    what: 'drafts inside a plain object',
    fn: (d) => ({ first: d.instances[0], all: d.instances.filter(() => true) }),
    want: { first: instance('a'), all: [instance('a')] },
  },
  { what: 'a new record added to the draft', fn: (d) => d.instances[d.instances.push(instance('b')) - 1], want: instance('b') },
  { what: 'a plain value', fn: (d) => d.instances.length, want: 1 },
];
for (const r of RETURNS) {
  test(`update returns ${r.what} usable after the update`, async (t) => {
    const store = new StateStore(await tempDir(t));
    await store.update((d) => void d.instances.push(instance('a')));
    const got = await store.update(r.fn);
    t.deepEqual(JSON.parse(JSON.stringify(got)), r.want);
  });
}

test('an update that leaves two records with one key fails and writes nothing', async (t) => {
  const store = new StateStore(await tempDir(t));
  await store.update((d) => void d.instances.push(instance('a')));
  await t.throwsAsync(
    store.update((d) => void d.instances.push(instance('a'))),
    { message: /two instances records have key "i-a"/ },
  );
  t.is(new StateStore(store.dir).read().instances.length, 1);
});

test('rebuilding a record with equal content writes nothing (idempotent ensures do not grow the log)', async (t) => {
  const store = new StateStore(await tempDir(t));
  await store.update((d) => void d.loadBalancers.push(loadBalancer('lb', ['a'])));
  const size = readFileSync(store.file).length;
  await store.update((d) => void (d.loadBalancers[0] = loadBalancer('lb', ['a'])));
  t.is(readFileSync(store.file).length, size);
});

// ---- processes ----

test('the localcloud CLI and a provider-side store share the directory both ways, across compactions', async (t) => {
  const dir = await tempDir(t);
  const provider = new StateStore(dir, { compactMinBytes: 0 });
  const cli = async (...args: string[]) => (await run(process.execPath, [CLI, '--state', dir, ...args], { env: { PATH: process.env.PATH } })).stdout;
  for (let i = 0; i < 4; i++) {
    await cli('instance', 'add', `cli-${i}`);
    t.truthy(provider.view().instanceByName(`cli-${i}`), `provider sees cli-${i}`);
    await provider.update((d) => void d.instances.push(instance(`prov-${i}`)));
    const listed = (JSON.parse(await cli('instance', 'list', '-o', 'json')) as { name: string }[]).map((i) => i.name);
    t.deepEqual(listed.sort(), [...Array.from({ length: i + 1 }, (_, k) => [`cli-${k}`, `prov-${k}`]).flat()].sort());
  }
  t.true(header(dir).generation > 1);
});

test('a writer SIGKILLed at any moment leaves a readable, consistent state', async (t) => {
  const dir = await tempDir(t);
  // Each update adds one instance with a large label (a multi-page write) and
  // counts it in a knob, in one update: the two must always agree.
  const script = `
    import { StateStore } from ${JSON.stringify(STATE_MODULE)};
    const store = new StateStore(process.argv[1], { compactMinBytes: 0 });
    const big = 'x'.repeat(200_000);
    for (let i = 0; ; i++) {
      await store.update((d) => {
        const n = d.instances.length;
        d.instances.push({ id: 'i-' + process.pid + '-' + i, name: 'k' + process.pid + '-' + i, type: 't', zone: 'z', region: 'r', addresses: [], state: 'running', labels: { big: big + n }, createdAt: '' });
        d.knobs.latencyMs = n + 1;
      });
    }
  `;
  const reader = new StateStore(dir);
  for (let round = 0; round < 6; round++) {
    const child = spawn(process.execPath, ['--input-type=module', '-e', script, dir], { stdio: 'ignore' });
    const before = reader.read().instances.length;
    const deadline = Date.now() + 20_000;
    while (reader.read().instances.length < before + 2 + round && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 5 + Math.random() * 20));
    child.kill('SIGKILL');
    await new Promise((r) => child.once('exit', r));
    for (const s of [reader, new StateStore(dir)]) {
      const state = s.read();
      t.true(state.instances.length > before, `round ${round}: progress`);
      t.is(state.knobs.latencyMs, state.instances.length, `round ${round}: instances and their count agree`);
    }
  }
  // A later writer takes over whatever the killed ones left (a stale lock, a torn line).
  const after = new StateStore(dir, { lockWaitMs: 5_000 });
  await after.update((d) => void (d.knobs.latencyMs = d.instances.length));
  t.is(new StateStore(dir).read().knobs.latencyMs, reader.read().instances.length);
});
