package dev.ccm.provider.sdk;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ccm.provider.v1.EndpointBackend;
import dev.ccm.provider.v1.EndpointPort;
import dev.ccm.provider.v1.Protocol;
import dev.ccm.provider.v1.ServiceRef;
import java.util.List;
import org.junit.jupiter.api.Test;

/** PodBackends.targets: one target per endpoint mapping the Service port; PreferClose keeps the zone's when there is any. */
class PodBackendsTest {
  static EndpointBackend ep(String address, String zone) {
    return EndpointBackend.newBuilder()
        .addAddresses(address)
        .setZone(zone)
        .setReady(true)
        .setNodeName("node-" + zone)
        .addPorts(EndpointPort.newBuilder().setName("web").setServicePort(80).setProtocol(Protocol.PROTOCOL_TCP).setPort(8080))
        .build();
  }

  static ServiceRef svc(String distribution, EndpointBackend... eps) {
    ServiceRef.Builder b = ServiceRef.newBuilder().addAllEndpoints(List.of(eps));
    b.getPodBackendsBuilder().setTrafficDistribution(distribution);
    return b.build();
  }

  static List<String> addresses(List<PodBackends.Target> ts) {
    return ts.stream().map(PodBackends.Target::address).toList();
  }

  record Row(String what, ServiceRef svc, String zone, List<String> want) {}

  @Test
  void targetsOfOnePort() {
    EndpointBackend noAddress = EndpointBackend.newBuilder().addPorts(ep("x", "a").getPorts(0)).setZone("a").build();
    EndpointBackend otherPort = EndpointBackend.newBuilder().addAddresses("10.0.0.9").setZone("a").addPorts(EndpointPort.newBuilder().setServicePort(443).setProtocol(Protocol.PROTOCOL_TCP).setPort(8443)).build();
    for (Row r :
        List.of(
            new Row("all without PreferClose", svc("", ep("10.0.0.1", "a"), ep("10.0.0.2", "b")), "a", List.of("10.0.0.1", "10.0.0.2")),
            new Row("the zone's under PreferClose", svc("PreferClose", ep("10.0.0.1", "a"), ep("10.0.0.2", "b")), "a", List.of("10.0.0.1")),
            new Row("all when none is close", svc("PreferClose", ep("10.0.0.2", "b")), "a", List.of("10.0.0.2")),
            new Row("all when the zone is unknown", svc("PreferClose", ep("10.0.0.1", "a"), ep("10.0.0.2", "b")), "", List.of("10.0.0.1", "10.0.0.2")),
            new Row("no address, or another port: skipped", svc("", noAddress, otherPort, ep("10.0.0.3", "c")), "", List.of("10.0.0.3")),
            new Row("no endpoint now", svc("PreferClose"), "a", List.of()))) {
      List<PodBackends.Target> got = PodBackends.targets(r.svc(), Protocol.PROTOCOL_TCP, 80, r.zone());
      assertEquals(r.want(), addresses(got), r.what());
      for (PodBackends.Target t : got) assertEquals(8080, t.port(), r.what());
    }
    assertEquals(List.of(), PodBackends.targets(svc("", ep("10.0.0.1", "a")), Protocol.PROTOCOL_UDP, 80, ""), "another protocol");
    assertEquals(new PodBackends.Target("10.0.0.1", 8080, "a", "node-a"), PodBackends.targets(svc("", ep("10.0.0.1", "a")), Protocol.PROTOCOL_TCP, 80, "").get(0));
  }

  @Test
  void hasPodBackendsOnlyWhenTheHostSentThem() {
    assertFalse(PodBackends.has(ServiceRef.getDefaultInstance()), "node ports");
    assertTrue(PodBackends.has(svc("")), "pod backends with no endpoint now");
  }
}
