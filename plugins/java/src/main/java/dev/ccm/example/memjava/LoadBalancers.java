package dev.ccm.example.memjava;

import dev.ccm.provider.sdk.Errors;
import dev.ccm.provider.sdk.PodBackends;
import dev.ccm.provider.sdk.Rpc;
import dev.ccm.provider.v1.EnsureLoadBalancerDeletedRequest;
import dev.ccm.provider.v1.EnsureLoadBalancerDeletedResponse;
import dev.ccm.provider.v1.EnsureLoadBalancerRequest;
import dev.ccm.provider.v1.EnsureLoadBalancerResponse;
import dev.ccm.provider.v1.GetLoadBalancerNameRequest;
import dev.ccm.provider.v1.GetLoadBalancerNameResponse;
import dev.ccm.provider.v1.GetLoadBalancerRequest;
import dev.ccm.provider.v1.GetLoadBalancerResponse;
import dev.ccm.provider.v1.IpMode;
import dev.ccm.provider.v1.LoadBalancerIngress;
import dev.ccm.provider.v1.LoadBalancerStatus;
import dev.ccm.provider.v1.LoadBalancersServiceGrpc;
import dev.ccm.provider.v1.NodeRef;
import dev.ccm.provider.v1.RequestMeta;
import dev.ccm.provider.v1.ServicePort;
import dev.ccm.provider.v1.ServiceRef;
import dev.ccm.provider.v1.UpdateLoadBalancerRequest;
import dev.ccm.provider.v1.UpdateLoadBalancerResponse;
import io.grpc.stub.StreamObserver;
import java.util.ArrayList;
import java.util.List;

/**
 * LoadBalancersService: the five single-Service RPCs, keyed by (cluster
 * name, Service uid), each idempotent. No batch and no ListLoadBalancers, so
 * the host uses single calls and runs no orphan sweep for this provider.
 * Pod-IP backends (Info.withLoadBalancerPodBackends): for a Service the host
 * sends endpoints for, each port's backends are those pods (PodBackends.targets,
 * in the load balancer's zone under PreferClose), else the nodes' ports.
 */
final class LoadBalancers extends LoadBalancersServiceGrpc.LoadBalancersServiceImplBase {
  private final Cloud cloud;

  LoadBalancers(Cloud cloud) {
    this.cloud = cloud;
  }

  static String cluster(RequestMeta meta) {
    return meta.getClusterName().isEmpty() ? "kubernetes" : meta.getClusterName();
  }

  /** Upstream's DefaultLoadBalancerName: "a" + uid without dashes, at most 32 characters. */
  static String lbName(String uid) {
    String n = "a" + uid.replace("-", "");
    return n.length() > 32 ? n.substring(0, 32) : n;
  }

  static void check(ServiceRef svc, boolean needPorts) {
    if (svc.getUid().isEmpty()) throw Errors.invalidArgument("service.uid is required");
    if (needPorts && svc.getPortsCount() == 0) throw Errors.invalidArgument("service " + svc.getNamespace() + "/" + svc.getName() + " has no ports");
    for (ServicePort p : svc.getPortsList()) {
      if (p.getProtocol() == dev.ccm.provider.v1.Protocol.PROTOCOL_UNSPECIFIED) throw Errors.invalidArgument("port " + p.getPort() + " has no protocol");
      if (p.getPort() < 1 || p.getPort() > 65535) throw Errors.invalidArgument("port " + p.getPort() + " is outside 1..65535");
    }
  }

  static List<String> nodeNames(List<NodeRef> nodes) {
    if (nodes.stream().anyMatch(n -> n.getName().isEmpty())) throw Errors.invalidArgument("a backend node has no name");
    return nodes.stream().map(NodeRef::getName).toList();
  }

  static LoadBalancerStatus status(Cloud.LoadBalancer lb) {
    return LoadBalancerStatus.newBuilder().addIngress(LoadBalancerIngress.newBuilder().setIp(lb.ip).setIpMode(IpMode.IP_MODE_VIP)).build();
  }

