"""Drives a local moto server (the AWS stand-in of test/helpers/moto.ts) with boto3.

    python moto-aws.py <endpoint> <region> <command> [json argument]

Prints one JSON document on stdout. Commands:
  seed {"cluster": id, "az": az, "instances": n, "type": t, "net": k}
      a VPC 10.<k>.0.0/16 (private DNS names ip-10-<k>-1-<n>.ec2.internal), an internet gateway with a 0.0.0.0/0 route in the VPC's main
      route table, one subnet in az tagged kubernetes.io/cluster/<id>=owned
      and kubernetes.io/role/elb=1, and n running instances of type t in it
      with the cluster tag, in a security group with the cluster tag.
      -> {"vpc", "subnet", "securityGroup", "az", "zoneId", "instances": [{"id", "privateIp", "privateDns"}]}
  run-instances {"cluster", "subnet", "securityGroup", "count", "type"} -> {"instances": [...]}
  stop-instances / start-instances / terminate-instances {"ids": [...]} -> {}
  describe-elbs {} -> {"loadBalancers": [{"name", "dns", "instances": [id...], "ports": [[lb, instance]...], "tags": {},
      "listeners": ["TCP:80->TCP:30080"...], "healthCheck": {}, "securityGroups": [...], "subnets": [...], "scheme", "attributes": {},
      "frontends": {"<lb port>": {"protocols": "HTTPS->HTTP", "certificate": arn|"", "policies": [listener policy...],
      "backendPolicies": [policy of its instance port...]}}, "policies": {name: "<type> <attribute>=<value>,..."}}]}
  describe-nlbs {} -> {"loadBalancers": [{"name", "dns", "type", "scheme", "subnets", "addresses": {subnet: "allocation ip"}, "tags": {},
      "attributes": {}, "listeners": [{"port", "protocol", "targetGroup", "targetProtocol", "certificates": [arn...], "sslPolicy"}...],
      "securityGroups": [id...], "rules": {"<listener port>": ["<priority> <conditions> -> <actions>"...]},
      "targetGroups": [{"name", "port", "protocol", "targetType", "healthCheck": {}, "targets": [id:port...], "attributes": {}, "tags": {}}]}]} (ELBv2)
  security-groups {"vpc"} -> {"groups": [{"id", "name"}]}
  create-security-group {"vpc", "name"} -> {"id"}
  create-subnet {"vpc", "cidr", "az", "tags": {}} -> {"id"} (in the VPC's main route table)
  create-certificate {"domain"} -> {"arn"} (ACM)
  create-bucket {"name"} -> {} (S3)
  allocate-addresses {"count"} -> {"addresses": [{"allocation", "ip"}...]} (Elastic IPs of the VPC domain)
  routes {"vpc"} -> {"routes": ["<route table id> <destination> -> <target>"...]} (every route table of the VPC)
  security-group-rules {"vpc"} -> {"groups": {name: {"id", "tags": {}, "ingress": ["proto:from-to from cidr|group"...]}}}
  run-named-instance {"cluster", "subnet", "securityGroup", "type", "name"}
      a running instance of the cluster whose private DNS name is name (moto-server.py, 4),
      or the one there is (any state but terminated) -> {"id", "az", "privateIp", "privateDns"}
  terminate-named-instances {"name"} -> {"ids": [...]} (the conformance kit's test hook)
  seed-lb-controller {"cluster", "vpc", "subnets": [id, id], "nodesGroup", "instances": [id...],
      "ingress": "ns/name", "services": [{"stack": "ns/name", "scheme", "targetType": "instance"|"ip", "targets": [ip...]}]}
      what the AWS Load Balancer Controller (kubernetes-sigs/aws-load-balancer-controller) makes for an Ingress
      and for Services it serves, named and tagged as it names and tags them (elbv2.k8s.aws/cluster, and
      ingress.k8s.aws/stack + ingress.k8s.aws/resource or service.k8s.aws/stack + service.k8s.aws/resource):
      its shared backend security group (elbv2.k8s.aws/resource=backend-sg) with a rule on the nodes' group
      for the target groups' ports; for the Ingress an ALB in the subnets with a managed security group, an
      HTTP listener answering 404 by default and a rule forwarding /* to an instance target group of both
      instances; for each Service an NLB with a managed security group, a TCP listener to a target group of
      the instances (instance) or of the given IPs (ip).
      -> {"backendGroup", "groups": [id...], "loadBalancers": {stack: {"name", "dns", "arn"}}, "targetGroups": [name...]}

Only the endpoint given is contacted (credentials are the dummy test/test).
"""

