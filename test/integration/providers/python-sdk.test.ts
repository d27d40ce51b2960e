/**
 * The Python SDK (sdk/python, the ccm-provider-sdk package): its own unittest
 * suite (protocol decisions, error helpers, capability derivation, and serve()
 * end to end against a child process: handshake, cookie refusal, version
 * negotiation, stdout guard, stale and live sockets, NOT_CONFIGURED,
 * Shutdown, stdin EOF, SIGTERM, sidecar mode) run with the test venv's
 * python, in which the package is pip-installed; its copies of the protocol
 * constants are those of sdk/protocol.ts; its version is the host's.
 */
import test from 'ava';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import { ErrorReason, MAX_MESSAGE_BYTES, SUPPORTED_PROTOCOL_VERSIONS } from '../../../sdk/protocol.js';
import { parseStderrLine } from '../../../host/plugin/stderr.js';
import { PYTHON_SDK_DIR, pythonProviderInterpreter, REPO } from '../../helpers/providers.js';
import { SDK_CONSTANTS } from '../../helpers/sdk-constants.js';

const PACKAGE = join(PYTHON_SDK_DIR, 'src', 'ccm_provider_sdk');

test('the Python SDK unit tests pass, every test module ran', async (t) => {
  const python = await pythonProviderInterpreter();
  const tests = join(PYTHON_SDK_DIR, 'tests');
  const modules = (await readdir(tests)).filter((f) => /^test_\w+\.py$/.test(f)).map((f) => f.slice(0, -3));
  t.not(modules.length, 0, 'sdk/python/tests has no test module');
  // Run from the tests directory: the package under test is the one installed in the venv (built from these sources).
  const r = await execa(python, ['-m', 'unittest', 'discover', '-v', '-s', tests, '-t', tests], {
    cwd: tests,
    reject: false,
    all: true,
    env: { PYTHONDONTWRITEBYTECODE: '1' },
  });
  t.is(r.exitCode, 0, r.all);
  for (const m of modules) t.regex(r.stderr, new RegExp(`\\(${m}\\.\\w+\\.\\w+\\) \\.\\.\\. ok$`, 'm'), `${m} ran and passed`);
  t.notRegex(r.stderr, /\.\.\. (FAIL|ERROR|skipped)/);
  // A leaked pipe's ResourceWarning lands wherever the collector runs, e.g. inside another test's "... ok" line.
  t.notRegex(r.stderr, /ResourceWarning/, 'a test leaves a file or pipe unclosed');
  const ran = /^Ran (\d+) tests? in /m.exec(r.stderr);
  t.truthy(ran && Number(ran[1]) > 0, r.stderr);
  t.regex(r.stderr, /^OK$/m);
  t.log(ran?.[0]);
});

test('the Python SDK speaks the protocol constants of sdk/protocol.ts', async (t) => {
  const py = (await readFile(join(PACKAGE, 'protocol.py'), 'utf8')) + (await readFile(join(PACKAGE, 'errors.py'), 'utf8'));
  const constant = (name: string): string | undefined => new RegExp(`^${name} = ("[^"]*"|[\\d *]+)$`, 'm').exec(py)?.[1];
  for (const c of SDK_CONSTANTS) t.is(constant(c.python), c.source, c.python);
  t.is(constant('MAX_MESSAGE_BYTES'), '16 * 1024 * 1024');
  t.is(MAX_MESSAGE_BYTES, 16 * 1024 * 1024);
  t.is(/^SUPPORTED_PROTOCOL_VERSIONS = \[([\d, ]*)\]$/m.exec(py)?.[1], SUPPORTED_PROTOCOL_VERSIONS.join(', '));
  for (const reason of Object.values(ErrorReason)) t.is(constant(reason), JSON.stringify(reason), reason);
});

test("the Python package's version is the host's (docs/release-policy.md)", async (t) => {
  const host = (JSON.parse(await readFile(join(REPO, 'package.json'), 'utf8')) as { version: string }).version;
  t.is(/^version = "([^"]+)"$/m.exec(await readFile(join(PYTHON_SDK_DIR, 'pyproject.toml'), 'utf8'))?.[1], host);
  t.is(/^__version__ = "([^"]+)"$/m.exec(await readFile(join(PACKAGE, '__init__.py'), 'utf8'))?.[1], host);
  const python = await pythonProviderInterpreter();
  const installed = await execa(python, [
    '-c',
    'import importlib.metadata as m, ccm_provider_sdk as s; print(m.version("ccm-provider-sdk"), s.__version__)',
  ]);
  t.is(installed.stdout.trim(), `${host} ${host}`);
});

test("the Python SDK's log lines are read by the host with their level, message and fields", async (t) => {
  const python = await pythonProviderInterpreter();
  const script = [
    'from ccm_provider_sdk import Logger',
    'log = Logger("example", level="trace")',
    'for level in ("trace", "debug", "info", "warn", "error"):',
    '    getattr(log, level)("instance created", node="n1")',
  ].join('\n');
  const r = await execa(python, ['-c', script], { env: { CCM_PLUGIN_LOG_LEVEL: 'trace' } });
  const lines = r.stderr.split('\n').filter(Boolean);
  t.deepEqual(
    lines.map((l) => parseStderrLine(l, false)),
    ['trace', 'debug', 'info', 'warn', 'error'].map((level) => ({ level, msg: 'instance created', fields: { name: 'example', node: 'n1' } })),
  );
});
