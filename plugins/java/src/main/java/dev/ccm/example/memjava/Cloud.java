package dev.ccm.example.memjava;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParseException;
import com.google.gson.JsonParser;
import dev.ccm.provider.sdk.Errors;
import dev.ccm.provider.v1.NodeAddress;
import dev.ccm.provider.v1.NodeAddressType;
import dev.ccm.provider.v1.NodeRef;
import dev.ccm.provider.v1.ServicePort;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The in-memory cloud: instances and load balancers behind one lock (the
 * object itself). Instances come from the cloud config (Configure) or the
 * test hooks.
 */
final class Cloud {
  static final String PROVIDER_NAME = "memjava";
  /** 198.18.0.0/24 (of the benchmarking range 198.18.0.0/15): this cloud carries no traffic. */
  static final String LB_POOL = "198.18.0.";

  static final class Instance {
    final String id;
    final String name;
    String type = "mem.small";
    String zone;
    String region;
    List<NodeAddress> addresses = new ArrayList<>();
    Map<String, String> labels = new HashMap<>();
    boolean shutdown;

    Instance(String id, String name, String zone, String region) {
      this.id = id;
      this.name = name;
      this.zone = zone;
      this.region = region;
    }

    String providerId() {
      return PROVIDER_NAME + "://" + id;
    }
  }

  static final class LoadBalancer {
    final String name;
    final String ip;
    List<ServicePort> ports = List.of();
    List<String> nodes = List.of();
    /** Pod backends (null: node ports). */
    List<dev.ccm.provider.sdk.PodBackends.Target> podTargets;
    String clusterUid = "";

    LoadBalancer(String name, String ip) {
      this.name = name;
      this.ip = ip;
    }
  }

  /** A load balancer's key: (cluster name, Service uid). */
  record LbKey(String cluster, String uid) {}

  String zone = "mem-a";
  String region = "mem";
  int nextId;
  final Map<String, Instance> instances = new LinkedHashMap<>();
  final Map<LbKey, LoadBalancer> lbs = new LinkedHashMap<>();
  /** The retry delay in ms while the test hook throttles the cloud API, else -1. */
  volatile long throttleMs = -1;

  /** Applies a JSON cloud config ({"zone","region","instances":[{"name","zone","type","addresses":[{"type","address"}]}]}); instances are created or updated by name. */
  synchronized List<String> configure(byte[] raw) {
    JsonObject cfg;
    try {
      String text = new String(raw, StandardCharsets.UTF_8).strip();
      JsonElement e = text.isEmpty() ? new JsonObject() : JsonParser.parseString(text);
      if (!e.isJsonObject()) throw new JsonParseException("not an object");
      cfg = e.getAsJsonObject();
    } catch (JsonParseException | IllegalStateException e) {
      throw Errors.invalidArgument("cloud config is not a JSON object: " + e.getMessage());
    }
    if (cfg.has("zone")) zone = cfg.get("zone").getAsString();
    if (cfg.has("region")) region = cfg.get("region").getAsString();
    JsonArray list = cfg.has("instances") ? cfg.getAsJsonArray("instances") : new JsonArray();
    for (JsonElement el : list) {
      JsonObject ic = el.getAsJsonObject();
      String name = ic.has("name") ? ic.get("name").getAsString() : "";
      if (name.isEmpty()) throw Errors.invalidArgument("cloud config: an instance has no name");
      Instance inst = upsertInstance(name, "", ic.has("zone") ? ic.get("zone").getAsString() : "");
      if (ic.has("type")) inst.type = ic.get("type").getAsString();
      if (ic.has("addresses")) {
        List<NodeAddress> addrs = new ArrayList<>();
        for (JsonElement a : ic.getAsJsonArray("addresses")) {
          JsonObject ao = a.getAsJsonObject();
          NodeAddressType t =
              switch (ao.get("type").getAsString()) {
                case "InternalIP" -> NodeAddressType.NODE_ADDRESS_TYPE_INTERNAL_IP;
                case "ExternalIP" -> NodeAddressType.NODE_ADDRESS_TYPE_EXTERNAL_IP;
                case "InternalDNS" -> NodeAddressType.NODE_ADDRESS_TYPE_INTERNAL_DNS;
                case "ExternalDNS" -> NodeAddressType.NODE_ADDRESS_TYPE_EXTERNAL_DNS;
                case "Hostname" -> NodeAddressType.NODE_ADDRESS_TYPE_HOSTNAME;
                default -> throw Errors.invalidArgument("cloud config: instance " + name + ": unknown address type " + ao.get("type"));
              };
          addrs.add(NodeAddress.newBuilder().setType(t).setAddress(ao.get("address").getAsString()).build());
        }
        addrs.add(hostname(name));
        inst.addresses = addrs;
      }
    }
    return List.of();
  }

  private static NodeAddress hostname(String name) {
    return NodeAddress.newBuilder().setType(NodeAddressType.NODE_ADDRESS_TYPE_HOSTNAME).setAddress(name).build();
  }

  /** The instance named `name`, created (running) if absent. Caller holds the lock. */
  Instance upsertInstance(String name, String internalIp, String instZone) {
    Instance inst = instances.get(name);
    if (inst != null) return inst;
    int n = ++nextId;
    inst = new Instance(String.format("i-%08x", n), name, instZone.isEmpty() ? zone : instZone, region);
    String ip = internalIp.isEmpty() ? String.format("10.%d.%d.%d", (n >> 16) & 255, (n >> 8) & 255, n & 255) : internalIp;
    inst.addresses = new ArrayList<>(List.of(NodeAddress.newBuilder().setType(NodeAddressType.NODE_ADDRESS_TYPE_INTERNAL_IP).setAddress(ip).build(), hostname(name)));
    instances.put(name, inst);
    return inst;
  }

  /**
   * By providerID when the node has one, else by name; null when absent.
   * Another provider's providerID is not ours to judge: "not found" would tell
   * the host the instance is gone (docs/protocol.md), so it is INVALID_ARGUMENT.
   * Caller holds the lock.
   */
  Instance find(NodeRef node) {
    String pid = node.getProviderId();
    if (!pid.isEmpty()) {
      if (!pid.startsWith(PROVIDER_NAME + "://")) throw Errors.invalidArgument("providerID " + pid + " is not a " + PROVIDER_NAME + ":// providerID");
      return instances.values().stream().filter(i -> i.providerId().equals(pid)).findFirst().orElse(null);
    }
    return instances.get(node.getName());
  }

  Instance findOrThrow(NodeRef node) {
    Instance i = find(node);
    if (i == null) {
      throw Errors.instanceNotFound("no instance " + (node.getProviderId().isEmpty() ? "named " + node.getName() : "with providerID " + node.getProviderId()));
    }
    return i;
  }

  /** A free pool address. Caller holds the lock. */
  String allocIp() {
    for (int host = 1; host < 255; host++) {
      String ip = LB_POOL + host;
      if (lbs.values().stream().noneMatch(lb -> lb.ip.equals(ip))) return ip;
    }
    throw Errors.quotaExceeded("load balancer pool " + LB_POOL + "0/24 is exhausted");
  }
}