import json
import sys

import boto3


def client(endpoint, region, service):
    return boto3.client(service, endpoint_url=endpoint, region_name=region, aws_access_key_id="test", aws_secret_access_key="test")


def instance_view(i):
    return {"id": i["InstanceId"], "privateIp": i.get("PrivateIpAddress", ""), "privateDns": i.get("PrivateDnsName", "")}


def run_instances(ec2, cluster, subnet, group, count, itype):
    res = ec2.run_instances(
        ImageId="ami-12c6146b",  # one of moto's built-in AMIs
        InstanceType=itype,
        MinCount=count,
        MaxCount=count,
        SubnetId=subnet,
        SecurityGroupIds=[group],
        TagSpecifications=[{"ResourceType": "instance", "Tags": [{"Key": f"kubernetes.io/cluster/{cluster}", "Value": "owned"}]}],
    )
    return [instance_view(i) for i in res["Instances"]]


def seed(ec2, arg):
    cluster, az = arg["cluster"], arg["az"]
    net = int(arg.get("net", 42))
    vpc = ec2.create_vpc(CidrBlock=f"10.{net}.0.0/16")["Vpc"]["VpcId"]
    igw = ec2.create_internet_gateway()["InternetGateway"]["InternetGatewayId"]
    ec2.attach_internet_gateway(InternetGatewayId=igw, VpcId=vpc)
    main = ec2.describe_route_tables(Filters=[{"Name": "vpc-id", "Values": [vpc]}, {"Name": "association.main", "Values": ["true"]}])
    rtb = main["RouteTables"][0]["RouteTableId"]
    ec2.create_route(RouteTableId=rtb, DestinationCidrBlock="0.0.0.0/0", GatewayId=igw)
    subnet = ec2.create_subnet(VpcId=vpc, CidrBlock=f"10.{net}.1.0/24", AvailabilityZone=az)["Subnet"]["SubnetId"]
    ec2.create_tags(
        Resources=[vpc, subnet, rtb],
        Tags=[{"Key": f"kubernetes.io/cluster/{cluster}", "Value": "owned"}, {"Key": "kubernetes.io/role/elb", "Value": "1"}],
    )
    # The nodes' security group, tagged as the cluster's: the load balancer code opens it to the ELB's own group.
    group = ec2.create_security_group(VpcId=vpc, GroupName=f"{cluster}-nodes", Description="nodes")["GroupId"]
    ec2.create_tags(Resources=[group], Tags=[{"Key": f"kubernetes.io/cluster/{cluster}", "Value": "owned"}])
    zones = ec2.describe_availability_zones(ZoneNames=[az])["AvailabilityZones"]
    zone_id = zones[0].get("ZoneId", "") if zones else ""
    instances = run_instances(ec2, cluster, subnet, group, arg["instances"], arg["type"])
    return {"vpc": vpc, "subnet": subnet, "securityGroup": group, "az": az, "zoneId": zone_id, "instances": instances}


DNS_NAME_TAG = "ccm-test/private-dns-name"  # moto-server.py, 4
# What the provider's lookup by name sees (its aliveFilter): every state but terminated.
ALIVE = ["pending", "running", "shutting-down", "stopping", "stopped"]


def named_instances(ec2, name):
    filters = [{"Name": f"tag:{DNS_NAME_TAG}", "Values": [name]}, {"Name": "instance-state-name", "Values": ALIVE}]
    return [i for r in ec2.describe_instances(Filters=filters)["Reservations"] for i in r["Instances"]]


def run_named_instance(ec2, arg):
    found = named_instances(ec2, arg["name"])
    if not found:
        res = ec2.run_instances(
            ImageId="ami-12c6146b",
            InstanceType=arg["type"],
            MinCount=1,
            MaxCount=1,
            SubnetId=arg["subnet"],
            SecurityGroupIds=[arg["securityGroup"]],
            TagSpecifications=[
                {
                    "ResourceType": "instance",
                    "Tags": [{"Key": f"kubernetes.io/cluster/{arg['cluster']}", "Value": "owned"}, {"Key": DNS_NAME_TAG, "Value": arg["name"]}],
                }
            ],
        )
        iid = res["Instances"][0]["InstanceId"]
        ec2.get_waiter("instance_running").wait(InstanceIds=[iid], WaiterConfig={"Delay": 1, "MaxAttempts": 30})
        found = named_instances(ec2, arg["name"])
    i = found[0]
    return {**instance_view(i), "az": i["Placement"]["AvailabilityZone"]}


