package dev.ccm.provider.sdk;

import java.util.List;
import java.util.Map;

/**
 * What a provider declares about itself (GetPluginInfo, GetPluginCapabilities).
 *
 * @param name DNS-style implementation name, e.g. "example.com"
 * @param providerName used in providerIDs ("&lt;provider_name&gt;://&lt;id&gt;"): a lowercase DNS label
 * @param vendorVersion the provider's own version
 * @param hasClusterId cloud objects are tagged with the cluster name (upstream HasClusterID)
 * @param manifest free-form build facts
 * @param loadBalancerIpModeProxy CAPABILITY_LOAD_BALANCER_IP_MODE_PROXY (only with a load balancer service)
 * @param volumesExpandOnline CAPABILITY_VOLUMES_EXPAND_ONLINE (only with a volume service)
 * @param providerIdPrefixes node ownership (KEP-5778): the providerID prefixes of the Nodes this
 *     provider owns, each ending in "://" (empty: "&lt;provider_name&gt;://")
 * @param nodeSelector label selector (kubectl -l syntax) claiming Nodes without a providerID yet
 * @param loadBalancerClasses Service spec.loadBalancerClass values the load balancers serve
 * @param loadBalancerClassesOnly serve only those classes, no Service without a class
 * @param loadBalancerPodBackends CAPABILITY_LOAD_BALANCER_POD_BACKENDS (protocol 1.1; only with a load
 *     balancer service): load balancers can send traffic straight to pod addresses, so the host sends
 *     ServiceRef.endpoints and pod_backends for the Services that ask for it ({@link PodBackends})
 */
public record Info(
    String name,
    String providerName,
    String vendorVersion,
    boolean hasClusterId,
    Map<String, String> manifest,
    boolean loadBalancerIpModeProxy,
    boolean volumesExpandOnline,
    List<String> providerIdPrefixes,
    String nodeSelector,
    List<String> loadBalancerClasses,
    boolean loadBalancerClassesOnly,
    boolean loadBalancerPodBackends) {

  /** Name and providerName; everything else empty or false. */
  public static Info of(String name, String providerName) {
    return new Info(name, providerName, "", false, Map.of(), false, false, List.of(), "", List.of(), false, false);
  }

  public Info withVendorVersion(String v) {
    return new Info(name, providerName, v, hasClusterId, manifest, loadBalancerIpModeProxy, volumesExpandOnline, providerIdPrefixes, nodeSelector, loadBalancerClasses, loadBalancerClassesOnly, loadBalancerPodBackends);
  }

  public Info withClusterId(boolean v) {
    return new Info(name, providerName, vendorVersion, v, manifest, loadBalancerIpModeProxy, volumesExpandOnline, providerIdPrefixes, nodeSelector, loadBalancerClasses, loadBalancerClassesOnly, loadBalancerPodBackends);
  }

  public Info withManifest(Map<String, String> v) {
    return new Info(name, providerName, vendorVersion, hasClusterId, Map.copyOf(v), loadBalancerIpModeProxy, volumesExpandOnline, providerIdPrefixes, nodeSelector, loadBalancerClasses, loadBalancerClassesOnly, loadBalancerPodBackends);
  }

  public Info withLoadBalancerIpModeProxy(boolean v) {
    return new Info(name, providerName, vendorVersion, hasClusterId, manifest, v, volumesExpandOnline, providerIdPrefixes, nodeSelector, loadBalancerClasses, loadBalancerClassesOnly, loadBalancerPodBackends);
  }

  public Info withVolumesExpandOnline(boolean v) {
    return new Info(name, providerName, vendorVersion, hasClusterId, manifest, loadBalancerIpModeProxy, v, providerIdPrefixes, nodeSelector, loadBalancerClasses, loadBalancerClassesOnly, loadBalancerPodBackends);
  }

  public Info withNodeOwnership(List<String> prefixes, String selector) {
    return new Info(name, providerName, vendorVersion, hasClusterId, manifest, loadBalancerIpModeProxy, volumesExpandOnline, List.copyOf(prefixes), selector, loadBalancerClasses, loadBalancerClassesOnly, loadBalancerPodBackends);
  }

  public Info withLoadBalancerClasses(List<String> classes, boolean only) {
    return new Info(name, providerName, vendorVersion, hasClusterId, manifest, loadBalancerIpModeProxy, volumesExpandOnline, providerIdPrefixes, nodeSelector, List.copyOf(classes), only, loadBalancerPodBackends);
  }

  public Info withLoadBalancerPodBackends(boolean v) {
    return new Info(name, providerName, vendorVersion, hasClusterId, manifest, loadBalancerIpModeProxy, volumesExpandOnline, providerIdPrefixes, nodeSelector, loadBalancerClasses, loadBalancerClassesOnly, v);
  }
}
