"""GetPluginCapabilities derived from the methods a provider implements."""
import unittest

from ccm.provider.v1 import identity_pb2 as pb, instances_pb2_grpc
from ccm_provider_sdk import Info, derive_capabilities

INFO = Info(name="example.com", provider_name="example", has_cluster_id=True)


class Provider:
    info = INFO

    def __init__(self, **services):
        for k, v in services.items():
            setattr(self, k, v)


class Instances(instances_pb2_grpc.InstancesServiceServicer):
    """Subclasses the generated servicer: only what it defines counts."""

    def InstanceExists(self, request, context):
        return None


class Batch:
    def GetInstancesStatus(self, request, context):
        pass

    def GetInstancesMetadata(self, request, context):
        pass

    def NodeAddresses(self, request, context):
        pass


class LoadBalancers:
    def UpdateLoadBalancerHosts(self, request, context):
        pass

    def EnsureLoadBalancers(self, request, context):
        pass

    def ListLoadBalancers(self, request, context):
        pass


class Routes:
    def ReconcileRoutes(self, request, context):
        pass


class Volumes:
    def ListVolumes(self, request, context):
        pass


class CapabilitiesTest(unittest.TestCase):
    def test_nothing_but_info(self):
        caps = derive_capabilities(Provider())
        self.assertEqual((list(caps.services), list(caps.capabilities)), ([], []))
        self.assertEqual((caps.provider_name, caps.has_cluster_id), ("example", True))

    def test_node_ownership_declarations(self):
        for info, prefixes, selector in [
            (INFO, [], ""),
            (Info(name="x", provider_name="x", provider_id_prefixes=("x://", "xmetal://"), node_selector="cloud=x"),
             ["x://", "xmetal://"], "cloud=x"),
        ]:
            p = Provider()
            p.info = info
            caps = derive_capabilities(p)
            self.assertEqual((list(caps.provider_id_prefixes), caps.node_selector), (prefixes, selector))

    def test_inherited_generated_methods_do_not_count(self):
        caps = derive_capabilities(Provider(instances=Instances(), zones=None))
        self.assertEqual(list(caps.services), [pb.SERVICE_INSTANCES])
        self.assertEqual(list(caps.capabilities), [])

    def test_every_rule(self):
        class Full(Provider):
            info = Info(name="x", provider_name="x", load_balancer_ip_mode_proxy=True, volumes_expand_online=True)

            def metrics(self, context):
                return ""

            def provider_schema(self):
                return pb.GetProviderSchemaResponse(annotation_prefixes=["example.com/"])

        caps = derive_capabilities(Full(instances=Batch(), load_balancers=LoadBalancers(), routes=Routes(), volumes=Volumes(), zones=object()))
        self.assertEqual(list(caps.services), [pb.SERVICE_INSTANCES, pb.SERVICE_ZONES, pb.SERVICE_LOAD_BALANCERS, pb.SERVICE_ROUTES, pb.SERVICE_VOLUMES])
        self.assertEqual(list(caps.capabilities), sorted([
            pb.CAPABILITY_INSTANCES_BATCH, pb.CAPABILITY_INSTANCES_LEGACY, pb.CAPABILITY_LOAD_BALANCER_BATCH_HOSTS,
            pb.CAPABILITY_LOAD_BALANCER_BATCH_ENSURE, pb.CAPABILITY_LOAD_BALANCER_LIST, pb.CAPABILITY_LOAD_BALANCER_IP_MODE_PROXY,
            pb.CAPABILITY_ROUTES_RECONCILE, pb.CAPABILITY_VOLUMES_LIST_PUBLISHED_NODES, pb.CAPABILITY_VOLUMES_EXPAND_ONLINE,
            pb.CAPABILITY_METRICS, pb.CAPABILITY_PROVIDER_SCHEMA]))

    def test_half_a_batch_and_info_flags_without_their_service(self):
        class Half:
            def GetInstancesStatus(self, request, context):
                pass

        class Flags(Provider):
            info = Info(name="x", provider_name="x", load_balancer_ip_mode_proxy=True, volumes_expand_online=True)

        self.assertEqual(list(derive_capabilities(Flags(instances=Half())).capabilities), [])

    def test_load_balancer_classes_with_a_load_balancer_service_only(self):
        class Classes(Provider):
            info = Info(name="x", provider_name="x", load_balancer_classes=("example.com/a",), load_balancer_classes_only=True)

        for provider, classes, only in [
            (Classes(load_balancers=LoadBalancers()), ["example.com/a"], True),
            (Classes(routes=Routes()), [], False),
            (Provider(load_balancers=LoadBalancers()), [], False),
        ]:
            caps = derive_capabilities(provider)
            self.assertEqual((list(caps.load_balancer_classes), caps.load_balancer_classes_only), (classes, only))

    def test_volume_provisioners_with_a_volume_service_only(self):
        class Provisioners(Provider):
            info = Info(name="x", provider_name="x", volume_provisioners=("disk.example.com",))

        for provider, provisioners in [
            (Provisioners(volumes=Volumes()), ["disk.example.com"]),
            (Provisioners(routes=Routes()), []),
            (Provider(volumes=Volumes()), []),
        ]:
            self.assertEqual(list(derive_capabilities(provider).volume_provisioners), provisioners)

    def test_a_method_that_cannot_take_request_and_context_is_refused(self):
        class Wrong:
            def InstanceExists(self, request):
                pass

        with self.assertRaisesRegex(TypeError, r"Wrong.InstanceExists cannot be called as InstanceExists\(request, context\)"):
            derive_capabilities(Provider(instances=Wrong()))

    def test_info_is_required(self):
        with self.assertRaisesRegex(TypeError, "want a ccm_provider_sdk.Info"):
            derive_capabilities(object())


if __name__ == "__main__":
    unittest.main()
