/** Drives the built local cloud CLI as a real process, for tests. */
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { ALLOW_SIMULATION_ENV } from '../../plugins/local/simulation-guard.js';

const CLI = fileURLToPath(new URL('../../plugins/local/cli.js', import.meta.url));
export const LOCAL_PLUGIN = fileURLToPath(new URL('../../plugins/local/main.js', import.meta.url));

/** The environment entry the local cloud refuses to start without (plugins/local/simulation-guard.ts): every test start sets it. */
export const ALLOW_SIMULATION = `${ALLOW_SIMULATION_ENV}=true`;
/** ALLOW_SIMULATION for a host that spawns the local cloud (exec mode). */
export const ALLOW_SIMULATION_FLAG = `--plugin-env=${ALLOW_SIMULATION}`;

/**
 * The flags of one of several hosts (replicas) that each spawn the local
 * cloud on one shared cloud state `stateDir`: simulation allowed, every call
 * journaled with the caller's identity, reads too (so a test tells the
 * replicas' calls apart), load balancers from the ingress pool `lbCidr` (the
 * test file's own: they really listen on loopback).
 */
export function sharedCloudFlags(stateDir: string, lbCidr: string): string[] {
  return [
    `--plugin-env=LOCALCLOUD_STATE_DIR=${stateDir}`,
    ALLOW_SIMULATION_FLAG,
    '--plugin-env=LOCALCLOUD_JOURNAL=all',
    `--plugin-env=LOCALCLOUD_LB_CIDR=${lbCidr}`,
  ];
}

/** Runs `localcloud --state DIR ...args` and returns its stdout; rejects with stderr on failure. */
export async function localcloud(stateDir: string, ...args: string[]): Promise<string> {
  const r = await execa(process.execPath, [CLI, '--state', stateDir, ...args], { reject: false });
  if (r.exitCode !== 0) throw new Error(`localcloud ${args.join(' ')} failed: ${r.stderr}`);
  return r.stdout;
}
