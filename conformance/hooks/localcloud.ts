#!/usr/bin/env node
/**
 * The conformance kit's test hook command for the local cloud:
 *
 *   node dist/conformance/hooks/localcloud.js --state DIR create-instance NAME
 *   node dist/conformance/hooks/localcloud.js --state DIR delete-instance NAME
 *   node dist/conformance/hooks/localcloud.js --state DIR throttle on DELAY_MS | throttle off
 *
 * It edits the same state directory the local cloud provider serves from
 * (pass the provider LOCALCLOUD_STATE_DIR=DIR). The throttle is the local
 * cloud's rate-limit knob set to one call per ~DELAY_MS (burst 1), so calls
 * after the first answer RESOURCE_EXHAUSTED / RATE_LIMITED with a RetryInfo.
 */
import { addInstances, deleteInstance, inventoryDefaults } from '../../plugins/local/inventory.js';
import { updateKnobs } from '../../plugins/local/knobs.js';
import { providerIdOf } from '../../plugins/local/names.js';
import { resolveStateDir, StateStore } from '../../plugins/local/state.js';

const UNSUPPORTED = 3;

async function main(argv: string[]): Promise<number> {
  let state: string | undefined;
  const args: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--state') state = argv[++i];
    else if (argv[i]!.startsWith('--state=')) state = argv[i]!.slice('--state='.length);
    else args.push(argv[i]!);
  }
  const store = new StateStore(resolveStateDir(state));
  const [verb, a, b] = args;
  if (verb === 'create-instance' && a) {
    const existing = store.read().instances.find((i) => i.name === a);
    const inst = existing ?? (await addInstances(store, [{ name: a, addresses: [], labels: {} }], inventoryDefaults()))[0]!;
    process.stdout.write(providerIdOf(inst.id) + '\n');
    return 0;
  }
  if (verb === 'delete-instance' && a) {
    if (store.read().instances.some((i) => i.name === a)) await deleteInstance(store, a);
    return 0;
  }
  if (verb === 'throttle' && a === 'on') {
    const delayMs = Math.max(1, Number(b ?? 1000));
    await updateKnobs(store, { rateLimitQps: 1000 / delayMs, rateLimitBurst: 1 });
    return 0;
  }
  if (verb === 'throttle' && a === 'off') {
    await updateKnobs(store, {}, ['rateLimitQps', 'rateLimitBurst']);
    return 0;
  }
  process.stderr.write(`unsupported hook verb: ${args.join(' ')}\n`);
  return UNSUPPORTED;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err) => {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);
