#!/usr/bin/env python3
"""ccm-provider-mempy: a cloud provider for the grpc cloud-controller-manager,
written in Python with grpcio against the generated ccm.provider.v1 code. Its
cloud is in memory (instances, load balancers, routes, volumes); see README.md."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "gen"))
sys.path.insert(0, HERE)

from ccm.provider.testing.v1 import test_hooks_pb2_grpc  # noqa: E402
from ccm.provider.v1 import (  # noqa: E402
    identity_pb2_grpc,
    instances_pb2_grpc,
    lifecycle_pb2_grpc,
    load_balancers_pb2_grpc,
    routes_pb2_grpc,
    volumes_pb2_grpc,
)
from mempy import services  # noqa: E402
from mempy.cloud import Cloud  # noqa: E402
from mempy.launch import ENV_TEST_HOOKS, serve  # noqa: E402


def main():
    cloud = Cloud()

    def register(server, exec_mode, protocol, instance_id, on_shutdown):
        identity_pb2_grpc.add_IdentityServiceServicer_to_server(services.Identity(protocol, instance_id, cloud), server)
        lifecycle_pb2_grpc.add_LifecycleServiceServicer_to_server(services.Lifecycle(cloud, on_shutdown), server)
        instances_pb2_grpc.add_InstancesServiceServicer_to_server(services.Instances(cloud), server)
        load_balancers_pb2_grpc.add_LoadBalancersServiceServicer_to_server(services.LoadBalancers(cloud), server)
        routes_pb2_grpc.add_RoutesServiceServicer_to_server(services.Routes(cloud), server)
        volumes_pb2_grpc.add_VolumesServiceServicer_to_server(services.Volumes(cloud), server)
        if os.environ.get(ENV_TEST_HOOKS) == "1":
            test_hooks_pb2_grpc.add_TestHooksServiceServicer_to_server(services.TestHooks(cloud), server)

    serve(cloud, register)


if __name__ == "__main__":
    main()
