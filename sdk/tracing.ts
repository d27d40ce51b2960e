/**
 * OpenTelemetry traces across the plugin boundary (protocol 1.1,
 * docs/observability.md "Traces"), shared by the host and the TypeScript SDK.
 *
 * Off by default: with none of the variables below set, no SDK is loaded, no
 * exporter runs, and spans are the @opentelemetry/api no-op ones (one
 * non-recording object per call). Tracing is on when OTEL_SDK_DISABLED is not
 * "true" and either OTEL_TRACES_EXPORTER names an exporter ("otlp" or
 * "console"; "none" turns it off) or, with OTEL_TRACES_EXPORTER unset,
 * OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT is set.
 * Only then is the SDK imported (lazily: the host's start-up and RSS do not
 * change when off). The exporter, sampler and batch settings are the SDK's
 * own standard variables (OTEL_EXPORTER_OTLP_*, OTEL_TRACES_SAMPLER[_ARG],
 * OTEL_BSP_*); the resource takes OTEL_SERVICE_NAME / OTEL_RESOURCE_ATTRIBUTES.
 *
 * Context crosses the wire as W3C trace context (`traceparent`,
 * `tracestate`) in gRPC metadata: the host injects it into every RPC, a
 * provider may ignore it.
 */
import { context, propagation, ROOT_CONTEXT, trace, type Context, type Span, SpanKind, SpanStatusCode, type Tracer } from '@opentelemetry/api';

/** Instrumentation scope of every span the host and the SDK make. */
export const TRACER_NAME = 'grpc-cloud-controller-manager';

/** The exporters OTEL_TRACES_EXPORTER may name (comma-separated, as the spec allows). */
const EXPORTERS = new Set(['otlp', 'console']);

/**
 * Whether the standard OTel variables in `env` turn tracing on (see the
 * module comment). Pure; cheap enough to call per connection.
 */
export function tracingRequested(env: NodeJS.ProcessEnv = process.env): boolean {
  if ((env.OTEL_SDK_DISABLED ?? '').trim().toLowerCase() === 'true') return false;
  const exporters = (env.OTEL_TRACES_EXPORTER ?? '').trim().toLowerCase();
  if (exporters !== '') return exporters.split(',').some((e) => EXPORTERS.has(e.trim()));
  return Boolean(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || env.OTEL_EXPORTER_OTLP_ENDPOINT);
}

/** The started SDK of this process (one per process: the global tracer provider), and how many callers hold it. */
let started: { stop: () => Promise<void>; flush: () => Promise<void>; users: number } | undefined;
let starting: Promise<void> | undefined;

/** What {@link startTracing} hands back: `stop` flushes and, for the last holder, shuts the SDK down. Idempotent. */
export interface TracingHandle {
  readonly enabled: boolean;
  stop(): Promise<void>;
}

const OFF: TracingHandle = { enabled: false, stop: () => Promise.resolve() };

/**
 * Starts the OTel SDK when {@link tracingRequested}: a NodeTracerProvider
 * (AsyncLocalStorage context, W3C propagator, the env's sampler) with a batch
 * processor per exporter OTEL_TRACES_EXPORTER names (default otlp: OTLP/HTTP
 * JSON, endpoint from the env), registered globally. `defaultServiceName` is
 * service.name unless OTEL_SERVICE_NAME / OTEL_RESOURCE_ATTRIBUTES say
 * otherwise. Several callers in one process (tests run hosts in-process)
 * share one SDK. Never throws: a failure to start is reported through
 * `onError` and tracing stays off.
 */
export async function startTracing(
  defaultServiceName: string,
  onError: (message: string) => void,
  env: NodeJS.ProcessEnv = process.env,
): Promise<TracingHandle> {
  if (!tracingRequested(env)) return OFF;
  try {
    if (!started) {
      starting ??= import('./tracing-sdk.js').then((m) => {
        const sdk = m.startSdk(defaultServiceName, env, onError);
        started = { ...sdk, users: 0 };
      });
      await starting;
    }
  } catch (err) {
    starting = undefined;
    onError(`tracing not started: ${err instanceof Error ? err.message : String(err)}`);
    return OFF;
  }
  const sdk = started!;
  sdk.users++;
  let stopped = false;
  return {
    enabled: true,
    async stop() {
      if (stopped) return;
      stopped = true;
      if (--sdk.users > 0) return sdk.flush();
      started = undefined;
      starting = undefined;
      await sdk.stop();
    },
  };
}

/** Whether this process started the SDK (spans are recorded, subject to sampling). */
export function tracingStarted(): boolean {
  return started !== undefined;
}

/** This package's tracer (the no-op one until an SDK is registered). */
export function tracer(): Tracer {
  return trace.getTracer(TRACER_NAME);
}

/**
 * Runs `fn` in a new active span: ends it with status ERROR (and the
 * exception recorded) when `fn` throws, else leaves the status UNSET unless
 * `fn` set one. `fn` gets the span to add attributes.
 */
export async function inSpan<T>(
  name: string,
  opts: { kind?: SpanKind; attributes?: Record<string, string | number | boolean>; parent?: Context },
  fn: (span: Span) => Promise<T>,
): Promise<T> {
  const parent = opts.parent ?? context.active();
  const span = tracer().startSpan(name, { kind: opts.kind ?? SpanKind.INTERNAL, attributes: opts.attributes }, parent);
  try {
    return await context.with(trace.setSpan(parent, span), () => fn(span));
  } catch (err) {
    if (span.isRecording()) {
      span.recordException(err instanceof Error ? err : String(err));
      span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.message : String(err) });
    }
    throw err;
  } finally {
    span.end();
  }
}

/** The context carried by W3C `traceparent`/`tracestate` in gRPC metadata (ROOT_CONTEXT when absent or tracing is off). */
export function extractFromMetadata(get: (key: string) => string | undefined): Context {
  return propagation.extract(ROOT_CONTEXT, undefined, {
    keys: () => ['traceparent', 'tracestate'],
    get: (_carrier, key) => get(key),
  });
}

/** Writes `ctx`'s W3C trace context into gRPC metadata through `set` (nothing when tracing is off or no span is active). */
export function injectIntoMetadata(ctx: Context, set: (key: string, value: string) => void): void {
  propagation.inject(ctx, undefined, { set: (_carrier, key, value) => set(key, value) });
}

export { SpanKind, SpanStatusCode, context, trace };
