/**
 * The gRPC side of one plugin connection: typed clients for every protocol
 * service on one channel, per-call deadlines, message size limits, error
 * decoding, and tracking of in-flight calls so that all of them can be
 * rejected at once when the plugin dies (instead of each waiting out its
 * deadline).
 */
import { setTimeout as delay } from 'node:timers/promises';
import { connectivityState, credentials, Metadata, status as Code, type ClientUnaryCall, type ServiceError } from '@grpc/grpc-js';
import { HealthClient, SERVING } from '../../sdk/health-client.js';
import { IdentityServiceClient } from '../../proto/gen/ccm/provider/v1/identity.js';
import { LifecycleServiceClient } from '../../proto/gen/ccm/provider/v1/lifecycle.js';
import { InstancesServiceClient } from '../../proto/gen/ccm/provider/v1/instances.js';
import { LoadBalancersServiceClient } from '../../proto/gen/ccm/provider/v1/load_balancers.js';
import { RoutesServiceClient } from '../../proto/gen/ccm/provider/v1/routes.js';
import { VolumesServiceClient } from '../../proto/gen/ccm/provider/v1/volumes.js';
import { ClustersServiceClient, ZonesServiceClient } from '../../proto/gen/ccm/provider/v1/zones.js';
import { fromServiceError, type DecodedStatus } from '../../sdk/errors.js';
import { DEFERRED_REASON_KEY, DEFERRED_REASON_PATTERN, ErrorReason, HEALTH_SERVICE_NAME, MAX_MESSAGE_BYTES } from '../../sdk/protocol.js';
import { CALLER_METADATA_KEY, MUTATING_METHODS } from '../../sdk/mutations.js';
import { tracingRequested } from '../../sdk/tracing.js';
import { redact } from '../redact.js';
import { traceInterceptor } from './tracing.js';
import {
  CloudCallError,
  DeferredError,
  ImplementedElsewhereError,
  InstanceNotFoundError,
  NotImplementedError,
  PluginNotConfiguredError,
  PluginUnavailableError,
  RetryAfterError,
} from '../errors.js';

/** Per-connection call policy: who is calling, and whether cloud mutations may be sent now. */
export interface CallPolicy {
  /** Sent as metadata `x-ccm-caller` on every call (the leader-election identity). */
  caller?: string;
  /**
   * Asked before every mutating call (sdk/mutations.ts); when it returns a
   * reason, the call is refused locally with PluginUnavailableError and never
   * reaches the plugin. Used so that only the current leader changes the cloud.
   */
  refuseMutation?: () => string | undefined;
  /**
   * The cloud-call budget (--cloud-api-qps, alpha): each call of a cloud
   * service (instances, zones, clusters, load balancers, routes, volumes; a
   * batch call counts once) reserves a token and waits until it is due.
   * Identity, lifecycle and health calls are the host's own and never wait.
   */
  budget?: CallBudget;
}

/**
 * What a cloud call waits for: `when()` reserves the call's token and gives
 * the milliseconds until it is due, or a promise that settles once it is
 * (e.g. while this replica's share of the budget is held,
 * kube/cloud-budget.ts); a call is sent only after that.
 */
export interface CallBudget {
  when(): number | Promise<void>;
}

/** Observes each finished call (metrics). `code` is the gRPC code name. */
export type CallObserver = (method: string, code: string, seconds: number) => void;

/** How often a connectivity watch is re-armed (grpc-js needs a deadline). */
const CONNECTIVITY_WATCH_MS = 60_000;

/** Maps a failed call to the host error classes of host/errors.ts. */
function toCloudError(method: string, err: Partial<ServiceError>): Error {
  return decodedToCloudError(method, fromServiceError(err));
}

