/**
 * Real providers' command lines (test/fixtures/real-command-lines.json)
 * start the real host, and the upstream cloud-controller-manager agrees on
 * what is a flag: test/unit/config/real-command-lines.test.ts parses all of
 * them; here two of them run for real against the shared control plane, on
 * the local cloud in place of theirs (their --cloud-provider and file flags
 * are replaced, everything else is as shipped):
 *  - Hetzner's deploy/ccm.yaml, with the deprecated --allow-untagged-cloud:
 *    the host starts and initializes a Node;
 *  - IONOS's chart, with its own --cluster-id and --private moved to
 *    --provider-arg as the host's one-line error says: the host starts, and
 *    the plugin process it spawned has them on its command line.
 * And the upstream binary (tools/upstream-ccm, built once and cached) takes
 * the hidden deprecated flags and refuses the removed ones, as the host does.
 */
import anyTest, { type TestFn } from 'ava';
import { execa } from 'execa';
import { readdir, readFile, mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readFileSync } from 'node:fs';
import { CoreV1Api, type V1Node } from '@kubernetes/client-node';
import { testKubeConfig } from '../../controlplane/shared.js';
import { startTestHost, type TestHost } from '../../helpers/host.js';
import { localcloud } from '../../helpers/localcloud.js';
import { deleteScopedNodes, testScope, UNINITIALIZED_TAINT } from '../../helpers/nodes.js';
import { ensureUpstreamCcm } from '../../helpers/upstream-ccm.js';
import { waitFor } from '../../helpers/wait.js';
import { parseHostArgs } from '../../../host/config/flags.js';
import { ownerOfFlag } from '../../../host/config/provider-owned.js';

interface RealLine {
  id: string;
  args: string[];
}

const LINES = (
  JSON.parse(readFileSync(new URL('../../../../test/fixtures/real-command-lines.json', import.meta.url), 'utf8')) as { lines: RealLine[] }
).lines;
const test = anyTest as TestFn<{ core: CoreV1Api; hosts: TestHost[]; selectors: string[] }>;

test.before(async (t) => {
  t.context = { core: (await testKubeConfig()).makeApiClient(CoreV1Api), hosts: [], selectors: [] };
});

test.after.always(async (t) => {
  for (const h of t.context.hosts) await h.stop();
  for (const s of t.context.selectors) await deleteScopedNodes(t.context.core, s);
});

/** The line's arguments on the local cloud: its provider and the files it names are the host test's own. */
function onLocalCloud(id: string): string[] {
  const line = LINES.find((l) => l.id === id);
  if (!line) throw new Error(`no line ${id} in the fixture`);
  return line.args.filter((a) => !/^--(cloud-provider|cloud-config|kubeconfig)=/.test(a));
}

/** Registers a Node as a kubelet with --cloud-provider=external does, with a local cloud instance of its name; waits for its initialization. */
async function nodeInitialized(core: CoreV1Api, dir: string, name: string, labels: Record<string, string>): Promise<V1Node> {
  await localcloud(join(dir, 'cloud'), 'instance', 'add', name, '--zone', 'zone-a', '--region', 'region-1', '--type', 'small');
  await core.createNode({
    body: {
      metadata: { name, labels: { ...labels, 'kubernetes.io/hostname': name } },
      spec: { taints: [{ key: UNINITIALIZED_TAINT, value: 'true', effect: 'NoSchedule' }] },
      status: { addresses: [{ type: 'Hostname', address: name }] },
    },
  });
  return waitFor(
    async () => {
      const n = await core.readNode({ name });
      return n.spec?.providerID && !(n.spec.taints ?? []).some((x) => x.key === UNINITIALIZED_TAINT) ? n : undefined;
    },
    { what: `node ${name} initialized` },
  );
}

