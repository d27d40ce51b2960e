/**
 * Launch-contract checks (docs/protocol.md, "Launch and handshake"): refusal
 * without the cookie, a clear version-mismatch error, the one stdout line,
 * the socket, health, Shutdown within its grace period, exit on stdin EOF.
 */
import { lstat, rename } from 'node:fs/promises';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { parseHandshake, SUPPORTED_PROTOCOL_VERSIONS, unixSocketPath } from '../../sdk/protocol.js';
import { GrpcHooks, CommandHooks } from '../hooks.js';
import { expect, skip, type Check, type Kit } from '../kit.js';
import { describeExit, Launched } from '../launch.js';
import { Rpc } from '../rpc.js';

/** How long a refusing provider may take to exit. */
const REFUSAL_EXIT_MS = 15_000;
/** Extra time past the grace period for the process to be gone. */
const EXIT_SLACK_MS = 3_000;
/** A protocol major no host will ever speak. */
const BOGUS_PROTOCOL = 999;

/** Starts the provider with a bent environment and expects a prompt refusal. */
async function expectRefusal(k: Kit, how: { cookie?: string | null; protocolVersions?: string | null }, what: string): Promise<Launched> {
  if (k.opts.target.kind !== 'exec') skip('applies to exec mode (--plugin-path) only');
  const p = await Launched.start({ path: k.opts.target.path, env: k.opts.target.env, ...how });
  try {
    const exit = await p.waitExit(REFUSAL_EXIT_MS);
    expect(exit, `started ${what}, the provider was still running after ${REFUSAL_EXIT_MS} ms; it must print one line on stderr and exit non-zero`);
    expect(exit.code !== 0, `started ${what}, the provider exited with ${describeExit(exit)}; want a non-zero exit code`);
    await new Promise((r) => setTimeout(r, 100)); // let the last pipe data arrive
    expect(
      p.stdoutLines.length === 0,
      `started ${what}, the provider printed on stdout: ${JSON.stringify(p.stdoutLines.slice(0, 2))}; stdout is only for the handshake`,
    );
    expect(
      p.stderrTail.some((l) => l.trim().length > 0),
      `started ${what}, the provider exited without explaining itself on stderr`,
    );
    return p;
  } finally {
    await p.kill();
  }
}

/** Starts the provider in exec mode (skipping in sidecar mode) and waits for its handshake line. */
async function startedPastHandshake(k: Kit): Promise<Launched> {
  if (k.opts.target.kind !== 'exec') skip('applies to exec mode (--plugin-path) only');
  const p = await Launched.start({ path: k.opts.target.path, env: k.opts.target.env });
  try {
    const line = await p.firstLine(k.opts.startTimeoutMs);
    expect(line !== undefined, `no handshake within ${k.opts.startTimeoutMs} ms${p.stderrSummary()}`);
    return p;
  } catch (err) {
    await p.kill();
    throw err;
  }
}

/** How long a provider told to stop may take to be gone: its grace period, the 5 s Shutdown bound and some slack. */
const stopBound = (k: Kit): number => k.opts.shutdownGraceMs + 5_000 + EXIT_SLACK_MS;

/**
 * Leaves a unix socket file at `path` that nothing listens on, as a listener
 * killed with SIGKILL does: listen at a side name, rename it to `path`, close
 * (Node removes only the side name, already gone). In process, so it works in
 * the single executable kit too, where process.execPath is the kit itself.
 */
async function leaveStaleSocket(path: string): Promise<void> {
  const side = join(dirname(path), `.stale-${process.pid}`); // short: socket paths are bounded
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(side, () => resolve());
  });
  try {
    await rename(side, path);
  } finally {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
  const st = await lstat(path);
  if (!st.isSocket()) throw new Error(`could not make a stale socket at ${path}`);
}

