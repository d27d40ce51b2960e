package dev.ccm.provider.sdk;

import dev.ccm.provider.v1.ConfigureRequest;
import dev.ccm.provider.v1.ConfigureResponse;
import dev.ccm.provider.v1.GetMetricsRequest;
import dev.ccm.provider.v1.GetMetricsResponse;
import dev.ccm.provider.v1.GetPluginCapabilitiesRequest;
import dev.ccm.provider.v1.GetPluginCapabilitiesResponse;
import dev.ccm.provider.v1.GetPluginInfoRequest;
import dev.ccm.provider.v1.GetPluginInfoResponse;
import dev.ccm.provider.v1.GetProviderSchemaRequest;
import dev.ccm.provider.v1.GetProviderSchemaResponse;
import dev.ccm.provider.v1.IdentityServiceGrpc;
import dev.ccm.provider.v1.LifecycleServiceGrpc;
import dev.ccm.provider.v1.ProbeRequest;
import dev.ccm.provider.v1.ProbeResponse;
import dev.ccm.provider.v1.ShutdownRequest;
import dev.ccm.provider.v1.ShutdownResponse;
import io.grpc.BindableService;
import io.grpc.Context;
import io.grpc.Contexts;
import io.grpc.ForwardingServerCallListener.SimpleForwardingServerCallListener;
import io.grpc.Metadata;
import io.grpc.Server;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.ServerServiceDefinition;
import io.grpc.Status;
import io.grpc.StatusException;
import io.grpc.StatusRuntimeException;
import io.grpc.health.v1.HealthCheckResponse.ServingStatus;
import io.grpc.health.v1.HealthGrpc;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.netty.shaded.io.netty.channel.ChannelOption;
import io.grpc.netty.shaded.io.netty.channel.EventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.epoll.Epoll;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollServerDomainSocketChannel;
import io.grpc.netty.shaded.io.netty.channel.unix.DomainSocketAddress;
import io.grpc.netty.shaded.io.netty.channel.unix.FileDescriptor;
import io.grpc.protobuf.services.HealthStatusManager;
import io.grpc.stub.StreamObserver;
import io.grpc.util.TransmitStatusRuntimeExceptionInterceptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import sun.misc.Signal;

/**
 * serve(provider): the launch contract of docs/protocol.md, as the
 * TypeScript SDK's serve(), the Go SDK's ccmsdk.Serve and the Python SDK's
 * serve() do it.
 *
 * <p>Exec mode (CCM_PLUGIN_MAGIC_COOKIE matches): negotiates the protocol from
 * CCM_PLUGIN_PROTOCOL_VERSIONS, listens on the unix socket CCM_PLUGIN_ENDPOINT
 * names (0600 before anyone can connect, {@link SocketFiles}), prints the one
 * handshake line and returns after a stop on stdin EOF (the host died), a
 * Shutdown RPC (within its grace period), SIGTERM or SIGINT. A second signal
 * during a stop exits 1 at once; a stop that hangs exits 0 anyway.
 *
 * <p>The handshake line and stdout: a JVM cannot point its own fd 1 at
 * stderr (no dup2), and the JVM itself, a library or a native component may
 * write to fd 1. So a provider is started through a launcher script that runs
 * {@code exec 3>&1 1>&2} before {@code exec java -Dccm.handshake.fd=3 ...}:
 * the JVM's stdout is stderr from its first instruction, and the handshake
 * line goes to fd 3, the host's stdout pipe (docs/providers/java.md). Without
 * {@code ccm.handshake.fd} the line goes to the JVM's stdout, and
 * System.out is pointed at System.err after it (Java code is then safe, the
 * JVM and native code are not).
 *
 * <p>Sidecar mode (no cookie; an endpoint from Options, CCM_PROVIDER_ENDPOINT
 * or --endpoint=unix:///path.sock): listens there, no handshake, no stdin
 * watching, a random instance id per process (so a host can tell a restart);
 * Shutdown only cancels in-flight calls and the provider serves the next
 * host; SIGTERM/SIGINT stop it.
 *
 * <p>Both: grpc.health.v1 SERVING for "" and ccm.provider.v1 (NOT_SERVING once
 * stopping); IdentityService from provider.info() and what the provider
 * implements; until the first successful Configure, cloud calls answer
 * FAILED_PRECONDITION/NOT_CONFIGURED and Probe answers ready=false; a
 * StatusRuntimeException thrown by a handler reaches the host with its code
 * and details (TransmitStatusRuntimeExceptionInterceptor); any other
 * exception answers INTERNAL and is logged; a stale socket file nothing
 * answers on is replaced, a live one or a non-socket is refused; the socket
 * is removed on stop; java.util.logging writes JSON lines on stderr
 * ({@link Log}).
 */