def frontends(lb):
    """Each listener by its load balancer port: protocols, certificate, its policies and those of its instance port."""
    backends = {b["InstancePort"]: sorted(b.get("PolicyNames", [])) for b in lb.get("BackendServerDescriptions", [])}
    out = {}
    for d in lb.get("ListenerDescriptions", []):
        l = d["Listener"]
        out[str(l["LoadBalancerPort"])] = {
            "protocols": f"{l['Protocol']}->{l.get('InstanceProtocol', '')}",
            "certificate": l.get("SSLCertificateId", ""),
            "policies": sorted(d.get("PolicyNames", [])),
            "backendPolicies": backends.get(l["InstancePort"], []),
        }
    return out


def policies(elb, name):
    return {
        p["PolicyName"]: " ".join(
            [p["PolicyTypeName"], ",".join(sorted(f"{a['AttributeName']}={a.get('AttributeValue', '')}" for a in p.get("PolicyAttributeDescriptions", [])))]
        )
        for p in elb.describe_load_balancer_policies(LoadBalancerName=name)["PolicyDescriptions"]
    }


def describe_elbs(elb):
    out = []
    for lb in elb.describe_load_balancers()["LoadBalancerDescriptions"]:
        tags = elb.describe_tags(LoadBalancerNames=[lb["LoadBalancerName"]])["TagDescriptions"]
        out.append(
            {
                "name": lb["LoadBalancerName"],
                "dns": lb.get("DNSName", ""),
                "instances": sorted(i["InstanceId"] for i in lb.get("Instances", [])),
                "ports": sorted([l["Listener"]["LoadBalancerPort"], l["Listener"]["InstancePort"]] for l in lb.get("ListenerDescriptions", [])),
                "tags": {t["Key"]: t["Value"] for d in tags for t in d.get("Tags", [])},
                "listeners": sorted(
                    f"{l['Listener']['Protocol']}:{l['Listener']['LoadBalancerPort']}->{l['Listener'].get('InstanceProtocol', '')}:{l['Listener']['InstancePort']}"
                    for l in lb.get("ListenerDescriptions", [])
                ),
                "healthCheck": lb.get("HealthCheck", {}),
                "securityGroups": sorted(lb.get("SecurityGroups", [])),
                "subnets": sorted(lb.get("Subnets", [])),
                "scheme": lb.get("Scheme", ""),
                "attributes": elb.describe_load_balancer_attributes(LoadBalancerName=lb["LoadBalancerName"])["LoadBalancerAttributes"],
                "frontends": frontends(lb),
                "policies": policies(elb, lb["LoadBalancerName"]),
            }
        )
    return {"loadBalancers": out}


def tag_map(tags):
    return {t["Key"]: t["Value"] for t in tags}


