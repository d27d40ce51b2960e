package dev.ccm.example.memjava;

import dev.ccm.provider.sdk.Capabilities;
import dev.ccm.provider.sdk.Errors;
import dev.ccm.provider.sdk.Info;
import dev.ccm.provider.sdk.Launch;
import dev.ccm.provider.sdk.Protocol;
import dev.ccm.provider.sdk.Provider;
import dev.ccm.provider.sdk.ProviderServer;
import dev.ccm.provider.sdk.Schema;
import dev.ccm.provider.v1.ConfigureRequest;
import dev.ccm.provider.v1.ConfigureResponse;
import dev.ccm.provider.v1.GetProviderSchemaResponse;
import dev.ccm.provider.v1.InstancesServiceGrpc;
import dev.ccm.provider.v1.LoadBalancersServiceGrpc;
import dev.ccm.provider.v1.SchemaValueType;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.StatusRuntimeException;
import java.util.List;
import java.util.Map;

/**
 * ccm-provider-memjava: a cloud provider for the grpc cloud-controller-manager,
 * written in Java on the Java SDK (sdk/java), which does the launch contract.
 * Its cloud is in memory (instances and load balancers); see README.md.
 */
public final class Main implements Provider {
  private final Cloud cloud;
  private final Instances instances;
  private final LoadBalancers loadBalancers;

  Main(Cloud cloud) {
    this.cloud = cloud;
    this.instances = new Instances(cloud);
    this.loadBalancers = new LoadBalancers(cloud);
  }

  @Override
  public Info info() {
    return Info.of("memjava.ccm.example", Cloud.PROVIDER_NAME).withVendorVersion("0.1.0").withClusterId(true).withManifest(Map.of("language", "java")).withLoadBalancerPodBackends(true);
  }

  @Override
  public ConfigureResponse configure(ConfigureRequest request) {
    return ConfigureResponse.newBuilder().addAllWarnings(cloud.configure(request.getCloudConfig().toByteArray())).build();
  }

  /** The annotation prefix memjava owns; it reads no annotation, so any key under it is a misspelling. */
  static final String ANNOTATION_PREFIX = "memjava.ccm.example/";

  /** What memjava reads (GetProviderSchema): its cloud config (Cloud.configure), and no annotation under its prefix. */
  @Override
  public GetProviderSchemaResponse schema() {
    SchemaValueType str = SchemaValueType.SCHEMA_VALUE_TYPE_STRING;
    return Schema.of(
        List.of(ANNOTATION_PREFIX),
        List.of(),
        List.of(
            Schema.configKey("", "zone", str, "The zone of instances that name none.").setDefaultValue("mem-a").build(),
            Schema.configKey("", "region", str, "The region of instances that name none.").setDefaultValue("mem").build(),
            Schema.configKey("", "instances", str, "The instances, a JSON array of {name, zone, type, addresses}; created or updated by name.").build()));
  }

  @Override
  public InstancesServiceGrpc.AsyncService instances() {
    return instances;
  }

  @Override
  public LoadBalancersServiceGrpc.AsyncService loadBalancers() {
    return loadBalancers;
  }

  /** Test hook: while the cloud is throttled, cloud calls fail with RESOURCE_EXHAUSTED, reason RATE_LIMITED and a RetryInfo. */
  static final class Throttle implements ServerInterceptor {
    private final Cloud cloud;

    Throttle(Cloud cloud) {
      this.cloud = cloud;
    }

    @Override
    public <ReqT, RespT> ServerCall.Listener<ReqT> interceptCall(ServerCall<ReqT, RespT> call, Metadata headers, ServerCallHandler<ReqT, RespT> next) {
      long delay = cloud.throttleMs;
      if (delay < 0 || !Capabilities.isCloudMethod(call.getMethodDescriptor().getFullMethodName())) return next.startCall(call, headers);
      StatusRuntimeException e = Errors.rateLimited("cloud API rate limit exceeded", delay);
      call.close(e.getStatus(), e.getTrailers());
      return new ServerCall.Listener<>() {};
    }
  }

  public static void main(String[] args) {
    // First: a refusal (started by hand, a wrong cookie) before the cloud, gRPC and protobuf load.
    Launch.refuseUnlessLaunched(args);
    Cloud cloud = new Cloud();
    ProviderServer.Options options = new ProviderServer.Options().interceptor(new Throttle(cloud));
    if ("1".equals(System.getenv(Protocol.ENV_TEST_HOOKS))) options.service(new TestHooks(cloud));
    ProviderServer.main(new Main(cloud), args, options);
  }
}
