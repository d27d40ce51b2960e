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
import type { Attributes, Context, Span, SpanOptions } from '@opentelemetry/api';

/**
 * @opentelemetry/api itself, loaded with the SDK: even the API costs about
 * 6 MiB of RSS, so a process with tracing off never imports it, and every
 * helper below is a plain call then.
 */
type OtelApi = typeof import('@opentelemetry/api');
let otel: OtelApi | undefined;

/** OTel SpanKind values (the API's enum, which is not loaded when tracing is off). */
export const SpanKind = { INTERNAL: 0, SERVER: 1, CLIENT: 2 } as const;
/** OTel SpanStatusCode.ERROR. */
export const STATUS_ERROR = 2;

/** The span every helper hands out while tracing is off: records nothing. */
const NOOP_SPAN: Span = {
  spanContext: () => ({ traceId: '', spanId: '', traceFlags: 0 }),
  setAttribute: () => NOOP_SPAN,
  setAttributes: () => NOOP_SPAN,
  addEvent: () => NOOP_SPAN,
  addLink: () => NOOP_SPAN,
  addLinks: () => NOOP_SPAN,
  setStatus: () => NOOP_SPAN,
  updateName: () => NOOP_SPAN,
  end: () => undefined,
  isRecording: () => false,
  recordException: () => undefined,
};

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
      starting ??= Promise.all([import('@opentelemetry/api'), import('./tracing-sdk.js')]).then(([api, m]) => {
        const sdk = m.startSdk(defaultServiceName, env, onError);
        otel = api;
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
      otel = undefined;
      await sdk.stop();
    },
  };
}

/** Whether this process started the SDK (spans are recorded, subject to sampling). */
export function tracingStarted(): boolean {
  return started !== undefined;
}

/**
 * Starts a span (the no-op one when tracing is off). `parent` defaults to
 * the active context; `root: true` in `opts` starts a new trace.
 */
export function startSpan(name: string, opts: SpanOptions, parent?: Context): Span {
  if (!otel) return NOOP_SPAN;
  return otel.trace.getTracer(TRACER_NAME).startSpan(name, opts, parent ?? otel.context.active());
}

/** `parent` (default: the active context, or a new root with `root`) with `span` as its span; undefined when tracing is off. */
export function contextWith(span: Span, parent?: Context, root = false): Context | undefined {
  if (!otel) return undefined;
  return otel.trace.setSpan(root ? otel.ROOT_CONTEXT : (parent ?? otel.context.active()), span);
}

/** Runs `fn` with `ctx` active (just runs it when tracing is off or `ctx` is undefined). */
export function runIn<T>(ctx: Context | undefined, fn: () => T): T {
  return otel && ctx ? otel.context.with(ctx, fn) : fn();
}

/** The active context, undefined when tracing is off. */
export function activeContext(): Context | undefined {
  return otel?.context.active();
}

/**
 * Runs `fn` in a new active span: ends it with status ERROR (and the
 * exception recorded) when `fn` throws, else leaves the status UNSET unless
 * `fn` set one. `fn` gets the span to add attributes.
 */
export async function inSpan<T>(name: string, opts: { kind?: number; attributes?: Attributes }, fn: (span: Span) => Promise<T>): Promise<T> {
  const span = startSpan(name, { kind: opts.kind ?? SpanKind.INTERNAL, attributes: opts.attributes });
  try {
    return await runIn(contextWith(span), () => fn(span));
  } catch (err) {
    if (span.isRecording()) {
      span.recordException(err instanceof Error ? err : String(err));
      span.setStatus({ code: STATUS_ERROR, message: err instanceof Error ? err.message : String(err) });
    }
    throw err;
  } finally {
    span.end();
  }
}

/** The context carried by W3C `traceparent`/`tracestate` in gRPC metadata; undefined when tracing is off. */
export function extractFromMetadata(get: (key: string) => string | undefined): Context | undefined {
  if (!otel) return undefined;
  return otel.propagation.extract(otel.ROOT_CONTEXT, undefined, {
    keys: () => ['traceparent', 'tracestate'],
    get: (_carrier, key) => get(key),
  });
}

/** Writes `ctx`'s W3C trace context into gRPC metadata through `set` (nothing when tracing is off). */
export function injectIntoMetadata(ctx: Context | undefined, set: (key: string, value: string) => void): void {
  if (otel && ctx) otel.propagation.inject(ctx, undefined, { set: (_carrier, key, value) => set(key, value) });
}
