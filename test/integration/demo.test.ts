/**
 * `npm start` end to end, run exactly as README.md says (its tsc step finds
 * nothing to emit: pretest already compiled tsconfig.start.json, so the
 * files other tests run are never rewritten under them): the demo as a real
 * process with its own control plane, host, local cloud and hollow kubelets.
 * Its nodes become Ready, its load balancer carries HTTP to every node, a
 * stopped instance takes its kubelet down and the demo prints the node going
 * Unknown and tainted shut down, and a SIGTERM to the npm process alone (as a
 * process manager sends; Ctrl-C in a terminal signals the whole group) stops
 * everything: the script execs the demo, so npm forwards the signal to it.
 * And `npm start -- --two-clouds`, as README.md says: two local clouds as two
 * providers of one host, each cloud's Nodes initialized by its own provider.
 *
 * The demo's fixed resources: port 10258 and the ingress pools
 * 127.0.10.0/24 and 127.0.11.0/24, which no other test uses; so the two
 * runs are serial.
 */
import test, { type ExecutionContext } from 'ava';
import { spawn } from 'node:child_process';
import { createWriteStream, existsSync } from 'node:fs';
import { get } from 'node:http';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { localcloud } from '../helpers/localcloud.js';
import { waitFor } from '../helpers/wait.js';

const REPO = fileURLToPath(new URL('../../../', import.meta.url));

/** GET / on a connection of its own (a kept-alive one would stay with one backend); resolves to the body. */
function httpGet(host: string, port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = get({ host, port, path: '/', agent: false, timeout: 5_000 }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve(body));
    });
    req.on('timeout', () => req.destroy(new Error(`no answer from ${host}:${port} within 5 s`)));
    req.on('error', reject);
  });
}

/** `npm <args>` (the demo) run in the repository with its own cluster dir, its output collected; stopped with SIGINT on teardown if still running. */
function runDemo(t: ExecutionContext, dir: string, args: string[]) {
  const logPath = join(dir, 'demo.log');
  const log = createWriteStream(logPath);
  const child = spawn('npm', args, { cwd: REPO, env: { ...process.env, CCM_CLUSTER_DIR: dir }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  for (const stream of [child.stdout, child.stderr]) {
    stream.on('data', (d: Buffer) => {
      out += d.toString();
      log.write(d);
    });
  }
  const exited = new Promise<number | string>((resolve) => child.on('exit', (code, signal) => resolve(code ?? signal ?? 'unknown')));
  t.teardown(async () => {
    // A failed test still stops the demo the way a user would, so its control plane and kubelets go too.
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGINT');
    await exited;
    log.end();
  });
  // Fails at once when the demo exits first (e.g. its host refused to start), naming its last lines.
  const printed = (re: RegExp, what: string, timeoutMs = 180_000) =>
    Promise.race([
      waitFor(() => re.exec(out) ?? undefined, { timeoutMs, intervalMs: 500, what: `the demo to print ${what}`, log: logPath }),
      exited.then((code) => {
        throw new Error(`the demo exited (${code}) before printing ${what}: ${out.trim().split('\n').slice(-2).join(' | ')}`);
      }),
    ]);
  return { child, exited, printed, logPath, out: () => out };
}

test.serial(
  'npm start: Ready hollow nodes, HTTP through the load balancer, a stopped machine shown Unknown and tainted shut down, a SIGTERM to npm stops everything',
  async (t) => {
    const dir = await mkdtemp(join(tmpdir(), 'ccm-demo-it-'));
    const { child, exited, printed, logPath, out } = runDemo(t, dir, ['start']);

    await printed(/press Ctrl-C to stop everything/, 'that it is ready', 240_000);
    t.regex(out(), /all nodes initialized by the cloud node controller, and Ready/);
    const ingress = /ingress (\S+) \(ipMode/.exec(out())?.[1];
    const kubeletDir = /logs in (\S+ccm-demo-kubelets-\S+)/.exec(out())?.[1];
    t.truthy(ingress && kubeletDir, "the demo names its ingress and its kubelets' directory");

    // Round-robin over three nodes: six connections reach each of them.
    const names = new Set<string>();
    for (let i = 0; i < 6; i++) names.add(/hello from (demo-node-\d)/.exec(await httpGet(ingress!, 8080))?.[1] ?? 'no name');
    t.deepEqual([...names].sort(), ['demo-node-1', 'demo-node-2', 'demo-node-3']);

    await localcloud(join(dir, 'cloud'), 'instance', 'shutdown', 'demo-node-3');
    await printed(/instance demo-node-3 is stopped: its kubelet and server died with it/, 'the kubelet of the stopped instance killed', 30_000);
    await printed(
      /node demo-node-3: Ready=Unknown[^\n]*node\.cloudprovider\.kubernetes\.io\/shutdown:NoSchedule/,
      'demo-node-3 Unknown with the shutdown taint',
    );

    child.kill('SIGTERM');
    t.is(await exited, 0, `npm start exits 0 after a SIGTERM to its own pid; see ${logPath}`);
    t.false(/Warning:/.test(out()), `no Node.js process warning (e.g. MaxListenersExceededWarning) on the terminal; see ${logPath}`);
    t.regex(out(), /\[demo\] stopped/);
    t.false(existsSync(kubeletDir!), "the kubelets' directory is removed");
  },
);

/** The Nodes of each cloud of --two-clouds, by the name prefix the demo gives them. */
const CLOUDS = ['east', 'west'] as const;

test.serial('npm start -- --two-clouds: nodes of two local clouds in one host, each initialized by its own provider', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'ccm-demo2-it-'));
  // Exactly as README.md's quick start says.
  const { child, exited, printed, logPath, out } = runDemo(t, dir, ['start', '--', '--two-clouds']);
  await printed(/press Ctrl-C to stop everything/, 'that it is ready', 240_000);
  t.regex(out(), /running with two local clouds as providers \(east pid \d+, west pid \d+\); providers file: \S+providers\.yaml/);
  t.regex(out(), /all nodes initialized by the cloud node controller, each by its own cloud's provider/);

  const kc = new KubeConfig();
  kc.loadFromFile(/export KUBECONFIG=(\S+)/.exec(out())![1]!);
  const nodes = (await kc.makeApiClient(CoreV1Api).listNode({})).items;
  for (const cloud of CLOUDS) {
    // Each cloud's own state says which instance is which: the Node's providerID is `<cloud>://<its id>`, its zone the cloud's.
    const instances = JSON.parse(await localcloud(join(dir, cloud), 'instance', 'list', '-o', 'json')) as {
      id: string;
      name: string;
      zone: string;
    }[];
    t.deepEqual(instances.map((i) => i.name).sort(), [`${cloud}-node-1`, `${cloud}-node-2`]);
    for (const i of instances) {
      const node = nodes.find((n) => n.metadata?.name === i.name);
      t.deepEqual(
        { providerID: node?.spec?.providerID, zone: node?.metadata?.labels?.['topology.kubernetes.io/zone'] },
        { providerID: `${cloud}://${i.id}`, zone: i.zone },
        `${i.name} initialized by the ${cloud} provider`,
      );
    }
  }
  const ingress = /ingress (\S+) \(ipMode/.exec(out())?.[1];
  t.regex(ingress ?? '', /^127\.0\.10\./, "east serves the demo's load balancer from its own pool");

  child.kill('SIGTERM');
  t.is(await exited, 0, `npm start -- --two-clouds exits 0 after a SIGTERM; see ${logPath}`);
  t.regex(out(), /\[demo\] stopped/);
});
