package dev.ccm.provider.sdk;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ccm.provider.v1.Capability;
import dev.ccm.provider.v1.GetInstancesMetadataRequest;
import dev.ccm.provider.v1.GetInstancesMetadataResponse;
import dev.ccm.provider.v1.GetInstancesStatusRequest;
import dev.ccm.provider.v1.GetInstancesStatusResponse;
import dev.ccm.provider.v1.GetPluginCapabilitiesResponse;
import dev.ccm.provider.v1.GetProviderSchemaResponse;
import dev.ccm.provider.v1.InstanceIdRequest;
import dev.ccm.provider.v1.InstanceIdResponse;
import dev.ccm.provider.v1.InstancesServiceGrpc;
import dev.ccm.provider.v1.ListLoadBalancersRequest;
import dev.ccm.provider.v1.ListLoadBalancersResponse;
import dev.ccm.provider.v1.LoadBalancersServiceGrpc;
import dev.ccm.provider.v1.SchemaAnnotation;
import dev.ccm.provider.v1.SchemaObjectKind;
import dev.ccm.provider.v1.SchemaValueType;
import dev.ccm.provider.v1.Service;
import io.grpc.stub.StreamObserver;
import java.util.List;
import org.junit.jupiter.api.Test;

/** GetPluginCapabilities is derived from the methods a provider's service objects declare, not from the generated defaults. */
class CapabilitiesTest {
  static final class Batch extends InstancesServiceGrpc.InstancesServiceImplBase {
    @Override
    public void getInstancesStatus(GetInstancesStatusRequest r, StreamObserver<GetInstancesStatusResponse> o) {}

    @Override
    public void getInstancesMetadata(GetInstancesMetadataRequest r, StreamObserver<GetInstancesMetadataResponse> o) {}

    @Override
    public void instanceId(InstanceIdRequest r, StreamObserver<InstanceIdResponse> o) {}
  }

  static final class Listing extends LoadBalancersServiceGrpc.LoadBalancersServiceImplBase {
    @Override
    public void listLoadBalancers(ListLoadBalancersRequest r, StreamObserver<ListLoadBalancersResponse> o) {}
  }

  @Test
  void aBareProviderDeclaresNothing() {
    Provider p = () -> Info.of("x.example", "x");
    GetPluginCapabilitiesResponse r = Capabilities.derive(p, Capabilities.bind(p));
    assertEquals(List.of(), r.getServicesList());
    assertEquals(List.of(), r.getCapabilitiesList());
    assertEquals("x", r.getProviderName());
    assertEquals(List.of(), r.getLoadBalancerClassesList());
  }

  @Test
  void servicesAndCapabilitiesFollowWhatIsImplemented() {
    Provider p =
        new Provider() {
          @Override
          public Info info() {
            return Info.of("x.example", "x").withLoadBalancerIpModeProxy(true).withLoadBalancerClasses(List.of("example.com/internal"), true);
          }

          @Override
          public String metrics() {
            return "";
          }

          @Override
          public InstancesServiceGrpc.AsyncService instances() {
            return new Batch();
          }

          @Override
          public LoadBalancersServiceGrpc.AsyncService loadBalancers() {
            return new Listing();
          }
        };
    GetPluginCapabilitiesResponse r = Capabilities.derive(p, Capabilities.bind(p));
    assertEquals(List.of(Service.SERVICE_INSTANCES, Service.SERVICE_LOAD_BALANCERS), r.getServicesList());
    assertEquals(
        List.of(
            Capability.CAPABILITY_INSTANCES_BATCH,
            Capability.CAPABILITY_INSTANCES_LEGACY,
            Capability.CAPABILITY_LOAD_BALANCER_IP_MODE_PROXY,
            Capability.CAPABILITY_LOAD_BALANCER_LIST,
            Capability.CAPABILITY_METRICS),
        r.getCapabilitiesList());
    assertEquals(List.of("example.com/internal"), r.getLoadBalancerClassesList());
    assertTrue(r.getLoadBalancerClassesOnly());
  }

  @Test
  void podBackendsAreDeclaredOnlyWithALoadBalancerService() {
    Provider without = () -> Info.of("x.example", "x").withLoadBalancerPodBackends(true);
    assertEquals(List.of(), Capabilities.derive(without, Capabilities.bind(without)).getCapabilitiesList());
    Provider with =
        new Provider() {
          @Override
          public Info info() {
            return Info.of("x.example", "x").withLoadBalancerPodBackends(true);
          }

          @Override
          public LoadBalancersServiceGrpc.AsyncService loadBalancers() {
            return new Listing();
          }
        };
    assertEquals(
        List.of(Capability.CAPABILITY_LOAD_BALANCER_LIST, Capability.CAPABILITY_LOAD_BALANCER_POD_BACKENDS),
        Capabilities.derive(with, Capabilities.bind(with)).getCapabilitiesList());
  }

  @Test
  void aProviderWithASchemaDeclaresItAndCanDeprecateAKey() {
    GetProviderSchemaResponse schema =
        Schema.of(
            List.of("example.com/lb-"),
            List.of(
                Schema.service("example.com/lb-mode", SchemaValueType.SCHEMA_VALUE_TYPE_ENUM, "The mode.").addAllowedValues("fast").build(),
                Schema.deprecated(Schema.service("example.com/lb-kind", SchemaValueType.SCHEMA_VALUE_TYPE_ENUM, "Earlier name."), "example.com/lb-mode")
                    .addAllowedValues("fast")
                    .build()),
            List.of(Schema.deprecated(Schema.configKey("Global", "Zone", SchemaValueType.SCHEMA_VALUE_TYPE_STRING, "Old."), "zone").build()));
    Provider p =
        new Provider() {
          @Override
          public Info info() {
            return Info.of("x.example", "x");
          }

          @Override
          public GetProviderSchemaResponse schema() {
            return schema;
          }
        };
    assertEquals(List.of(Capability.CAPABILITY_PROVIDER_SCHEMA), Capabilities.derive(p, Capabilities.bind(p)).getCapabilitiesList());
    SchemaAnnotation old = schema.getAnnotations(1);
    assertTrue(old.getDeprecated());
    assertEquals("example.com/lb-mode", old.getReplacement());
    assertEquals(SchemaObjectKind.SCHEMA_OBJECT_KIND_SERVICE, old.getObjectKind());
    assertEquals("zone", schema.getCloudConfigKeys(0).getReplacement());
  }

  @Test
  void cloudMethodsAreTheCloudServicesOnly() {
    assertTrue(Capabilities.isCloudMethod("ccm.provider.v1.InstancesService/InstanceMetadata"));
    assertTrue(Capabilities.isCloudMethod("ccm.provider.v1.VolumesService/NotARealMethod"));
    assertFalse(Capabilities.isCloudMethod("ccm.provider.v1.IdentityService/Probe"));
    assertFalse(Capabilities.isCloudMethod("ccm.provider.v1.LifecycleService/Configure"));
    assertFalse(Capabilities.isCloudMethod("ccm.provider.testing.v1.TestHooksService/SetThrottle"));
    assertFalse(Capabilities.isCloudMethod("grpc.health.v1.Health/Check"));
  }
}
