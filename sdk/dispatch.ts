/**
 * Turns provider async methods into grpc-js unary handlers: a CallContext per
 * call (AbortSignal aborted on client cancel, deadline, or shutdown), thrown
 * errors mapped through toServiceError, missing methods answered UNIMPLEMENTED.
 */
import type { Context, Span } from '@opentelemetry/api';
import { contextWith, extractFromMetadata, runIn, SpanKind, startSpan, STATUS_ERROR, tracingStarted } from './tracing.js';
import type {
  handleUnaryCall,
  MethodDefinition,
  sendUnaryData,
  ServerUnaryCall,
  ServiceDefinition,
  UntypedServiceImplementation,
} from '@grpc/grpc-js';
import type { Logger } from 'pino';
import { Code, ProviderError, toServiceError } from './errors.js';
import type { CallContext } from './provider.js';
import { CALLER_METADATA_KEY } from './mutations.js';
import { fullMethodName, hasMethod, type UntypedProviderService } from './services.js';

/** setTimeout cannot wait longer than this (larger values fire at once). */
const MAX_TIMER_MS = 2 ** 31 - 1;

type AnyCall = ServerUnaryCall<unknown, unknown>;
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- generated definitions are invariant in their message types
type AnyMethod = MethodDefinition<any, any>;

/** The calls currently running provider code, so Shutdown can abort them. */
export class InFlight {
  private readonly controllers = new Set<AbortController>();
  private closedReason: ProviderError | undefined;
  private idleWaiters: (() => void)[] = [];

  /** Number of calls running now. */
  get size(): number {
    return this.controllers.size;
  }

  /** Aborts every running call's signal with `reason`. */
  abortAll(reason: ProviderError): void {
    for (const c of this.controllers) c.abort(reason);
  }

  /** From now on new calls are refused with `reason` (exec-mode shutdown). */
  close(reason: ProviderError): void {
    this.closedReason ??= reason;
  }