/** Command lines of this process's children (the plugin the in-process host spawned). */
async function childCommandLines(): Promise<string[][]> {
  const out: string[][] = [];
  for (const pid of await readdir('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    if (ppid !== process.pid) continue;
    const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
    out.push(cmdline.split('\0').filter((w) => w !== ''));
  }
  return out;
}

test.serial("Hetzner's deploy/ccm.yaml (--allow-untagged-cloud) starts the host, warned once, and a Node is initialized", async (t) => {
  const { core } = t.context;
  const scope = testScope('real-hcloud');
  t.context.selectors.push(scope.selector);
  const dir = await mkdtemp(join(tmpdir(), 'ccm-real-lines-'));
  const args = onLocalCloud('hcloud');
  t.true(args.includes('--allow-untagged-cloud'));
  const host = await startTestHost(dir, [...args, '--controllers=cloud-node', `--node-selector=${scope.selector}`]);
  t.context.hosts.push(host);
  const node = await nodeInitialized(core, dir, `${scope.prefix}-n1`, scope.labels);
  t.regex(node.spec!.providerID!, /^local:\/\//);
  const log = await readFile(host.logPath, 'utf8');
  t.is(log.split('\n').filter((l) => l.includes('--allow-untagged-cloud has no effect')).length, 1, 'one warning');
});

test.serial("IONOS's chart: its own flags, moved to --provider-arg as the error says, reach the spawned plugin; the host starts", async (t) => {
  const { core } = t.context;
  const scope = testScope('real-ionos');
  t.context.selectors.push(scope.selector);
  const dir = await mkdtemp(join(tmpdir(), 'ccm-real-lines-'));
  const line = onLocalCloud('ionos');
  const own = line.filter((a) => ownerOfFlag(a.replace(/^--/, '').split('=')[0]!) !== undefined);
  t.deepEqual(own, ['--cluster-id=k8s', '--private=false']);

  const asShipped = parseHostArgs(['--cloud-provider=local', ...line]);
  t.true(
    'errors' in asShipped &&
      asShipped.errors.length === 1 &&
      asShipped.errors[0]!.includes('--provider-arg=--cluster-id=k8s --provider-arg=--private=false'),
  );

  const marker = `--cluster-id=${scope.prefix}`;
  const args = [
    ...line.filter((a) => !own.includes(a)),
    `--provider-arg=${marker}`,
    '--provider-arg=--private=false',
    '--controllers=cloud-node',
    `--node-selector=${scope.selector}`,
  ];
  const host = await startTestHost(dir, args);
  t.context.hosts.push(host);
  await nodeInitialized(core, dir, `${scope.prefix}-n1`, scope.labels);
  const plugin = (await childCommandLines()).find((argv) => argv.includes(marker));
  t.truthy(plugin, 'a child process has the --provider-arg words');
  t.deepEqual(plugin!.slice(-2), [marker, '--private=false'], 'in order, after the plugin file');
});

/** Upstream's answer to `<flag> --help`: accepted (help printed) or refused (unknown flag). */
const FLAG_CASES: { word: string; upstream: 'accepts' | 'refuses' }[] = [
  { word: '--allow-untagged-cloud', upstream: 'accepts' },
  { word: '--allow-untagged-cloud=true', upstream: 'accepts' },
  { word: '--node-sync-period=1s', upstream: 'accepts' },
  { word: '--address=127.0.0.1', upstream: 'refuses' },
  { word: '--port=0', upstream: 'refuses' },
  { word: '--tags=a=b', upstream: 'refuses' },
  { word: '--cloud-config-secret-name=x', upstream: 'refuses' },
];

test('the upstream binary accepts and refuses the same flags as the host', async (t) => {
  const bin = await ensureUpstreamCcm((l) => t.log(l));
  for (const c of FLAG_CASES) {
    const r = await execa(bin, [c.word, '--help'], { reject: false, all: true, timeout: 60_000 });
    const upstream = r.exitCode === 0 ? 'accepts' : /unknown flag/.test(r.all) ? 'refuses' : `exit ${r.exitCode}`;
    t.is(upstream, c.upstream, `upstream ${c.word}: ${r.all.slice(-300)}`);
    const ours = parseHostArgs(['--cloud-provider=x', '--plugin-endpoint=unix:///run/x.sock', c.word]);
    t.is('config' in ours ? 'accepts' : 'refuses', c.upstream, `host ${c.word}: ${'errors' in ours ? ours.errors.join('; ') : ''}`);
  }
});
