#!/usr/bin/env python3
"""ccm-provider-mempy: a cloud provider for the grpc cloud-controller-manager,
written in Python on the ccm-provider-sdk package (sdk/python), which does the
launch contract. Its cloud is in memory (instances, load balancers, routes,
volumes); see README.md."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import grpc  # noqa: E402
from grpc_status import rpc_status  # noqa: E402

from ccm.provider.testing.v1 import test_hooks_pb2_grpc  # noqa: E402
from ccm.provider.v1 import identity_pb2, lifecycle_pb2  # noqa: E402
from ccm_provider_sdk import ENV_TEST_HOOKS, Info, is_cloud_method, main, rate_limited  # noqa: E402
from mempy import services  # noqa: E402
from mempy.cloud import PROVIDER_NAME, Cloud  # noqa: E402


# The annotation prefix mempy owns (it reads no annotation).
ANNOTATION_PREFIX = "mempy.ccm.example/"


class Mempy:
    info = Info(name="mempy.ccm.example", provider_name=PROVIDER_NAME, vendor_version="0.1.0",
                has_cluster_id=True, manifest={"language": "python"})

    def __init__(self, cloud):
        self.cloud = cloud
        self.instances = services.Instances(cloud)
        self.load_balancers = services.LoadBalancers(cloud)
        self.routes = services.Routes(cloud)
        self.volumes = services.Volumes(cloud)

    def configure(self, request, context):
        return lifecycle_pb2.ConfigureResponse(warnings=self.cloud.configure(request.cloud_config))

    def provider_schema(self):
        """What mempy reads (GetProviderSchema): its cloud config (Cloud.configure) and no annotation under its
        prefix, so any key under the prefix is a misspelling."""
        string = identity_pb2.SCHEMA_VALUE_TYPE_STRING
        return identity_pb2.GetProviderSchemaResponse(
            annotation_prefixes=[ANNOTATION_PREFIX],
            cloud_config_keys=[
                identity_pb2.SchemaConfigKey(key="zone", type=string, default_value="mem-a",
                                             description="The zone of instances that name none."),
                identity_pb2.SchemaConfigKey(key="region", type=string, default_value="mem",
                                             description="The region of instances that name none."),
                identity_pb2.SchemaConfigKey(key="instances", type=string,
                                             description="The instances, a JSON array of {name, zone, addresses}; "
                                                         "created or replaced by name."),
            ])


class Throttle(grpc.ServerInterceptor):
    """Test hook: while cloud.throttle is set, cloud calls fail with
    RESOURCE_EXHAUSTED, reason RATE_LIMITED and a RetryInfo."""

    def __init__(self, cloud):
        self.cloud = cloud

    def intercept_service(self, continuation, details):
        delay = self.cloud.throttle
        if delay is None or not is_cloud_method(details.method):
            return continuation(details)
        status = rpc_status.to_status(rate_limited("cloud API rate limit exceeded", delay).to_status())
        return grpc.unary_unary_rpc_method_handler(lambda request, context: context.abort_with_status(status))


def run():
    cloud = Cloud()

    def register(server):
        if os.environ.get(ENV_TEST_HOOKS) == "1":
            test_hooks_pb2_grpc.add_TestHooksServiceServicer_to_server(services.TestHooks(cloud), server)

    main(Mempy(cloud), register=register, interceptors=[Throttle(cloud)])


if __name__ == "__main__":
    run()
