/**
 * `npm test`: makes sure the control-plane binaries exist (building them on
 * the first run, with progress), starts ONE real etcd + kube-apiserver for
 * the whole run, runs every test file with ava against it
 * (CCM_TEST_KUBECONFIG), stops the control plane, and prints a closing
 * `tests: N passed, N failed` line. Exit code: ava's.
 *
 * Builds (test/builds.ts): only what the selected files need, all of them
 * before the control plane starts and any test runs (a compile beside the
 * tests starves their bounded waits). Every build prints its time and
 * the run ends with a table of them and the total. `--builds-only` builds
 * (for the files named, else for all) and runs no test.
 *
 * Artifacts: the test processes get TMPDIR set to one artifacts folder, so
 * every test's temporary directory (host logs, local cloud state and
 * journal, plugin sockets) is made there. When a test fails, kube-apiserver's
 * audit log is copied in too and the folder is kept and named on the last
 * lines; on success it is removed.
 */
import { spawn } from 'node:child_process';
import { copyFile, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { CoordinationV1Api, type KubeConfig } from '@kubernetes/client-node';
import { DEFAULT_OPTIONS } from '../host/config/options.js';
import { ControlPlane } from './controlplane/controlplane.js';
import { prepareHostIdentity } from './helpers/service-account.js';
import { BUILDS, buildsNeeded, buildSummary, selectedFiles, startBuilds, workerEnv, type BuildName, type BuildResult } from './builds.js';
import { StreamText, summarize } from './ava-summary.js';

/**
 * Whether a test host elected on the host's default Lease. Test files run
 * hosts at the same time, so such a host waits for (or blocks) every other
 * file's: a failure by timing only, hence this check on the whole run.
 */
async function defaultLeaseTaken(kc: KubeConfig): Promise<boolean> {
  const name = DEFAULT_OPTIONS.leaderElectResourceName;
  const namespace = DEFAULT_OPTIONS.leaderElectResourceNamespace;
  try {
    await kc.makeApiClient(CoordinationV1Api).readNamespacedLease({ name, namespace });
    return true;
  } catch {
    return false;
  }
}

/** Runs ava on `args` with the runner's environment, echoing and collecting its output. */
function runAva(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number; counts: ReturnType<typeof summarize> }> {
  const stdout = new StreamText();
  const stderr = new StreamText();
  // The CLI is not an exported subpath: find it next to the package's main entry.
  const avaCli = join(dirname(createRequire(import.meta.url).resolve('ava')), 'cli.mjs');
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [avaCli, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
    child.stdout.on('data', (d: Buffer) => {
      stdout.push(d);
      process.stdout.write(d);
    });
    child.stderr.on('data', (d: Buffer) => {
      stderr.push(d);
      process.stderr.write(d);
    });
    child.on('close', (c) => resolve({ code: c ?? 1, counts: summarize(stdout.value(), stderr.value()) }));
  });
}

const secs = (t0: number) => ((Date.now() - t0) / 1000).toFixed(0);

