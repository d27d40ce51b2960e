/**
 * Unix socket housekeeping for the provider's listening socket: refuse paths
 * the kernel cannot bind, remove a stale socket file left by a crashed
 * process, and never remove one that something still answers on.
 */
import { lstatSync, rmSync } from 'node:fs';
import { lstat, rm } from 'node:fs/promises';
import { connect } from 'node:net';
import { isAbsolute } from 'node:path';
import { MAX_UNIX_SOCKET_PATH_BYTES } from './protocol.js';

/** How long to wait for a connect to an existing socket file. */
const STALE_PROBE_TIMEOUT_MS = 1_000;

/**
 * Whether something accepts connections on the unix socket at `path`. A
 * connect that neither succeeds nor fails within `timeoutMs` counts as
 * answering (a busy server is not stale).
 */
function socketAnswers(path: string, timeoutMs = STALE_PROBE_TIMEOUT_MS): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = connect(path);
    const finish = (answers: boolean) => {
      clearTimeout(timer);
      sock.destroy();
      resolve(answers);
    };
    const timer = setTimeout(() => finish(true), timeoutMs);
    sock.once('connect', () => finish(true));
    sock.once('error', () => finish(false));
  });
}

/**
 * Makes `path` ready for bind: validates it, and removes an existing socket
 * file only if nothing answers on it. Throws (with a message for a person)
 * when the path is relative or too long, exists as a non-socket, or is in use.
 */
export async function prepareSocketPath(path: string): Promise<void> {
  if (!isAbsolute(path)) throw new Error(`socket path ${JSON.stringify(path)} is not absolute`);
  if (Buffer.byteLength(path) > MAX_UNIX_SOCKET_PATH_BYTES) {
    throw new Error(`socket path ${JSON.stringify(path)} is longer than ${MAX_UNIX_SOCKET_PATH_BYTES} bytes; use a shorter directory`);
  }
  let isSocket: boolean;
  try {
    isSocket = (await lstat(path)).isSocket();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw err;
  }
  if (!isSocket) throw new Error(`${path} exists and is not a socket; refusing to replace it`);
  if (await socketAnswers(path)) throw new Error(`another process is listening on ${path}`);
  await rm(path, { force: true });
}

/** removeSocketFile for an exit handler, where only synchronous work runs. Never throws. */
export function removeSocketFileSync(path: string): void {
  try {
    if (lstatSync(path).isSocket()) rmSync(path, { force: true });
  } catch {
    // Already gone, or not ours to remove.
  }
}

/** Removes the socket file at `path`; a missing file is fine. Never throws. */
export async function removeSocketFile(path: string): Promise<void> {
  try {
    const st = await lstat(path);
    if (st.isSocket()) await rm(path, { force: true });
  } catch {
    // Already gone, or not ours to remove.
  }
}
