/**
 * Real providers' cloud-controller-manager command lines
 * (test/fixtures/real-command-lines.json: each from a provider's manifest,
 * chart or docs at a pinned commit) through the host's flag parsing and
 * validation: each either starts, or fails with exactly one line naming what
 * is not the host's (a provider's own flag, controller or CIDR allocator, or
 * a flag upstream removed) and what to do instead. Deprecated upstream flags
 * such as --allow-untagged-cloud start with one warning.
 *
 * The host needs what upstream's binary does not: where the provider plugin
 * is (--plugin-endpoint, the sidecar layout), and --cloud-provider where the
 * provider's binary defaulted it (`impliedArgs`). Files named by the line
 * (--cloud-config, --kubeconfig) are created under a temporary directory, so
 * their paths are checked as on the real node.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import test from 'ava';
import { parseHostArgs } from '../../../host/config/flags.js';

interface RealLine {
  id: string;
  provider: string;
  repo: string;
  path: string;
  commit: string;
  args: string[];
  impliedArgs?: string[];
  expect: 'start' | 'fail';
  mentions?: string[];
}

const FIXTURE = new URL('../../../../test/fixtures/real-command-lines.json', import.meta.url);
const LINES = (JSON.parse(fs.readFileSync(FIXTURE, 'utf8')) as { lines: RealLine[] }).lines;
const SIDECAR = '--plugin-endpoint=unix:///run/ccm/provider.sock';
/** Flags whose value must be a readable file. */
const FILE_FLAGS = new Set(['--cloud-config', '--kubeconfig']);

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'real-command-lines-'));
test.after.always(() => fs.rmSync(root, { recursive: true, force: true }));

/** The line as the host gets it: files moved under `root` (and created), plus what the host needs besides. */
function hostArgv(line: RealLine): string[] {
  const args = line.args.map((word) => {
    const eq = word.indexOf('=');
    if (eq < 0 || !FILE_FLAGS.has(word.slice(0, eq))) return word;
    const file = path.join(root, line.id, word.slice(eq + 1));
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, '');
    return `${word.slice(0, eq)}=${file}`;
  });
  return [...(line.impliedArgs ?? []), ...args, SIDECAR];
}

test('the fixture holds real command lines of many providers', (t) => {
  t.true(LINES.length >= 38, `${LINES.length} lines`);
  t.true(new Set(LINES.map((l) => l.provider)).size >= 28);
  t.is(new Set(LINES.map((l) => l.id)).size, LINES.length, 'ids are unique');
  for (const l of LINES) t.regex(l.commit, /^[0-9a-f]{40}$/, `${l.id}: pin the source commit`);
});

for (const line of LINES) {
  test(`${line.id} (${line.repo}/${line.path}) ${line.expect === 'start' ? 'starts' : 'fails with one line'}`, (t) => {
    const r = parseHostArgs(hostArgv(line));
    if (line.expect === 'start') {
      t.true('config' in r, 'errors' in r ? r.errors.join('\n') : '');
      if ('config' in r && line.args.some((a) => a.startsWith('--allow-untagged-cloud'))) {
        t.is(r.config.warnings.filter((w) => w.startsWith('--allow-untagged-cloud has no effect')).length, 1, r.config.warnings.join('\n'));
      }
      return;
    }
    t.true('errors' in r, 'expected to fail');
    if (!('errors' in r)) return;
    t.is(r.errors.length, 1, r.errors.join('\n'));
    const [only = ''] = r.errors;
    t.false(only.includes('\n'), 'one line');
    for (const m of line.mentions ?? []) t.true(only.includes(m), `"${m}" not in: ${only}`);
    t.log(only);
  });
}

test('how many start', (t) => {
  const started = LINES.filter((l) => 'config' in parseHostArgs(hostArgv(l))).length;
  t.log(`${started} of ${LINES.length} real command lines start`);
  t.is(started, LINES.filter((l) => l.expect === 'start').length);
});
