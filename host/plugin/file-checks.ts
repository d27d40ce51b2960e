/**
 * File-system checks at the plugin boundary (reliability.md X3, X9):
 *
 * - A plugin executable (or the .js file Node runs) must be an absolute path
 *   to a regular file that only root or the host's own user can change: not
 *   world-writable, owned by root or by the host's uid, in a directory that
 *   is not world-writable (unless sticky, as /tmp). Anyone else who could
 *   write it could run code with the host's credentials.
 * - The provider's socket must be a socket that only its owner can use
 *   (0600): whoever can connect can drive the cloud. Exec mode also checks
 *   that the private socket directory is still 0700.
 */
import { lstat, stat } from 'node:fs/promises';
import { dirname, isAbsolute } from 'node:path';

/** What the checks compare owners with (tests replace it). */
export interface Identity {
  uid: number;
}

const hostIdentity = (): Identity => ({ uid: process.getuid?.() ?? -1 });

function mode(m: number): string {
  return `0${(m & 0o7777).toString(8)}`;
}

/** Why the plugin file at `path` must not be run, or undefined when it may. */
export async function executableProblem(path: string, me: Identity = hostIdentity()): Promise<string | undefined> {
  if (!isAbsolute(path)) return `plugin path ${JSON.stringify(path)} is not absolute`;
  let st;
  try {
    st = await stat(path);
  } catch (err) {
    return `cannot stat plugin ${path}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`;
  }
  if (!st.isFile()) return `plugin ${path} is not a regular file`;
  if (st.mode & 0o002) return `plugin ${path} is world-writable (mode ${mode(st.mode)}): run chmod o-w on it`;
  if (st.uid !== 0 && st.uid !== me.uid) {
    return `plugin ${path} is owned by uid ${st.uid}, which is neither root nor the host's user (uid ${me.uid}): chown it to one of them`;
  }
  const dir = dirname(path);
  const dst = await stat(dir).catch(() => undefined);
  if (dst && dst.mode & 0o002 && !(dst.mode & 0o1000)) {
    return `plugin ${path} is in world-writable directory ${dir} (mode ${mode(dst.mode)}): anyone could replace it; move it or run chmod o-w on the directory`;
  }
  return undefined;
}

/**
 * Why the provider's listening socket is unsafe, or undefined: it must be a
 * socket without group or other permissions, owned by root or the host's
 * user; with `privateDir`, that directory must still be mode 0700.
 */
export async function socketProblem(path: string, opts: { privateDir?: string; me?: Identity } = {}): Promise<string | undefined> {
  const me = opts.me ?? hostIdentity();
  let st;
  try {
    st = await lstat(path);
  } catch (err) {
    return `cannot stat plugin socket ${path}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`;
  }
  if (!st.isSocket()) return `plugin endpoint ${path} is not a socket`;
  if (st.mode & 0o077)
    return `plugin socket ${path} has mode ${mode(st.mode)}: it must be 0600 (owner only); use the SDK, or chmod it after listening`;
  if (st.uid !== 0 && st.uid !== me.uid) return `plugin socket ${path} is owned by uid ${st.uid}, not by the host's user (uid ${me.uid}) or root`;
  if (opts.privateDir) {
    const dst = await lstat(opts.privateDir).catch(() => undefined);
    if (!dst || !dst.isDirectory() || (dst.mode & 0o777) !== 0o700) {
      return `plugin socket directory ${opts.privateDir} is no longer private (mode ${dst ? mode(dst.mode) : 'missing'}; want 0700)`;
    }
  }
  return undefined;
}