export const launchChecks: Check[] = [
  {
    id: 'launch/refuse-without-cookie',
    title: 'started by hand (no magic cookie, no endpoint) it explains itself on stderr and exits non-zero',
    run: async (k) => void (await expectRefusal(k, { cookie: null }, 'without CCM_PLUGIN_MAGIC_COOKIE')),
  },
  {
    id: 'launch/refuse-wrong-cookie',
    title: 'a wrong magic cookie is refused the same way',
    run: async (k) => void (await expectRefusal(k, { cookie: 'not-the-cookie' }, 'with a wrong CCM_PLUGIN_MAGIC_COOKIE')),
  },
  {
    id: 'launch/protocol-mismatch',
    title: 'a host offering only an unknown protocol version gets a clear error naming both versions',
    run: async (k) => {
      const p = await expectRefusal(k, { protocolVersions: String(BOGUS_PROTOCOL) }, `with CCM_PLUGIN_PROTOCOL_VERSIONS=${BOGUS_PROTOCOL}`);
      const text = p.stderrTail.join('\n');
      expect(text.includes(String(BOGUS_PROTOCOL)), `the refusal does not name the version the host offered (${BOGUS_PROTOCOL})${p.stderrSummary()}`);
      expect(
        SUPPORTED_PROTOCOL_VERSIONS.some((v) => new RegExp(`\\b${v}\\b`).test(text.replaceAll(String(BOGUS_PROTOCOL), ''))),
        `the refusal does not name the version(s) the provider speaks${p.stderrSummary()}`,
      );
    },
  },
  {
    id: 'launch/no-protocol-versions',
    title: 'a host that sets no CCM_PLUGIN_PROTOCOL_VERSIONS offered none: refused like a mismatch, naming the versions the provider speaks',
    run: async (k) => {
      const p = await expectRefusal(k, { protocolVersions: null }, 'without CCM_PLUGIN_PROTOCOL_VERSIONS');
      const text = p.stderrTail.join('\n');
      expect(
        SUPPORTED_PROTOCOL_VERSIONS.some((v) => new RegExp(`\\b${v}\\b`).test(text)),
        `the refusal does not name the version(s) the provider speaks${p.stderrSummary()}`,
      );
    },
  },
  {
    id: 'launch/stale-socket',
    title: 'a socket file left by a crashed process at CCM_PLUGIN_ENDPOINT (nothing answers on it) is replaced, and the provider serves',
    run: async (k) => {
      if (k.opts.target.kind !== 'exec') skip('applies to exec mode (--plugin-path) only');
      const p = await Launched.start({ path: k.opts.target.path, env: k.opts.target.env, beforeStart: leaveStaleSocket });
      try {
        const line = await p.firstLine(k.opts.startTimeoutMs);
        expect(
          line !== undefined,
          p.exit
            ? `with a stale socket file at its endpoint the provider exited (${describeExit(p.exit)}) without a handshake${p.stderrSummary()}; remove a socket file nothing answers on before binding`
            : `no handshake within ${k.opts.startTimeoutMs} ms with a stale socket file at its endpoint${p.stderrSummary()}`,
        );
        const rpc = new Rpc(`unix://${p.socketPath}`);
        try {
          const s = await rpc.healthStatus('');
          expect(s === 'SERVING', `after replacing a stale socket, health Check answered ${s}`);
        } finally {
          rpc.close();
        }
      } finally {
        p.closeStdin();
        await p.kill();
      }
    },
  },
  {
    id: 'launch/stdin-eof-exit',
    title: 'the provider exits when its stdin closes (the host died)',
    run: async (k) => {
      const p = await startedPastHandshake(k);
      try {
        p.closeStdin();
        const bound = stopBound(k);
        const exit = await p.waitExit(bound);
        expect(exit, `still running ${bound} ms after its stdin closed`);
      } finally {
        await p.kill();
      }
    },
  },
  {
    id: 'launch/sigterm',
    title: 'SIGTERM stops the provider gracefully: it exits 0 and removes its socket file',
    run: async (k) => {
      const p = await startedPastHandshake(k);
      try {
        process.kill(p.pid!, 'SIGTERM');
        const bound = stopBound(k);
        const exit = await p.waitExit(bound);
        expect(exit, `still running ${bound} ms after SIGTERM`);
        expect(exit.code === 0, `exited with ${describeExit(exit)} after SIGTERM; want a graceful stop and exit code 0${p.stderrSummary()}`);
        const left = await lstat(p.socketPath).catch(() => undefined);
        expect(!left, `the socket file ${p.socketPath} is still there after SIGTERM; remove it when you stop`);
      } finally {
        await p.kill();
      }
    },
  },
  {
    id: 'launch/handshake',
    title: 'exactly one valid handshake line CCMPLUGIN|1|<protocol>|unix|<socket>|grpc naming a protocol the host offered',
    run: async (k) => {
      let target: string;
      if (k.opts.target.kind === 'endpoint') {
        target = k.opts.target.endpoint;
        k.rpcValue = new Rpc(target);
        skip('sidecar mode (--plugin-endpoint): no handshake; connected to the endpoint');
      }
      const env = [...k.opts.target.env, 'CCM_PROVIDER_TEST_HOOKS=1'];
      const p = await Launched.start({ path: k.opts.target.path, env });
      k.proc = p;
      const line = await p.firstLine(k.opts.startTimeoutMs);
      expect(
        line !== undefined,
        p.exit
          ? `exited (${describeExit(p.exit)}) before printing a handshake${p.stderrSummary()}`
          : `no stdout line within ${k.opts.startTimeoutMs} ms${p.stderrSummary()}`,
      );
      const parsed = parseHandshake(line);
      expect(parsed.kind !== 'other', `the first stdout line is not a handshake: ${JSON.stringify(line.slice(0, 200))}`);
      expect(parsed.kind === 'handshake', `invalid handshake ${JSON.stringify(line)}: ${parsed.kind === 'invalid' ? parsed.reason : ''}`);
      k.handshakeLine = line;
      const h = parsed.handshake;
      expect(h.network === 'unix', `handshake network is ${h.network}; the protocol uses unix sockets`);
      k.rpcValue = new Rpc(`unix://${h.address}`);
      expect(h.address === p.socketPath, `the provider listens on ${h.address}, not on CCM_PLUGIN_ENDPOINT (${p.socketPath})`);
    },
  },
  {
    id: 'launch/socket',
    title: 'the socket is a unix socket only its owner can use (no group/other permission bits)',
    run: async (k) => {
      const path = k.opts.target.kind === 'endpoint' ? unixSocketPath(k.opts.target.endpoint) : k.proc?.socketPath;
      if (!path) skip('no socket path known');
      const st = await lstat(path).catch(() => undefined);
      expect(st, `${path} does not exist`);
      expect(st.isSocket(), `${path} is not a socket`);
      expect((st.mode & 0o077) === 0, `${path} has mode ${(st.mode & 0o777).toString(8)}; want 0600 (or stricter)`);
    },
  },
  {
    id: 'launch/health',
    title: 'grpc.health.v1 reports SERVING for "" and for "ccm.provider.v1"',
    run: async (k) => {
      for (const service of ['', 'ccm.provider.v1']) {
        const s = await k.rpc.healthStatus(service);
        expect(s === 'SERVING', `health Check(${JSON.stringify(service)}) answered ${s}`);
      }
    },
  },
];

