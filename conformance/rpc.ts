/**
 * Calls into the provider under test with exact error decoding: the kit needs
 * the raw gRPC code, the ErrorInfo reason AND domain, and the RetryInfo delay
 * (the host's own client folds these into host errors). Every failed call is
 * remembered so that one check can judge the error details of the whole run.
 */
import { credentials, Metadata, status as Code, type ServiceError } from '@grpc/grpc-js';
import { PluginConnection } from '../host/plugin/connection.js';
import { TestHooksServiceClient } from '../proto/gen/ccm/provider/testing/v1/test_hooks.js';
import { ErrorInfo, RetryInfo } from '../proto/gen/google/rpc/error_details.js';
import { Status } from '../proto/gen/google/rpc/status.js';
// Encoded by hand: grpc-health-check reads health.proto from disk at load, which a bundled kit (one executable) has not.
import { HealthClient } from '../sdk/health-client.js';

export { Code };

const DETAILS_KEY = 'grpc-status-details-bin';
const ERROR_INFO_TYPE = 'type.googleapis.com/google.rpc.ErrorInfo';
const RETRY_INFO_TYPE = 'type.googleapis.com/google.rpc.RetryInfo';

/** A failed call, decoded. */
export class RpcError extends Error {
  override name = 'RpcError';
  constructor(
    readonly method: string,
    readonly code: Code,
    readonly details: string,
    readonly reason?: string,
    readonly domain?: string,
    readonly retryAfterMs?: number,
    /** Problems decoding grpc-status-details-bin (malformed trailer or detail). */
    readonly detailProblems: string[] = [],
    /** ErrorInfo metadata (a DEFERRED answer's own reason, protocol 1.1). */
    readonly metadata: Record<string, string> = {},
  ) {
    super(`${method}: ${Code[code] ?? code}${reason ? `/${reason}` : ''}: ${details}`);
  }

  get codeName(): string {
    return Code[this.code] ?? String(this.code);
  }
}

/** Decodes google.rpc.Status details (a trailer, or a per-item batch status). */
export function decodeDetails(details: readonly { typeUrl: string; value: Uint8Array }[]): {
  reason?: string;
  domain?: string;
  retryAfterMs?: number;
  metadata?: Record<string, string>;
  problems: string[];
} {
  const out: { reason?: string; domain?: string; retryAfterMs?: number; metadata?: Record<string, string>; problems: string[] } = { problems: [] };
  for (const d of details) {
    try {
      if (d.typeUrl === ERROR_INFO_TYPE) {
        const info = ErrorInfo.decode(d.value);
        out.reason = info.reason;
        out.domain = info.domain;
        out.metadata = info.metadata;
      } else if (d.typeUrl === RETRY_INFO_TYPE) {
        const delay = RetryInfo.decode(d.value).retryDelay;
        out.retryAfterMs = delay ? delay.seconds * 1000 + Math.round(delay.nanos / 1e6) : -1;
      }
    } catch (err) {
      out.problems.push(`cannot decode ${d.typeUrl}: ${(err as Error).message}`);
    }
  }
  return out;
}

function toRpcError(method: string, err: ServiceError): RpcError {
  const raw = err.metadata?.get(DETAILS_KEY)?.[0];
  if (raw instanceof Uint8Array) {
    try {
      const s = Status.decode(raw);
      const d = decodeDetails(s.details);
      const problems = [...d.problems];
      if (s.code !== err.code) problems.push(`grpc-status-details-bin says code ${s.code}, the call ended with ${err.code}`);
      return new RpcError(method, err.code, err.details, d.reason, d.domain, d.retryAfterMs, problems, d.metadata);
    } catch (e) {
      return new RpcError(method, err.code, err.details, undefined, undefined, undefined, [
        `grpc-status-details-bin is not a google.rpc.Status: ${(e as Error).message}`,
      ]);
    }
  }
  return new RpcError(method, err.code, err.details);
}

type Unary = (req: unknown, md: Metadata, opts: { deadline: number }, cb: (err: ServiceError | null, res?: unknown) => void) => unknown;

/** grpc.health.v1 HealthCheckResponse.ServingStatus names, by number. */
const SERVING_STATUS = ['UNKNOWN', 'SERVING', 'NOT_SERVING', 'SERVICE_UNKNOWN'];

/** Typed clients on one channel plus a recording unary caller. */
export class Rpc {
  readonly conn: PluginConnection;
  readonly testHooks: InstanceType<typeof TestHooksServiceClient>;
  private readonly health: InstanceType<typeof HealthClient>;
  /** Every failed call so far. */
  readonly failures: RpcError[] = [];

  constructor(
    readonly target: string,
    private readonly timeoutMs = 10_000,
  ) {
    this.conn = new PluginConnection(target);
    const shared = { channelOverride: this.conn.identity.getChannel() };
    this.testHooks = new TestHooksServiceClient(target, credentials.createInsecure(), shared);
    this.health = new HealthClient(target, credentials.createInsecure(), shared);
  }

  /** Calls `method` (e.g. "InstanceMetadata") on `client`, with `metadata` added; rejects with RpcError. */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- checks read fields of answers they name no type for
  call<Res = any>(client: object, method: string, request: object, timeoutMs = this.timeoutMs, metadata: Record<string, string> = {}): Promise<Res> {
    const fn = (client as Record<string, Unary>)[method.charAt(0).toLowerCase() + method.slice(1)];
    if (typeof fn !== 'function') return Promise.reject(new Error(`no client method ${method}`));
    const md = new Metadata();
    for (const [key, value] of Object.entries(metadata)) md.set(key, value);
    return new Promise<Res>((resolve, reject) => {
      fn.call(client, request, md, { deadline: Date.now() + timeoutMs }, (err, res) => {
        if (err) {
          const e = toRpcError(method, err);
          this.failures.push(e);
          reject(e);
        } else resolve(res as Res);
      });
    });
  }

  /** Calls and returns the RpcError; fails if the call succeeded. */
  async callError(client: object, method: string, request: object): Promise<RpcError> {
    try {
      await this.call(client, method, request);
    } catch (err) {
      if (err instanceof RpcError) return err;
      throw err;
    }
    throw new Error(`${method} succeeded; an error was expected`);
  }

  /** grpc.health.v1 Check; resolves the status name, or the error text. */
  healthStatus(service: string): Promise<string> {
    return new Promise((resolve) => {
      this.health.check({ service }, new Metadata(), { deadline: Date.now() + this.timeoutMs }, (err, res) => {
        if (err) resolve(`error ${Code[err.code] ?? err.code}: ${err.details}`);
        else resolve(SERVING_STATUS[res?.status ?? 0] ?? String(res?.status));
      });
    });
  }

  close(): void {
    this.conn.close('conformance run finished');
    this.testHooks.close();
    this.health.close();
  }
}
