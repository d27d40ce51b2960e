/** Drives the built local cloud CLI as a real process, for tests. */
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';

const CLI = fileURLToPath(new URL('../../plugins/local/cli.js', import.meta.url));
export const LOCAL_PLUGIN = fileURLToPath(new URL('../../plugins/local/main.js', import.meta.url));

/** Runs `localcloud --state DIR ...args` and returns its stdout; rejects with stderr on failure. */
export async function localcloud(stateDir: string, ...args: string[]): Promise<string> {
  const r = await execa(process.execPath, [CLI, '--state', stateDir, ...args], { reject: false });
  if (r.exitCode !== 0) throw new Error(`localcloud ${args.join(' ')} failed: ${r.stderr}`);
  return r.stdout;
}