def describe_nlbs(elbv2):
    out = []
    for lb in elbv2.describe_load_balancers()["LoadBalancers"]:
        arn = lb["LoadBalancerArn"]
        groups = elbv2.describe_target_groups(LoadBalancerArn=arn)["TargetGroups"]
        names = {g["TargetGroupArn"]: g["TargetGroupName"] for g in groups}
        protocols = {g["TargetGroupArn"]: g.get("Protocol", "") for g in groups}
        target_groups = []
        for g in groups:
            health = elbv2.describe_target_health(TargetGroupArn=g["TargetGroupArn"])["TargetHealthDescriptions"]
            target_groups.append(
                {
                    "name": g["TargetGroupName"],
                    "port": g.get("Port"),
                    "protocol": g.get("Protocol"),
                    "targetType": g.get("TargetType"),
                    "healthCheck": {k: v for k, v in g.items() if k.startswith("HealthCheck") or k == "Matcher"},
                    "targets": sorted(f"{h['Target']['Id']}:{h['Target'].get('Port')}" for h in health),
                    "attributes": {a["Key"]: a["Value"] for a in elbv2.describe_target_group_attributes(TargetGroupArn=g["TargetGroupArn"])["Attributes"]},
                    "tags": tag_map(elbv2.describe_tags(ResourceArns=[g["TargetGroupArn"]])["TagDescriptions"][0].get("Tags", [])),
                }
            )
        listeners = elbv2.describe_listeners(LoadBalancerArn=arn)["Listeners"]
        out.append(
            {
                "name": lb["LoadBalancerName"],
                "dns": lb.get("DNSName", ""),
                "type": lb.get("Type", ""),
                "scheme": lb.get("Scheme", ""),
                "subnets": sorted(z.get("SubnetId", "") for z in lb.get("AvailabilityZones", [])),
                "addresses": {
                    z.get("SubnetId", ""): f"{a.get('AllocationId', '')} {a.get('IpAddress', '')}"
                    for z in lb.get("AvailabilityZones", [])
                    for a in z.get("LoadBalancerAddresses", [])
                },
                "tags": tag_map(elbv2.describe_tags(ResourceArns=[arn])["TagDescriptions"][0].get("Tags", [])),
                "attributes": {a["Key"]: a["Value"] for a in elbv2.describe_load_balancer_attributes(LoadBalancerArn=arn)["Attributes"]},
                "securityGroups": sorted(lb.get("SecurityGroups", [])),
                "rules": {str(l["Port"]): listener_rules(elbv2, l["ListenerArn"], names) for l in listeners},
                "listeners": sorted(
                    (
                        {
                            "port": l["Port"],
                            "protocol": l["Protocol"],
                            "targetGroup": ",".join(sorted(names.get(a.get("TargetGroupArn", ""), "?") for a in l.get("DefaultActions", []))),
                            "targetProtocol": ",".join(sorted(protocols.get(a.get("TargetGroupArn", ""), "?") for a in l.get("DefaultActions", []))),
                            "certificates": sorted(c["CertificateArn"] for c in l.get("Certificates", [])),
                            "sslPolicy": l.get("SslPolicy", ""),
                        }
                        for l in listeners
                    ),
                    key=lambda l: l["port"],
                ),
                "targetGroups": sorted(target_groups, key=lambda g: g["name"]),
            }
        )
    return {"loadBalancers": sorted(out, key=lambda l: l["name"])}


def listener_rules(elbv2, listener, names):
    """A listener's rules, default included: `<priority> <field>=<values>;... -> <type> <target group or response>`."""

    def action(a):
        if a["Type"] == "forward":
            return "forward " + names.get(a.get("TargetGroupArn", ""), "?")
        if a["Type"] == "fixed-response":
            c = a.get("FixedResponseConfig", {})
            return f"fixed-response {c.get('StatusCode', '')} {c.get('ContentType', '')}"
        return a["Type"]

    out = []
    for r in elbv2.describe_rules(ListenerArn=listener)["Rules"]:
        conditions = ";".join(f"{c.get('Field', '')}={','.join(c.get('Values', []))}" for c in r.get("Conditions", []))
        out.append(f"{r.get('Priority', '')} {conditions} -> {' '.join(action(a) for a in r.get('Actions', []))}")
    return sorted(out)


LBC_CLUSTER_TAG = "elbv2.k8s.aws/cluster"


def lbc_name(stack, salt=""):
    """The controller's names: k8s-<namespace, 8>-<name, 8>-<10 hex of a hash>, non-alphanumerics dropped (at most 32 characters)."""
    import hashlib
    import re

    ns, name = (re.sub(r"[^A-Za-z0-9]", "", part) for part in stack.split("/"))
    digest = hashlib.sha256(f"{stack}{salt}".encode()).hexdigest()[:10]
    return f"k8s-{ns[:8]}-{name[:8]}-{digest}"


