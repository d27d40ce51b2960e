/**
 * A provider's own metrics on the host's /metrics (IdentityService.GetMetrics):
 * the local cloud's as a real provider exports them, and a provider whose
 * answer changes between scrapes (the bad provider reading a file): valid
 * families are served after the host's, families that shadow the host's are
 * dropped, and an invalid answer is dropped whole without failing the scrape;
 * every served sample is labelled with the plugin (--cloud-provider).
 */
import test from 'ava';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startHost } from '../../host/app.js';
import { parseHostArgs } from '../../host/config/flags.js';
import { createLogger } from '../../host/log.js';
import { BAD_PROVIDER_NAME } from '../fixtures/bad-provider-lib.js';
import { checkForbiddenOnStop } from '../helpers/forbidden.js';
import { startTestHost } from '../helpers/host.js';
import { localcloud } from '../helpers/localcloud.js';
import { logFile } from '../helpers/log-file.js';
import { hostKubeConfig } from '../helpers/service-account.js';
import { waitFor } from '../helpers/wait.js';

const BAD = fileURLToPath(new URL('../fixtures/bad-provider.js', import.meta.url));

/** Lines of `text` for metric `name` (samples and HELP/TYPE). `absent` entries below are whole lines. */
const linesOf = (text: string, name: string) =>
  text.split('\n').filter((l) => l.startsWith(name) || l.startsWith(`# HELP ${name} `) || l.startsWith(`# TYPE ${name} `));

test("the local cloud's calls and objects appear on the host's /metrics", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'ccm-plugin-metrics-local-'));
  const host = await startTestHost(dir, ['--controllers=cloud-node', '--node-selector=ccm-test=plugin-metrics-none']);
  t.teardown(() => host.stop());
  await localcloud(join(dir, 'cloud'), 'instance', 'add', 'plugin-metrics-a', 'plugin-metrics-b');
  const text = await waitFor(
    async () => {
      const all = await host.metrics.registry.metrics();
      return all.split('\n').includes('localcloud_objects{plugin="local",kind="instances"} 2') ? all : undefined;
    },
    { what: "the local cloud's metrics", log: host.logPath },
  );
  t.is(linesOf(text, '# TYPE localcloud_objects').length, 1);
  t.is(linesOf(text, '# TYPE localcloud_calls_total').length, 1);
  t.is(linesOf(text, '# TYPE process_resident_memory_bytes').length, 1, "the host's own families once");
  t.true(text.indexOf('process_resident_memory_bytes') < text.indexOf('localcloud_objects'), "the plugin's after the host's");
});

test('valid families are served, shadowing ones dropped, an invalid answer dropped whole; the scrape never fails', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'ccm-plugin-metrics-bad-'));
  const file = join(dir, 'metrics.txt');
  await writeFile(file, '');
  const parsed = parseHostArgs([
    `--cloud-provider=${BAD_PROVIDER_NAME}`,
    `--plugin-path=${BAD}`,
    `--plugin-env=BAD_PROVIDER_METRICS_FILE=${file}`,
    '--plugin-env=BAD_PROVIDER_NODE_PREFIX=plugin-metrics-nobody-',
    '--controllers=cloud-node',
    '--node-selector=ccm-test=plugin-metrics-none',
    '--cluster-name=test',
    '--secure-port=0',
    '--leader-elect=false',
  ]);
  if ('errors' in parsed) throw new Error(parsed.errors.join('; '));
  const logPath = join(dir, 'host.log');
  // As every test host: the shipped ServiceAccount, and stop() fails on a 403.
  const host = checkForbiddenOnStop(
    await startHost(parsed.config, { log: createLogger({ destination: logFile(logPath) }), kubeConfig: await hostKubeConfig() }),
    logPath,
  );
  t.teardown(() => host.stop());

  const CASES: { name: string; answer: string; served: string[]; absent: string[]; logged?: RegExp }[] = [
    {
      name: 'a counter and a histogram of its own',
      answer:
        '# HELP bad_widgets_total Widgets.\n# TYPE bad_widgets_total counter\nbad_widgets_total{zone="a"} 3\nbad_latency_seconds_bucket{le="+Inf"} 2\nbad_latency_seconds_sum 0.5\nbad_latency_seconds_count 2\n',
      served: [
        `bad_widgets_total{plugin="${BAD_PROVIDER_NAME}",zone="a"} 3`,
        `bad_latency_seconds_count{plugin="${BAD_PROVIDER_NAME}"} 2`,
        '# TYPE bad_widgets_total counter',
      ],
      absent: [],
    },
    {
      name: 'families the host serves are dropped, the rest kept',
      answer:
        '# TYPE process_resident_memory_bytes gauge\nprocess_resident_memory_bytes 1\nrest_client_requests_total{code="200",method="GET",host="x"} 9\nbad_gadgets 7\n',
      served: [`bad_gadgets{plugin="${BAD_PROVIDER_NAME}"} 7`],
      absent: ['process_resident_memory_bytes 1', 'rest_client_requests_total{code="200",method="GET",host="x"} 9'],
      logged: /dropping plugin metric families that the host serves itself/,
    },
    {
      name: 'an invalid line drops the whole answer',
      answer: 'bad_fine 1\nbad_broken{zone=a} 2\n',
      served: [],
      absent: ['bad_fine', 'bad_broken'],
      logged: /"problem":"line 2 is not a valid sample.*"msg":"dropping the plugin's metrics: not valid Prometheus text format"/,
    },
  ];
  for (const c of CASES) {
    await writeFile(file, c.answer);
    // Scrapes within a second get the previous answer: poll until this one is in.
    const text = await waitFor(
      async () => {
        const all = await host.metrics.registry.metrics();
        const marker = c.served[0] ?? 'process_resident_memory_bytes';
        const lines = all.split('\n');
        return all.includes(marker) && c.absent.every((a) => !lines.includes(a)) ? all : undefined;
      },
      { what: `the host serving the answer "${c.name}"`, log: logPath },
    );
    for (const s of c.served) t.true(text.includes(s), `${c.name}: ${s}`);
    t.is(linesOf(text, '# TYPE process_resident_memory_bytes').length, 1, `${c.name}: the host's family once`);
    if (c.logged) {
      const re = c.logged;
      // Each scrape may fetch the answer anew; the log line says the host saw this one.
      const seen = async () => {
        const all = await host.metrics.registry.metrics();
        const lines = all.split('\n');
        return re.test(await readFile(logPath, 'utf8')) && c.absent.every((a) => !lines.includes(a));
      };
      await waitFor(seen, { what: `${c.name}: the log line`, log: logPath });
    }
  }
});
