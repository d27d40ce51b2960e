"""moto's server (python -m moto.server, same arguments) with nine fidelity
fixes and two test devices.

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

3. DescribeInstanceTopology: moto does not implement it (HTTP 500, which the
AWS SDK retries with backoff, about 3 s per lookup, and the provider then
asks again for every node). AWS lists the topology of instances of the types
that have one (p4d, trn1, ...) and answers an empty list for the others, such
as the t3 instances the tests run; the provider then remembers that type as
without topology. Answered here with an empty list, for any instance.

4. (A test device, not a fix.) An instance tagged ccm-test/private-dns-name
has that tag's value as its private DNS name, in DescribeInstances and in
its private-dns-name filter. The AWS provider finds a Node without
providerID by the EC2 private DNS name equal to the Node's name; on AWS that
name follows the private IP (ip-10-1-2-3.ec2.internal), so a node the
conformance kit names itself (cct<run>-node-a) has no instance on AWS. The
kit's test hook (moto-aws.py hook) tags the instances it makes, so the
provider's own lookup by name runs against them.

5. ModifyLoadBalancerAttributes (classic ELB) without AdditionalAttributes:
moto appends another ("elb.http.desyncmitigationmode", "defensive") to the
load balancer's additional attributes on every call, so the list grows and
DescribeLoadBalancerAttributes shows the key many times. AWS keeps one value
per key. Kept here as AWS does: one entry per key, the last value set.

6. (A test device.) With CCM_TEST_MOTO_JOURNAL=<file>, every API request is
appended to that file as one JSON line {"service", "action", "caller",
"status", "name"}: the SigV4 service, the Action, the access key id the
request was signed with (so a test tells two clients apart by their keys),
the HTTP status, and the load balancer the request names, if any: its
LoadBalancerName, or the name in its LoadBalancerArn or ListenerArn, or the
load balancer of its TargetGroupArn (an ELBv2 request names no name). Moto
keeps no call log of its own; a test counts creates and deletes with this.
Each line also has "groups": every security group id the request names
(GroupId, a rule's source group, an ELB's or ELBv2's SecurityGroups), sorted,
so a test tells which groups a write touched.

7. CreateListener (ELBv2) of a TCP, UDP or TCP_UDP listener: moto gives
every new listener the SslPolicy ELBSecurityPolicy-2016-08 unless one is
asked for, and keeps it through ModifyListener. AWS has an SslPolicy only on
HTTPS and TLS listeners. The AWS cloud provider modifies an NLB's TCP
listener that has one (aws_loadbalancer.go ensureLoadBalancerv2), so on moto
it sent ModifyListener for every listener on every ensure, which AWS never
makes it do. Here only HTTPS and TLS listeners get the policy.

8. A classic load balancer's listener keeps its InstanceProtocol. moto
stores none and reports the front protocol as the instance protocol, so an
HTTPS listener to HTTP instances (aws-load-balancer-ssl-cert with
-backend-protocol: http) or an SSL listener to TCP instances (the cert
alone) reads back as HTTPS->HTTPS or SSL->SSL. The AWS cloud provider
compares both protocols (aws_loadbalancer.go elbListenersAreEqual), so on moto
it deleted and re-created such a listener on every ensure, which AWS never
makes it do. Here the listener reports the InstanceProtocol it was created
with, and AWS's default when none was given (HTTP behind HTTP and HTTPS, TCP
behind TCP and SSL).

9. An NLB created with SubnetMappings that carry an AllocationId (the
aws-load-balancer-eip-allocations annotation) keeps them: AWS lists each
zone's Elastic IP in DescribeLoadBalancers (AvailabilityZones[].
LoadBalancerAddresses: IpAddress, AllocationId) and refuses an allocation
it does not know; moto drops them, so a test could not tell whether the
NLB still has its Elastic IPs. Here an unknown allocation is refused
(InvalidAllocationID.NotFound, as AWS) and each zone shows its address.

10. ModifyLoadBalancerAttributes that turns access logs on into an S3
bucket that does not exist: AWS refuses it (a classic ELB's AccessLog:
InvalidConfiguration; an NLB's access_logs.s3.enabled and
access_logs.s3.bucket attributes: InvalidConfigurationRequest), moto takes
any name. Here the bucket must exist in moto's S3 (its bucket policy, which
AWS checks too, is not modelled), so a test that sets the access-log
annotations proves the bucket was named right.

11. An ELBv2 target group of an NLB's protocols (TCP, TLS, UDP, TCP_UDP)
lists the attributes AWS lists for one: proxy_protocol_v2.enabled (false),
preserve_client_ip.enabled (false for IP targets over TCP or TLS, else true)
and deregistration_delay.connection_termination.enabled (false); moto lists
none of them. The AWS cloud provider sets only the target group attributes
DescribeTargetGroupAttributes lists (aws_loadbalancer.go
buildTargetGroupAttributes skips the others as "non-supported"), so on moto
aws-load-balancer-target-group-attributes (e.g. proxy_protocol_v2.enabled=true,
an NLB's proxy protocol) did nothing, which AWS never makes it do.

12. (A test device.) With CCM_TEST_MOTO_ID=<id>, every response carries the
header X-Ccm-Test-Moto-Id: <id>. The port moto listens on was picked free
and released before moto binds it, so another test's moto can hold it by
then (this one then exits: address in use); startMoto waits for its own id,
not for any answer on the port, and so never hands a test another's moto.

Nothing of moto is changed on disk: the backends' methods are wrapped in
this process only, and not at all with CCM_TEST_MOTO_AS_IS=1 (moto as it is).
"""

