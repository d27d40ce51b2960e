package dev.ccm.provider.sdk;

import dev.ccm.provider.v1.Capability;
import dev.ccm.provider.v1.ClustersServiceGrpc;
import dev.ccm.provider.v1.GetPluginCapabilitiesResponse;
import dev.ccm.provider.v1.InstancesServiceGrpc;
import dev.ccm.provider.v1.LoadBalancersServiceGrpc;
import dev.ccm.provider.v1.RoutesServiceGrpc;
import dev.ccm.provider.v1.Service;
import dev.ccm.provider.v1.VolumesServiceGrpc;
import dev.ccm.provider.v1.ZonesServiceGrpc;
import io.grpc.MethodDescriptor;
import io.grpc.ServerServiceDefinition;
import io.grpc.ServiceDescriptor;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Function;

/**
 * The cloud services a provider may serve, which RPCs its service objects
 * implement, and the GetPluginCapabilities answer derived from them (the rules
 * of the TypeScript, Go and Python SDKs).
 */
public final class Capabilities {
  private Capabilities() {}

  /** One optional cloud service: its descriptor, the generated class, how to bind it and its Service enum value. */
  public record Entry(
      String attribute, ServiceDescriptor descriptor, Class<?> grpcClass, Function<Object, ServerServiceDefinition> bind, Service service, Function<Provider, Object> get) {}

  /** Every optional cloud service, in Service enum order. */
  public static final List<Entry> SERVICES =
      List.of(
          new Entry("instances", InstancesServiceGrpc.getServiceDescriptor(), InstancesServiceGrpc.class, o -> InstancesServiceGrpc.bindService((InstancesServiceGrpc.AsyncService) o), Service.SERVICE_INSTANCES, Provider::instances),
          new Entry("zones", ZonesServiceGrpc.getServiceDescriptor(), ZonesServiceGrpc.class, o -> ZonesServiceGrpc.bindService((ZonesServiceGrpc.AsyncService) o), Service.SERVICE_ZONES, Provider::zones),
          new Entry("clusters", ClustersServiceGrpc.getServiceDescriptor(), ClustersServiceGrpc.class, o -> ClustersServiceGrpc.bindService((ClustersServiceGrpc.AsyncService) o), Service.SERVICE_CLUSTERS, Provider::clusters),
          new Entry("loadBalancers", LoadBalancersServiceGrpc.getServiceDescriptor(), LoadBalancersServiceGrpc.class, o -> LoadBalancersServiceGrpc.bindService((LoadBalancersServiceGrpc.AsyncService) o), Service.SERVICE_LOAD_BALANCERS, Provider::loadBalancers),
          new Entry("routes", RoutesServiceGrpc.getServiceDescriptor(), RoutesServiceGrpc.class, o -> RoutesServiceGrpc.bindService((RoutesServiceGrpc.AsyncService) o), Service.SERVICE_ROUTES, Provider::routes),
          new Entry("volumes", VolumesServiceGrpc.getServiceDescriptor(), VolumesServiceGrpc.class, o -> VolumesServiceGrpc.bindService((VolumesServiceGrpc.AsyncService) o), Service.SERVICE_VOLUMES, Provider::volumes));

  /** InstancesService RPCs of the legacy (Instances v1) surface. */
  public static final List<String> LEGACY_INSTANCES_METHODS =
      List.of("NodeAddresses", "NodeAddressesByProviderId", "InstanceId", "InstanceType", "InstanceTypeByProviderId", "AddSshKeyToAllInstances", "CurrentNodeName");

  /**
   * A call of a cloud service (not Identity, Lifecycle, health or the test
   * hooks): what answers NOT_CONFIGURED before the first Configure.
   */
  public static boolean isCloudMethod(String fullMethodName) {
    String service = MethodDescriptor.extractFullServiceName(fullMethodName);
    for (Entry e : SERVICES) if (e.descriptor().getName().equals(service)) return true;
    return false;
  }

  /** A provider's service object with the RPCs it implements. */
  public record Bound(Entry entry, Object object, Set<String> methods) {
    public boolean has(String rpc) {
      return methods.contains(rpc);
    }
  }

  /** {attribute: Bound} for every service object the provider returns (null: not served). */
  public static Map<String, Bound> bind(Provider p) {
    Map<String, Bound> out = new LinkedHashMap<>();
    for (Entry e : SERVICES) {
      Object o = e.get().apply(p);
      if (o != null) out.put(e.attribute(), new Bound(e, o, implemented(o, e)));
    }
    return out;
  }

