package dev.ccm.provider.sdk;

import dev.ccm.provider.v1.IdentityServiceGrpc;
import dev.ccm.provider.v1.ProbeRequest;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthCheckResponse;
import io.grpc.health.v1.HealthGrpc;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.netty.channel.ChannelOption;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollDomainSocketChannel;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.unix.DomainSocketAddress;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * {@code <provider> probe [--endpoint=unix:///path.sock] [--timeout=3s] [--ready]}:
 * a provider executable as its own kubelet exec probe, the same as the other
 * SDKs' (docs/protocol.md, "Kubelet probes of a sidecar"). It dials the running
 * provider's socket (--endpoint, else CCM_PROVIDER_ENDPOINT), prints one line
 * saying why, and returns 0 when grpc.health.v1 Check for ccm.provider.v1
 * answers SERVING and, with --ready, IdentityService/Probe answers ready=true;
 * 1 otherwise (no answer within --timeout is a wedged process); 2 when its own
 * command line is wrong. Read-only.
 */
public final class Probe {
  private Probe() {}

  public static final String COMMAND = "probe";
  static final long DEFAULT_TIMEOUT_MS = 3000;
  private static final String USAGE = "usage: probe [--endpoint=unix:///path.sock] [--timeout=3s] [--ready]";

  /** `3s`, `500ms`, `1.5s` → milliseconds; -1 when not a positive duration. */
  static long parseTimeout(String v) {
    Matcher m = Pattern.compile("(\\d+(?:\\.\\d+)?)(ms|s)").matcher(v == null ? "" : v);
    if (!m.matches()) return -1;
    double ms = Double.parseDouble(m.group(1)) * (m.group(2).equals("s") ? 1000 : 1);
    return ms > 0 ? Math.max(1, (long) ms) : -1;
  }

  /** Runs the probe for `args` (after `probe`), prints its one line on stdout, returns the exit code. */
  public static int run(List<String> args, Map<String, String> env) {
    String endpoint = null, timeout = null;
    boolean ready = false;
    for (int i = 0; i < args.size(); i++) {
      String a = args.get(i);
      String name = a, inline = null;
      if (a.startsWith("--") && a.contains("=")) {
        name = a.substring(0, a.indexOf('='));
        inline = a.substring(a.indexOf('=') + 1);
      }
      if (name.equals("--endpoint") || name.equals("--timeout")) {
        String value = inline;
        if (value == null) value = ++i < args.size() ? args.get(i) : null;
        if (name.equals("--endpoint")) endpoint = value;
        else timeout = value;
      } else if (name.equals("--ready") && inline == null) {
        ready = true;
      } else {
        System.out.println("probe: unexpected argument \"" + a + "\" (" + USAGE + ")");
        return 2;
      }
    }
    if (endpoint == null || endpoint.isEmpty()) endpoint = env.getOrDefault(Protocol.ENV_SIDECAR_ENDPOINT, "");
    String path = Protocol.unixSocketPath(endpoint);
    if (path == null) {
      System.out.println("probe: endpoint \"" + endpoint + "\" is not unix:///absolute/path.sock (--endpoint or $" + Protocol.ENV_SIDECAR_ENDPOINT + ")");
      return 2;
    }
    long timeoutMs = timeout == null ? DEFAULT_TIMEOUT_MS : parseTimeout(timeout);
    if (timeoutMs < 0) {
      System.out.println("probe: --timeout=" + timeout + " is not a positive duration such as 3s or 500ms");
      return 2;
    }
    EpollEventLoopGroup group = new EpollEventLoopGroup(1);
    ManagedChannel ch =
        NettyChannelBuilder.forAddress(new DomainSocketAddress(path))
            .channelType(EpollDomainSocketChannel.class)
            .eventLoopGroup(group)
            .withOption(ChannelOption.SO_KEEPALIVE, null)
            .usePlaintext()
            .build();
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
    try {
      String call = "grpc.health.v1 Check";
      try {
        HealthCheckResponse h =
            HealthGrpc.newBlockingStub(ch).withDeadlineAfter(left(deadline), TimeUnit.NANOSECONDS).check(HealthCheckRequest.newBuilder().setService(Protocol.HEALTH_SERVICE_NAME).build());
        if (h.getStatus() != HealthCheckResponse.ServingStatus.SERVING) {
          System.out.println("probe failed: " + endpoint + ": grpc.health.v1 Check answered " + h.getStatus());
          return 1;
        }
        if (!ready) {
          System.out.println("probe ok: " + endpoint + ": grpc.health.v1 SERVING");
          return 0;
        }
        call = "IdentityService/Probe";
        boolean r = IdentityServiceGrpc.newBlockingStub(ch).withDeadlineAfter(left(deadline), TimeUnit.NANOSECONDS).probe(ProbeRequest.getDefaultInstance()).getReady();
        if (!r) {
          System.out.println("probe failed: " + endpoint + ": SERVING, but IdentityService/Probe answered ready=false (not configured by the host yet, or the provider says it is not ready)");
          return 1;
        }
        System.out.println("probe ok: " + endpoint + ": grpc.health.v1 SERVING, IdentityService/Probe ready");
        return 0;
      } catch (StatusRuntimeException e) {
        if (e.getStatus().getCode() == Status.Code.DEADLINE_EXCEEDED) {
          System.out.println("probe failed: " + endpoint + ": no answer to " + call + " within " + timeoutMs + "ms (a process that accepts connections but answers nothing is wedged)");
        } else {
          System.out.println("probe failed: " + endpoint + ": " + call + " failed: " + e.getStatus().getCode() + ": \"" + e.getStatus().getDescription() + "\"");
        }
        return 1;
      }
    } finally {
      ch.shutdownNow();
      group.shutdownGracefully(0, 0, TimeUnit.SECONDS);
    }
  }

  private static long left(long deadline) {
    return Math.max(1_000_000, deadline - System.nanoTime());
  }
}
