package dev.ccm.provider.sdk;

import io.grpc.stub.StreamObserver;
import java.util.function.Supplier;

/** Small helpers for unary RPC methods. */
public final class Rpc {
  private Rpc() {}

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
