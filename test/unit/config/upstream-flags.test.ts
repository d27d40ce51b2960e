/**
 * Every flag of the upstream cloud-controller-manager (the fixture generated
 * from its flag set by `npm run upstream:flags`, hidden and deprecated flags
 * included) is accepted: the ones this host implements parse, the rest are
 * accepted with one warning each saying why they have no effect. Flags
 * upstream removed are refused, naming the replacement. And `--version`
 * answers as upstream's does.
 */
import fs from 'node:fs';
import test from 'ava';
import { parseHostArgs } from '../../../host/config/flags.js';
import { INERT_FLAGS } from '../../../host/config/upstream-flags.js';
import { FLAGS } from '../../../host/config/flags.js';
import { K8S_VERSION } from '../../../host/names.js';
import { HOST_VERSION } from '../../../host/version.js';

/** The targeted version's flags, and the newest upstream's (`npm run upstream:flags -- v0.37.2`). */
const FIXTURES = {
  'v0.34.4': new URL('../../../../test/fixtures/upstream-ccm-flags.txt', import.meta.url),
  'v0.37.2': new URL('../../../../test/fixtures/upstream-ccm-flags-v0.37.2.txt', import.meta.url),
};
const BASE = ['--cloud-provider=foo', '--plugin-endpoint=unix:///run/ccm/foo.sock'];

/** A fixture's flags as `[name, type, hidden or deprecated]`; type is empty for booleans. */
function readFixture(file: URL): [string, string, boolean][] {
  return fs
    .readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.startsWith('--'))
    .map((l) => {
      const hash = l.indexOf(' #');
      const [flag, type = ''] = (hash < 0 ? l : l.slice(0, hash)).split(' ');
      return [flag!.slice(2), type, hash >= 0];
    });
}

/** Upstream v0.34's flags (the targeted version). */
const UPSTREAM_034 = readFixture(FIXTURES['v0.34.4']);
/** Upstream v0.37's flags (the newest the suite runs on). */
const UPSTREAM_037 = readFixture(FIXTURES['v0.37.2']);
/** Every flag of either version, once. */
const UPSTREAM: [string, string, boolean][] = [...new Map([...UPSTREAM_034, ...UPSTREAM_037].map((f) => [f[0], f])).values()];

/** A well-formed value for each upstream flag type. */
const SAMPLE: Record<string, string> = {
  '': 'true',
  string: 'x',
  duration: '5s',
  int: '1',
  int32: '1',
  int32Slice: '23',
  float32: '1',
  strings: 'a',
  ip: '127.0.0.1',
  mapStringBool: 'AllAlpha=false',
  namedCertKey: 'a.crt,a.key',
  quantity: '1',
  'pattern=N,...': 'x=1',
  Level: '2',
};

test('the fixture lists upstream v0.34 flags, hidden and deprecated ones included', (t) => {
  t.true(UPSTREAM_034.length >= 70, `${UPSTREAM_034.length} flags`);
  t.true(UPSTREAM_034.some(([n]) => n === 'concurrent-service-syncs'));
  t.deepEqual(
    UPSTREAM_034.filter(([, , hidden]) => hidden).map(([n]) => n),
    ['allow-untagged-cloud', 'node-sync-period'],
  );
});

test('upstream v0.37 adds the v1.36 TLS and lifecycle flags and drops none of v0.34', (t) => {
  const old = new Set(UPSTREAM_034.map(([n]) => n));
  const now = new Set(UPSTREAM_037.map(([n]) => n));
  t.deepEqual(
    [...now].filter((n) => !old.has(n)),
    [
      'concurrent-node-lifecycle-syncs',
      'concurrent-node-status-updates',
      'tls-curve-preferences',
      'webhook-disable-http2-serving',
      'webhook-tls-cipher-suites',
      'webhook-tls-curve-preferences',
      'webhook-tls-min-version',
      'webhook-tls-sni-cert-key',
    ],
  );
  t.deepEqual(
    [...old].filter((n) => !now.has(n)),
    [],
  );
});