import io
import json
import os
import re
import sys
import threading
from urllib.parse import parse_qs

from moto.core.responses import ActionResult
from moto.ec2.models import instances as ec2_instances
from moto.ec2.responses import EC2Response
from moto.elb import models
from moto.elb.exceptions import ELBClientError
from moto.elbv2 import exceptions as elbv2_exceptions
from moto.elbv2 import models as elbv2_models
from moto.moto_server.werkzeug_app import DomainDispatcherApplication
from moto.s3.models import s3_backends
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


def describe_instance_topology(self):
    return ActionResult({"Instances": []})


_modify_attributes = models.ELBBackend.modify_load_balancer_attributes


def modify_load_balancer_attributes(self, load_balancer_name, *args, **kwargs):
    access_log = kwargs.get("access_log") or {}
    bucket = access_log.get("S3BucketName")
    if str(access_log.get("Enabled")).lower() == "true" and bucket not in s3_backends.bucket_accounts:
        raise ELBClientError("InvalidConfiguration", f"The specified S3 bucket {bucket!r} does not exist")
    _modify_attributes(self, load_balancer_name, *args, **kwargs)
    attributes = self.get_load_balancer(load_balancer_name).attributes
    attributes["additional_attributes"] = list(dict(attributes["additional_attributes"]).items())


_modify_attributes_v2 = elbv2_models.ELBv2Backend.modify_load_balancer_attributes


def modify_load_balancer_attributes_v2(self, arn, attrs):
    current = self.describe_load_balancer_attributes(arn) if arn in self.load_balancers else {}
    wanted = {**current, **attrs}
    bucket = wanted.get("access_logs.s3.bucket")
    if str(wanted.get("access_logs.s3.enabled")).lower() == "true" and bucket not in s3_backends.bucket_accounts:
        raise elbv2_exceptions.InvalidConfigurationRequest(f"The specified S3 bucket {bucket!r} does not exist")
    return _modify_attributes_v2(self, arn, attrs)


_target_group_init = elbv2_models.FakeTargetGroup.__init__


def target_group_init(self, *args, **kwargs):
    _target_group_init(self, *args, **kwargs)
    if self.protocol in ("TCP", "TLS", "UDP", "TCP_UDP"):
        ip_over_tcp = self.target_type == "ip" and self.protocol in ("TCP", "TLS")
        self.attributes.setdefault("proxy_protocol_v2.enabled", "false")
        self.attributes.setdefault("preserve_client_ip.enabled", "false" if ip_over_tcp else "true")
        self.attributes.setdefault("deregistration_delay.connection_termination.enabled", "false")


