package dev.ccm.provider.sdk;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.grpc.Status;
import org.junit.jupiter.api.Test;

/** The helpers carry the code, the ErrorInfo reason (domain ccm.provider.v1) and the RetryInfo delay. */
class ErrorsTest {
  record Case(io.grpc.StatusRuntimeException error, Status.Code code, String reason, long retryMs) {}

  @Test
  void everyHelperCarriesItsCodeReasonAndDelay() {
    for (Case c :
        new Case[] {
          new Case(Errors.instanceNotFound("gone"), Status.Code.NOT_FOUND, Errors.INSTANCE_NOT_FOUND, -1),
          new Case(Errors.rateLimited("slow down", 1500), Status.Code.RESOURCE_EXHAUSTED, Errors.RATE_LIMITED, 1500),
          new Case(Errors.quotaExceeded("full"), Status.Code.RESOURCE_EXHAUSTED, Errors.QUOTA_EXCEEDED, -1),
          new Case(Errors.implementedElsewhere("not mine"), Status.Code.FAILED_PRECONDITION, Errors.IMPLEMENTED_ELSEWHERE, -1),
          new Case(Errors.inUse("attached"), Status.Code.FAILED_PRECONDITION, Errors.IN_USE, -1),
          new Case(Errors.cloudUnavailable("down"), Status.Code.UNAVAILABLE, Errors.CLOUD_API_ERROR, -1),
          new Case(Errors.notConfigured(), Status.Code.FAILED_PRECONDITION, Errors.NOT_CONFIGURED, -1),
          new Case(Errors.retry("later", 250), Status.Code.UNAVAILABLE, "", 250),
          new Case(Errors.invalidArgument("bad"), Status.Code.INVALID_ARGUMENT, "", -1),
        }) {
      com.google.rpc.Status s = Errors.toStatus(c.error());
      assertEquals(c.code().value(), s.getCode());
      assertEquals(c.code(), c.error().getStatus().getCode());
      assertEquals(c.reason(), Errors.reason(s));
      assertEquals(c.retryMs(), Errors.retryAfterMs(s));
    }
  }

  @Test
  void deferredCarriesTheProvidersReason() {
    com.google.rpc.Status s = Errors.toStatus(Errors.deferred("QuotaReview", "waiting for a quota review", 30_000));
    assertEquals(Status.Code.UNAVAILABLE.value(), s.getCode());
    assertEquals(Errors.DEFERRED, Errors.reason(s));
    assertEquals("QuotaReview", Errors.deferredReason(s));
    assertEquals(30_000, Errors.retryAfterMs(s));
    assertEquals(null, Errors.deferredReason(Errors.toStatus(Errors.rateLimited("slow down", 1))), "not DEFERRED");
  }

  @Test
  void theCallerIsTheHostsMetadataWhileACallRuns() throws Exception {
    io.grpc.Metadata h = new io.grpc.Metadata();
    assertEquals("", Rpc.caller(), "outside a call");
    io.grpc.Context none = Rpc.withCaller(io.grpc.Context.ROOT, h);
    assertEquals("", none.call(Rpc::caller), "no x-ccm-caller");
    h.put(io.grpc.Metadata.Key.of(Protocol.CALLER_METADATA_KEY, io.grpc.Metadata.ASCII_STRING_MARSHALLER), "host-a_1234");
    assertEquals("host-a_1234", Rpc.withCaller(io.grpc.Context.ROOT, h).call(Rpc::caller));
  }

  @Test
  void anyOtherThrowableIsInternal() {
    com.google.rpc.Status s = Errors.toStatus(new IllegalStateException("boom"));
    assertEquals(Status.Code.INTERNAL.value(), s.getCode());
    assertEquals("boom", s.getMessage());
  }
}