  /**
   * The RPCs (proto names) whose Java methods `o` declares itself: a method
   * inherited from the generated AsyncService interface or XServiceImplBase
   * (which only answer UNIMPLEMENTED) does not count.
   */
  static Set<String> implemented(Object o, Entry e) {
    Set<String> out = new TreeSet<>();
    for (MethodDescriptor<?, ?> md : e.descriptor().getMethods()) {
      String rpc = md.getBareMethodName();
      String javaName = Character.toLowerCase(rpc.charAt(0)) + rpc.substring(1);
      for (Method m : o.getClass().getMethods()) {
        if (m.getName().equals(javaName) && m.getParameterCount() == 2 && m.getDeclaringClass().getEnclosingClass() != e.grpcClass()) {
          out.add(rpc);
        }
      }
    }
    return out;
  }

  static boolean overridesMetrics(Provider p) {
    return overrides(p, "metrics");
  }

  static boolean overridesSchema(Provider p) {
    return overrides(p, "schema");
  }

  private static boolean overrides(Provider p, String method) {
    try {
      return p.getClass().getMethod(method).getDeclaringClass() != Provider.class;
    } catch (NoSuchMethodException e) {
      return false;
    }
  }

  /**
   * The GetPluginCapabilitiesResponse for `p`:
   * services: one per service object;
   * INSTANCES_BATCH: instances has GetInstancesStatus and GetInstancesMetadata;
   * INSTANCES_LEGACY: instances has any legacy (Instances v1) method;
   * LOAD_BALANCER_BATCH_HOSTS / _BATCH_ENSURE / _LIST: load balancers have
   * UpdateLoadBalancerHosts / EnsureLoadBalancers / ListLoadBalancers;
   * LOAD_BALANCER_IP_MODE_PROXY: info says so and a load balancer service;
   * LOAD_BALANCER_POD_BACKENDS: info says so and a load balancer service;
   * ROUTES_RECONCILE: routes have ReconcileRoutes;
   * VOLUMES_LIST_PUBLISHED_NODES: volumes have ListVolumes;
   * VOLUMES_EXPAND_ONLINE: info says so and a volume service;
   * METRICS: the provider overrides metrics();
   * PROVIDER_SCHEMA: the provider overrides schema().
   * The load balancer class declaration is sent as is with a load balancer
   * service. Capabilities are sorted. Fixed for the life of the process.
   */
  public static GetPluginCapabilitiesResponse derive(Provider p, Map<String, Bound> bound) {
    Info info = p.info();
    Bound inst = bound.get("instances"), lb = bound.get("loadBalancers"), routes = bound.get("routes"), vols = bound.get("volumes");
    List<Capability> caps = new ArrayList<>();
    if (has(inst, "GetInstancesStatus") && has(inst, "GetInstancesMetadata")) caps.add(Capability.CAPABILITY_INSTANCES_BATCH);
    if (LEGACY_INSTANCES_METHODS.stream().anyMatch(m -> has(inst, m))) caps.add(Capability.CAPABILITY_INSTANCES_LEGACY);
    if (has(lb, "UpdateLoadBalancerHosts")) caps.add(Capability.CAPABILITY_LOAD_BALANCER_BATCH_HOSTS);
    if (has(lb, "EnsureLoadBalancers")) caps.add(Capability.CAPABILITY_LOAD_BALANCER_BATCH_ENSURE);
    if (has(lb, "ListLoadBalancers")) caps.add(Capability.CAPABILITY_LOAD_BALANCER_LIST);
    if (lb != null && info.loadBalancerIpModeProxy()) caps.add(Capability.CAPABILITY_LOAD_BALANCER_IP_MODE_PROXY);
    if (lb != null && info.loadBalancerPodBackends()) caps.add(Capability.CAPABILITY_LOAD_BALANCER_POD_BACKENDS);
    if (has(routes, "ReconcileRoutes")) caps.add(Capability.CAPABILITY_ROUTES_RECONCILE);
    if (has(vols, "ListVolumes")) caps.add(Capability.CAPABILITY_VOLUMES_LIST_PUBLISHED_NODES);
    if (vols != null && info.volumesExpandOnline()) caps.add(Capability.CAPABILITY_VOLUMES_EXPAND_ONLINE);
    if (overridesMetrics(p)) caps.add(Capability.CAPABILITY_METRICS);
    if (overridesSchema(p)) caps.add(Capability.CAPABILITY_PROVIDER_SCHEMA);
    caps.sort((a, b) -> Integer.compare(a.getNumber(), b.getNumber()));
    GetPluginCapabilitiesResponse.Builder r =
        GetPluginCapabilitiesResponse.newBuilder()
            .addAllCapabilities(caps)
            .setProviderName(info.providerName())
            .setHasClusterId(info.hasClusterId())
            .addAllProviderIdPrefixes(info.providerIdPrefixes())
            .setNodeSelector(info.nodeSelector());
    for (Entry e : SERVICES) if (bound.containsKey(e.attribute())) r.addServices(e.service());
    if (lb != null) r.addAllLoadBalancerClasses(info.loadBalancerClasses()).setLoadBalancerClassesOnly(info.loadBalancerClassesOnly());
    return r.build();
  }

  private static boolean has(Bound b, String rpc) {
    return b != null && b.has(rpc);
  }
}
