/**
 * Test harness: launches a provider executable as a REAL child process the
 * way the host does (env, stdin pipe, socket in a private mkdtemp dir), and
 * collects its stdout and stderr lines. Every wait is bounded.
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { execa, type ResultPromise } from 'execa';
import { ENV_ENDPOINT, ENV_INSTANCE_ID, ENV_LOG_LEVEL, ENV_PROTOCOL_VERSIONS, MAGIC_COOKIE_KEY, MAGIC_COOKIE_VALUE } from '../../../sdk/protocol.js';

/** The compiled echo provider executable. */
export const ECHO_PROVIDER = fileURLToPath(new URL('../../fixtures/echo-provider.js', import.meta.url));

/** Default bound for any single wait in these tests. */
export const WAIT_MS = 10_000;

/** Bound for a provider process to start and print its handshake: loading grpc-js on a loaded 2-core machine took over 10 s. */
export const START_WAIT_MS = 60_000;

/** Rejects with `what` if `p` does not settle within `ms`. */
export function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
    p.then(
      (v) => {
        clearTimeout(timer);
        resolve(v);
      },
      (e: unknown) => {
        clearTimeout(timer);
        reject(e instanceof Error ? e : new Error(String(e)));
      },
    );
  });
}

/** Options of launchPlugin. */
export interface LaunchOptions {
  /** Set the host's env (cookie, versions, endpoint, instance id). Default true. */
  hostEnv?: boolean;
  /** Extra or overriding env; undefined deletes a variable. */
  env?: Record<string, string | undefined>;
  args?: string[];
  /** Use this socket path instead of <fresh dir>/p.sock. */
  socketPath?: string;
  executable?: string;
}

/** A launched provider. */
export interface PluginProcess {
  dir: string;
  socketPath: string;
  endpoint: string;
  instanceId: string;
  child: ResultPromise;
  stdoutLines: string[];
  stderrLines: string[];
  /** First stdout line. */
  handshake(ms?: number): Promise<string>;
  /** First stderr line matching `pred`. */
  stderrLine(pred: (line: string) => boolean, ms?: number): Promise<string>;
  /** First stderr JSON log line whose msg is `msg`. */
  logLine(msg: string, ms?: number): Promise<Record<string, unknown>>;
  /** Exit code (null if killed by a signal) once the process and its pipes are done. */
  exited(ms?: number): Promise<number | null>;
  /** Kills the process if still running and removes the temp dir. */
  cleanup(): Promise<void>;
}

function collect(stream: NodeJS.ReadableStream | null, into: string[], notify: () => void): void {
  if (!stream) return;
  const rl = createInterface({ input: stream, crlfDelay: Infinity });
  rl.on('line', (line) => {
    into.push(line);
    notify();
  });
}

/** Launches the provider (the echo fixture unless `executable` is given). */
export async function launchPlugin(opts: LaunchOptions = {}): Promise<PluginProcess> {
  const dir = await mkdtemp(join(tmpdir(), 'ccm-sdk-it-'));
  const socketPath = opts.socketPath ?? join(dir, 'p.sock');
  const endpoint = `unix://${socketPath}`;
  const instanceId = randomUUID();
  const env: Record<string, string> = { PATH: process.env.PATH ?? '/usr/bin:/bin' };
  if (opts.hostEnv ?? true) {
    Object.assign(env, {
      [MAGIC_COOKIE_KEY]: MAGIC_COOKIE_VALUE,
      [ENV_PROTOCOL_VERSIONS]: '1',
      [ENV_ENDPOINT]: endpoint,
      [ENV_INSTANCE_ID]: instanceId,
      [ENV_LOG_LEVEL]: 'debug',
    });
  }
  for (const [k, v] of Object.entries(opts.env ?? {})) {
    if (v === undefined) delete env[k];
    else env[k] = v;
  }
  const child = execa(process.execPath, [opts.executable ?? ECHO_PROVIDER, ...(opts.args ?? [])], {
    env,
    extendEnv: false,
    stdin: 'pipe',
    stdout: 'pipe',
    stderr: 'pipe',
    buffer: false,
    reject: false,
    cleanup: true,
  });
  const stdoutLines: string[] = [];
  const stderrLines: string[] = [];
  const waiters = new Set<() => void>();
  const notify = () => {
    for (const w of [...waiters]) w();
  };
  collect(child.stdout, stdoutLines, notify);
  collect(child.stderr, stderrLines, notify);
  const result = child.then((r) => r);

  /** Resolves with the first non-undefined `probe()` result, re-checked on each new line. */
  const waitFor = <T>(probe: () => T | undefined, ms: number, what: string): Promise<T> => {
    let waiter: (() => void) | undefined;
    const found = new Promise<T>((resolve, reject) => {
      waiter = () => {
        const v = probe();
        if (v !== undefined) resolve(v);
      };
      waiters.add(waiter);
      waiter();
      // A process that exited will not print the line any more.
      void result.then(() =>
        setTimeout(() => {
          const v = probe();
          if (v !== undefined) resolve(v);
          else reject(new Error(`process exited before ${what}; stderr:\n${stderrLines.join('\n')}`));
        }, 50),
      );
    });
    return withTimeout(found, ms, what).finally(() => waiters.delete(waiter!));
  };

  return {
    dir,
    socketPath,
    endpoint,
    instanceId,
    child,
    stdoutLines,
    stderrLines,
    handshake: (ms = START_WAIT_MS) => waitFor(() => stdoutLines[0], ms, 'the handshake line'),
    stderrLine: (pred, ms = WAIT_MS) => waitFor(() => stderrLines.find(pred), ms, 'a stderr line'),
    logLine: (msg, ms = WAIT_MS) =>
      waitFor(
        () =>
          stderrLines
            .map((l) => {
              try {
                return JSON.parse(l) as Record<string, unknown>;
              } catch {
                return undefined;
              }
            })
            .find((o) => o?.msg === msg),
        ms,
        `log line ${JSON.stringify(msg)}`,
      ),
    exited: async (ms = WAIT_MS) => {
      const r = await withTimeout(result, ms, 'the process to exit');
      return r.exitCode ?? null;
    },
    cleanup: async () => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGKILL');
        await withTimeout(result, WAIT_MS, 'the killed process').catch(() => undefined);
      }
      await rm(dir, { recursive: true, force: true });
    },
  };
}
