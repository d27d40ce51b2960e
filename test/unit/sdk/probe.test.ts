/**
 * `<provider> probe` (sdk/probe.ts), the kubelet's exec probe of a sidecar
 * provider: its command line, and its answer against a provider served in
 * this process (configured or not) and against a socket that accepts
 * connections but never answers (a wedged process). The executable itself
 * runs it in test/integration/deploy/provider-probes.test.ts.
 */
import test from 'ava';
import { mkdtemp } from 'node:fs/promises';
import { createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseProbeArgs, PROBE_FAILED, PROBE_OK, PROBE_USAGE, runProbe } from '../../../sdk/probe.js';
import { ENV_SIDECAR_ENDPOINT } from '../../../sdk/protocol.js';
import { startInProcess } from '../../../sdk/testing.js';

const E = 'unix:///run/ccm-plugin/provider.sock';

const ARGS: [string, string[], NodeJS.ProcessEnv, ReturnType<typeof parseProbeArgs>][] = [
  ['defaults', [`--endpoint=${E}`], {}, { endpoint: E, timeoutMs: 3000, ready: false }],
  ['separate values, readiness', ['--endpoint', E, '--timeout', '500ms', '--ready'], {}, { endpoint: E, timeoutMs: 500, ready: true }],
  ['endpoint from the environment', ['--timeout=1.5s'], { [ENV_SIDECAR_ENDPOINT]: E }, { endpoint: E, timeoutMs: 1500, ready: false }],
  [
    'the flag wins over the environment',
    [`--endpoint=${E}`],
    { [ENV_SIDECAR_ENDPOINT]: 'unix:///other.sock' },
    { endpoint: E, timeoutMs: 3000, ready: false },
  ],
  ['no endpoint', [], {}, { error: `probe: endpoint "" is not unix:///absolute/path.sock (--endpoint or $${ENV_SIDECAR_ENDPOINT})` }],
  [
    'relative endpoint',
    ['--endpoint=unix://provider.sock'],
    {},
    { error: `probe: endpoint "unix://provider.sock" is not unix:///absolute/path.sock (--endpoint or $${ENV_SIDECAR_ENDPOINT})` },
  ],
  [
    'a timeout without a unit',
    [`--endpoint=${E}`, '--timeout=3'],
    {},
    { error: 'probe: --timeout=3 is not a positive duration such as 3s or 500ms' },
  ],
  ['zero timeout', [`--endpoint=${E}`, '--timeout=0s'], {}, { error: 'probe: --timeout=0s is not a positive duration such as 3s or 500ms' }],
  [
    'stray argument',
    [`--endpoint=${E}`, 'now'],
    {},
    { error: 'probe: unexpected argument "now" (usage: probe [--endpoint=unix:///path.sock] [--timeout=3s] [--ready])' },
  ],
];

for (const [name, argv, env, want] of ARGS) test(`arguments: ${name}`, (t) => t.deepEqual(parseProbeArgs(argv, env), want));

/** Runs the probe, returning its exit code and its one line. */
async function probe(argv: string[]): Promise<[number, string]> {
  const lines: string[] = [];
  const code = await runProbe(argv, {}, (l) => lines.push(l));
  return [code, lines.join('\n')];
}

test('answers: nothing listening, serving, unconfigured, configured, wedged, bad usage', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'ccm-probe-'));
  const unconfigured = await startInProcess({ info: { name: 'p.example', vendorVersion: '1', providerName: 'p' } }, { configure: false });
  const configured = await startInProcess({ info: { name: 'p.example', vendorVersion: '1', providerName: 'p' } });
  // Accepts connections (the kernel does) and never speaks: a stopped process behind its socket.
  const held: Socket[] = [];
  const wedged = createServer((s) => void held.push(s));
  await new Promise<void>((resolve) => wedged.listen(join(dir, 'wedged.sock'), resolve));
  t.teardown(async () => {
    await unconfigured.close();
    await configured.close();
    for (const s of held) s.destroy();
    wedged.close();
  });
  const rows: [string, string[], number, RegExp][] = [
    [
      'nothing listens',
      [`--endpoint=unix://${dir}/none.sock`],
      PROBE_FAILED,
      /^probe failed: .*none\.sock: grpc\.health\.v1 Check failed: UNAVAILABLE/,
    ],
    ['serving, not configured: alive', [`--endpoint=${unconfigured.endpoint}`], PROBE_OK, /^probe ok: .*: grpc\.health\.v1 SERVING$/],
    [
      'serving, not configured: not ready',
      [`--endpoint=${unconfigured.endpoint}`, '--ready'],
      PROBE_FAILED,
      /IdentityService\/Probe answered ready=false/,
    ],
    [
      'configured: ready',
      [`--endpoint=${configured.endpoint}`, '--ready'],
      PROBE_OK,
      /^probe ok: .*: grpc\.health\.v1 SERVING, IdentityService\/Probe ready$/,
    ],
    ['wedged', [`--endpoint=unix://${dir}/wedged.sock`, '--timeout=300ms'], PROBE_FAILED, /no answer to grpc\.health\.v1 Check within 0\.3s/],
    ['bad usage', ['--endpoint=tcp://x'], PROBE_USAGE, /^probe: endpoint "tcp:\/\/x" is not/],
  ];
  for (const [name, argv, code, says] of rows) {
    const [got, line] = await probe(argv);
    t.is(got, code, `${name}: ${line}`);
    t.regex(line, says, name);
    t.false(line.includes('\n'), `${name}: one line`);
  }
});