def seed_lb_controller(ec2, elbv2, arg):
    cluster, vpc, subnets = arg["cluster"], arg["vpc"], arg["subnets"]
    as_tags = lambda d: [{"Key": k, "Value": v} for k, v in d.items()]

    def group(name, tags, ports):
        gid = ec2.create_security_group(VpcId=vpc, GroupName=name, Description="[k8s] Managed SecurityGroup for LoadBalancer")["GroupId"]
        ec2.create_tags(Resources=[gid], Tags=as_tags({LBC_CLUSTER_TAG: cluster, **tags}))
        if ports:
            ec2.authorize_security_group_ingress(
                GroupId=gid,
                IpPermissions=[{"IpProtocol": "tcp", "FromPort": p, "ToPort": p, "IpRanges": [{"CidrIp": "0.0.0.0/0"}]} for p in ports],
            )
        return gid

    backend = group(f"k8s-traffic-{cluster[:20]}-{lbc_name('x/' + cluster)[-10:]}", {"elbv2.k8s.aws/resource": "backend-sg"}, [])
    groups = [backend]
    lbs, target_groups, node_ports = {}, [], []

    def target_group(name, protocol, port, ttype, tags, targets):
        kw = {"Name": name, "Protocol": protocol, "Port": port, "VpcId": vpc, "TargetType": ttype, "Tags": as_tags({LBC_CLUSTER_TAG: cluster, **tags})}
        tg = elbv2.create_target_group(**kw)["TargetGroups"][0]["TargetGroupArn"]
        elbv2.register_targets(TargetGroupArn=tg, Targets=[{"Id": t, "Port": port} for t in targets])
        target_groups.append(name)
        return tg

    def load_balancer(stack, kind, key, scheme, own_group):
        name = lbc_name(stack)
        lb = elbv2.create_load_balancer(
            Name=name,
            Subnets=subnets,
            SecurityGroups=[own_group, backend],
            Scheme=scheme,
            Type=kind,
            Tags=as_tags({LBC_CLUSTER_TAG: cluster, f"{key}/stack": stack, f"{key}/resource": "LoadBalancer"}),
        )["LoadBalancers"][0]
        lbs[stack] = {"name": name, "dns": lb["DNSName"], "arn": lb["LoadBalancerArn"]}
        return lb["LoadBalancerArn"]

    # The Ingress: an ALB, HTTP 80, a rule forwarding /* to the Service behind it (an instance target group on its node port).
    stack, key = arg["ingress"], "ingress.k8s.aws"
    alb_group = group(lbc_name(stack, "sg"), {f"{key}/stack": stack, f"{key}/resource": "ManagedLBSecurityGroup"}, [80])
    groups.append(alb_group)
    alb = load_balancer(stack, "application", key, "internet-facing", alb_group)
    node_ports.append(arg["ingressNodePort"])
    tg = target_group(lbc_name(stack, "tg"), "HTTP", arg["ingressNodePort"], "instance", {f"{key}/stack": stack, f"{key}/resource": f"{stack}-backend:80"}, arg["instances"])
    listener = elbv2.create_listener(
        LoadBalancerArn=alb,
        Protocol="HTTP",
        Port=80,
        DefaultActions=[{"Type": "fixed-response", "FixedResponseConfig": {"StatusCode": "404", "ContentType": "text/plain"}}],
    )["Listeners"][0]["ListenerArn"]
    elbv2.create_rule(
        ListenerArn=listener,
        Priority=1,
        Conditions=[{"Field": "path-pattern", "Values": ["/*"]}],
        Actions=[{"Type": "forward", "TargetGroupArn": tg}],
    )
    # Each Service: an NLB with its own security group, TCP 80 to a target group of the instances or of pod IPs.
    for svc in arg["services"]:
        stack, key = svc["stack"], "service.k8s.aws"
        own = group(lbc_name(stack, "sg"), {f"{key}/stack": stack, f"{key}/resource": "ManagedLBSecurityGroup"}, [80])
        groups.append(own)
        nlb = load_balancer(stack, "network", key, svc["scheme"], own)
        ip = svc["targetType"] == "ip"
        # An instance target group's port is its Service's node port (unique in the cluster, as the API server allocates it).
        port = 8080 if ip else svc["nodePort"]
        if not ip:
            node_ports.append(port)
        tg = target_group(lbc_name(stack, "tg"), "TCP", port, svc["targetType"], {f"{key}/stack": stack, f"{key}/resource": f"{stack}:80"}, svc["targets"] if ip else arg["instances"])
        elbv2.create_listener(LoadBalancerArn=nlb, Protocol="TCP", Port=80, DefaultActions=[{"Type": "forward", "TargetGroupArn": tg}])
    # The nodes' group admits the backend group on the target groups' ports (the controller's networking rules; pods' ports for ip targets).
    ports = node_ports + [8080]
    ec2.authorize_security_group_ingress(
        GroupId=arg["nodesGroup"],
        IpPermissions=[
            {
                "IpProtocol": "tcp",
                "FromPort": p,
                "ToPort": p,
                "UserIdGroupPairs": [{"GroupId": backend, "Description": "elbv2.k8s.aws/targetGroupBinding=shared"}],
            }
            for p in sorted(set(ports))
        ],
    )
    return {"backendGroup": backend, "groups": groups, "loadBalancers": lbs, "targetGroups": target_groups}


def permission_view(p):
    ports = f"{p.get('IpProtocol')}:{p.get('FromPort', '')}-{p.get('ToPort', '')}"
    sources = [r["CidrIp"] for r in p.get("IpRanges", [])] + [g["GroupId"] for g in p.get("UserIdGroupPairs", [])]
    return [f"{ports} from {s}" for s in sources]