/** Maps a decoded google.rpc.Status (a failed call or a failed batch item) to a host error. */
export function decodedToCloudError(method: string, s: DecodedStatus): Error {
  const code = Code[s.code] ?? String(s.code);
  // The plugin controls this text and it reaches logs and Events.
  const msg = redact(`${method}: ${s.message}`);
  // "Not configured" is "not ready", never an answer (least of all "not found").
  if (s.reason === ErrorReason.NOT_CONFIGURED)
    return new PluginNotConfiguredError(`${msg}: the plugin is being configured again; the call will be retried`);
  if (s.reason === ErrorReason.DEFERRED) {
    const own = s.metadata?.[DEFERRED_REASON_KEY] ?? '';
    return new DeferredError(method, code, msg, DEFERRED_REASON_PATTERN.test(own) ? own : 'Unspecified', s.retryAfterMs);
  }
  if (s.retryAfterMs !== undefined) return new RetryAfterError(method, code, msg, s.reason, s.retryAfterMs);
  if (s.reason === ErrorReason.INSTANCE_NOT_FOUND) return new InstanceNotFoundError(method, code, msg, s.reason);
  if (s.reason === ErrorReason.IMPLEMENTED_ELSEWHERE) return new ImplementedElsewhereError(method, code, msg, s.reason);
  if (s.code === Code.UNIMPLEMENTED) return new NotImplementedError(method, code, msg, s.reason);
  return new CloudCallError(method, code, msg, s.reason);
}

interface InFlight {
  reject: (err: Error) => void;
  call?: ClientUnaryCall;
}

type UnaryMethod<Req, Res> = (
  req: Req,
  md: Metadata,
  opts: { deadline: number },
  cb: (err: ServiceError | null, res?: Res) => void,
) => ClientUnaryCall;

/** Clients for one plugin endpoint. */
export class PluginConnection {
  readonly identity: IdentityServiceClient;
  readonly lifecycle: LifecycleServiceClient;
  readonly instances: InstancesServiceClient;
  readonly zones: ZonesServiceClient;
  readonly clusters: ClustersServiceClient;
  readonly loadBalancers: LoadBalancersServiceClient;
  readonly routes: RoutesServiceClient;
  readonly volumes: VolumesServiceClient;
  private readonly health: InstanceType<typeof HealthClient>;
  private readonly inflight = new Set<InFlight>();
  private closedWith?: Error;
  /** Settles when the connection is closed. */
  private readonly closed: Promise<void>;
  private markClosed!: () => void;

  constructor(
    readonly target: string,
    private readonly observe: CallObserver = () => undefined,
    private readonly policy: CallPolicy = {},
    /** Called when a call is answered NOT_CONFIGURED (the supervisor configures the provider again). */
    private readonly onNotConfigured: () => void = () => undefined,
  ) {
    this.closed = new Promise<void>((resolve) => (this.markClosed = resolve));
    const options = {
      'grpc.max_receive_message_length': MAX_MESSAGE_BYTES,
      'grpc.max_send_message_length': MAX_MESSAGE_BYTES,
      // A local socket: reconnect fast after a plugin restart.
      'grpc.initial_reconnect_backoff_ms': 100,
      'grpc.max_reconnect_backoff_ms': 1000,
    };
    const creds = credentials.createInsecure();
    this.identity = new IdentityServiceClient(target, creds, options);
    const untraced = { ...options, channelOverride: this.identity.getChannel() };
    // Only when tracing is on: a client span per protocol call and its trace context in the metadata (health probes stay untraced).
    const shared = tracingRequested() ? { ...untraced, interceptors: [traceInterceptor] } : untraced;
    this.lifecycle = new LifecycleServiceClient(target, creds, shared);
    this.instances = new InstancesServiceClient(target, creds, shared);
    this.zones = new ZonesServiceClient(target, creds, shared);
    this.clusters = new ClustersServiceClient(target, creds, shared);
    this.loadBalancers = new LoadBalancersServiceClient(target, creds, shared);
    this.routes = new RoutesServiceClient(target, creds, shared);
    this.volumes = new VolumesServiceClient(target, creds, shared);
    this.health = new HealthClient(target, creds, untraced);
  }

