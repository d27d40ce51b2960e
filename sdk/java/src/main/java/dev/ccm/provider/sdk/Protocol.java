package dev.ccm.provider.sdk;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.stream.Collectors;

/**
 * Constants of the launch contract and the pure functions of the start-up
 * decision (docs/protocol.md, "Launch and handshake"). sdk/protocol.ts is the
 * source of these values; test/integration/providers/java-sdk.test.ts checks
 * that they are equal.
 */
public final class Protocol {
  private Protocol() {}

  public static final String MAGIC_COOKIE_KEY = "CCM_PLUGIN_MAGIC_COOKIE";
  /**
   * Not a security measure: it only stops a person from running a provider by
   * hand and wondering why it waits silently.
   */
  public static final String MAGIC_COOKIE_VALUE = "b7c6c4f1a3e04d0e9d1f2a7c5e8b6a90-ccm-provider";

  public static final String ENV_PROTOCOL_VERSIONS = "CCM_PLUGIN_PROTOCOL_VERSIONS";
  public static final String ENV_ENDPOINT = "CCM_PLUGIN_ENDPOINT";
  public static final String ENV_INSTANCE_ID = "CCM_PLUGIN_INSTANCE_ID";
  public static final String ENV_LOG_LEVEL = "CCM_PLUGIN_LOG_LEVEL";
  /** Sidecar mode; read only when the magic cookie is absent. Same as --endpoint. */
  public static final String ENV_SIDECAR_ENDPOINT = "CCM_PROVIDER_ENDPOINT";
  /** "1": serve ccm.provider.testing.v1.TestHooksService (the conformance kit sets it). */
  public static final String ENV_TEST_HOOKS = "CCM_PROVIDER_TEST_HOOKS";

  public static final String HANDSHAKE_PREFIX = "CCMPLUGIN";
  public static final int CORE_PROTOCOL_VERSION = 1;
  public static final List<Integer> SUPPORTED_PROTOCOL_VERSIONS = List.of(1);
  public static final int PROTOCOL_MINOR = 1;
  public static final String HEALTH_SERVICE_NAME = "ccm.provider.v1";
  public static final int MAX_MESSAGE_BYTES = 16 * 1024 * 1024;
  /** sun_path is 108 bytes with the NUL. */
  public static final int MAX_UNIX_SOCKET_PATH_BYTES = 107;
  /** The gRPC metadata key carrying the sending host replica's identity (informational). */
  public static final String CALLER_METADATA_KEY = "x-ccm-caller";

  public static final String NOT_BY_HAND_MESSAGE =
      "This binary is a ccm provider plugin; it is started by cloud-controller-manager, not by hand "
          + "(set --plugin-path on the host, or run it as a sidecar with --endpoint=unix:///path/provider.sock).";

  /** CCM_PLUGIN_PROTOCOL_VERSIONS ("1,2") as ints; invalid entries are dropped. */
  public static List<Integer> parseVersionList(String value) {
    List<Integer> out = new ArrayList<>();
    if (value == null) return out;
    for (String part : value.split(",")) {
      String s = part.strip();
      if (!s.isEmpty() && s.chars().allMatch(c -> c >= '0' && c <= '9') && s.length() < 10) out.add(Integer.parseInt(s));
    }
    return out;
  }

  /** The highest version both sides speak, or -1. */
  public static int negotiateVersion(List<Integer> host, List<Integer> plugin) {
    return plugin.stream().filter(host::contains).max(Integer::compare).orElse(-1);
  }

  /** The refusal naming both sides' versions (docs/protocol.md). */
  public static String versionMismatchMessage(List<Integer> host, List<Integer> plugin) {
    String hint;
    if (host.isEmpty()) hint = "the host set no valid " + ENV_PROTOCOL_VERSIONS;
    else if (host.stream().max(Integer::compare).get() > plugin.stream().max(Integer::compare).get()) hint = "upgrade the plugin";
    else hint = "upgrade the host";
    String offered = host.isEmpty() ? "none" : join(host);
    return "This provider speaks ccm protocol versions " + join(plugin) + "; the host offered " + offered + ": " + hint + ".";
  }

