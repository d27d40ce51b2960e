/**
 * Host memory under a plugin flooding its output (issue 17): the real host as
 * an OS process, the bad provider (test/fixtures/bad-provider.ts) writing
 * 1 GiB once serving, in one shape per run: stderr without a newline, stderr
 * lines, stdout lines. Reported: the host's peak RSS (VmHWM) against a run
 * without a flood, how fast the host drained the output (the provider's
 * writes block on a full pipe, so this is the host's reading speed), and the
 * log the host wrote for it.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MAX_PLUGIN_LINE_BYTES } from '../../host/plugin/lines.js';
import { PLUGIN_LOG_LINES_BURST, PLUGIN_LOG_LINES_PER_SECOND } from '../../host/plugin/output-limiter.js';
import type { ControlPlane } from '../controlplane/controlplane.js';
import { BAD_PROVIDER_NAME } from '../fixtures/bad-provider-lib.js';
import { startHostProcess } from '../helpers/host-process.js';
import { waitFor } from '../helpers/wait.js';
import { f1, f2, int, type BenchSection } from './section.js';

const BAD_PROVIDER = fileURLToPath(new URL('../fixtures/bad-provider.js', import.meta.url));
const FLOOD_MIB = 1024;
const MIB = 1 << 20;
/** Longest a run may take; a host that cannot drain 1 GiB in this time is a finding in itself. */
const RUN_TIMEOUT_MS = 15 * 60_000;

/** What the provider writes in one run (BAD_PROVIDER_SERVING_FLOOD shape); `none` is the baseline. */
const SHAPES = [
  { shape: 'none', what: 'nothing (baseline)' },
  { shape: 'stderr-raw', what: '1 GiB on stderr without a newline' },
  { shape: 'stderr-lines', what: '1 GiB of 128-byte lines on stderr' },
  { shape: 'stdout-lines', what: '1 GiB of 128-byte lines on stdout' },
] as const;

interface Figures {
  what: string;
  peakRssMiB: number;
  /** Undefined for the baseline. */
  drainMiBps?: number;
  logMiB: number;
  seconds: number;
}

/** Peak resident set size of `pid` (VmHWM), in MiB. */
async function peakRssMiB(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  return Number(/^VmHWM:\s+(\d+) kB$/m.exec(status)?.[1]) / 1024;
}

async function floodRun(cp: ControlPlane, shape: (typeof SHAPES)[number], log: (s: string) => void): Promise<Figures> {
  const dir = await mkdtemp(join(tmpdir(), 'ccm-bench-flood-'));
  const doneFile = join(dir, 'flood-done');
  const logPath = join(dir, 'host.log');
  const started = performance.now();
  const host = await startHostProcess(
    [
      `--cloud-provider=${BAD_PROVIDER_NAME}`,
      `--plugin-path=${BAD_PROVIDER}`,
      `--kubeconfig=${cp.kubeconfigPath}`,
      '--plugin-env=BAD_PROVIDER_NODE_PREFIX=bench-flood-nobody-',
      ...(shape.shape === 'none' ? [] : [`--plugin-env=BAD_PROVIDER_SERVING_FLOOD=${shape.shape}:${FLOOD_MIB}`]),
      `--plugin-env=BAD_PROVIDER_FLOOD_DONE_FILE=${doneFile}`,
      '--controllers=cloud-node',
      '--node-selector=bench-flood=none',
      '--cluster-name=bench-flood',
      '--secure-port=0',
    ],
    logPath,
  );
  try {
    await waitFor(() => existsSync(doneFile), { what: `the provider finished writing ${shape.what}`, timeoutMs: RUN_TIMEOUT_MS, intervalMs: 500 });
    const floodMs = Number(await readFile(doneFile, 'utf8'));
    if (!process.kill(host.pid, 0)) throw new Error(`the host died during the flood; see ${logPath}`);
    const figures: Figures = {
      what: shape.what,
      peakRssMiB: await peakRssMiB(host.pid),
      drainMiBps: shape.shape === 'none' ? undefined : FLOOD_MIB / (floodMs / 1000),
      logMiB: (await stat(logPath)).size / MIB,
      seconds: (performance.now() - started) / 1000,
    };
    log(`plugin flood: ${shape.shape}: peak RSS ${f1(figures.peakRssMiB)} MiB, log ${f2(figures.logMiB)} MiB, ${f1(figures.seconds)} s`);
    return figures;
  } finally {
    await host.stop();
  }
}

export const pluginFloodSection: BenchSection = {
  name: 'plugin-flood',
  async run(ctx) {
    const cp = await ctx.controlPlane();
    const results: Figures[] = [];
    for (const shape of SHAPES) {
      ctx.log(`plugin flood: ${shape.shape}`);
      results.push(await floodRun(cp, shape, ctx.log));
    }
    const rows = results.map(
      (r) => `| ${r.what} | ${int(r.peakRssMiB)} | ${r.drainMiBps === undefined ? '-' : int(r.drainMiBps)} | ${f2(r.logMiB)} |`,
    );
    return `## Plugin output flood: host memory (issue 17)

The host as an OS process (\`node dist/host/main.js\`, running the node controller) and the bad
provider writing ${int(FLOOD_MIB)} MiB once it serves, one shape per run, each run a fresh host. Peak RSS is
the host's VmHWM after the provider finished writing (its writes block on a full pipe, so it finishes
only when the host has read everything); drained is ${int(FLOOD_MIB)} MiB over the provider's writing
time; log is everything the host wrote, start-up included. Bounds that apply: lines cut at
${int(MAX_PLUGIN_LINE_BYTES / 1024)} KiB, at most ${int(PLUGIN_LOG_LINES_BURST)} lines in a burst then ${int(PLUGIN_LOG_LINES_PER_SECOND)} per second reach the log, the
rest counted. Target: peak RSS bounded whatever the provider writes (before the bounds, about 600 MiB
without a newline crashed the host, and 200 MiB made it hold over 500 MiB).
No upstream column: upstream's provider is compiled into its process, so there is no provider output to drain.

| the provider writes | host peak RSS (MiB) | drained (MiB/s) | host log (MiB) |
|---|---|---|---|
${rows.join('\n')}
`;
  },
};
