package dev.ccm.provider.sdk;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The start-up decision of docs/protocol.md, case by case. */
class ProtocolTest {
  private static final String COOKIE = Protocol.MAGIC_COOKIE_VALUE;

  @Test
  void execModeNegotiatesTheHighestCommonVersionAndEchoesTheNonce() throws Exception {
    Protocol.Mode m =
        Protocol.resolveMode(
            Map.of(Protocol.MAGIC_COOKIE_KEY, COOKIE, Protocol.ENV_PROTOCOL_VERSIONS, "1,2", Protocol.ENV_ENDPOINT, "unix:///run/p.sock", Protocol.ENV_INSTANCE_ID, "n1"),
            List.of(),
            null);
    assertEquals(new Protocol.Mode(true, "/run/p.sock", 1, "n1"), m);
  }

  @Test
  void refusalsNameBothSidesVersions() {
    record Case(String offered, String message) {}
    for (Case c :
        List.of(
            new Case("2", "This provider speaks ccm protocol versions 1; the host offered 2: upgrade the plugin."),
            new Case("", "This provider speaks ccm protocol versions 1; the host offered none: the host set no valid CCM_PLUGIN_PROTOCOL_VERSIONS."),
            new Case("x,", "This provider speaks ccm protocol versions 1; the host offered none: the host set no valid CCM_PLUGIN_PROTOCOL_VERSIONS."),
            new Case("0", "This provider speaks ccm protocol versions 1; the host offered 0: upgrade the host."))) {
      Protocol.ModeException e =
          assertThrows(
              Protocol.ModeException.class,
              () -> Protocol.resolveMode(Map.of(Protocol.MAGIC_COOKIE_KEY, COOKIE, Protocol.ENV_PROTOCOL_VERSIONS, c.offered(), Protocol.ENV_ENDPOINT, "unix:///p.sock"), List.of(), null));
      assertEquals(c.message(), e.getMessage(), c.offered());
    }
  }

  @Test
  void byHandOrWithAWrongCookieItRefuses() {
    assertThrows(Protocol.ModeException.class, () -> Protocol.resolveMode(Map.of(), List.of(), null));
    // A wrong cookie is not a sidecar, even with an endpoint.
    assertThrows(Protocol.ModeException.class, () -> Protocol.resolveMode(Map.of(Protocol.MAGIC_COOKIE_KEY, "x"), List.of("--endpoint=unix:///p.sock"), null));
  }

  @Test
  void sidecarModeTakesItsEndpointAndMakesAnInstanceIdPerProcess() throws Exception {
    Protocol.Mode a = Protocol.resolveMode(Map.of(), List.of("--endpoint", "unix:///run/a.sock"), null);
    Protocol.Mode b = Protocol.resolveMode(Map.of(Protocol.ENV_SIDECAR_ENDPOINT, "unix:/run/b.sock"), List.of(), null);
    assertFalse(a.exec());
    assertEquals("/run/a.sock", a.socketPath());
    assertEquals("/run/b.sock", b.socketPath());
    assertFalse(a.instanceId().isEmpty());
    assertTrue(!a.instanceId().equals(b.instanceId()));
    assertThrows(Protocol.ModeException.class, () -> Protocol.resolveMode(Map.of(), List.of("--endpoint=unix://relative.sock"), null));
  }

  @Test
  void handshakeLineAndEndpoints() {
    assertEquals("CCMPLUGIN|1|1|unix|/tmp/x/provider.sock|grpc", Protocol.formatHandshake(1, "/tmp/x/provider.sock"));
    assertEquals("/a/b.sock", Protocol.unixSocketPath("unix:///a/b.sock"));
    assertNull(Protocol.unixSocketPath("unix://a/b.sock"));
    assertNull(Protocol.unixSocketPath("tcp://127.0.0.1:1"));
  }
}