  /** Resolves once no call is running (at once if none is). Unbounded: callers race it with a timer. */
  idle(): Promise<void> {
    if (this.controllers.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** Why new calls are refused, or undefined while open. */
  get refusal(): ProviderError | undefined {
    return this.closedReason;
  }

  /**
   * Starts tracking a call: returns its context and a `done` that must run
   * exactly once when the call has answered.
   */
  begin(call: AnyCall): { ctx: CallContext; done: () => void } {
    const controller = new AbortController();
    const onCancel = () => controller.abort(new ProviderError(Code.CANCELLED, 'call cancelled by the host'));
    call.on('cancelled', onCancel);
    if (call.cancelled) onCancel();
    const raw = call.getDeadline();
    const deadlineMs = raw instanceof Date ? raw.getTime() : raw;
    let timer: NodeJS.Timeout | undefined;
    if (Number.isFinite(deadlineMs)) {
      const delay = Math.max(0, deadlineMs - Date.now());
      if (delay <= MAX_TIMER_MS) {
        timer = setTimeout(() => controller.abort(new ProviderError(Code.DEADLINE_EXCEEDED, 'call deadline exceeded')), delay);
        timer.unref();
      }
    }
    this.controllers.add(controller);
    const ctx: CallContext = { signal: controller.signal };
    if (Number.isFinite(deadlineMs)) ctx.deadlineMs = deadlineMs;
    const caller = call.metadata?.get(CALLER_METADATA_KEY)[0];
    if (typeof caller === 'string' && caller !== '') ctx.caller = caller;
    return {
      ctx,
      done: () => {
        if (timer) clearTimeout(timer);
        call.removeListener('cancelled', onCancel);
        this.controllers.delete(controller);
        if (this.controllers.size === 0) {
          for (const wake of this.idleWaiters.splice(0)) wake();
        }
      },
    };
  }
}

/** What a handler needs besides the method itself. */
export interface DispatchDeps {
  inFlight: InFlight;
  log: Logger;
  /** Asked before each call; an error answers the call without running provider code (e.g. NOT_CONFIGURED). */
  precondition?: () => ProviderError | undefined;
}

/**
 * Fills a provider's answer with the response type's defaults, so returning
 * `undefined` (or omitting a repeated field) encodes as an empty message
 * instead of failing in the encoder.
 */
function withDefaults(method: AnyMethod, name: string, value: unknown): unknown {
  const defaults = method.responseDeserialize(Buffer.alloc(0)) as Record<string, unknown>;
  if (value === undefined || value === null) return defaults;
  if (typeof value !== 'object') {
    throw new ProviderError(Code.INTERNAL, `${name} returned a ${typeof value}; want a response object`);
  }
  for (const [k, v] of Object.entries(value)) if (v !== undefined) defaults[k] = v;
  return defaults;
}

/** The error to answer with when provider code failed with `err`. */
function answerError(err: unknown, ctx: CallContext): ProviderError | unknown {
  if (err instanceof ProviderError) return err;
  // An AbortError from fetch() etc. after our abort: answer with our reason.
  if (ctx.signal.aborted && ctx.signal.reason instanceof ProviderError) return ctx.signal.reason;
  return err;
}

/**
 * The provider's SERVER span for one call of `name` (`pkg.Service/Method`),
 * continuing the trace whose W3C context the host put in the metadata.
 */
function serverSpan(name: string, call: AnyCall): { span: Span; ctx: Context | undefined } {
  if (!tracingStarted()) return { span: startSpan(name, {}), ctx: undefined };
  const parent = extractFromMetadata((key) => {
    const v = call.metadata.get(key)[0];
    return typeof v === 'string' ? v : undefined;
  });
  const [service = '', rpcMethod = ''] = name.split('/');
  const span = startSpan(
    name,
    { kind: SpanKind.SERVER, attributes: { 'rpc.system': 'grpc', 'rpc.service': service, 'rpc.method': rpcMethod } },
    parent,
  );
  return { span, ctx: contextWith(span, parent) };
}

/**
 * A unary handler running `run(request, ctx)`. `method` is the generated
 * definition (used to fill response defaults); `name` appears in messages.
 */
export function unaryHandler(
  method: AnyMethod,
  name: string,
  run: (request: unknown, ctx: CallContext) => Promise<unknown>,
  deps: DispatchDeps,
): handleUnaryCall<unknown, unknown> {
  return (call: AnyCall, callback: sendUnaryData<unknown>) => {
    const refusal = deps.inFlight.refusal ?? deps.precondition?.();
    if (refusal) {
      callback(toServiceError(refusal));
      return;
    }
    const started = Date.now();
    const { ctx, done } = deps.inFlight.begin(call);
    // The SERVER span, child of the host's client span when the metadata carries its traceparent (no-op when tracing is off).
    const { span, ctx: traceCtx } = serverSpan(name, call);
    let result: Promise<unknown>;
    try {
      result = Promise.resolve(runIn(traceCtx, () => run(call.request, ctx)));
    } catch (err) {
      result = Promise.reject(err);
    }
    result
      .then((value) => withDefaults(method, name, value))
      .then(
        (response) => {
          span.end();
          done();
          deps.log.debug({ method: name, ms: Date.now() - started }, 'call succeeded');
          callback(null, response);
        },
        (err: unknown) => {
          done();
          const answer = answerError(err, ctx);
          if (span.isRecording()) {
            const code = answer instanceof ProviderError ? answer.code : Code.UNKNOWN;
            span.setAttribute('rpc.grpc.status_code', code);
            span.setStatus({ code: STATUS_ERROR, message: answer instanceof Error ? answer.message : String(answer) });
          }
          span.end();
          if (answer instanceof ProviderError) {
            deps.log.debug({ method: name, code: Code[answer.code], err: answer.message, ms: Date.now() - started }, 'call failed');
          } else {
            deps.log.error(
              { method: name, err: answer instanceof Error ? (answer.stack ?? answer.message) : String(answer) },
              'provider method threw an unexpected error',
            );
          }
          callback(toServiceError(answer));
        },
      );
  };
}

/**
 * Handler answering UNIMPLEMENTED, naming the method. The refusals come
 * first, as for an implemented method: before Configure a method of a
 * declared service answers NOT_CONFIGURED, implemented or not
 * (docs/protocol.md, "Lifecycle").
 */
function unimplementedHandler(name: string, deps: DispatchDeps): handleUnaryCall<unknown, unknown> {
  return (_call, callback) => {
    const refusal = deps.inFlight.refusal ?? deps.precondition?.();
    callback(toServiceError(refusal ?? new ProviderError(Code.UNIMPLEMENTED, `${name} is not implemented by this provider`)));
  };
}

/**
 * Handlers for every method of `definition`: the provider's method when it
 * has one, UNIMPLEMENTED otherwise. Keys of `impl` that are not methods of
 * the service (typos such as `instanceMetaData`) are logged and ignored.
 */
export function bindProviderService(definition: ServiceDefinition, impl: UntypedProviderService, deps: DispatchDeps): UntypedServiceImplementation {
  const handlers: UntypedServiceImplementation = {};
  for (const [key, method] of Object.entries(definition) as [string, AnyMethod][]) {
    const name = fullMethodName(method.path);
    handlers[key] = hasMethod(impl, key)
      ? unaryHandler(method, name, (req, ctx) => (impl[key] as (r: unknown, c: CallContext) => Promise<unknown>).call(impl, req, ctx), deps)
      : unimplementedHandler(name, deps);
  }
  for (const key of Object.keys(impl)) {
    if (!(key in definition) && typeof impl[key] === 'function') {
      deps.log.warn(
        { method: key, service: Object.values(definition)[0]?.path.split('/')[1] },
        'provider method is not part of the protocol; ignored',
      );
    }
  }
  return handlers;
}
