/**
 * The OTel SDK start, imported only when tracing is on (sdk/tracing.ts): this
 * module's imports are what a host or provider without tracing never loads.
 */
import { context, propagation, trace } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { defaultResource, detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, ConsoleSpanExporter, NodeTracerProvider, type SpanProcessor } from '@opentelemetry/sdk-trace-node';

/**
 * Builds and registers the global tracer provider. Unknown exporter names
 * are reported through `onError` and skipped, as the spec asks.
 */
export function startSdk(
  defaultServiceName: string,
  env: NodeJS.ProcessEnv,
  onError: (message: string) => void,
): { stop: () => Promise<void>; flush: () => Promise<void> } {
  const names = (env.OTEL_TRACES_EXPORTER ?? 'otlp')
    .split(',')
    .map((e) => e.trim().toLowerCase())
    .filter((e) => e !== '' && e !== 'none');
  const spanProcessors: SpanProcessor[] = [];
  for (const name of new Set(names)) {
    if (name === 'otlp') spanProcessors.push(new BatchSpanProcessor(new OTLPTraceExporter()));
    else if (name === 'console') spanProcessors.push(new BatchSpanProcessor(new ConsoleSpanExporter()));
    else onError(`OTEL_TRACES_EXPORTER: unknown exporter "${name}" ignored (otlp, console or none)`);
  }
  // The env (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES) wins over the default name.
  const resource = defaultResource()
    .merge(resourceFromAttributes({ 'service.name': defaultServiceName }))
    .merge(detectResources({ detectors: [envDetector] }));
  const provider = new NodeTracerProvider({ resource, spanProcessors });
  // AsyncLocalStorage context manager and the W3C trace-context + baggage propagator.
  provider.register();
  return {
    // Unregistered after the shutdown so that a later start in the same process (tests) registers afresh.
    stop: () =>
      provider.shutdown().finally(() => {
        trace.disable();
        context.disable();
        propagation.disable();
      }),
    flush: () => provider.forceFlush(),
  };
}
