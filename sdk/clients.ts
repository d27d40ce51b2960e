/**
 * Typed grpc-js clients for every protocol service over one shared channel,
 * plus a promise wrapper for unary calls with a bounded default deadline.
 * Used by sdk/testing.ts and the SDK's tests; the host may use them too.
 */
import {
  Channel,
  credentials,
  makeClientConstructor,
  Metadata,
  type CallOptions,
  type ChannelOptions,
  type Client,
  type ClientUnaryCall,
  type ServiceDefinition,
  type ServiceError,
} from '@grpc/grpc-js';
import { service as healthServiceDefinition } from 'grpc-health-check';
import { IdentityServiceClient } from '../proto/gen/ccm/provider/v1/identity.js';
import { InstancesServiceClient } from '../proto/gen/ccm/provider/v1/instances.js';
import { LifecycleServiceClient } from '../proto/gen/ccm/provider/v1/lifecycle.js';
import { LoadBalancersServiceClient } from '../proto/gen/ccm/provider/v1/load_balancers.js';
import { RoutesServiceClient } from '../proto/gen/ccm/provider/v1/routes.js';
import { VolumesServiceClient } from '../proto/gen/ccm/provider/v1/volumes.js';
import { ClustersServiceClient, ZonesServiceClient } from '../proto/gen/ccm/provider/v1/zones.js';
import { GRPC_MESSAGE_SIZE_OPTIONS } from './protocol.js';

/** Deadline `unary` applies when the caller gives none. */
const DEFAULT_CALL_TIMEOUT_MS = 10_000;

/** grpc.health.v1 check response (enums as strings, as grpc-health-check loads them). */
export interface HealthCheckResponse {
  status: 'UNKNOWN' | 'SERVING' | 'NOT_SERVING' | 'SERVICE_UNKNOWN';
}

/** A minimal typed client for grpc.health.v1.Health/Check. */
export interface HealthClient extends Client {
  check(
    request: { service: string },
    metadata: Metadata,
    options: Partial<CallOptions>,
    callback: (error: ServiceError | null, response: HealthCheckResponse) => void,
  ): ClientUnaryCall;
}

const HealthClientCtor = makeClientConstructor(healthServiceDefinition as unknown as ServiceDefinition, 'grpc.health.v1.Health') as unknown as new (
  address: string,
  creds: ReturnType<typeof credentials.createInsecure>,
  options?: object,
) => HealthClient;

/** One client per protocol service, all on one channel. */
export interface ProviderClients {
  identity: IdentityServiceClient;
  lifecycle: LifecycleServiceClient;
  instances: InstancesServiceClient;
  zones: ZonesServiceClient;
  clusters: ClustersServiceClient;
  loadBalancers: LoadBalancersServiceClient;
  routes: RoutesServiceClient;
  volumes: VolumesServiceClient;
  health: HealthClient;
  /** Closes the shared channel; pending calls fail with CANCELLED/UNAVAILABLE. */
  close(): void;
}

/**
 * Clients for the provider at `endpoint` (`unix:///abs/path.sock`), with the
 * protocol's message size limits. The channel connects lazily.
 */
export function createProviderClients(endpoint: string, options: ChannelOptions = {}): ProviderClients {
  const creds = credentials.createInsecure();
  const channel = new Channel(endpoint, creds, { ...GRPC_MESSAGE_SIZE_OPTIONS, ...options });
  const opts = { channelOverride: channel };
  return {
    identity: new IdentityServiceClient(endpoint, creds, opts),
    lifecycle: new LifecycleServiceClient(endpoint, creds, opts),
    instances: new InstancesServiceClient(endpoint, creds, opts),
    zones: new ZonesServiceClient(endpoint, creds, opts),
    clusters: new ClustersServiceClient(endpoint, creds, opts),
    loadBalancers: new LoadBalancersServiceClient(endpoint, creds, opts),
    routes: new RoutesServiceClient(endpoint, creds, opts),
    volumes: new VolumesServiceClient(endpoint, creds, opts),
    health: new HealthClientCtor(endpoint, creds, opts),
    close: () => channel.close(),
  };
}

/** Options of `unary`. */
export interface UnaryOptions {
  /** Relative deadline; default DEFAULT_CALL_TIMEOUT_MS. */
  timeoutMs?: number;
  /** Cancels the call (the server sees 'cancelled'). */
  signal?: AbortSignal;
  metadata?: Metadata;
}

/** The four-argument overload every generated unary client method has. */
export type UnaryMethod<Req, Res> = (
  request: Req,
  metadata: Metadata,
  options: Partial<CallOptions>,
  callback: (error: ServiceError | null, response: Res) => void,
) => ClientUnaryCall;

/**
 * Calls a unary method and returns its response; rejects with the grpc-js
 * ServiceError (decode it with fromServiceError). Pass the method bound to
 * its client: `unary(c.identity.getPluginInfo.bind(c.identity), {})`.
 */
export function unary<Req, Res>(method: UnaryMethod<Req, Res>, request: Req, opts: UnaryOptions = {}): Promise<Res> {
  return new Promise((resolve, reject) => {
    const deadline = new Date(Date.now() + (opts.timeoutMs ?? DEFAULT_CALL_TIMEOUT_MS));
    const onAbort = () => call.cancel();
    const call = method(request, opts.metadata ?? new Metadata(), { deadline }, (err, res) => {
      opts.signal?.removeEventListener('abort', onAbort);
      if (err) reject(err);
      else resolve(res);
    });
    if (opts.signal?.aborted) call.cancel();
    else opts.signal?.addEventListener('abort', onAbort, { once: true });
  });
}
