/**
 * Reads the provider's handshake line from its stdout within a start timeout.
 * Lines that are not handshakes are handed to `onOtherLine` (the host logs
 * them) and waiting goes on; a malformed handshake, the process exiting, or
 * the timeout ends the wait with a PluginStartError.
 */
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import { parseHandshake, SUPPORTED_PROTOCOL_VERSIONS, type Handshake } from '../../sdk/protocol.js';

/** How long to wait for the exit status after stdout closes, to report it. */
const CLOSE_EXIT_GRACE_MS = 1000;

/** The plugin could not be started; the message says why and what to do. */
export class PluginStartError extends Error {
  override name = 'PluginStartError';
}

export interface ReadHandshakeOptions {
  timeoutMs: number;
  /** Resolves when the process has exited (with a description of how). */
  exited: Promise<string>;
  onOtherLine?: (line: string) => void;
  offered?: readonly number[];
}

/**
 * Resolves with the handshake, and afterwards keeps passing stdout lines to
 * `onOtherLine` (a provider must print nothing after the handshake).
 */
export function readHandshake(stdout: Readable, opts: ReadHandshakeOptions): Promise<Handshake> {
  const rl = createInterface({ input: stdout, crlfDelay: Infinity });
  return new Promise<Handshake>((resolve, reject) => {
    let done = false;
    const finish = (err?: Error, h?: Handshake) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      if (err) {
        rl.close();
        reject(err);
      } else resolve(h!);
    };
    const timer = setTimeout(
      () => finish(new PluginStartError(`plugin printed no handshake within ${opts.timeoutMs} ms: check that it uses the ccm provider SDK or prints the CCMPLUGIN line (see docs/protocol.md)`)),
      opts.timeoutMs,
    );
    rl.on('line', (line) => {
      if (done) {
        opts.onOtherLine?.(line);
        return;
      }
      const parsed = parseHandshake(line, opts.offered ?? SUPPORTED_PROTOCOL_VERSIONS);
      if (parsed.kind === 'other') opts.onOtherLine?.(line);
      else if (parsed.kind === 'invalid') finish(new PluginStartError(`invalid plugin handshake: ${parsed.reason}`));
      else finish(undefined, parsed.handshake);
    });
    // stdout usually closes because the process exited: say how, if that is known soon.
    rl.once('close', () => {
      const grace = new Promise<undefined>((r) => setTimeout(() => r(undefined), CLOSE_EXIT_GRACE_MS).unref());
      void Promise.race([opts.exited, grace]).then((how) =>
        finish(new PluginStartError(how ? `plugin exited before its handshake (${how})` : 'plugin closed stdout before printing its handshake')),
      );
    });
    opts.exited.then((how) => finish(new PluginStartError(`plugin exited before its handshake (${how})`)));
  });
}
