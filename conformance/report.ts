/** Check results: a human-readable line per check and JUnit XML. */

export type Outcome = 'pass' | 'fail' | 'skip';

export interface CheckResult {
  id: string;
  title: string;
  outcome: Outcome;
  /** Why it failed or was skipped. */
  message?: string;
  durationMs: number;
}

const MARK: Record<Outcome, string> = { pass: 'PASS', fail: 'FAIL', skip: 'SKIP' };

/** One line per result: "PASS  identity/plugin-info  GetPluginInfo ... (12 ms)". */
export function formatResult(r: CheckResult): string {
  const why = r.message ? `\n      ${r.message.split('\n').join('\n      ')}` : '';
  return `${MARK[r.outcome]}  ${r.id}  ${r.title} (${r.durationMs} ms)${why}`;
}

export function counts(results: readonly CheckResult[]): Record<Outcome, number> {
  const c = { pass: 0, fail: 0, skip: 0 };
  for (const r of results) c[r.outcome]++;
  return c;
}

/** "conformance: 40 passed, 0 failed, 3 skipped". */
export function summaryLine(results: readonly CheckResult[]): string {
  const c = counts(results);
  return `conformance: ${c.pass} passed, ${c.fail} failed, ${c.skip} skipped`;
}

function xml(s: string): string {
  // Drop characters XML 1.0 cannot carry, then escape.
  return (
    s
      // eslint-disable-next-line no-control-regex -- the control characters XML 1.0 allows are the point
      .replace(/[^\x09\x0A\x0D\x20-\uD7FF\uE000-\uFFFD]/g, '')
      .replace(/[<>&"']/g, (c) => `&${{ '<': 'lt', '>': 'gt', '&': 'amp', '"': 'quot', "'": 'apos' }[c]};`)
  );
}

/** JUnit XML (one testsuite; classname = the check's group). */
export function junitXml(suite: string, results: readonly CheckResult[], timestamp = new Date()): string {
  const c = counts(results);
  const total = results.reduce((s, r) => s + r.durationMs, 0) / 1000;
  const cases = results.map((r) => {
    const group = r.id.split('/')[0] ?? r.id;
    const head = `    <testcase classname="${xml(`${suite}.${group}`)}" name="${xml(`${r.id}: ${r.title}`)}" time="${(r.durationMs / 1000).toFixed(3)}"`;
    if (r.outcome === 'pass') return `${head}/>`;
    const inner =
      r.outcome === 'fail'
        ? `<failure message="${xml(r.message ?? 'failed')}">${xml(r.message ?? '')}</failure>`
        : `<skipped message="${xml(r.message ?? 'skipped')}"/>`;
    return `${head}>\n      ${inner}\n    </testcase>`;
  });
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<testsuites name="${xml(suite)}" tests="${results.length}" failures="${c.fail}" skipped="${c.skip}" errors="0" time="${total.toFixed(3)}">`,
    `  <testsuite name="${xml(suite)}" tests="${results.length}" failures="${c.fail}" skipped="${c.skip}" errors="0" time="${total.toFixed(3)}" timestamp="${timestamp.toISOString().replace(/\.\d+Z$/, '')}">`,
    ...cases,
    '  </testsuite>',
    '</testsuites>',
    '',
  ].join('\n');
}
