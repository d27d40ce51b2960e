"""moto's server (python -m moto.server, same arguments) with two fidelity fixes.

1. A classic load balancer that AWS creates has a health check from the start
(DescribeLoadBalancers shows the default: Target TCP:<instance port of the
first listener>, Interval 30, Timeout 5, UnhealthyThreshold 2,
HealthyThreshold 10); moto's has none until ConfigureHealthCheck. The AWS
cloud provider reads the current health check of the load balancer it just
created without a nil check (aws_loadbalancer.go ensureLoadBalancerHealthCheck),
which real AWS never makes it need, so without this it panics on moto.

2. DescribeInstances with an instance id listed twice: AWS answers it, moto
(get_reservations_by_instance_ids) fails with an IndexError (HTTP 500). The
provider's describe-instance batcher sends such requests when two lookups of
one instance meet in a batch; it then falls back to one request per id, so
this only saves retries and error lines.

Nothing of moto is changed on disk: the backends' methods are wrapped in
this process only, and not at all with CCM_TEST_MOTO_AS_IS=1 (moto as it is).
"""

import os
import sys

from moto.ec2.models import instances as ec2_instances
from moto.elb import models
from moto.server import main

_create = models.ELBBackend.create_load_balancer


def create_load_balancer(self, *args, **kwargs):
    lb = _create(self, *args, **kwargs)
    if lb.health_check is None and lb.listeners:
        self.configure_health_check(
            lb.name, timeout=5, healthy_threshold=10, unhealthy_threshold=2, interval=30, target=f"TCP:{lb.listeners[0].instance_port}"
        )
    return lb


_by_ids = ec2_instances.InstanceBackend.get_reservations_by_instance_ids


def get_reservations_by_instance_ids(self, instance_ids, filters=None):
    return _by_ids(self, list(dict.fromkeys(instance_ids)), filters=filters)


if os.environ.get("CCM_TEST_MOTO_AS_IS") != "1":
    models.ELBBackend.create_load_balancer = create_load_balancer
    ec2_instances.InstanceBackend.get_reservations_by_instance_ids = get_reservations_by_instance_ids

if __name__ == "__main__":
    main(sys.argv[1:])
