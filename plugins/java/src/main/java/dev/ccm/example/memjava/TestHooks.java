package dev.ccm.example.memjava;

import dev.ccm.provider.sdk.Errors;
import dev.ccm.provider.sdk.Rpc;
import dev.ccm.provider.testing.v1.CreateTestInstanceRequest;
import dev.ccm.provider.testing.v1.CreateTestInstanceResponse;
import dev.ccm.provider.testing.v1.DeleteTestInstanceRequest;
import dev.ccm.provider.testing.v1.DeleteTestInstanceResponse;
import dev.ccm.provider.testing.v1.ListTestLoadBalancersRequest;
import dev.ccm.provider.testing.v1.ListTestLoadBalancersResponse;
import dev.ccm.provider.testing.v1.SetThrottleRequest;
import dev.ccm.provider.testing.v1.SetThrottleResponse;
import dev.ccm.provider.testing.v1.TestHooksServiceGrpc;
import dev.ccm.provider.testing.v1.TestLoadBalancer;
import dev.ccm.provider.v1.ServicePort;
import io.grpc.stub.StreamObserver;
import java.util.Map;

/** ccm.provider.testing.v1.TestHooksService; served only with CCM_PROVIDER_TEST_HOOKS=1, never in production. */
final class TestHooks extends TestHooksServiceGrpc.TestHooksServiceImplBase {
  private final Cloud cloud;

  TestHooks(Cloud cloud) {
    this.cloud = cloud;
  }

  @Override
  public void createTestInstance(CreateTestInstanceRequest request, StreamObserver<CreateTestInstanceResponse> out) {
    Rpc.reply(out, () -> {
      if (request.getName().isEmpty()) throw Errors.invalidArgument("name is required");
      synchronized (cloud) {
        Cloud.Instance i = cloud.upsertInstance(request.getName(), request.getInternalIp(), request.getZone());
        return CreateTestInstanceResponse.newBuilder().setProviderId(i.providerId()).build();
      }
    });
  }

  @Override
  public void deleteTestInstance(DeleteTestInstanceRequest request, StreamObserver<DeleteTestInstanceResponse> out) {
    Rpc.reply(out, () -> {
      synchronized (cloud) {
        cloud.instances.remove(request.getName());
      }
      return DeleteTestInstanceResponse.getDefaultInstance();
    });
  }

  @Override
  public void setThrottle(SetThrottleRequest request, StreamObserver<SetThrottleResponse> out) {
    cloud.throttleMs = request.getEnabled() ? request.getRetryDelayMs() : -1;
    Rpc.reply(out, SetThrottleResponse::getDefaultInstance);
  }

  @Override
  public void listTestLoadBalancers(ListTestLoadBalancersRequest request, StreamObserver<ListTestLoadBalancersResponse> out) {
    Rpc.reply(out, () -> {
      // This cloud has no data plane: tests check the store instead of traffic.
      ListTestLoadBalancersResponse.Builder r = ListTestLoadBalancersResponse.newBuilder();
      synchronized (cloud) {
        for (Map.Entry<Cloud.LbKey, Cloud.LoadBalancer> e : cloud.lbs.entrySet()) {
          Cloud.LoadBalancer lb = e.getValue();
          r.addLoadBalancers(
              TestLoadBalancer.newBuilder()
                  .setClusterName(e.getKey().cluster())
                  .setServiceUid(e.getKey().uid())
                  .setName(lb.name)
                  .addIngressIps(lb.ip)
                  .addAllPorts(lb.ports.stream().map(ServicePort::getPort).toList())
                  .addAllNodeNames(lb.nodes.stream().sorted().toList()));
        }
      }
      return r.build();
    });
  }
}