  /**
   * Calls one unary method with a deadline. Rejects with a host error
   * (host/errors.ts); rejects at once with PluginUnavailableError when the
   * connection is closed or `rejectAll` runs while the call is in flight.
   */
  unary<Req, Res>(client: object, method: string, request: Req, timeoutMs: number): Promise<Res> {
    const budget = this.policy.budget;
    if (budget && client !== this.identity && client !== this.lifecycle && !this.closedWith) {
      const due = budget.when();
      // A held budget may wait long: a close meanwhile fails the call at once (send rejects when closed).
      if (typeof due !== 'number') return Promise.race([due, this.closed]).then(() => this.send(client, method, request, timeoutMs));
      if (due > 0) return delay(due, undefined, { ref: false }).then(() => this.send(client, method, request, timeoutMs));
    }
    return this.send(client, method, request, timeoutMs);
  }

  private send<Req, Res>(client: object, method: string, request: Req, timeoutMs: number): Promise<Res> {
    if (this.closedWith) return Promise.reject(this.closedWith);
    const fn = (client as Record<string, UnaryMethod<Req, Res>>)[lowerFirst(method)];
    if (typeof fn !== 'function') return Promise.reject(new Error(`unknown plugin method ${method}`));
    if (MUTATING_METHODS.has(method)) {
      const refused = this.policy.refuseMutation?.();
      if (refused !== undefined) return Promise.reject(new PluginUnavailableError(`${method} not sent: ${refused}`));
    }
    const metadata = new Metadata();
    if (this.policy.caller) metadata.set(CALLER_METADATA_KEY, this.policy.caller);
    const started = process.hrtime.bigint();
    return new Promise<Res>((resolve, reject) => {
      const entry: InFlight = { reject };
      this.inflight.add(entry);
      const settle = (code: string) => {
        this.inflight.delete(entry);
        this.observe(method, code, Number(process.hrtime.bigint() - started) / 1e9);
      };
      entry.reject = (err) => {
        settle('UNAVAILABLE');
        reject(err);
      };
      entry.call = fn.call(client, request, metadata, { deadline: Date.now() + timeoutMs }, (err, res) => {
        if (!this.inflight.has(entry)) return; // already rejected by rejectAll
        if (err) {
          settle(Code[err.code] ?? String(err.code));
          const mapped = toCloudError(method, err);
          if (mapped instanceof PluginNotConfiguredError) this.onNotConfigured();
          reject(mapped);
        } else {
          settle('OK');
          resolve(res as Res);
        }
      });
    });
  }

  /** grpc.health.v1 Check for the protocol's service name; resolves true when SERVING. */
  async healthCheck(timeoutMs: number): Promise<boolean> {
    return new Promise((resolve) => {
      this.health.check({ service: HEALTH_SERVICE_NAME }, new Metadata(), { deadline: Date.now() + timeoutMs }, (err, res) => {
        resolve(!err && res?.status === SERVING);
      });
    });
  }

  /**
   * Calls `onLost` each time the channel, having been connected, loses its
   * connection: with a unix socket that means the process behind it went
   * away, and whatever answers next may be a new, unconfigured process.
   * Stops watching when the connection is closed.
   */
  watchConnection(onLost: () => void): void {
    const channel = this.identity.getChannel();
    let wasReady = false;
    const watch = () => {
      if (this.closedWith) return;
      const state = channel.getConnectivityState(false);
      if (state === connectivityState.READY) wasReady = true;
      else if (wasReady) {
        wasReady = false;
        onLost();
      }
      channel.watchConnectivityState(state, Date.now() + CONNECTIVITY_WATCH_MS, watch);
    };
    watch();
  }

  /** Rejects every in-flight call with `err` and cancels it on the wire. */
  rejectAll(err: Error): void {
    for (const entry of [...this.inflight]) {
      entry.reject(err);
      entry.call?.cancel();
    }
  }

  /** Rejects in-flight calls and closes the channel; later calls fail at once. Idempotent. */
  close(reason = 'plugin connection closed'): void {
    if (this.closedWith) return;
    this.closedWith = new PluginUnavailableError(reason);
    this.markClosed();
    this.rejectAll(this.closedWith);
    this.identity.close();
  }
}

function lowerFirst(s: string): string {
  return s.charAt(0).toLowerCase() + s.slice(1);
}
