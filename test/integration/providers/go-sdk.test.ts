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
import { ErrorReason, SUPPORTED_PROTOCOL_VERSIONS } from '../../../sdk/protocol.js';
import { GO_BRIDGE_DIR, GO_DIR, GO_SDK_DIR } from '../../helpers/providers.js';
import { SDK_CONSTANTS } from '../../helpers/sdk-constants.js';

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
  for (const c of SDK_CONSTANTS) t.is(constant(c.go), c.source, c.go);
  t.is(/SupportedProtocolVersions = \[\]int\{([\d, ]*)\}/.exec(go)?.[1], SUPPORTED_PROTOCOL_VERSIONS.join(', '));
  for (const reason of Object.values(ErrorReason)) t.regex(go, new RegExp(`\\bReason\\w+\\s+=\\s+"${reason}"`), reason);
});
