/**
 * A local control plane for people:
 *   node dist/test/controlplane/cli.js up [--fresh]  # foreground until Ctrl-C
 *   node dist/test/controlplane/cli.js down          # from another terminal
 * State lives in CCM_CLUSTER_DIR or ./.localcluster (kubeconfig, logs, pid).
 * `up` resumes the objects of the last cluster there (etcd data; new
 * certificates, token and ports: the kubeconfig is rewritten); `--fresh`
 * starts empty.
 */
import { readFile, rm, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { createLogger, errorMessage } from '../../host/log.js';
import { pidAlive } from './binaries.js';
import { ControlPlane } from './controlplane.js';

const dir = resolve(process.env.CCM_CLUSTER_DIR || '.localcluster');
const pidFile = join(dir, 'cluster.pid');
const DOWN_TIMEOUT_MS = 30_000;

async function runningPid(): Promise<number | undefined> {
  const pid = Number((await readFile(pidFile, 'utf8').catch(() => '')).trim());
  return Number.isInteger(pid) && pid > 0 && pidAlive(pid) ? pid : undefined;
}

async function up(): Promise<void> {
  const other = await runningPid();
  if (other) throw new Error(`a cluster is already running from ${dir} (pid ${other}); stop it with: node dist/test/controlplane/cli.js down`);
  const log = createLogger({ format: 'text' });
  const fresh = process.argv.includes('--fresh');
  const cp = await ControlPlane.start({ log, dir, resume: !fresh });
  await writeFile(pidFile, `${process.pid}\n`);
  process.stdout.write(
    `\ncontrol plane ready at ${cp.server} (logs in ${dir})\n\n` +
      `  export KUBECONFIG=${cp.kubeconfigPath}\n  kubectl get nodes   # empty: no kubelet runs here\n\n` +
      `Ctrl-C (or "cli.js down") stops it; the next "up" resumes its objects ("up --fresh" starts empty).\n`,
  );

  await new Promise<void>((done) => {
    const keepAlive = setInterval(() => {
      // Children do not hold the event loop; this does, and notices crashes.
      const dead = cp.unexpectedExit();
      if (dead) {
        log.error({ dead }, 'control-plane process ended; stopping');
        process.exitCode = 1;
        finish();
      }
    }, 2_000);
    const finish = () => {
      clearInterval(keepAlive);
      done();
    };
    process.once('SIGINT', finish);
    process.once('SIGTERM', finish);
  });
  log.info('stopping control plane');
  await cp.stop();
  await rm(pidFile, { force: true });
}

async function down(): Promise<void> {
  const pid = await runningPid();
  if (!pid) {
    process.stdout.write(`no cluster running from ${dir}\n`);
    await rm(pidFile, { force: true });
    return;
  }
  process.kill(pid, 'SIGTERM');
  const deadline = Date.now() + DOWN_TIMEOUT_MS;
  while (pidAlive(pid)) {
    if (Date.now() > deadline) throw new Error(`cluster process ${pid} still running after ${DOWN_TIMEOUT_MS / 1000}s; kill it with: kill -9 ${pid}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  process.stdout.write(`cluster (pid ${pid}) stopped\n`);
}

const cmd = process.argv[2];
const commands: Record<string, () => Promise<void>> = { up, down };
const run = cmd ? commands[cmd] : undefined;
if (!run) {
  process.stderr.write('usage: cli.js up|down\n');
  process.exit(2);
}
run().catch((err: unknown) => {
  process.stderr.write(`${errorMessage(err)}\n`);
  process.exit(1);
});
