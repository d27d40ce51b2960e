/**
 * The docs and the host agree on metric names: every metric the host
 * defines (a full metric name written as a string in host/) is named in
 * README.md or docs/*.md (docs/health-and-metrics.md is the reference), and
 * every metric of the host's namespaces the docs name is one the host
 * defines, so a renamed or removed metric cannot linger in the docs.
 */
import test from 'ava';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../../../', import.meta.url));

/** The namespaces of the host's metrics: upstream's (component-base, client-go, cloud-provider) and ours (`ccm_`). */
const NAMESPACES = [
  'ccm',
  'workqueue',
  'rest_client',
  'service_controller',
  'node_controller',
  'route_controller',
  'leader_election',
  'running_managed',
  'kubernetes_build',
];
const PREFIX = `(?:${NAMESPACES.join('|')})_[a-z0-9_]*[a-z0-9]`;

/** Names of these namespaces the docs write that are not metrics. */
const NOT_METRICS = new Set(['ccm_provider_sdk']);

function tsFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? tsFiles(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

/** Every metric name the host's sources write as a string literal. */
const defined = new Set(
  tsFiles('host').flatMap((f) => [...readFileSync(join(ROOT, f), 'utf8').matchAll(new RegExp(`['"\`](${PREFIX})['"\`]`, 'g'))].map((m) => m[1]!)),
);

const DOCS = [
  'README.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];
const docsText = DOCS.map((d) => readFileSync(join(ROOT, d), 'utf8')).join('\n');

test('the host defines metrics (the scan of host/ finds them)', (t) => {
  t.true(defined.has('ccm_plugin_ready') && defined.has('workqueue_depth'), [...defined].join(' '));
});

test('every metric the host defines is named in README.md or docs/*.md', (t) => {
  const undocumented = [...defined].filter((m) => !new RegExp(`\\b${m}\\b`).test(docsText));
  t.deepEqual(undocumented, [], 'name these in docs/health-and-metrics.md');
});

/**
 * The provider process's own families the Go bridge renames (sdk/go/bridge/metrics.go, processFamilyPrefixes):
 * ccm_plugin_go_*, ccm_plugin_process_*, ... on the host's /metrics.
 */
const BRIDGE_RENAMED = /^ccm_plugin_(?:go|process|rest_client|workqueue|registered_metrics|disabled_metrics|hidden_metrics)_/;

/** A name the docs may write: a defined metric, one of its histogram series, a bridge-renamed family, or a prefix (`x_*`, `x_…`) of one of those. */
function known(name: string, prefix: boolean): boolean {
  if (prefix) return [...defined].some((d) => d.startsWith(name + '_')) || BRIDGE_RENAMED.test(name + '_x_');
  const base = name.replace(/_(?:count|sum|bucket)$/, '');
  return defined.has(name) || defined.has(base) || BRIDGE_RENAMED.test(name) || NOT_METRICS.has(name);
}

for (const doc of DOCS) {
  test(`${doc} names only metrics the host defines`, (t) => {
    const text = readFileSync(join(ROOT, doc), 'utf8');
    const named = [...text.matchAll(new RegExp('`(' + PREFIX + ')(_[*…]?)?', 'g'))].map((m) => ({ name: m[1]!, prefix: !!m[2] }));
    t.deepEqual([...new Set(named.filter((m) => !known(m.name, m.prefix)).map((m) => m.name))], [], `${doc} names metrics the host does not define`);
  });
}