  /** The pod backends of every port, or null when the host sent none (the load balancer uses node ports). */
  static List<PodBackends.Target> podTargets(ServiceRef svc, String zone) {
    if (!PodBackends.has(svc)) return null;
    List<PodBackends.Target> out = new ArrayList<>();
    for (ServicePort p : svc.getPortsList()) out.addAll(PodBackends.targets(svc, p.getProtocol(), p.getPort(), zone));
    return List.copyOf(out);
  }

  @Override
  public void getLoadBalancer(GetLoadBalancerRequest request, StreamObserver<GetLoadBalancerResponse> out) {
    Rpc.reply(out, () -> {
      check(request.getService(), false);
      synchronized (cloud) {
        Cloud.LoadBalancer lb = cloud.lbs.get(new Cloud.LbKey(cluster(request.getMeta()), request.getService().getUid()));
        if (lb == null) return GetLoadBalancerResponse.newBuilder().setExists(false).build();
        return GetLoadBalancerResponse.newBuilder().setExists(true).setStatus(status(lb)).build();
      }
    });
  }

  @Override
  public void getLoadBalancerName(GetLoadBalancerNameRequest request, StreamObserver<GetLoadBalancerNameResponse> out) {
    Rpc.reply(out, () -> {
      check(request.getService(), false);
      return GetLoadBalancerNameResponse.newBuilder().setName(lbName(request.getService().getUid())).build();
    });
  }

  @Override
  public void ensureLoadBalancer(EnsureLoadBalancerRequest request, StreamObserver<EnsureLoadBalancerResponse> out) {
    Rpc.reply(out, () -> {
      check(request.getService(), true);
      List<String> nodes = nodeNames(request.getNodesList());
      synchronized (cloud) {
        Cloud.LbKey key = new Cloud.LbKey(cluster(request.getMeta()), request.getService().getUid());
        Cloud.LoadBalancer lb = cloud.lbs.get(key);
        if (lb == null) {
          lb = new Cloud.LoadBalancer(lbName(key.uid()), cloud.allocIp());
          cloud.lbs.put(key, lb);
        }
        lb.ports = List.copyOf(request.getService().getPortsList());
        lb.nodes = nodes;
        lb.podTargets = podTargets(request.getService(), cloud.zone);
        // Tagged with the cluster UID, as the protocol asks of every load balancer ensured; kept when a host sends none.
        if (!request.getMeta().getClusterUid().isEmpty()) lb.clusterUid = request.getMeta().getClusterUid();
        return EnsureLoadBalancerResponse.newBuilder().setStatus(status(lb)).build();
      }
    });
  }

  @Override
  public void updateLoadBalancer(UpdateLoadBalancerRequest request, StreamObserver<UpdateLoadBalancerResponse> out) {
    Rpc.reply(out, () -> {
      check(request.getService(), false);
      List<String> nodes = nodeNames(request.getNodesList());
      synchronized (cloud) {
        ServiceRef svc = request.getService();
        Cloud.LoadBalancer lb = cloud.lbs.get(new Cloud.LbKey(cluster(request.getMeta()), svc.getUid()));
        if (lb == null) throw Errors.notFound("load balancer " + lbName(svc.getUid()) + " for service " + svc.getNamespace() + "/" + svc.getName() + " does not exist");
        lb.nodes = nodes;
        // UpdateLoadBalancer carries the Service too: its endpoints are the current ones.
        if (PodBackends.has(svc)) lb.podTargets = podTargets(svc, cloud.zone);
        return UpdateLoadBalancerResponse.getDefaultInstance();
      }
    });
  }

  @Override
  public void ensureLoadBalancerDeleted(EnsureLoadBalancerDeletedRequest request, StreamObserver<EnsureLoadBalancerDeletedResponse> out) {
    Rpc.reply(out, () -> {
      check(request.getService(), false);
      synchronized (cloud) {
        cloud.lbs.remove(new Cloud.LbKey(cluster(request.getMeta()), request.getService().getUid()));
      }
      return EnsureLoadBalancerDeletedResponse.getDefaultInstance();
    });
  }
}