_create_listener = elbv2_models.ELBv2Backend.create_listener


def create_listener(self, load_balancer_arn, protocol, port, ssl_policy, *args, **kwargs):
    if str(protocol).upper() not in ("HTTPS", "TLS"):
        ssl_policy = None
    return _create_listener(self, load_balancer_arn, protocol, port, ssl_policy, *args, **kwargs)


# AWS's InstanceProtocol when a listener is created without one.
_DEFAULT_INSTANCE_PROTOCOL = {"HTTPS": "HTTP", "HTTP": "HTTP", "SSL": "TCP", "TCP": "TCP"}


def _instance_protocol(port):
    given = port.get("InstanceProtocol") or port.get("instance_protocol")
    front = str(port.get("Protocol") or port.get("protocol") or "").upper()
    return str(given).upper() if given else _DEFAULT_INSTANCE_PROTOCOL.get(front, front)


def _keep_instance_protocols(lb, ports):
    by_port = {int(p.get("LoadBalancerPort") or p.get("load_balancer_port")): _instance_protocol(p) for p in ports}
    for listener in lb.listeners:
        if "_instance_protocol" not in listener.__dict__ and int(listener.load_balancer_port) in by_port:
            listener._instance_protocol = by_port[int(listener.load_balancer_port)]


def listener_instance_protocol(self):
    return self.__dict__.get("_instance_protocol", self.protocol)


_lb_init = models.LoadBalancer.__init__


def lb_init(self, *args, **kwargs):
    _lb_init(self, *args, **kwargs)
    _keep_instance_protocols(self, kwargs.get("ports") or (args[3] if len(args) > 3 else []))


_create_listeners = models.ELBBackend.create_load_balancer_listeners


def create_load_balancer_listeners(self, name, ports):
    lb = _create_listeners(self, name, ports)
    if lb is not None:
        _keep_instance_protocols(lb, ports)
    return lb


_create_v2 = elbv2_models.ELBv2Backend.create_load_balancer


def create_load_balancer_v2(self, *args, **kwargs):
    mappings = [m for m in kwargs.get("subnet_mappings") or [] if m.get("AllocationId")]
    addresses = {}
    for m in mappings:
        found = self.ec2_backend.describe_addresses(allocation_ids=[m["AllocationId"]])
        addresses[m["SubnetId"]] = {"IpAddress": found[0].public_ip, "AllocationId": m["AllocationId"]}
    lb = _create_v2(self, *args, **kwargs)
    lb._ccm_addresses = addresses
    return lb


def availability_zones_v2(self):
    zones = [elbv2_models.AvailabilityZone(subnet) for subnet in self.subnets]
    for zone in zones:
        address = self.__dict__.get("_ccm_addresses", {}).get(zone.subnet_id)
        if address:
            zone.load_balancer_addresses = [address]
    return zones


DNS_NAME_TAG = "ccm-test/private-dns-name"
_private_dns_name = ec2_instances.Instance.private_dns_name


def private_dns_name(self):
    for tag in self.get_tags():
        if tag["key"] == DNS_NAME_TAG:
            return tag["value"]
    return _private_dns_name.fget(self)


JOURNAL = os.environ.get("CCM_TEST_MOTO_JOURNAL")
_journal_lock = threading.Lock()
_dispatch = DomainDispatcherApplication.__call__
_SIGNED = re.compile(r"Credential=([^/]+)/[^/]+/[^/]+/([^/]+)/")


_LB_IN_ARN = re.compile(r":(?:loadbalancer|listener)/(?:app|net|gwy)/([^/]+)/")
_ARN = re.compile(r"^arn:[^:]+:elasticloadbalancing:([^:]+):([^:]+):")
_GROUP_ID = re.compile(r"^sg-[0-9a-f]+$")


