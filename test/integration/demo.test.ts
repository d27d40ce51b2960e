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
 *
 * The demo's fixed resources: port 10258 and the ingress pool
 * 127.0.10.0/24, which no other test uses.
 */
import test from 'ava';
import { spawn } from 'node:child_process';
import { createWriteStream, existsSync } from 'node:fs';
import { get } from 'node:http';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
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

test('npm start: Ready hollow nodes, HTTP through the load balancer, a stopped machine shown Unknown and tainted shut down, a SIGTERM to npm stops everything', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'ccm-demo-it-'));
  const logPath = join(dir, 'demo.log');
  const log = createWriteStream(logPath);
  const child = spawn('npm', ['start'], { cwd: REPO, env: { ...process.env, CCM_CLUSTER_DIR: dir }, stdio: ['ignore', 'pipe', 'pipe'] });
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
  const printed = (re: RegExp, what: string, timeoutMs = 180_000) =>
    waitFor(
      () => {
        if (child.exitCode !== null) throw new Error(`the demo exited ${child.exitCode}`);
        return re.exec(out) ?? undefined;
      },
      { timeoutMs, intervalMs: 500, what: `the demo to print ${what}`, log: logPath },
    );

  await printed(/press Ctrl-C to stop everything/, 'that it is ready', 240_000);
  t.regex(out, /all nodes initialized by the cloud node controller, and Ready/);
  const ingress = /ingress (\S+) \(ipMode/.exec(out)?.[1];
  const kubeletDir = /logs in (\S+ccm-demo-kubelets-\S+)/.exec(out)?.[1];
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
  t.false(/Warning:/.test(out), `no Node.js process warning (e.g. MaxListenersExceededWarning) on the terminal; see ${logPath}`);
  t.regex(out, /\[demo\] stopped/);
  t.false(existsSync(kubeletDir!), "the kubelets' directory is removed");
});
