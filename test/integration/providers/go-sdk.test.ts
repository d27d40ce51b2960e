/**
 * The Go SDK's own tests (sdk/go: handshake, cookie refusal, version
 * negotiation, capability derivation, stdout guard, stale socket, Shutdown,
 * stdin EOF, signals, sidecar mode), the Go provider's (plugins/go, built
 * on the SDK through a replace directive) and the cloudprovider.Interface
 * bridge's (sdk/go/bridge, its own module: error mapping both ways, Node and
 * Service rebuilding, the Instances v1 fallback), run with `go test`, so `npm test`
 * covers them; and the SDK's copies of the protocol constants are those of
 * sdk/protocol.ts.
 */
import test from 'ava';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import {
  CORE_PROTOCOL_VERSION,
  ENV_ENDPOINT,
  ENV_INSTANCE_ID,
  ENV_LOG_LEVEL,
  ENV_PROTOCOL_VERSIONS,
  ENV_SIDECAR_ENDPOINT,
  ERROR_DOMAIN,
  ErrorReason,
  HANDSHAKE_PREFIX,
  HEALTH_SERVICE_NAME,
  MAGIC_COOKIE_KEY,
  MAGIC_COOKIE_VALUE,
  MAX_UNIX_SOCKET_PATH_BYTES,
  PROTOCOL_MINOR,
  SUPPORTED_PROTOCOL_VERSIONS,
} from '../../../sdk/protocol.js';
import { GO_BRIDGE_DIR, GO_DIR, GO_SDK_DIR } from '../../helpers/providers.js';

for (const [name, dir] of [
  ['sdk/go', GO_SDK_DIR],
  ['plugins/go', GO_DIR],
  ['sdk/go/bridge', GO_BRIDGE_DIR],
] as const) {
  test.serial(`go vet ./... and go test (every package with tests) pass in ${name}`, async (t) => {
    const vet = await execa('go', ['vet', './...'], { cwd: dir, reject: false, all: true });
    t.is(vet.exitCode, 0, vet.all);
    // Only the packages that have tests (generated code has none), so every package named must report ok.
    const list = await execa('go', ['list', '-f', '{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}}{{end}}', './...'], { cwd: dir });
    const packages = list.stdout.split('\n').filter(Boolean);
    t.not(packages.length, 0, `${name} has no package with tests`);
    const r = await execa('go', ['test', '-count=1', ...packages], { cwd: dir, reject: false, all: true });
    t.is(r.exitCode, 0, r.all);
    for (const pkg of packages) t.regex(r.stdout, new RegExp(`^ok\\s+${pkg.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\s`, 'm'), pkg);
    t.log(r.stdout.trim());
  });
}

test('the Go SDK speaks the protocol constants of sdk/protocol.ts', async (t) => {
  const go = (await readFile(join(GO_SDK_DIR, 'protocol.go'), 'utf8')) + (await readFile(join(GO_SDK_DIR, 'errors.go'), 'utf8'));
  const constant = (name: string): string | undefined => new RegExp(`\\b${name}\\s+=\\s+("[^"]*"|\\d+)`).exec(go)?.[1];
  t.is(constant('MagicCookieKey'), JSON.stringify(MAGIC_COOKIE_KEY));
  t.is(constant('MagicCookieValue'), JSON.stringify(MAGIC_COOKIE_VALUE));
  t.is(constant('EnvProtocolVersions'), JSON.stringify(ENV_PROTOCOL_VERSIONS));
  t.is(constant('EnvEndpoint'), JSON.stringify(ENV_ENDPOINT));
  t.is(constant('EnvInstanceID'), JSON.stringify(ENV_INSTANCE_ID));
  t.is(constant('EnvLogLevel'), JSON.stringify(ENV_LOG_LEVEL));
  t.is(constant('EnvSidecarEndpoint'), JSON.stringify(ENV_SIDECAR_ENDPOINT));
  t.is(constant('HandshakePrefix'), JSON.stringify(HANDSHAKE_PREFIX));
  t.is(constant('CoreProtocolVersion'), String(CORE_PROTOCOL_VERSION));
  t.is(constant('ProtocolMinor'), String(PROTOCOL_MINOR));
  t.is(constant('HealthServiceName'), JSON.stringify(HEALTH_SERVICE_NAME));
  t.is(constant('ErrorDomain'), JSON.stringify(ERROR_DOMAIN));
  t.is(constant('MaxUnixSocketPathBytes'), String(MAX_UNIX_SOCKET_PATH_BYTES));
  t.is(/SupportedProtocolVersions = \[\]int\{([\d, ]*)\}/.exec(go)?.[1], SUPPORTED_PROTOCOL_VERSIONS.join(', '));
  for (const reason of Object.values(ErrorReason)) t.regex(go, new RegExp(`\\bReason\\w+\\s+=\\s+"${reason}"`), reason);
});