def _load_balancer_named(params):
    """The load balancer a request names (classic: by name; ELBv2: by an ARN of it, its listener's or its target group's)."""
    first = lambda key: params.get(key, [""])[0]
    name = first("LoadBalancerName") or first("LoadBalancerNames.member.1")
    if name:
        return name
    for key in ("LoadBalancerArn", "ListenerArn", "ResourceArns.member.1"):
        found = _LB_IN_ARN.search(first(key))
        if found:
            return found.group(1)
    arn = first("TargetGroupArn") or first("ResourceArns.member.1")
    where = _ARN.match(arn)
    if where:
        group = elbv2_models.elbv2_backends[where.group(2)][where.group(1)].target_groups.get(arn)
        for lb_arn in getattr(group, "load_balancer_arns", []):
            found = _LB_IN_ARN.search(lb_arn)
            if found:
                return found.group(1)
    return ""


def journaled_call(self, environ, start_response):
    length = int(environ.get("CONTENT_LENGTH") or 0)
    body = environ["wsgi.input"].read(length) if length else b""
    environ["wsgi.input"] = io.BytesIO(body)
    params = parse_qs(environ.get("QUERY_STRING", ""))
    if "x-www-form-urlencoded" in environ.get("CONTENT_TYPE", ""):
        params.update(parse_qs(body.decode("utf-8", "replace")))
    signed = _SIGNED.search(environ.get("HTTP_AUTHORIZATION", ""))
    status = []
    # Before the call: a target group it deletes is gone after it.
    try:
        named = _load_balancer_named(params) if params.get("Action") else ""
    except Exception:  # a journal must never fail a request
        named = ""
    groups = sorted({v for values in params.values() for v in values if _GROUP_ID.match(v)})

    def recording_start_response(st, headers, *rest):
        status.append(int(st.split(" ", 1)[0]))
        return start_response(st, headers, *rest)

    result = _dispatch(self, environ, recording_start_response)
    action = params.get("Action", [""])[0]
    if action:
        entry = {
            "service": signed.group(2) if signed else "",
            "action": action,
            "caller": signed.group(1) if signed else "",
            "status": status[0] if status else 0,
            "name": named,
            "groups": groups,
        }
        with _journal_lock, open(JOURNAL, "a") as f:
            f.write(json.dumps(entry) + "\n")
    return result


if JOURNAL:
    DomainDispatcherApplication.__call__ = journaled_call

SERVER_ID = os.environ.get("CCM_TEST_MOTO_ID")
_call = DomainDispatcherApplication.__call__


def identified_call(self, environ, start_response):
    def start_response_with_id(st, headers, *rest):
        return start_response(st, list(headers) + [("X-Ccm-Test-Moto-Id", SERVER_ID)], *rest)

    return _call(self, environ, start_response_with_id)


if SERVER_ID:
    DomainDispatcherApplication.__call__ = identified_call

if os.environ.get("CCM_TEST_MOTO_AS_IS") != "1":
    ec2_instances.Instance.private_dns_name = property(private_dns_name)
    models.ELBBackend.create_load_balancer = create_load_balancer
    models.ELBBackend.modify_load_balancer_attributes = modify_load_balancer_attributes
    elbv2_models.ELBv2Backend.create_listener = create_listener
    elbv2_models.ELBv2Backend.modify_load_balancer_attributes = modify_load_balancer_attributes_v2
    elbv2_models.FakeTargetGroup.__init__ = target_group_init
    models.FakeListener.instance_protocol = property(listener_instance_protocol)
    models.LoadBalancer.__init__ = lb_init
    models.ELBBackend.create_load_balancer_listeners = create_load_balancer_listeners
    elbv2_models.ELBv2Backend.create_load_balancer = create_load_balancer_v2
    elbv2_models.FakeLoadBalancer.availability_zones = property(availability_zones_v2)
    ec2_instances.InstanceBackend.get_reservations_by_instance_ids = get_reservations_by_instance_ids
    EC2Response.describe_instance_topology = describe_instance_topology

if __name__ == "__main__":
    main(sys.argv[1:])