  private static String join(List<Integer> v) {
    return v.stream().map(String::valueOf).collect(Collectors.joining(","));
  }

  /** The one line an exec-mode provider prints on stdout (without newline). */
  public static String formatHandshake(int protocol, String socketPath) {
    return String.join("|", HANDSHAKE_PREFIX, String.valueOf(CORE_PROTOCOL_VERSION), String.valueOf(protocol), "unix", socketPath, "grpc");
  }

  /**
   * unix:///abs/path.sock or unix:/abs/path → /abs/path.sock; null if the
   * endpoint names no absolute unix path (unix://relative is rejected rather
   * than read as //relative).
   */
  public static String unixSocketPath(String endpoint) {
    if (endpoint == null) return null;
    for (String prefix : new String[] {"unix://", "unix:"}) {
      if (endpoint.startsWith(prefix)) {
        String p = endpoint.substring(prefix.length());
        return p.startsWith("/") && !p.startsWith("//") ? p : null;
      }
    }
    return null;
  }

  /** The value of --endpoint=X or --endpoint X, or "". */
  public static String endpointFromArgs(List<String> args) {
    for (int i = 0; i < args.size(); i++) {
      String a = args.get(i);
      if (a.startsWith("--endpoint=")) return a.substring("--endpoint=".length());
      if (a.equals("--endpoint") && i + 1 < args.size()) return args.get(i + 1);
    }
    return "";
  }

  /** A refusal to run (started by hand, no common protocol, a bad endpoint): main prints it on stderr and exits 1. */
  public static final class ModeException extends Exception {
    public ModeException(String message) {
      super(message);
    }
  }

  /**
   * How this process runs.
   *
   * @param exec true: launched by the host (the magic cookie matches); false: sidecar
   * @param socketPath the unix socket path to listen on
   * @param protocol negotiated (exec) or the newest supported (sidecar)
   * @param instanceId the launch nonce (exec) or a random id per process (sidecar)
   */
  public record Mode(boolean exec, String socketPath, int protocol, String instanceId) {}

  /**
   * Exec mode (the cookie matches), sidecar mode (no cookie; endpoint, else
   * CCM_PROVIDER_ENDPOINT, else --endpoint in args) or a ModeException.
   */
  public static Mode resolveMode(Map<String, String> env, List<String> args, String endpoint) throws ModeException {
    String cookie = env.get(MAGIC_COOKIE_KEY);
    if (MAGIC_COOKIE_VALUE.equals(cookie)) {
      List<Integer> host = parseVersionList(env.getOrDefault(ENV_PROTOCOL_VERSIONS, ""));
      int protocol = negotiateVersion(host, SUPPORTED_PROTOCOL_VERSIONS);
      if (protocol < 0) throw new ModeException(versionMismatchMessage(host, SUPPORTED_PROTOCOL_VERSIONS));
      String raw = env.getOrDefault(ENV_ENDPOINT, "");
      String path = unixSocketPath(raw);
      if (path == null) throw new ModeException(ENV_ENDPOINT + "='" + raw + "' is not a unix:///absolute/path endpoint; the host must set it.");
      return new Mode(true, path, protocol, env.getOrDefault(ENV_INSTANCE_ID, ""));
    }
    String sidecar = endpoint != null && !endpoint.isEmpty() ? endpoint : env.getOrDefault(ENV_SIDECAR_ENDPOINT, "");
    if (sidecar.isEmpty()) sidecar = endpointFromArgs(args);
    if (cookie == null && !sidecar.isEmpty()) {
      String path = unixSocketPath(sidecar);
      if (path == null) throw new ModeException("sidecar endpoint '" + sidecar + "' is not a unix:///absolute/path endpoint.");
      // No launch nonce in sidecar mode: a per-process id lets the host notice a restart.
      return new Mode(false, path, SUPPORTED_PROTOCOL_VERSIONS.stream().max(Integer::compare).get(), UUID.randomUUID().toString());
    }
    throw new ModeException(NOT_BY_HAND_MESSAGE);
  }
}