public final class ProviderServer {
  /** The grace period of stops not asked for by a Shutdown RPC (signals, stdin EOF), and of a Shutdown without one. */
  public static final long DEFAULT_STOP_GRACE_MS = 5000;
  /** The longest Shutdown grace period honoured; the host escalates to signals anyway. */
  public static final long MAX_SHUTDOWN_GRACE_MS = 120_000;
  /** provider.close() always gets at least this long. */
  static final long MIN_CLOSE_MS = 1000;
  /** Past grace + MIN_CLOSE_MS + this, a stop that hangs exits the process anyway. */
  static final long EXIT_BACKSTOP_MS = 2000;
  /** The system property naming the file descriptor the launcher keeps the host's stdout pipe on. */
  public static final String HANDSHAKE_FD_PROPERTY = "ccm.handshake.fd";

  /**
   * Constant expressions (inlined by javac): the class initializer of
   * ProviderServer must load no gRPC stub, so a refusal in serve() comes
   * before the protobuf descriptors load (LaunchTest).
   */
  static final String SHUTDOWN_METHOD = LifecycleServiceGrpc.SERVICE_NAME + "/Shutdown";
  private static final String HEALTH_SERVICE = HealthGrpc.SERVICE_NAME;

  /** Options of {@link #serve}; all optional. */
  public static final class Options {
    String endpoint;
    List<String> args = List.of();
    long stopGraceMs = DEFAULT_STOP_GRACE_MS;
    final List<Object> services = new ArrayList<>();
    final List<ServerInterceptor> interceptors = new ArrayList<>();
    Map<String, String> env = System.getenv();

    /** The sidecar endpoint (unix:///abs/path.sock); overrides CCM_PROVIDER_ENDPOINT and --endpoint. Ignored in exec mode. */
    public Options endpoint(String endpoint) {
      this.endpoint = endpoint;
      return this;
    }

    /** The command line to read --endpoint (and the probe subcommand) from. */
    public Options args(String... args) {
      this.args = List.of(args);
      return this;
    }

    /** Grace period of stops on signals and stdin EOF (default 5 s). */
    public Options stopGraceMs(long ms) {
      this.stopGraceMs = ms;
      return this;
    }

    /** A service of the provider's own (a BindableService or ServerServiceDefinition), e.g. TestHooksService when CCM_PROVIDER_TEST_HOOKS is "1". */
    public Options service(Object service) {
      if (!(service instanceof BindableService) && !(service instanceof ServerServiceDefinition)) {
        throw new IllegalArgumentException("service must be a BindableService or a ServerServiceDefinition");
      }
      services.add(service);
      return this;
    }

    /** An interceptor run on every call after the server's own (which refuse calls during a stop and cloud calls before Configure); the first added runs first. Use {@link Capabilities#isCloudMethod} to pick the cloud calls. */
    public Options interceptor(ServerInterceptor i) {
      interceptors.add(i);
      return this;
    }

    Options env(Map<String, String> env) {
      this.env = env;
      return this;
    }
  }

  /** serve() cannot run: a refusal (not by hand, no common protocol), an invalid provider or an unusable socket. */
  public static final class ServeException extends Exception {
    public ServeException(String message) {
      super(message);
    }
  }

  private final Provider provider;
  private final Protocol.Mode mode;
  private final Log log;
  private final Options options;
  private final Info info;
  private final Map<String, Capabilities.Bound> bound;
  private final GetPluginCapabilitiesResponse caps;
  private final HealthStatusManager health = new HealthStatusManager();
  private final Set<Context.CancellableContext> inFlight = ConcurrentHashMap.newKeySet();
  private final CountDownLatch done = new CountDownLatch(1);
  private final AtomicBoolean stopping = new AtomicBoolean();
  private volatile boolean configured;
  /** Null unless the OTEL_* variables turn traces on ({@link Tracing}). */
  private Tracing tracing;
  private Server server;
  private EventLoopGroup boss;
  private EventLoopGroup workers;

  private ProviderServer(Provider provider, Protocol.Mode mode, Log log, Options options) {
    this.provider = provider;
    this.mode = mode;
    this.log = log;
    this.options = options;
    this.info = provider.info();
    this.bound = Capabilities.bind(provider);
    this.caps = Capabilities.derive(provider, bound);
  }