async function main(): Promise<number> {
  const t0 = Date.now();
  // Builds run under nice (test/helpers/go-build.ts): one a test starts itself (a need the runner missed) leaves the CPU to the tests.
  process.env.CCM_BUILD_NICE ??= '10';
  const buildsOnly = process.argv.includes('--builds-only');
  // Each build alone, its downloads included, with its CPU time: to measure what each costs (docs/testing.md).
  const oneAtATime = process.argv.includes('--builds-one-at-a-time');
  const args = process.argv.slice(2).filter((a) => a !== '--builds-only' && a !== '--builds-one-at-a-time');
  const selection = await selectedFiles(args);
  // What each selected file needs; a selection this cannot read (a glob) needs everything.
  const needs = new Map<string, Set<BuildName>>();
  for (const f of selection?.files ?? []) needs.set(f, await buildsNeeded(f));
  const wanted = selection ? new Set([...needs.values()].flatMap((n) => [...n])) : new Set(BUILDS.map((b) => b.name));
  const builds = BUILDS.filter((b) => wanted.has(b.name));
  process.stderr.write(
    `[test] builds for the selected tests: ${builds.map((b) => b.name).join(', ')} (each built once per input change, cached under ~/.cache/ccm-host)\n`,
  );
  const started = startBuilds(builds, (name, line) => process.stderr.write(`[${name}] ${line}\n`), { oneAtATime });
  const results: BuildResult[] = [];
  let buildsDone = 0;
  const allBuilt = Promise.all(builds.map((b) => started.get(b.name)!.then((r) => results.push(r)))).then(() => {
    buildsDone = Date.now();
  });
  // Every build ends before any test starts. Tests wait on bounded things (a plugin's handshake, a probe's
  // deadline, a Lease); a compile beside them takes the CPU those bounds count on: a cold run that ran the
  // late builds beside the tests failed 34 of them on timeouts (docs/testing.md, "Cold runs").
  await allBuilt;
  const summary = () => {
    const order = new Map(builds.map((b, i) => [b.name, i]));
    results.sort((a, b) => order.get(a.name)! - order.get(b.name)!);
    return buildSummary(results, (buildsDone - t0) / 1000);
  };
  const failedBuilds = results.filter((r) => r.error).map((r) => r.name);
  if (buildsOnly) {
    process.stdout.write(`\n${summary()}\n`);
    return failedBuilds.length > 0 ? 1 : 0;
  }
  if (failedBuilds.length > 0) throw new Error(`build failed: ${failedBuilds.join(', ')} (see its lines above)`);

  const cp = await ControlPlane.start({ auditLog: true });
  process.stderr.write(`[test] control plane ready at ${cp.server} in ${secs(t0)} s\n`);
  // Test hosts authenticate as the shipped ServiceAccount, under the shipped RBAC.
  const hostKubeconfigPath = join(cp.dir, 'host-kubeconfig');
  await prepareHostIdentity(cp.kubeConfig(), hostKubeconfigPath);
  // Short: plugin socket paths under it must stay within the 108-byte limit.
  const artifacts = await mkdtemp(join(tmpdir(), 'ccm-test-'));
  const stop = async () => {
    await cp.stop().catch((err) => process.stderr.write(`[test] control plane stop failed: ${String(err)}\n`));
  };
  process.once('SIGINT', () => void stop().then(() => process.exit(130)));
  process.once('SIGTERM', () => void stop().then(() => process.exit(143)));
  const env = {
    // The builds' cache directories as the runner hashed them (when it checked their caches, before building).
    ...(await workerEnv(builds)),
    CCM_TEST_KUBECONFIG: cp.kubeconfigPath,
    CCM_TEST_HOST_KUBECONFIG: hostKubeconfigPath,
    TMPDIR: artifacts,
    CCM_TEST_ARTIFACTS: artifacts,
  };

  const run = await runAva(args, env);
  const code = run.code;
  const leaseTaken = await defaultLeaseTaken(cp.kubeConfig());
  const kept = code !== 0 || leaseTaken;
  if (kept) await copyFile(cp.auditLogPath, join(artifacts, 'kube-apiserver-audit.log')).catch(() => undefined);
  await stop();
  if (!kept) await rm(artifacts, { recursive: true, force: true }).catch(() => undefined);
  else process.stdout.write(`\nartifacts (host logs, local cloud state and journals, kube-apiserver audit log): ${artifacts}\n`);
  const { passed, skipped } = run.counts;
  let failed = code !== 0 && run.counts.failed === 0 ? 1 : run.counts.failed; // ava failed before printing anything countable
  if (leaseTaken) {
    const lease = `${DEFAULT_OPTIONS.leaderElectResourceNamespace}/${DEFAULT_OPTIONS.leaderElectResourceName}`;
    process.stderr.write(
      `[test] a test host elected on the default Lease ${lease}: give every test host --leader-elect=false or a Lease of its own\n`,
    );
    failed++;
  }
  process.stdout.write(`\n${summary()}\n`);
  process.stdout.write(`\ntests: ${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}\n`);
  process.stdout.write(`total: ${secs(t0)} s\n`);
  return leaseTaken && code === 0 ? 1 : code;
}

main().then(
  (code) => process.exit(code),
  (err) => {
    process.stderr.write(`[test] ${err instanceof Error ? err.message : String(err)}\n`);
    process.stdout.write('\ntests: 0 passed, 1 failed\n');
    process.exit(1);
  },
);
