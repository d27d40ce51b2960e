/**
 * The Go SDK's own tests (sdk/go: handshake, cookie refusal, version
 * negotiation, capability derivation, stdout guard, stale socket, Shutdown,
 * stdin EOF, signals, sidecar mode) and the Go provider's (plugins/go, built
 * on the SDK through a replace directive), run with `go test`, so `npm test`
 * covers them.
 */
import test from 'ava';
import { execa } from 'execa';
import { GO_DIR, GO_SDK_DIR } from '../../helpers/providers.js';

for (const [name, dir] of [['sdk/go', GO_SDK_DIR], ['plugins/go', GO_DIR]] as const) {
  test.serial(`go vet and go test ./... pass in ${name}`, async (t) => {
    const vet = await execa('go', ['vet', './...'], { cwd: dir, reject: false, all: true });
    t.is(vet.exitCode, 0, vet.all);
    const r = await execa('go', ['test', '-count=1', './...'], { cwd: dir, reject: false, all: true });
    t.is(r.exitCode, 0, r.all);
    t.log(r.stdout.trim());
  });
}
