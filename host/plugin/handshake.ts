/**
 * Reads the provider's handshake line from its stdout within a start timeout.
 * Lines that are not handshakes are handed to `onOtherLine` (the host logs
 * them) and waiting goes on; a malformed handshake, the process exiting, or
 * the timeout ends the wait with a PluginStartError.
 */
import type { Readable } from 'node:stream';
import { parseHandshake, SUPPORTED_PROTOCOL_VERSIONS, type Handshake } from '../../sdk/protocol.js';
import { readBoundedLines, type LineHandler } from './lines.js';

/** How long to wait for the exit status after stdout closes, to report it. */
const CLOSE_EXIT_GRACE_MS = 1000;

/** The plugin could not be started; the message says why and what to do. */
export class PluginStartError extends Error {
  override name = 'PluginStartError';
}

/** The plugin stopped answering during its start-up sequence (the start timeout ran out): it is stopped without Shutdown or grace. */
export class PluginStartTimeoutError extends PluginStartError {
  override name = 'PluginStartTimeoutError';
}

/**
 * Configure answered INVALID_ARGUMENT: the provider refused the cloud config.
 * Permanent for the bytes the host holds: at the host's first start it ends
 * the start (the host exits 1, as upstream exits on a bad cloud config); a
 * host that was ready once retries it with backoff (docs/protocol.md, "Lifecycle").
 */
export class CloudConfigRefusedError extends PluginStartError {
  override name = 'CloudConfigRefusedError';
}

export interface ReadHandshakeOptions {
  timeoutMs: number;
  /** Resolves when the process has exited (with a description of how). */
  exited: Promise<string>;
  /** Every other line, bounded by readBoundedLines (`cutBytes` > 0: the line was cut). */
  onOtherLine?: LineHandler;
  offered?: readonly number[];
}

/**
 * Resolves with the handshake, and afterwards keeps passing stdout lines to
 * `onOtherLine` (a provider must print nothing after the handshake).
 */
export function readHandshake(stdout: Readable, opts: ReadHandshakeOptions): Promise<Handshake> {
  return new Promise<Handshake>((resolve, reject) => {
    let done = false;
    let failed = false;
    const finish = (err?: Error, h?: Handshake) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      if (err) {
        failed = true;
        reject(err);
      } else resolve(h!);
    };
    const timer = setTimeout(
      () =>
        finish(
          new PluginStartError(
            `plugin printed no handshake within ${opts.timeoutMs} ms (--plugin-start-timeout): check that it uses the ccm provider SDK or prints the CCMPLUGIN line (see docs/protocol.md), or raise --plugin-start-timeout if it is only slow`,
          ),
        ),
      opts.timeoutMs,
    );
    const closed = readBoundedLines(stdout, (line, cutBytes) => {
      if (failed) return;
      if (done || cutBytes > 0) {
        opts.onOtherLine?.(line, cutBytes);
        return;
      }
      const parsed = parseHandshake(line, opts.offered ?? SUPPORTED_PROTOCOL_VERSIONS);
      if (parsed.kind === 'other') opts.onOtherLine?.(line, 0);
      else if (parsed.kind === 'invalid') finish(new PluginStartError(`invalid plugin handshake: ${parsed.reason}`));
      else finish(undefined, parsed.handshake);
    });
    // stdout usually closes because the process exited: say how, if that is known soon.
    void closed.then(() => {
      const grace = new Promise<undefined>((r) => setTimeout(() => r(undefined), CLOSE_EXIT_GRACE_MS).unref());
      void Promise.race([opts.exited, grace]).then((how) =>
        finish(new PluginStartError(how ? `plugin exited before its handshake (${how})` : 'plugin closed stdout before printing its handshake')),
      );
    });
    void opts.exited.then((how) => finish(new PluginStartError(`plugin exited before its handshake (${how})`)));
  });
}
