/**
 * Traces at the plugin boundary, host side. The host's one gRPC client interceptor for traces (docs/observability.md,
 * "Traces"): a CLIENT span per provider RPC, child of whatever span is active
 * where the call is made (a controller's `<queue>.sync`), and the W3C trace
 * context of that client span in the call's metadata (`traceparent`,
 * `tracestate`), so the provider's server span is its child. Installed only
 * when tracing is on (connection.ts): with tracing off calls carry no
 * metadata of it and pay nothing.
 */
import { InterceptingCall, status as GrpcStatus, type Interceptor } from '@grpc/grpc-js';
import { activeContext, contextWith, injectIntoMetadata, SpanKind, startSpan, STATUS_ERROR, tracingRequested } from '../../sdk/tracing.js';

/** OTel variables never passed on by default: they may hold credentials (pass them with --plugin-env NAME). */
const WITHHELD = /HEADERS|CERTIFICATE|CLIENT_KEY/;

/**
 * The environment entries (NAME=VALUE) that let a provider export its spans
 * where the host exports its own, when the host's tracing is on: the host's
 * OTEL_* variables (but the header and TLS-key ones), and OTEL_SERVICE_NAME
 * `ccm-provider-<provider name>` so the provider's spans carry their own
 * service.name. Nothing when tracing is off. Put before the operator's
 * --plugin-env entries, which win.
 */
export function tracingPluginEnv(providerName: string, hostEnv: NodeJS.ProcessEnv = process.env): string[] {
  if (!tracingRequested(hostEnv)) return [];
  const out: string[] = [];
  for (const [k, v] of Object.entries(hostEnv))
    if (k.startsWith('OTEL_') && v !== undefined && !WITHHELD.test(k) && k !== 'OTEL_SERVICE_NAME') out.push(`${k}=${v}`);
  out.push(`OTEL_SERVICE_NAME=ccm-provider-${providerName}`);
  return out;
}

/** `/pkg.Service/Method` split the way the RPC semantic conventions name them. */
function rpcNames(path: string): { service: string; method: string } {
  const [, service = '', method = ''] = path.split('/');
  return { service, method };
}

/** Span per call, named `<service>/<method>` as the RPC conventions ask, with rpc.* attributes and the gRPC status. */
export const traceInterceptor: Interceptor = (options, nextCall) => {
  const { service, method } = rpcNames(options.method_definition.path);
  // The caller's context, captured synchronously: the call is made inside the caller's async context.
  const parent = activeContext();
  const span = startSpan(
    `${service}/${method}`,
    { kind: SpanKind.CLIENT, attributes: { 'rpc.system': 'grpc', 'rpc.service': service, 'rpc.method': method } },
    parent,
  );
  const withSpan = contextWith(span, parent);
  return new InterceptingCall(nextCall(options), {
    start(metadata, _listener, next) {
      injectIntoMetadata(withSpan, (key, value) => metadata.set(key, value));
      next(metadata, {
        onReceiveStatus(status, nextStatus) {
          span.setAttribute('rpc.grpc.status_code', status.code);
          if (status.code !== GrpcStatus.OK) span.setStatus({ code: STATUS_ERROR, message: status.details });
          span.end();
          nextStatus(status);
        },
      });
    },
  });
};