def security_group_rules(ec2, vpc):
    groups = ec2.describe_security_groups(Filters=[{"Name": "vpc-id", "Values": [vpc]}])["SecurityGroups"]
    return {
        "groups": {
            g["GroupName"]: {
                "id": g["GroupId"],
                "tags": tag_map(g.get("Tags", [])),
                "ingress": sorted(r for p in g.get("IpPermissions", []) for r in permission_view(p)),
            }
            for g in groups
        }
    }


def routes(ec2, vpc):
    out = []
    for rt in ec2.describe_route_tables(Filters=[{"Name": "vpc-id", "Values": [vpc]}])["RouteTables"]:
        for r in rt.get("Routes", []):
            target = r.get("InstanceId") or r.get("GatewayId") or r.get("NetworkInterfaceId") or "?"
            out.append(f"{rt['RouteTableId']} {r.get('DestinationCidrBlock') or r.get('DestinationIpv6CidrBlock')} -> {target} {r.get('State', '')}")
    return {"routes": sorted(out)}


def main():
    endpoint, region, command = sys.argv[1:4]
    arg = json.loads(sys.argv[4]) if len(sys.argv) > 4 else {}
    ec2, elb, elbv2 = (client(endpoint, region, s) for s in ("ec2", "elb", "elbv2"))
    if command == "seed":
        out = seed(ec2, arg)
    elif command == "run-instances":
        out = {"instances": run_instances(ec2, arg["cluster"], arg["subnet"], arg["securityGroup"], arg["count"], arg["type"])}
    elif command == "stop-instances":
        ec2.stop_instances(InstanceIds=arg["ids"])
        out = {}
    elif command == "start-instances":
        ec2.start_instances(InstanceIds=arg["ids"])
        out = {}
    elif command == "terminate-instances":
        ec2.terminate_instances(InstanceIds=arg["ids"])
        out = {}
    elif command == "run-named-instance":
        out = run_named_instance(ec2, arg)
    elif command == "terminate-named-instances":
        ids = [i["InstanceId"] for i in named_instances(ec2, arg["name"])]
        if ids:
            ec2.terminate_instances(InstanceIds=ids)
        out = {"ids": ids}
    elif command == "instance-tags":
        res = ec2.describe_tags(Filters=[{"Name": "resource-id", "Values": [arg["id"]]}])["Tags"]
        out = {"tags": {t["Key"]: t["Value"] for t in res}}
    elif command == "describe-elbs":
        out = describe_elbs(elb)
    elif command == "seed-lb-controller":
        out = seed_lb_controller(ec2, elbv2, arg)
    elif command == "describe-nlbs":
        out = describe_nlbs(elbv2)
    elif command == "create-security-group":
        out = {"id": ec2.create_security_group(VpcId=arg["vpc"], GroupName=arg["name"], Description=arg["name"])["GroupId"]}
    elif command == "create-subnet":
        subnet = ec2.create_subnet(VpcId=arg["vpc"], CidrBlock=arg["cidr"], AvailabilityZone=arg["az"])["Subnet"]["SubnetId"]
        tags = [{"Key": k, "Value": v} for k, v in arg.get("tags", {}).items()]
        if tags:
            ec2.create_tags(Resources=[subnet], Tags=tags)
        out = {"id": subnet}
    elif command == "create-certificate":
        acm = client(endpoint, region, "acm")
        out = {"arn": acm.request_certificate(DomainName=arg["domain"], ValidationMethod="DNS")["CertificateArn"]}
    elif command == "create-bucket":
        client(endpoint, region, "s3").create_bucket(Bucket=arg["name"])
        out = {}
    elif command == "allocate-addresses":
        found = [ec2.allocate_address(Domain="vpc") for _ in range(arg["count"])]
        out = {"addresses": [{"allocation": a["AllocationId"], "ip": a["PublicIp"]} for a in found]}
    elif command == "routes":
        out = routes(ec2, arg["vpc"])
    elif command == "security-group-rules":
        out = security_group_rules(ec2, arg["vpc"])
    elif command == "security-groups":
        groups = ec2.describe_security_groups(Filters=[{"Name": "vpc-id", "Values": [arg["vpc"]]}])["SecurityGroups"]
        out = {"groups": [{"id": g["GroupId"], "name": g["GroupName"]} for g in groups]}
    else:
        raise SystemExit(f"unknown command {command!r}")
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
