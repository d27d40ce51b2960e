#!/usr/bin/env node
/**
 * The local cloud provider executable. The host runs it as
 * `node dist/plugins/local/main.js` (given a .js plugin path) with the plugin
 * environment (CCM_PLUGIN_MAGIC_COOKIE, CCM_PLUGIN_ENDPOINT, ...); the SDK's
 * serve() does the handshake, the socket, health, Shutdown and stdin EOF.
 *
 * Arguments: `--state DIR` (else $LOCALCLOUD_STATE_DIR, else ./.localcloud).
 * Settings and knobs come from LOCALCLOUD_* environment variables (see
 * README.md). Logs are JSON lines on stderr.
 */
import { parseArgs } from 'node:util';
import { createProviderLogger } from '../../sdk/log.js';
import { serve } from '../../sdk/serve.js';
import { createLocalCloud, type LocalCloud } from './cloud.js';
import { PROVIDER_NAME } from './names.js';

const log = createProviderLogger(PROVIDER_NAME);

let cloud: LocalCloud;
try {
  const { values } = parseArgs({ options: { state: { type: 'string' } }, strict: false, allowPositionals: true });
  if (values.state !== undefined && typeof values.state !== 'string') throw new Error('--state needs a directory');
  cloud = createLocalCloud({ stateDir: values.state, logger: log });
} catch (err) {
  log.error({ error: err instanceof Error ? err.message : String(err) }, 'invalid local cloud settings');
  process.exit(1);
}

await serve(cloud, { logger: log });
log.info({ stateDir: cloud.store.dir, knobs: cloud.currentKnobs() }, 'local cloud ready');