  /**
   * Serves `provider` until the process is told to stop; returns after the
   * stop. Throws ServeException without serving when it must not run (started
   * by hand, wrong cookie, no common protocol version), when the provider is
   * invalid or the socket unusable; {@link #main} prints it and exits 1.
   * {@code probe} as the first argument runs the kubelet's exec probe of a
   * running sidecar instead ({@link Probe}) and exits with its code.
   */
  public static void serve(Provider provider, Options options) throws ServeException {
    boolean probe = !options.args.isEmpty() && options.args.get(0).equals(Probe.COMMAND);
    Protocol.Mode mode = null;
    // The start-up decision first: a refusal loads nothing it does not need (Launch).
    if (!probe) {
      try {
        mode = Protocol.resolveMode(options.env, options.args, options.endpoint);
      } catch (Protocol.ModeException e) {
        throw new ServeException(e.getMessage());
      }
    }
    Log.install();
    if (probe) flushAndHalt(Probe.run(options.args.subList(1, options.args.size()), options.env));
    FileOutputStream handshake = null;
    FileDescriptor handshakeFd = null;
    if (mode.exec()) {
      // From here on nothing of this JVM's Java code writes to the real stdout.
      String fd = System.getProperty(HANDSHAKE_FD_PROPERTY);
      if (fd != null && !fd.isEmpty()) handshakeFd = new FileDescriptor(Integer.parseInt(fd));
      else handshake = new FileOutputStream(java.io.FileDescriptor.out);
      System.setOut(System.err);
    }
    Info info = provider.info();
    if (info == null || info.name() == null || info.name().isEmpty() || info.providerName() == null || info.providerName().isEmpty()) {
      throw new ServeException(provider.getClass().getName() + ".info() must name the provider (name and providerName)");
    }
    Log log = Log.named(info.providerName()).with("component", "ccm-sdk");
    ProviderServer p = new ProviderServer(provider, mode, log, options);
    p.tracing = Tracing.start(options.env, log);
    p.listen();
    // Hooks go in before the handshake: the host may signal or close stdin the moment it reads the line.
    for (String sig : new String[] {"TERM", "INT"}) Signal.handle(new Signal(sig), s -> p.onSignal("SIG" + s.getName()));
    if (mode.exec()) {
      Thread stdin = new Thread(p::watchStdin, "ccm-stdin");
      stdin.setDaemon(true);
      stdin.start();
      try {
        byte[] line = (Protocol.formatHandshake(mode.protocol(), mode.socketPath()) + "\n").getBytes(StandardCharsets.UTF_8);
        if (handshakeFd != null) {
          ByteBuffer b = ByteBuffer.allocateDirect(line.length).put(line).flip();
          while (b.hasRemaining()) b.position(b.position() + handshakeFd.write(b, b.position(), b.limit()));
        } else {
          handshake.write(line);
          handshake.flush();
        }
      } catch (IOException | RuntimeException e) {
        p.stop("handshake failed", 0);
        throw new ServeException("cannot write the handshake line: " + e);
      }
    }
    log.info("provider serving", "mode", mode.exec() ? "exec" : "sidecar", "endpoint", "unix://" + mode.socketPath(), "protocolVersion", mode.protocol(), "instanceId", mode.instanceId());
    try {
      p.done.await();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    log.info("provider stopped");
  }

  /**
   * serve(provider, options.args(args)), then ends the process: exit 0 after
   * a stop; the error on stderr and exit 1 when serve() could not run.
   */
  public static void main(Provider provider, String[] args, Options options) {
    try {
      serve(provider, options.args(args));
    } catch (ServeException e) {
      System.err.println(e.getMessage());
      flushAndHalt(1);
    } catch (RuntimeException e) {
      System.err.println("provider failed to start: " + e);
      flushAndHalt(1);
    }
    // halt: a provider method still stuck past the grace period must not keep the process alive.
    flushAndHalt(0);
  }

  static void flushAndHalt(int code) {
    System.out.flush();
    System.err.flush();
    Runtime.getRuntime().halt(code);
  }

  /** The status exception a handler's throwable answers with: a Status(Runtime)Exception as it is, anything else INTERNAL. */
  static StatusRuntimeException asStatusException(Throwable t) {
    if (t instanceof StatusRuntimeException e) return e;
    if (t instanceof StatusException e) return new StatusRuntimeException(e.getStatus(), e.getTrailers());
    return Status.INTERNAL.withDescription(String.valueOf(t)).withCause(t).asRuntimeException();
  }

  // ---- serving ----

  private void listen() throws ServeException {
    if (!Epoll.isAvailable()) {
      throw new ServeException("unix sockets need Netty's epoll transport, which is not available here: " + Epoll.unavailabilityCause());
    }
    Path path = Path.of(mode.socketPath());
    boss = new EpollEventLoopGroup(1);
    workers = new EpollEventLoopGroup(Math.max(2, Runtime.getRuntime().availableProcessors()));
    try {
      SocketFiles.prepare(path);
      Path tmp = SocketFiles.privateBindPath(path);
      NettyServerBuilder b =
          NettyServerBuilder.forAddress(new DomainSocketAddress(tmp.toString()))
              .channelType(EpollServerDomainSocketChannel.class)
              .bossEventLoopGroup(boss)
              .workerEventLoopGroup(workers)
              // grpc-java sets SO_KEEPALIVE on every accepted channel; a unix socket has none,
              // and Netty would log a WARN per connection (re-logged by the host as a plugin warning).
              .withChildOption(ChannelOption.SO_KEEPALIVE, null)
              .maxInboundMessageSize(Protocol.MAX_MESSAGE_BYTES)
              .addService(health.getHealthService())
              .addService(new Identity())
              .addService(new Lifecycle());
      for (Capabilities.Bound s : bound.values()) b.addService(s.entry().bind().apply(s.object()));
      for (Object s : options.services) {
        if (s instanceof BindableService bs) b.addService(bs);
        else b.addService((ServerServiceDefinition) s);
      }
      // ServerBuilder.intercept: the last added runs first. Run order: transmit, refusals, tracking, the provider's own.
      List<ServerInterceptor> own = new ArrayList<>(options.interceptors);
      java.util.Collections.reverse(own);
      for (ServerInterceptor i : own) b.intercept(i);
      b.intercept(new Tracking());
      b.intercept(new Refusals());
      b.intercept(TransmitStatusRuntimeExceptionInterceptor.instance());
      // Outermost: the span covers the refusals too and ends with the status every call closes with.
      if (tracing != null) b.intercept(tracing.interceptor());
      health.setStatus("", ServingStatus.SERVING);
      health.setStatus(Protocol.HEALTH_SERVICE_NAME, ServingStatus.SERVING);
      server = b.build();
      try {
        server.start();
        SocketFiles.publish(tmp, path);
      } catch (IOException e) {
        server.shutdownNow();
        throw e;
      }
    } catch (IOException e) {
      boss.shutdownGracefully(0, 0, TimeUnit.SECONDS);
      workers.shutdownGracefully(0, 0, TimeUnit.SECONDS);
      throw new ServeException("cannot serve on " + path + ": " + e.getMessage());
    }
  }

  private void onSignal(String name) {
    if (stopping.get()) {
      log.warn("signal during stop; exiting now", "signal", name);
      SocketFiles.remove(Path.of(mode.socketPath()));
      flushAndHalt(1);
    }
    Thread t = new Thread(() -> stop(name, options.stopGraceMs), "ccm-stop");
    t.setDaemon(true);
    t.start();
  }

  private void watchStdin() {
    InputStream in = System.in;
    byte[] buf = new byte[65536];
    try {
      while (in.read(buf) >= 0) {
        // Data is discarded; only EOF (the host is gone) matters.
      }
    } catch (IOException e) {
      // A closed or broken stdin is the same as EOF.
    }
    stop("stdin closed", options.stopGraceMs);
  }

  /**
   * Stops once: refuses new calls, cancels in-flight ones, health NOT_SERVING,
   * waits up to the grace period for the calls, stops the server, runs
   * provider.close() (at least 1 s), removes the socket. Returns false when a
   * stop had already begun.
   */
  boolean stop(String reason, long graceMs) {
    if (!stopping.compareAndSet(false, true)) return false;
    Thread backstop =
        new Thread(
            () -> {
              try {
                Thread.sleep(graceMs + MIN_CLOSE_MS + EXIT_BACKSTOP_MS);
              } catch (InterruptedException e) {
                return;
              }
              log.warn("provider stop did not finish; exiting anyway", "reason", reason);
              SocketFiles.remove(Path.of(mode.socketPath()));
              flushAndHalt(0);
            },
            "ccm-stop-backstop");
    backstop.setDaemon(true);
    backstop.start();
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(graceMs);
    log.info("provider stopping", "reason", reason, "graceMs", graceMs);
    health.enterTerminalState();
    cancelInFlight("provider is shutting down");
    server.shutdown();
    try {
      if (!server.awaitTermination(Math.max(200, remainingMs(deadline)), TimeUnit.MILLISECONDS)) {
        log.warn("in-flight calls outlived the grace period", "inFlight", inFlight.size(), "graceMs", graceMs);
        server.shutdownNow();
        server.awaitTermination(1, TimeUnit.SECONDS);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    Thread close =
        new Thread(
            () -> {
              try {
                provider.close();
              } catch (RuntimeException e) {
                log.error("provider close failed", "err", String.valueOf(e));
              }
            },
            "ccm-close");
    close.setDaemon(true);
    close.start();
    try {
      close.join(Math.max(MIN_CLOSE_MS, remainingMs(deadline)));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    if (close.isAlive()) log.warn("provider close did not finish in time");
    // Within the backstop: what is left of the grace period, at least MIN_CLOSE_MS.
    if (tracing != null) tracing.shutdown(Math.max(MIN_CLOSE_MS, remainingMs(deadline)), log);
    SocketFiles.remove(Path.of(mode.socketPath()));
    boss.shutdownGracefully(0, 0, TimeUnit.SECONDS);
    workers.shutdownGracefully(0, 0, TimeUnit.SECONDS);
    backstop.interrupt();
    done.countDown();
    return true;
  }

  private static long remainingMs(long deadlineNanos) {
    return Math.max(0, TimeUnit.NANOSECONDS.toMillis(deadlineNanos - System.nanoTime()));
  }

  private void cancelInFlight(String why) {
    for (Context.CancellableContext c : inFlight) c.cancel(Status.UNAVAILABLE.withDescription(why).asRuntimeException());
  }

  private static <ReqT, RespT> ServerCall.Listener<ReqT> refuse(ServerCall<ReqT, RespT> call, StatusRuntimeException e) {
    // The trailers carry the google.rpc.Status details (grpc-status-details-bin).
    call.close(e.getStatus(), e.getTrailers() != null ? e.getTrailers() : new Metadata());
    return new ServerCall.Listener<>() {};
  }

  /** First on every call after the transmit interceptor: refuses calls once stopping (UNAVAILABLE) and cloud calls before Configure (NOT_CONFIGURED). Shutdown and health are never refused. */
  private final class Refusals implements ServerInterceptor {
    @Override
    public <ReqT, RespT> ServerCall.Listener<ReqT> interceptCall(ServerCall<ReqT, RespT> call, Metadata headers, ServerCallHandler<ReqT, RespT> next) {
      String method = call.getMethodDescriptor().getFullMethodName();
      if (method.equals(SHUTDOWN_METHOD) || HEALTH_SERVICE.equals(call.getMethodDescriptor().getServiceName())) {
        return next.startCall(call, headers);
      }
      if (stopping.get()) return refuse(call, Status.UNAVAILABLE.withDescription("provider is shutting down").asRuntimeException());
      if (!configured && Capabilities.isCloudMethod(method)) return refuse(call, Errors.notConfigured());
      return next.startCall(call, headers);
    }
  }

  /**
   * Gives every call (but Shutdown and health) a cancellable Context that a
   * stop or Shutdown cancels (long cloud operations should watch
   * Context.current().isCancelled()), and turns an exception other than a
   * StatusRuntimeException into INTERNAL (logged) instead of grpc-java's
   * UNKNOWN.
   */
  private final class Tracking implements ServerInterceptor {
    @Override
    public <ReqT, RespT> ServerCall.Listener<ReqT> interceptCall(ServerCall<ReqT, RespT> call, Metadata headers, ServerCallHandler<ReqT, RespT> next) {
      String method = call.getMethodDescriptor().getFullMethodName();
      boolean tracked = !method.equals(SHUTDOWN_METHOD) && !HEALTH_SERVICE.equals(call.getMethodDescriptor().getServiceName());
      Context.CancellableContext ctx = Rpc.withCaller(Context.current(), headers).withCancellation();
      if (tracked) inFlight.add(ctx);
      long started = System.nanoTime();
      ServerCall.Listener<ReqT> inner = Contexts.interceptCall(ctx, call, headers, next);
      return new SimpleForwardingServerCallListener<>(inner) {
        private void guarded(Runnable r) {
          try {
            r.run();
          } catch (StatusRuntimeException e) {
            throw e;
          } catch (RuntimeException e) {
            log.error("provider method threw an unexpected exception", "method", method, "err", String.valueOf(e), "stack", Arrays.toString(e.getStackTrace()));
            throw Status.INTERNAL.withDescription(method + ": " + e).asRuntimeException();
          }
        }

        @Override
        public void onMessage(ReqT message) {
          guarded(() -> super.onMessage(message));
        }

        @Override
        public void onHalfClose() {
          guarded(super::onHalfClose);
        }

        private void end() {
          inFlight.remove(ctx);
          ctx.cancel(null);
          log.debug("call ended", "method", method, "ms", TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started));
        }

        @Override
        public void onComplete() {
          try {
            super.onComplete();
          } finally {
            end();
          }
        }

        @Override
        public void onCancel() {
          try {
            super.onCancel();
          } finally {
            end();
          }
        }
      };
    }
  }

  // ---- IdentityService and LifecycleService ----

  private final class Identity extends IdentityServiceGrpc.IdentityServiceImplBase {
    @Override
    public void getPluginInfo(GetPluginInfoRequest request, StreamObserver<GetPluginInfoResponse> out) {
      Rpc.reply(
          out,
          () ->
              GetPluginInfoResponse.newBuilder()
                  .setName(info.name())
                  .setVendorVersion(info.vendorVersion())
                  .setProtocolVersion(mode.protocol())
                  .setProtocolMinor(Protocol.PROTOCOL_MINOR)
                  .setInstanceId(mode.instanceId())
                  .putAllManifest(info.manifest())
                  .build());
    }

    @Override
    public void getPluginCapabilities(GetPluginCapabilitiesRequest request, StreamObserver<GetPluginCapabilitiesResponse> out) {
      Rpc.reply(out, () -> caps);
    }

    @Override
    public void probe(ProbeRequest request, StreamObserver<ProbeResponse> out) {
      Rpc.reply(out, () -> ProbeResponse.newBuilder().setReady(configured && provider.probe()).build());
    }

    @Override
    public void getMetrics(GetMetricsRequest request, StreamObserver<GetMetricsResponse> out) {
      Rpc.reply(out, () -> GetMetricsResponse.newBuilder().setText(provider.metrics()).build());
    }

    /** The provider's schema(), asked once: the answer is fixed for the life of the process. */
    @Override
    public void getProviderSchema(GetProviderSchemaRequest request, StreamObserver<GetProviderSchemaResponse> out) {
      Rpc.reply(out, ProviderServer.this::schemaOnce);
    }
  }

  private GetProviderSchemaResponse schemaValue;

  private synchronized GetProviderSchemaResponse schemaOnce() {
    if (schemaValue == null) schemaValue = provider.schema();
    return schemaValue;
  }

  private final class Lifecycle extends LifecycleServiceGrpc.LifecycleServiceImplBase {
    /** The provider's configure(); success marks the provider configured (a failure leaves it as it was). */
    @Override
    public void configure(ConfigureRequest request, StreamObserver<ConfigureResponse> out) {
      Rpc.reply(
          out,
          () -> {
            ConfigureResponse r = provider.configure(request);
            configured = true;
            return r == null ? ConfigureResponse.getDefaultInstance() : r;
          });
    }

    /**
     * Cancels in-flight calls and answers; in exec mode the stop (and exit)
     * begins once the answer is sent. In sidecar mode the provider keeps
     * serving the next host.
     */
    @Override
    public void shutdown(ShutdownRequest request, StreamObserver<ShutdownResponse> out) {
      long grace = DEFAULT_STOP_GRACE_MS;
      if (request.hasGracePeriod()) {
        long ms = request.getGracePeriod().getSeconds() * 1000 + request.getGracePeriod().getNanos() / 1_000_000;
        grace = Math.min(MAX_SHUTDOWN_GRACE_MS, Math.max(0, ms));
      }
      log.info("shutdown requested", "graceMs", grace, "inFlight", inFlight.size());
      cancelInFlight("provider is shutting down");
      out.onNext(ShutdownResponse.getDefaultInstance());
      out.onCompleted();
      if (mode.exec()) {
        long g = grace;
        Thread t = new Thread(() -> stop("shutdown requested", g), "ccm-stop");
        t.setDaemon(true);
        t.start();
      }
    }
  }

}
