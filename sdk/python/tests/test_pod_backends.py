"""Pod-IP backends: the targets of a Service port, PreferClose by zone."""
import unittest

from ccm.provider.v1 import identity_pb2, load_balancers_pb2 as pb, load_balancers_pb2_grpc
from ccm_provider_sdk import Info, derive_capabilities, has_pod_backends, pod_targets


def ep(addr, zone):
    return pb.EndpointBackend(
        addresses=[addr], zone=zone, ready=True,
        ports=[pb.EndpointPort(name="web", service_port=80, protocol=pb.PROTOCOL_TCP, port=8080)],
    )


class PodTargetsTest(unittest.TestCase):
    def test_rows(self):
        rows = [
            ("all without PreferClose", "", [ep("10.0.0.1", "a"), ep("10.0.0.2", "b")], ["10.0.0.1", "10.0.0.2"]),
            ("same zone under PreferClose", "PreferClose", [ep("10.0.0.1", "a"), ep("10.0.0.2", "b")], ["10.0.0.1"]),
            ("all when none is close", "PreferClose", [ep("10.0.0.2", "b")], ["10.0.0.2"]),
        ]
        for name, dist, eps, want in rows:
            svc = pb.ServiceRef(endpoints=eps, pod_backends=pb.PodBackends(traffic_distribution=dist))
            got = pod_targets(svc, pb.PROTOCOL_TCP, 80, "a")
            self.assertEqual([t.address for t in got], want, name)
            self.assertTrue(all(t.port == 8080 for t in got), name)
        self.assertFalse(has_pod_backends(pb.ServiceRef()))

    def test_capability(self):
        class P:
            info = Info(name="example.com", provider_name="example", load_balancer_pod_backends=True)
            load_balancers = load_balancers_pb2_grpc.LoadBalancersServiceServicer()

        caps = derive_capabilities(P()).capabilities
        self.assertIn(identity_pb2.CAPABILITY_LOAD_BALANCER_POD_BACKENDS, caps)


if __name__ == "__main__":
    unittest.main()
