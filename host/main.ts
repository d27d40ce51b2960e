#!/usr/bin/env node
/**
 * `cloud-controller-manager`: parses flags, starts the host, and stops it on
 * SIGTERM/SIGINT. Problems an operator must fix print one line each and exit
 * non-zero.
 */
// First: its V8 settings must be in place before the other modules allocate (see the file).
import './v8-settings.js';
import { startHost, HostStartError } from './app.js';
import { parseHostArgs } from './config/flags.js';
import { createLogger, errorMessage } from './log.js';
import { COMPONENT_NAME } from './names.js';
import { redact } from './redact.js';

/** Time allowed on top of the plugin's grace period for the whole shutdown. */
const SHUTDOWN_SLACK_MS = 20_000;
/**
 * Bound on the stop after the lease was lost: then exit 1 whatever is still
 * running (upstream exits at once, klog.Fatalf). The fence already holds back
 * every write of this replica; this is the time the plugin gets to stop
 * cleanly (it also exits on its own once the host is gone: stdin EOF).
 */
const LOST_LEASE_EXIT_BOUND_MS = 5_000;

async function main(): Promise<void> {
  const parsed = parseHostArgs(process.argv.slice(2));
  if ('errors' in parsed) {
    if (parsed.help !== undefined && parsed.errors.length === 0) {
      process.stdout.write(parsed.help + '\n');
      process.exit(0);
    }
    for (const e of parsed.errors) process.stderr.write(`${COMPONENT_NAME}: ${e}\n`);
    process.exit(2);
  }
  const config = parsed.config;
  const shutdownBoundMs = config.pluginShutdownGraceMs + SHUTDOWN_SLACK_MS;
  const log = createLogger({ verbosity: config.verbosity, format: config.loggingFormat });
  let stopping = false;
  let host: Awaited<ReturnType<typeof startHost>> | undefined;
  /** Stops everything (within `boundMs`) and exits with `code`: 0 on a requested stop, 1 when leadership was lost. */
  const shutdown = async (signal: string, code = 0, boundMs = shutdownBoundMs) => {
    if (stopping) {
      if (code !== 0) return; // already stopping; a lost lease during a stop changes nothing
      log.warn({ signal }, 'second signal: exiting without waiting for a clean stop');
      process.exit(1);
    }
    stopping = true;
    log.info({ signal }, 'shutting down');
    // Every stage of stop() is bounded; this is the backstop for the whole of it.
    setTimeout(() => {
      log.error({ timeoutMs: boundMs }, 'shutdown did not finish in time; exiting');
      process.exit(1);
    }, boundMs).unref();
    await host?.stop();
    log.info('stopped');
    process.exit(code);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
  try {
    host = await startHost(config, {
      log,
      // As upstream: exit non-zero so the kubelet restarts the process clean.
      onLeadershipLost: (lease) => {
        log.error({ lease }, 'leaderelection lost');
        void shutdown('leadership lost', 1, Math.min(shutdownBoundMs, LOST_LEASE_EXIT_BOUND_MS));
      },
    });
  } catch (err) {
    const msg = err instanceof HostStartError ? err.message : `unexpected start-up failure: ${errorMessage(err)}`;
    process.stderr.write(redact(`${COMPONENT_NAME}: ${msg}\n`));
    process.exit(1);
  }
}

void main();
