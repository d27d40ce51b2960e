/**
 * A provider that floods its stdout and stderr cannot crash the host, grow
 * its memory or flood its log: the real host as an OS process, the bad
 * provider (test/fixtures/bad-provider.ts) writing hundreds of MiB without a
 * newline on stdout before its handshake and on stderr, then floods of short
 * lines on both streams. The host must start, stay up, keep its peak RSS
 * bounded, cut the long lines (marked with truncatedBytes) and log only a
 * bounded number of the short ones, with a summary of what it dropped and
 * a metric that counts it.
 */
import test from 'ava';
import { existsSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { mkdtemp, readFile, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MAX_PLUGIN_LINE_BYTES } from '../../host/plugin/lines.js';
import { BAD_PROVIDER_NAME } from '../fixtures/bad-provider-lib.js';
import { kubeconfigFile, startHostProcess } from '../helpers/host-process.js';
import { waitFor } from '../helpers/wait.js';
import { scrapeMetrics } from '../helpers/scraper.js';

const BAD_PROVIDER = fileURLToPath(new URL('../fixtures/bad-provider.js', import.meta.url));
const FLOOD_MIB = 300;
const FLOOD_LINES = 200_000;
/** Peak RSS the host may reach; before the bounds it held more than the flood (over 500 MiB at 200 MiB). */
const MAX_PEAK_RSS_MIB = 256;
/** Log the host may write for all of this; before the bounds, 20 MiB of stdout became 106 MiB of log. */
const MAX_LOG_MIB = 4;
const MIB = 1 << 20;
const STRAY_STDOUT = 'ignoring plugin stdout line that is not the handshake';

/** A TCP port that was free a moment ago. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  await new Promise((r) => server.close(r));
  return port;
}

/** Peak resident set size of `pid` (VmHWM), in MiB. */
async function peakRssMiB(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/^VmHWM:\s+(\d+) kB$/m.exec(status)?.[1]);
  return kb / 1024;
}

function records(log: string): Record<string, unknown>[] {
  return log.split('\n').flatMap((l) => {
    try {
      return [JSON.parse(l) as Record<string, unknown>];
    } catch {
      return [];
    }
  });
}

test(`${FLOOD_MIB} MiB without a newline on stdout and stderr and ${FLOOD_LINES} lines on each: the host stays up, bounded`, async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'ccm-flood-'));
  const doneFile = join(dir, 'flood-done');
  const logPath = join(dir, 'host.log');
  const port = await freePort();
  const host = await startHostProcess(
    [
      `--cloud-provider=${BAD_PROVIDER_NAME}`,
      `--plugin-path=${BAD_PROVIDER}`,
      `--kubeconfig=${await kubeconfigFile(dir)}`,
      '--logging-format=json',
      '--plugin-env=BAD_PROVIDER_NODE_PREFIX=flood-nobody-',
      `--plugin-env=BAD_PROVIDER_FLOOD_MIB=${FLOOD_MIB}`,
      `--plugin-env=BAD_PROVIDER_FLOOD_LINES=${FLOOD_LINES}`,
      `--plugin-env=BAD_PROVIDER_FLOOD_DONE_FILE=${doneFile}`,
      '--plugin-start-timeout=5m',
      '--controllers=cloud-node',
      // No node of any test has this label: the host must not touch (or file events on) other files' nodes.
      '--node-selector=ccm-test/flood=none',
      '--cluster-name=flood',
      `--secure-port=${port}`,
      '--bind-address=127.0.0.1',
    ],
    logPath,
  );
  t.teardown(() => host.stop());
  await waitFor(() => existsSync(doneFile), { what: 'the provider finished flooding', timeoutMs: 300_000, intervalMs: 200 });
  // Every flood line ends up logged or counted in a summary, at most one summary interval after the flood
  // (the count may include a few of the SDK's own log lines, dropped in the flood too).
  const count = async () => {
    const all = records(await readFile(logPath, 'utf8'));
    const summaries = all.filter((r) => typeof r.droppedStderrLines === 'number');
    const dropped = summaries.reduce((n, r) => n + (r.droppedStderrLines as number) + (r.droppedStdoutLines as number), 0);
    const logged = all.filter((r) => /^flood line/.test(String(r.msg === STRAY_STDOUT ? r.line : r.msg))).length;
    return { all, summaries: summaries.length, dropped, logged };
  };
  let last = await count();
  await waitFor(async () => (last = await count()).logged + last.dropped >= 2 * FLOOD_LINES || undefined, {
    what: 'every flood line logged or counted',
    timeoutMs: 60_000,
    intervalMs: 1000,
  }).catch(() => t.fail(`flood lines: ${last.logged} logged, ${last.dropped} counted as dropped, want at least ${2 * FLOOD_LINES} in all`));
  t.log(`${last.logged} flood lines logged, ${last.dropped} lines dropped and counted in ${last.summaries} summaries`);
  t.true(last.logged + last.dropped - 2 * FLOOD_LINES <= 10, 'only a few lines besides the flood');

  const peak = await peakRssMiB(host.pid);
  const logBytes = (await stat(logPath)).size;
  t.log(
    `host peak RSS ${peak.toFixed(0)} MiB, host log ${(logBytes / MIB).toFixed(2)} MiB, for ${2 * FLOOD_MIB} MiB and ${2 * FLOOD_LINES} lines of plugin output`,
  );
  t.true(process.kill(host.pid, 0), 'the host is still running');
  t.true(peak < MAX_PEAK_RSS_MIB, `peak RSS ${peak} MiB`);
  t.true(logBytes < MAX_LOG_MIB * MIB, `log ${logBytes} bytes`);
  t.true(last.dropped > 0);

  const metrics = await scrapeMetrics(port);
  const counted = (stream: string) =>
    Number(new RegExp(`^ccm_plugin_output_lines_dropped_total\\{plugin="bad",stream="${stream}"\\} (\\d+)$`, 'm').exec(metrics)?.[1]);
  t.is(counted('stdout') + counted('stderr'), last.dropped, 'the metric counts every dropped line');

  const all = last.all;
  t.true(all.some((r) => r.msg === 'plugin ready'));
  const cutStdout = all.find((r) => r.msg === STRAY_STDOUT && typeof r.truncatedBytes === 'number');
  t.is(cutStdout?.truncatedBytes, FLOOD_MIB * MIB - 512, 'the stdout line is cut and says by how much');
  const cutStderr = all.find((r) => r.source === 'plugin-stderr' && typeof r.truncatedBytes === 'number');
  t.is(cutStderr?.truncatedBytes, FLOOD_MIB * MIB - MAX_PLUGIN_LINE_BYTES, 'the stderr line is cut and says by how much');
});
