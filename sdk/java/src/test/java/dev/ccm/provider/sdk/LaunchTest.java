package dev.ccm.provider.sdk;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ccm.provider.v1.LifecycleServiceGrpc;
import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * A refusal is the provider's first act (docs/protocol.md, "Launch and
 * handshake"): started by hand or with a wrong cookie, a child JVM running a
 * provider's main prints one line on stderr and exits 1, having loaded none
 * of the classes only serving needs (the protobuf descriptors, the gRPC stubs,
 * Netty's epoll transport, OpenTelemetry). Those are most of a refusal's CPU
 * time, which a loaded 2-core machine stretches.
 */
class LaunchTest {
  /** Serving's classes: none may load before a refusal. */
  private static final List<String> SERVING = List.of("com.google.protobuf.", "dev.ccm.provider.v1.", "io.grpc.netty.shaded.io.netty.channel.epoll.", "io.opentelemetry.");
  /** Launch.refuseUnlessLaunched loads no library class at all. */
  private static final List<String> LIBRARIES = List.of("com.google.", "dev.ccm.provider.v1.", "io.grpc.", "io.opentelemetry.", "io.perfmark.");

  /** A provider's main through ProviderServer.main only (no Launch call): the SDK's own decision comes first too. */
  static final class ServeMain {
    public static void main(String[] args) {
      ProviderServer.main(() -> Info.of("launch-test.example", "launchtest"), args, new ProviderServer.Options());
    }
  }

  /** A provider's main as plugins/java's: Launch first. */
  static final class GateMain {
    public static void main(String[] args) {
      Launch.refuseUnlessLaunched(args);
      System.out.println("would serve");
      Runtime.getRuntime().halt(0);
    }
  }

  record Run(int code, List<String> stdout, List<String> stderr, List<String> loaded) {}

  private static Run run(Class<?> main, Map<String, String> env) throws Exception {
    Path dir = Files.createTempDirectory("ccm-launch-test-");
    Path classes = dir.resolve("classes.log");
    String cp = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
    ProcessBuilder pb =
        new ProcessBuilder(
            Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-Xlog:class+load=info:file=" + classes, "-cp", cp, main.getName());
    pb.environment().keySet().removeIf(k -> k.startsWith("CCM_"));
    pb.environment().putAll(env);
    pb.redirectOutput(dir.resolve("stdout").toFile()).redirectError(dir.resolve("stderr").toFile()).redirectInput(ProcessBuilder.Redirect.PIPE);
    Process p = pb.start();
    assertTrue(p.waitFor(60, java.util.concurrent.TimeUnit.SECONDS), main.getSimpleName() + " did not exit");
    List<String> loaded = new ArrayList<>();
    for (String line : Files.readAllLines(classes, StandardCharsets.UTF_8)) {
      // "[0.123s][info][class,load] name source: ..."
      String[] parts = line.split(" ");
      if (parts.length > 1) loaded.add(parts[1]);
    }
    Run r = new Run(p.exitValue(), Files.readAllLines(dir.resolve("stdout")), Files.readAllLines(dir.resolve("stderr")), loaded);
    for (File f : dir.toFile().listFiles()) f.delete();
    Files.delete(dir);
    return r;
  }

  private static List<String> loadedOf(Run r, List<String> prefixes) {
    return r.loaded().stream().filter(c -> prefixes.stream().anyMatch(c::startsWith)).toList();
  }

  record Case(String what, Map<String, String> env, String message) {}

  private static final List<Case> REFUSALS =
      List.of(
          new Case("no cookie", Map.of(Protocol.ENV_ENDPOINT, "unix:///tmp/x.sock"), Protocol.NOT_BY_HAND_MESSAGE),
          new Case("a wrong cookie", Map.of(Protocol.MAGIC_COOKIE_KEY, "not-the-cookie", Protocol.ENV_PROTOCOL_VERSIONS, "1", Protocol.ENV_ENDPOINT, "unix:///tmp/x.sock"), Protocol.NOT_BY_HAND_MESSAGE),
          new Case(
              "no common protocol version",
              Map.of(Protocol.MAGIC_COOKIE_KEY, Protocol.MAGIC_COOKIE_VALUE, Protocol.ENV_PROTOCOL_VERSIONS, "999", Protocol.ENV_ENDPOINT, "unix:///tmp/x.sock"),
              "This provider speaks ccm protocol versions 1; the host offered 999: upgrade the plugin."));

  @Test
  void serveRefusesBeforeServingClassesLoad() throws Exception {
    for (Case c : REFUSALS) {
      Run r = run(ServeMain.class, c.env());
      assertEquals(new Run(1, List.of(), List.of(c.message()), List.of()), new Run(r.code(), r.stdout(), r.stderr(), loadedOf(r, SERVING)), c.what());
    }
  }

  @Test
  void launchRefusesBeforeAnyLibraryClassLoads() throws Exception {
    for (Case c : REFUSALS) {
      Run r = run(GateMain.class, c.env());
      assertEquals(new Run(1, List.of(), List.of(c.message()), List.of()), new Run(r.code(), r.stdout(), r.stderr(), loadedOf(r, LIBRARIES)), c.what());
    }
    // What may run passes the gate: exec mode, sidecar mode.
    Run exec = run(GateMain.class, Map.of(Protocol.MAGIC_COOKIE_KEY, Protocol.MAGIC_COOKIE_VALUE, Protocol.ENV_PROTOCOL_VERSIONS, "1", Protocol.ENV_ENDPOINT, "unix:///tmp/x.sock"));
    assertEquals(List.of("would serve"), exec.stdout(), String.join("\n", exec.stderr()));
    Run sidecar = run(GateMain.class, Map.of(Protocol.ENV_SIDECAR_ENDPOINT, "unix:///tmp/x.sock"));
    assertEquals(List.of("would serve"), sidecar.stdout(), String.join("\n", sidecar.stderr()));
  }

  @Test
  void theShutdownMethodNameIsTheStubs() {
    assertEquals(LifecycleServiceGrpc.getShutdownMethod().getFullMethodName(), ProviderServer.SHUTDOWN_METHOD);
  }
}
