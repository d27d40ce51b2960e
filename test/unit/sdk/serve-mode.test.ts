import test from 'ava';
import {
  ENV_ENDPOINT,
  ENV_INSTANCE_ID,
  ENV_PROTOCOL_VERSIONS,
  ENV_SIDECAR_ENDPOINT,
  MAGIC_COOKIE_KEY,
  MAGIC_COOKIE_VALUE,
} from '../../../sdk/protocol.js';
import { endpointFromArgv, NOT_BY_HAND_MESSAGE, resolveMode, versionMismatchMessage } from '../../../sdk/serve.js';
import { shutdownGraceMs, DEFAULT_SHUTDOWN_GRACE_MS, MAX_SHUTDOWN_GRACE_MS } from '../../../sdk/builtin.js';

const exec = {
  [MAGIC_COOKIE_KEY]: MAGIC_COOKIE_VALUE,
  [ENV_PROTOCOL_VERSIONS]: '1,2',
  [ENV_ENDPOINT]: 'unix:///tmp/p.sock',
  [ENV_INSTANCE_ID]: 'id-1',
};

test('exec mode when the cookie matches, even with a sidecar endpoint', (t) => {
  t.deepEqual(resolveMode(exec, ['--endpoint=unix:///other.sock'], 'unix:///opt.sock'), {
    kind: 'exec',
    endpoint: 'unix:///tmp/p.sock',
    hostVersions: [1, 2],
    instanceId: 'id-1',
  });
});

test('sidecar endpoint precedence: option, then env, then argv', (t) => {
  const env = { [ENV_SIDECAR_ENDPOINT]: 'unix:///env.sock' };
  t.deepEqual(resolveMode(env, ['--endpoint=unix:///arg.sock'], 'unix:///opt.sock'), { kind: 'sidecar', endpoint: 'unix:///opt.sock' });
  t.deepEqual(resolveMode(env, ['--endpoint=unix:///arg.sock']), { kind: 'sidecar', endpoint: 'unix:///env.sock' });
  t.deepEqual(resolveMode({}, ['--endpoint', 'unix:///arg.sock']), { kind: 'sidecar', endpoint: 'unix:///arg.sock' });
});

test('refuses when run by hand or with a wrong cookie', (t) => {
  t.deepEqual(resolveMode({}, []), { kind: 'refuse', message: NOT_BY_HAND_MESSAGE });
  t.deepEqual(resolveMode({ [MAGIC_COOKIE_KEY]: 'nope' }, ['--endpoint=unix:///x.sock']), { kind: 'refuse', message: NOT_BY_HAND_MESSAGE });
  t.deepEqual(resolveMode({ [MAGIC_COOKIE_KEY]: '' }, []), { kind: 'refuse', message: NOT_BY_HAND_MESSAGE });
});

test('endpointFromArgv', (t) => {
  t.is(endpointFromArgv([]), undefined);
  t.is(endpointFromArgv(['--verbose']), undefined);
  t.is(endpointFromArgv(['--endpoint=unix:///a.sock']), 'unix:///a.sock');
  t.is(endpointFromArgv(['-v', '--endpoint', 'unix:///b.sock']), 'unix:///b.sock');
  t.is(endpointFromArgv(['--endpoint']), undefined);
});

test('versionMismatchMessage names both lists and who should upgrade', (t) => {
  t.is(versionMismatchMessage([2, 3], [1]), 'This provider speaks ccm protocol versions 1; the host offered 2,3: upgrade the plugin.');
  t.is(versionMismatchMessage([1], [2]), 'This provider speaks ccm protocol versions 2; the host offered 1: upgrade the host.');
  t.true(versionMismatchMessage([], [1]).includes(`the host offered none: the host set no valid ${ENV_PROTOCOL_VERSIONS}`));
});

test('shutdownGraceMs defaults, converts and clamps', (t) => {
  t.is(shutdownGraceMs({}), DEFAULT_SHUTDOWN_GRACE_MS);
  t.is(shutdownGraceMs({ gracePeriod: { seconds: 2, nanos: 500_000_000 } }), 2500);
  t.is(shutdownGraceMs({ gracePeriod: { seconds: -1, nanos: 0 } }), 0);
  t.is(shutdownGraceMs({ gracePeriod: { seconds: 86_400, nanos: 0 } }), MAX_SHUTDOWN_GRACE_MS);
});
