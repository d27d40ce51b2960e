/**
 * The test-only hook the kit needs to make cloud objects the protocol cannot
 * make (instances) and to simulate a throttled cloud API. Two kinds:
 *  - the provider's own ccm.provider.testing.v1.TestHooksService (served when
 *    started with CCM_PROVIDER_TEST_HOOKS=1), found automatically;
 *  - a command the user passes with --test-hook-command, run through
 *    /bin/sh with one of these verbs appended:
 *      create-instance NAME   print the instance's providerID on stdout, exit 0
 *      delete-instance NAME   exit 0 (also when it does not exist)
 *      throttle on DELAY_MS   make the cloud API throttle (RATE_LIMITED + RetryInfo)
 *      throttle off           stop throttling
 *    Exit status 3 means "verb not supported" (the checks needing it are skipped).
 */
import { execa } from 'execa';
import { Code, RpcError, type Rpc } from './rpc.js';

/** Exit status of a hook command that does not support a verb. */
const HOOK_UNSUPPORTED_EXIT = 3;
/** How long one hook command may run. */
const HOOK_TIMEOUT_MS = 60_000;

export interface TestHooks {
  readonly description: string;
  /** Creates (idempotently) a running instance for node `name`; resolves its providerID. */
  createInstance(name: string): Promise<string>;
  /** Deletes it; absent is success. */
  deleteInstance(name: string): Promise<void>;
  /** Turns the simulated throttle on or off; resolves false when unsupported. */
  setThrottle(on: boolean, delayMs: number): Promise<boolean>;
}

/** Hooks over the provider's TestHooksService. */
export class GrpcHooks implements TestHooks {
  readonly description = 'TestHooksService (gRPC)';
  constructor(private readonly rpc: Rpc) {}

  /** The provider's hook service, or undefined when it does not serve one. */
  static async detect(rpc: Rpc): Promise<GrpcHooks | undefined> {
    try {
      await rpc.call(rpc.testHooks, 'DeleteTestInstance', { name: 'ccm-conformance-probe' });
      return new GrpcHooks(rpc);
    } catch (err) {
      if (err instanceof RpcError && err.code === Code.UNIMPLEMENTED) return undefined;
      throw new Error(
        `TestHooksService DeleteTestInstance of an absent instance, called after Configure, failed: ${(err as Error).message}; ` +
          'deleting an absent instance is success, and the hooks must answer once the provider is configured ' +
          '(docs/protocol.md#the-test-hook)',
        { cause: err },
      );
    }
  }

  async createInstance(name: string): Promise<string> {
    const res = await this.rpc.call<{ providerId: string }>(this.rpc.testHooks, 'CreateTestInstance', { name, internalIp: '', zone: '' });
    return res.providerId;
  }

  async deleteInstance(name: string): Promise<void> {
    await this.rpc.call(this.rpc.testHooks, 'DeleteTestInstance', { name });
  }

  async setThrottle(on: boolean, delayMs: number): Promise<boolean> {
    try {
      await this.rpc.call(this.rpc.testHooks, 'SetThrottle', { enabled: on, retryDelayMs: delayMs });
      return true;
    } catch (err) {
      if (err instanceof RpcError && err.code === Code.UNIMPLEMENTED) return false;
      throw err;
    }
  }
}

/** Hooks run as a user-supplied command. */
export class CommandHooks implements TestHooks {
  readonly description: string;
  constructor(private readonly command: string) {
    this.description = `command ${JSON.stringify(command)}`;
  }

  private async run(args: string[]): Promise<{ ok: boolean; unsupported: boolean; stdout: string }> {
    // Arguments are kit-made DNS labels and numbers: safe to append unquoted.
    const r = await execa(`${this.command} ${args.join(' ')}`, { shell: true, reject: false, timeout: HOOK_TIMEOUT_MS });
    if (r.exitCode === HOOK_UNSUPPORTED_EXIT) return { ok: false, unsupported: true, stdout: '' };
    if (r.exitCode !== 0) {
      throw new Error(
        `test hook "${args[0]}" failed (${r.timedOut ? 'timed out' : `exit ${r.exitCode}`}): ${String(r.stderr).trim().split('\n').slice(-3).join(' | ')}`,
      );
    }
    return { ok: true, unsupported: false, stdout: String(r.stdout) };
  }

  async createInstance(name: string): Promise<string> {
    const r = await this.run(['create-instance', name]);
    if (r.unsupported) throw new Error('the test hook command does not support create-instance');
    const id = r.stdout
      .split('\n')
      .map((s) => s.trim())
      .find((s) => s.length > 0);
    if (!id) throw new Error('the test hook command printed no providerID for create-instance');
    return id;
  }

  async deleteInstance(name: string): Promise<void> {
    const r = await this.run(['delete-instance', name]);
    if (r.unsupported) throw new Error('the test hook command does not support delete-instance');
  }

  async setThrottle(on: boolean, delayMs: number): Promise<boolean> {
    const r = await this.run(on ? ['throttle', 'on', String(delayMs)] : ['throttle', 'off']);
    return r.ok;
  }
}
