#!/usr/bin/env node
/**
 * The local cloud provider executable. The host runs it as
 * `node dist/plugins/local/main.js` (given a .js plugin path) with the plugin
 * environment (CCM_PLUGIN_MAGIC_COOKIE, CCM_PLUGIN_ENDPOINT, ...); the SDK's
 * serve() does the handshake, the socket, health, Shutdown and stdin EOF.
 *
 * Arguments: `--state DIR` (else $LOCALCLOUD_STATE_DIR, else ./.localcloud);
 * `probe [--endpoint=unix:///path.sock] [--timeout=3s] [--ready]` probes a
 * running sidecar instead (sdk/probe.ts).
 * It refuses to start without LOCALCLOUD_ALLOW_SIMULATION=true
 * (simulation-guard.ts: a simulation must never answer for a real cluster).
 * Settings and knobs come from LOCALCLOUD_* environment variables (see
 * README.md; LOCALCLOUD_PROVIDER_NAME sets the providerName, default
 * local). Logs are JSON lines on stderr.
 */
import { parseArgs } from 'node:util';
import { createProviderLogger } from '../../sdk/log.js';
import type { LocalCloud } from './cloud.js';
import type { Forwarder } from './forwarder.js';
import { PROVIDER_NAME, providerNameProblem } from './names.js';
import { simulationRefusal } from './simulation-guard.js';

// `main.js probe ...`: the kubelet's exec probe of the running sidecar
// (sdk/probe.ts), answered before the guard, the state directory or the cloud.
if (process.argv[2] === 'probe') await (await import('../../sdk/probe.js')).probeIfAsked();

const log = createProviderLogger(PROVIDER_NAME);

// Before anything else (no state directory, no socket, not even the gRPC
// modules loaded, so the refusal is quick): one line, exit 1.
const refusal = simulationRefusal(process.env) ?? providerNameProblem(process.env);
if (refusal !== undefined) {
  log.error(refusal);
  process.exit(1);
}
const [{ serve }, { createLocalCloud }, { Forwarder: ForwarderClass }, { resolveStateDir, StateStore }] = await Promise.all([
  import('../../sdk/serve.js'),
  import('./cloud.js'),
  import('./forwarder.js'),
  import('./state.js'),
]);

let cloud: LocalCloud;
let forwarder: Forwarder | undefined;
try {
  const { values } = parseArgs({ options: { state: { type: 'string' } }, strict: false, allowPositionals: true });
  if (values.state !== undefined && typeof values.state !== 'string') throw new Error('--state needs a directory');
  const store = new StateStore(resolveStateDir(values.state, process.env));
  // LOCALCLOUD_FORWARD=false keeps load balancers as records only (no listeners).
  const forward = !/^(0|false|no|off)$/i.test(process.env.LOCALCLOUD_FORWARD ?? '');
  forwarder = forward ? new ForwarderClass(store, log) : undefined;
  cloud = createLocalCloud({ store, logger: log, forwarder });
} catch (err) {
  log.error({ error: err instanceof Error ? err.message : String(err) }, 'invalid local cloud settings');
  process.exit(1);
}

// Listeners of existing load balancers come back before the host sees us ready.
await forwarder?.start();
await serve(cloud, { logger: log });
log.info({ stateDir: cloud.store.dir, knobs: cloud.currentKnobs() }, 'local cloud ready');