/**
 * Finds the test hook. Runs after lifecycle/configure (run.ts): the test
 * hooks are test-only and outside the NOT_CONFIGURED gate, so a provider may
 * serve them before Configure (the SDKs do) or only once configured (a hook
 * that needs the cloud credentials of the config); either way it answers by
 * the time the kit calls it (docs/protocol.md, "The test hook").
 */
export const hookSetupCheck: Check = {
  id: 'setup/hooks',
  title: 'test hook for instances (TestHooksService or --test-hook-command), looked for after Configure',
  run: async (k) => {
    if (k.opts.hookCommand) {
      k.hooksValue = new CommandHooks(k.opts.hookCommand);
      return;
    }
    const g = await GrpcHooks.detect(k.rpc);
    if (!g) skip(k.hooksProblem + '; checks that need instances are skipped');
    k.hooksValue = g;
  },
};

/** Checks that end the session (run last). */
export const endChecks: Check[] = [
  {
    id: 'lifecycle/shutdown',
    title: 'Shutdown is answered and, with stdin closed right after it (as the host does), the process exits 0 within the grace period',
    run: async (k) => {
      k.needExec();
      const p = k.proc;
      if (!p || !k.rpcValue) skip('no provider process');
      const graceMs = k.opts.shutdownGraceMs;
      const sent = Date.now();
      await k.rpc.call(k.rpc.conn.lifecycle, 'Shutdown', { gracePeriod: { seconds: Math.floor(graceMs / 1000), nanos: (graceMs % 1000) * 1e6 } });
      // The host closes stdin at once after Shutdown: EOF belongs to the same stop (docs/protocol.md, Lifecycle).
      p.closeStdin();
      const exit = await p.waitExit(graceMs + EXIT_SLACK_MS);
      expect(exit, `still running ${graceMs + EXIT_SLACK_MS} ms after Shutdown with a ${graceMs} ms grace period`);
      expect(exit.code === 0, `exited with ${describeExit(exit)} after Shutdown; want exit code 0`);
      void sent;
    },
  },
  {
    id: 'launch/stdout-hygiene',
    title: 'nothing but the handshake was printed on stdout during the whole run',
    run: async (k) => {
      k.needExec();
      const p = k.proc;
      if (!p) skip('no provider process');
      if (!p.exit) await p.waitExit(2_000);
      await new Promise((r) => setTimeout(r, 100));
      const extra = p.stdoutLines.slice(1);
      expect(
        extra.length === 0,
        `${extra.length} extra stdout line(s) after the handshake, e.g. ${JSON.stringify(extra[0]?.slice(0, 200))}; log to stderr`,
      );
    },
  },
];
