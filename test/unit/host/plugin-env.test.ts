/**
 * What a plugin's environment holds (docs/protocol.md, "Launch and
 * handshake"): the allowlist, and a runtime's own variables (JAVA_HOME,
 * PYTHONPATH, NODE_OPTIONS) only when the operator names them with --plugin-env.
 */
import test from 'ava';
import { allowedPluginEnv, DEFAULT_ENV_ALLOWLIST } from '../../../host/plugin/process.js';

const HOST = {
  PATH: '/usr/bin',
  HOME: '/home/ccm',
  TMPDIR: '/var/tmp/ccm',
  JAVA_HOME: '/opt/jdk-21',
  PYTHONPATH: '/opt/py',
  NODE_OPTIONS: '--inspect',
  AWS_SECRET_ACCESS_KEY: 'canary',
};

const cases: { what: string; entries: string[]; passed: Record<string, string>; withheld: string[] }[] = [
  {
    what: 'by default: the allowlist, TMPDIR included; no runtime variable, no secret',
    entries: [],
    passed: { PATH: '/usr/bin', HOME: '/home/ccm', TMPDIR: '/var/tmp/ccm' },
    withheld: ['JAVA_HOME', 'PYTHONPATH', 'NODE_OPTIONS', 'AWS_SECRET_ACCESS_KEY'],
  },
  {
    what: '--plugin-env JAVA_HOME passes the host value',
    entries: ['JAVA_HOME'],
    passed: { JAVA_HOME: '/opt/jdk-21', TMPDIR: '/var/tmp/ccm' },
    withheld: ['PYTHONPATH', 'AWS_SECRET_ACCESS_KEY'],
  },
  {
    what: '--plugin-env JAVA_HOME=/x sets it',
    entries: ['JAVA_HOME=/opt/other-jdk'],
    passed: { JAVA_HOME: '/opt/other-jdk' },
    withheld: ['NODE_OPTIONS'],
  },
];

for (const c of cases) {
  test(`plugin environment ${c.what}`, (t) => {
    const env = allowedPluginEnv(c.entries, HOST);
    for (const [k, v] of Object.entries(c.passed)) t.is(env[k], v, k);
    for (const k of c.withheld) t.false(k in env, k);
  });
}

test('the allowlist is what docs/protocol.md names', (t) => {
  t.deepEqual(DEFAULT_ENV_ALLOWLIST, ['PATH', 'HOME', 'LANG', 'LC_ALL', 'TZ', 'TMPDIR']);
});
