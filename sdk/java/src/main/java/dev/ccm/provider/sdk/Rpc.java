package dev.ccm.provider.sdk;

import io.grpc.stub.StreamObserver;
import java.util.function.Supplier;

/** Small helpers for unary RPC methods. */
public final class Rpc {
  private Rpc() {}

  private static final io.grpc.Context.Key<String> CALLER = io.grpc.Context.key("ccm-caller");
  private static final io.grpc.Metadata.Key<String> CALLER_HEADER = io.grpc.Metadata.Key.of(Protocol.CALLER_METADATA_KEY, io.grpc.Metadata.ASCII_STRING_MARSHALLER);

  /**
   * The calling host replica's identity (metadata x-ccm-caller, informational:
   * to log or journal with a cloud change), "" when the host sent none or
   * outside a call. Valid on the thread a handler runs on (the call's
   * io.grpc.Context; {@code Context.current().wrap(...)} carries it to another).
   */
  public static String caller() {
    String c = CALLER.get();
    return c == null ? "" : c;
  }

  /** The call's Context with the caller from `headers` set (ProviderServer's per-call context). */
  static io.grpc.Context withCaller(io.grpc.Context parent, io.grpc.Metadata headers) {
    String c = headers.get(CALLER_HEADER);
    return c == null || c.isEmpty() ? parent : parent.withValue(CALLER, c);
  }

  /**
   * Answers a unary call with what `answer` returns, or with the error it
   * throws (an {@link Errors} helper keeps its code and details; anything else
   * is INTERNAL). Exactly one of onNext+onCompleted or onError is called.
   */
  public static <T> void reply(StreamObserver<T> out, Supplier<T> answer) {
    T value;
    try {
      value = answer.get();
    } catch (RuntimeException e) {
      out.onError(ProviderServer.asStatusException(e));
      return;
    }
    out.onNext(value);
    out.onCompleted();
  }
}
