/** The check of a provider's metrics text before the host serves it (host/plugin/validate-metrics.ts). */
import test from 'ava';
import { addLabel, checkPluginMetrics, exposedNames, MAX_PLUGIN_METRICS_BYTES } from '../../../host/plugin/validate-metrics.js';

const RESERVED = new Set(['process_cpu_seconds_total', 'workqueue_depth', 'rest_client_request_duration_seconds']);

const VALID: { name: string; text: string }[] = [
  { name: 'HELP, TYPE and a sample', text: '# HELP a_total A.\n# TYPE a_total counter\na_total 1\n' },
  { name: 'labels with escapes and a trailing comma', text: 'a{x="q\\"uote",y="back\\\\slash",z="new\\nline",} 1\n' },
  { name: 'special values and a timestamp', text: 'a NaN\nb +Inf\nc -Inf\nd 1.5e-3 1700000000000\n' },
  { name: 'comments and blank lines', text: '# just a comment\n\na 1\n' },
  { name: 'colons in names', text: 'job:requests:rate5m 3\n' },
  { name: 'empty', text: '' },
];
for (const v of VALID) {
  test(`valid: ${v.name}`, (t) => {
    const r = checkPluginMetrics(v.text, RESERVED);
    if ('problem' in r) return t.fail(r.problem);
    t.deepEqual(r.shadowed, []);
    t.is(
      r.text,
      v.text
        .split('\n')
        .filter((l) => l.trim())
        .map((l) => l + '\n')
        .join(''),
    );
  });
}

const INVALID: { name: string; text: string; problem: RegExp }[] = [
  { name: 'unquoted label value', text: 'a{x=y} 1\n', problem: /^line 1 is not a valid sample/ },
  { name: 'no value', text: 'a 1\nb\n', problem: /^line 2 is not a valid sample/ },
  { name: 'a name starting with a digit', text: '1a 1\n', problem: /^line 1 is not a valid sample/ },
  { name: 'an unknown TYPE', text: '# TYPE a bogus\n', problem: /^line 1 is not a valid HELP or TYPE line/ },
  { name: 'a value that is not a number', text: 'a one\n', problem: /^line 1 is not a valid sample/ },
  { name: 'a line too long', text: `a{x="${'y'.repeat(70_000)}"} 1\n`, problem: /^line 1 is longer than/ },
  { name: 'an answer too large', text: 'a 1\n'.repeat(MAX_PLUGIN_METRICS_BYTES / 4 + 1), problem: /larger than/ },
];
for (const c of INVALID) {
  test(`invalid: ${c.name}`, (t) => {
    const r = checkPluginMetrics(c.text, RESERVED);
    if (!('problem' in r)) return t.fail('accepted');
    t.regex(r.problem, c.problem);
  });
}

test('families the host serves are left out, histogram and counter suffixes included', (t) => {
  const r = checkPluginMetrics(
    '# TYPE workqueue_depth gauge\nworkqueue_depth{name="x"} 1\nrest_client_request_duration_seconds_bucket{le="1"} 1\nprocess_cpu_seconds_total 2\nmine_total 3\n',
    RESERVED,
  );
  if ('problem' in r) return t.fail(r.problem);
  t.is(r.text, 'mine_total 3\n');
  t.deepEqual(r.shadowed.sort(), ['process_cpu_seconds_total', 'rest_client_request_duration_seconds_bucket', 'workqueue_depth']);
});

test('exposedNames reads samples and HELP/TYPE lines', (t) => {
  t.deepEqual([...exposedNames('# HELP a x\n# TYPE a gauge\na{l="1"} 1\nb_total 2\n# other comment\n')].sort(), ['a', 'b_total']);
});

const LABELLED: { name: string; line: string; want: string }[] = [
  { name: 'no labels', line: 'a 1', want: 'a{plugin="aws"} 1' },
  { name: 'empty braces', line: 'a{} 1', want: 'a{plugin="aws"} 1' },
  { name: 'other labels', line: 'a_bucket{le="+Inf",x="q\\"uote"} 2', want: 'a_bucket{plugin="aws",le="+Inf",x="q\\"uote"} 2' },
  { name: 'a plugin label of its own is kept', line: 'a{x="1",plugin="other"} 1', want: 'a{x="1",plugin="other"} 1' },
  { name: 'plugin only inside a value is not a label', line: 'a{x="plugin=\\"y\\""} 1', want: 'a{plugin="aws",x="plugin=\\"y\\""} 1' },
  { name: 'a timestamp', line: 'a 1 1700000000000', want: 'a{plugin="aws"} 1 1700000000000' },
  { name: 'HELP and TYPE lines unchanged', line: '# HELP a x y\n# TYPE a gauge', want: '# HELP a x y\n# TYPE a gauge' },
];
for (const c of LABELLED) {
  test(`addLabel: ${c.name}`, (t) => {
    const checked = checkPluginMetrics(`${c.line}\n`, RESERVED);
    if ('problem' in checked) return t.fail(checked.problem);
    const out = addLabel(checked.text, 'plugin', 'aws');
    t.is(out, `${c.want}\n`);
    t.false('problem' in checkPluginMetrics(out, RESERVED), 'still valid text format');
  });
}