for (const [name, type] of UPSTREAM) {
  if (name === 'version') continue;
  test(`upstream flag --${name} is accepted`, (t) => {
    t.true(type in SAMPLE, `no sample value for type ${JSON.stringify(type)}: add one`);
    const r = parseHostArgs([...BASE, `--${name}=${SAMPLE[type]}`]);
    const errors = 'errors' in r ? r.errors : [];
    t.deepEqual(
      errors.filter((e) => /unknown flag|unexpected argument/.test(e)),
      [],
    );
    if (INERT_FLAGS.some((f) => f.name === name)) {
      t.true('config' in r, errors.join('; '));
      if ('config' in r)
        t.true(
          r.config.warnings.some((w) => w.startsWith(`--${name} has no effect: `)),
          r.config.warnings.join('; '),
        );
    }
  });
}

test('inert flags are upstream flags the host does not implement', (t) => {
  const upstream = new Set(UPSTREAM.map(([n]) => n));
  const implemented = new Set(FLAGS.map((f) => f.name));
  for (const f of INERT_FLAGS) {
    t.true(upstream.has(f.name), `--${f.name} is not an upstream flag`);
    t.false(implemented.has(f.name), `--${f.name} is both implemented and inert`);
  }
});

test("a deprecated upstream flag warns once, with upstream's deprecation", (t) => {
  const r = parseHostArgs([...BASE, '--allow-untagged-cloud', '--allow-untagged-cloud=true']);
  t.true('config' in r, 'errors' in r ? r.errors.join('; ') : '');
  if (!('config' in r)) return;
  const warnings = r.config.warnings.filter((w) => w.startsWith('--allow-untagged-cloud'));
  t.is(warnings.length, 1, warnings.join('\n'));
  t.regex(warnings[0]!, /deprecated upstream: This flag is deprecated/);
});

/** Flags upstream v0.34 and v0.37 refuse (in neither fixture): refused here too, with the replacement. */
const REMOVED: [string, RegExp][] = [
  ['--address=127.0.0.1', /^--address is not accepted: .*--bind-address/],
  ['--port=0', /^--port is not accepted: .*--secure-port/],
  ['--port', /^--port is not accepted/],
];

for (const [word, message] of REMOVED) {
  test(`${word}, which upstream removed, is refused with one line naming the replacement`, (t) => {
    t.false(
      UPSTREAM.some(([n]) => word.startsWith(`--${n}=`) || word === `--${n}`),
      'upstream accepts it after all: regenerate the fixture',
    );
    const r = parseHostArgs([...BASE, word]);
    t.true('errors' in r);
    if ('errors' in r) {
      t.is(r.errors.length, 1, r.errors.join('\n'));
      t.regex(r.errors[0]!, message);
    }
  });
}

test('an inert boolean flag given bare does not swallow the next flag', (t) => {
  const r = parseHostArgs(['--profiling', ...BASE]);
  t.true('config' in r, 'errors' in r ? r.errors.join('; ') : '');
});

const VERSION_CASES: { argv: string[]; check: (text: string) => boolean; what: string }[] = [
  { argv: ['--version'], check: (s) => s.includes(HOST_VERSION) && s.includes(K8S_VERSION), what: 'ours and the Kubernetes version' },
  { argv: ['--version=true', '--bogus'], check: (s) => s.includes(HOST_VERSION), what: 'printed even beside a bad flag, as upstream' },
  { argv: ['--version=raw'], check: (s) => (JSON.parse(s) as { kubernetesVersion: string }).kubernetesVersion === K8S_VERSION, what: 'JSON' },
];

for (const c of VERSION_CASES) {
  test(`${c.argv.join(' ')} prints the version: ${c.what}`, (t) => {
    const r = parseHostArgs(c.argv);
    t.true('errors' in r && r.errors.length === 0 && r.help !== undefined && c.check(r.help), JSON.stringify(r));
  });
}

test('--version=false runs as usual; --version=vX.Y.Z is accepted with a warning', (t) => {
  const off = parseHostArgs([...BASE, '--version=false']);
  t.true('config' in off);
  const set = parseHostArgs([...BASE, '--version=v9.9.9']);
  t.true('config' in set && set.config.warnings.some((w) => w.startsWith('--version=v9.9.9 has no effect')));
});
