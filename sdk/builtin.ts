/**
 * The services every provider serves without writing them: IdentityService
 * (from `provider.info`, the negotiated version and the provider's shape) and
 * LifecycleService (Configure → provider.configure; Shutdown → cancel
 * in-flight calls, then whatever the serving mode does on shutdown).
 */
import type { handleUnaryCall, UntypedServiceImplementation } from '@grpc/grpc-js';
import { GetProviderSchemaResponse, IdentityServiceService, type GetPluginCapabilitiesResponse } from '../proto/gen/ccm/provider/v1/identity.js';
import { LifecycleServiceService, type ShutdownRequest, type ShutdownResponse } from '../proto/gen/ccm/provider/v1/lifecycle.js';
import { deriveCapabilities } from './capabilities.js';
import { unaryHandler, type DispatchDeps } from './dispatch.js';
import { Code, NotConfiguredError, NotImplementedError, ProviderError } from './errors.js';
import { PROTOCOL_MINOR } from './protocol.js';
import type { CloudProvider } from './provider.js';
import { fullMethodName } from './services.js';

/** Grace period used when a Shutdown request carries none. */
export const DEFAULT_SHUTDOWN_GRACE_MS = 5_000;
/** Longest grace period honoured; the host escalates to signals anyway. */
export const MAX_SHUTDOWN_GRACE_MS = 120_000;

/** Identity facts fixed at start. */
export interface IdentityFacts {
  protocolVersion: number;
  /** CCM_PLUGIN_INSTANCE_ID in exec mode; an id generated at process start otherwise. */
  instanceId: string;
}

/**
 * Whether Configure has succeeded since the server started. Until it has,
 * cloud calls answer NOT_CONFIGURED and Probe answers ready=false, so a
 * provider restarted under a running host never answers from an empty state.
 */
export class ConfigureState {
  private done = false;

  get configured(): boolean {
    return this.done;
  }

  markConfigured(): void {
    this.done = true;
  }

  /** The answer for a cloud call right now: NOT_CONFIGURED before Configure, else undefined. */
  refusal(): ProviderError | undefined {
    return this.done ? undefined : new NotConfiguredError();
  }
}

/** IdentityService handlers. Capabilities are derived once, here. */
export function identityService(
  provider: CloudProvider,
  facts: IdentityFacts,
  state: ConfigureState,
  deps: DispatchDeps,
): UntypedServiceImplementation {
  const capabilities: GetPluginCapabilitiesResponse = deriveCapabilities(provider);
  // Built once: the schema is fixed for the life of the process.
  const schema = provider.schema ? GetProviderSchemaResponse.fromPartial(provider.schema) : undefined;
  const def = IdentityServiceService;
  return {
    getPluginInfo: unaryHandler(
      def.getPluginInfo,
      fullMethodName(def.getPluginInfo.path),
      async () => ({
        name: provider.info.name,
        vendorVersion: provider.info.vendorVersion,
        protocolVersion: facts.protocolVersion,
        protocolMinor: PROTOCOL_MINOR,
        instanceId: facts.instanceId,
        manifest: provider.info.manifest ?? {},
      }),
      deps,
    ),
    getPluginCapabilities: unaryHandler(def.getPluginCapabilities, fullMethodName(def.getPluginCapabilities.path), async () => capabilities, deps),
    probe: unaryHandler(
      def.probe,
      fullMethodName(def.probe.path),
      async (_req, ctx) => ({
        ready: state.configured && (provider.probe ? (await provider.probe.call(provider, ctx)) === true : true),
      }),
      deps,
    ),
    getMetrics: unaryHandler(
      def.getMetrics,
      fullMethodName(def.getMetrics.path),
      async (_req, ctx) => {
        if (!provider.metrics) throw new NotImplementedError('this provider exports no metrics (CloudProvider.metrics)');
        return { text: await provider.metrics.call(provider, ctx) };
      },
      deps,
    ),
    getProviderSchema: unaryHandler(
      def.getProviderSchema,
      fullMethodName(def.getProviderSchema.path),
      async () => {
        if (!schema) throw new NotImplementedError('this provider publishes no schema (CloudProvider.schema)');
        return schema;
      },
      deps,
    ),
  };
}

/** Grace period of a Shutdown request in ms, defaulted and clamped. */
export function shutdownGraceMs(req: ShutdownRequest): number {
  const d = req.gracePeriod;
  if (!d) return DEFAULT_SHUTDOWN_GRACE_MS;
  const ms = d.seconds * 1000 + Math.round(d.nanos / 1e6);
  return Math.min(MAX_SHUTDOWN_GRACE_MS, Math.max(0, ms));
}

/** Error in-flight calls are aborted with when Shutdown begins. */
export function shuttingDownError(): ProviderError {
  return new ProviderError(Code.UNAVAILABLE, 'provider is shutting down');
}

/**
 * LifecycleService handlers. A successful Configure marks `state`
 * configured (a failed one leaves it as it was). Shutdown aborts every in-flight call's signal,
 * answers, and then (on the next turn, after the answer was handed to the
 * transport) calls `onShutdown(graceMs)`, if given. Shutdown itself is never
 * refused or aborted, so it stays idempotent.
 */
export function lifecycleService(
  provider: CloudProvider,
  state: ConfigureState,
  deps: DispatchDeps,
  onShutdown?: (graceMs: number) => void,
): UntypedServiceImplementation {
  const def = LifecycleServiceService;
  return {
    configure: unaryHandler(
      def.configure,
      fullMethodName(def.configure.path),
      async (req, ctx) => {
        const res = provider.configure
          ? await provider.configure.call(provider, req as Parameters<NonNullable<CloudProvider['configure']>>[0], ctx)
          : { warnings: [] };
        state.markConfigured();
        return res;
      },
      deps,
    ),
    shutdown: ((call, callback) => {
      const graceMs = shutdownGraceMs(call.request);
      deps.log.info({ graceMs, inFlight: deps.inFlight.size }, 'shutdown requested');
      deps.inFlight.abortAll(shuttingDownError());
      callback(null, {});
      if (onShutdown) setImmediate(() => onShutdown(graceMs));
    }) satisfies handleUnaryCall<ShutdownRequest, ShutdownResponse>,
  };
}
