package dev.ccm.provider.sdk;

import java.util.List;

/**
 * The launch gate: the start-up decision of docs/protocol.md ("Launch and
 * handshake") taken before anything else of the provider loads.
 *
 * <p>A refusal (started by hand, a wrong cookie, no common protocol version,
 * no endpoint) must be the provider's first act: one line on stderr, exit 1.
 * A JVM provider's main otherwise loads its own classes, gRPC, the protobuf
 * descriptors of every service and Netty before {@link ProviderServer#serve}
 * decides, about three quarters of the CPU time of a refusal, all of it
 * wasted on a start that ends in a refusal. This class uses java.* and
 * {@link Protocol} only, so calling it first in main decides before any of
 * that loads (LaunchTest checks which classes a refusal loads).
 */
public final class Launch {
  private Launch() {}

  /**
   * Call as the first statement of main: returns when the provider may run
   * (exec mode, sidecar mode, or the {@code probe} subcommand); otherwise
   * prints the refusal on stderr and halts with exit code 1.
   * {@link ProviderServer#serve} takes the same decision again.
   */
  public static void refuseUnlessLaunched(String[] args) {
    refuseUnlessLaunched(args, null);
  }

  /** As {@link #refuseUnlessLaunched(String[])}, for a provider that passes its sidecar endpoint in code ({@code Options.endpoint}). */
  public static void refuseUnlessLaunched(String[] args, String endpoint) {
    List<String> a = List.of(args);
    if (!a.isEmpty() && a.get(0).equals(Probe.COMMAND)) return; // a constant: Probe (gRPC's client) is not loaded
    try {
      Protocol.resolveMode(System.getenv(), a, endpoint);
    } catch (Protocol.ModeException e) {
      System.err.println(e.getMessage());
      System.err.flush();
      Runtime.getRuntime().halt(1);
    }
  }
}
