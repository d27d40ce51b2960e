"""The service objects: Instances, LoadBalancers, Routes, Volumes, and the
test-only TestHooks. The SDK serves them: RPCs not defined here answer
UNIMPLEMENTED, and the capabilities it declares are derived from those that are
(no batch RPCs and no ListLoadBalancers, so the host uses single calls)."""
import grpc

from ccm.provider.testing.v1 import test_hooks_pb2, test_hooks_pb2_grpc
from ccm.provider.v1 import (
    common_pb2,
    instances_pb2,
    instances_pb2_grpc,
    load_balancers_pb2,
    load_balancers_pb2_grpc,
    routes_pb2,
    routes_pb2_grpc,
    volumes_pb2,
    volumes_pb2_grpc,
)
from ccm_provider_sdk import ProviderError, already_exists, handles_errors, in_use, instance_not_found, not_found
from ccm_provider_sdk import invalid_argument as invalid
from .cloud import REGION_KEY, ZONE_KEY
from .paging import paginate

GIB = 1 << 30


def cluster_of(meta):
    return meta.cluster_name or "kubernetes"


def _addresses(inst):
    return [common_pb2.NodeAddress(type=t, address=a) for t, a in inst.addresses]


class Instances(instances_pb2_grpc.InstancesServiceServicer):
    def __init__(self, cloud):
        self.cloud = cloud

    def InstanceExists(self, request, context):
        with self.cloud.lock:
            return instances_pb2.InstanceExistsResponse(exists=self.cloud.find_instance(request.node) is not None)

    def InstanceShutdown(self, request, context):
        with self.cloud.lock:
            return instances_pb2.InstanceShutdownResponse(shutdown=self.cloud.instance_or_raise(request.node).shutdown)

    def InstanceMetadata(self, request, context):
        with self.cloud.lock:
            inst = self.cloud.instance_or_raise(request.node)
            return instances_pb2.InstanceMetadataResponse(metadata=instances_pb2.InstanceMetadata(
                provider_id=inst.provider_id, instance_type=inst.type, node_addresses=_addresses(inst),
                zone=inst.zone, region=inst.region, additional_labels=inst.labels))


def _check_service(svc, need_ports):
    if not svc.uid:
        raise invalid("service.uid is required")
    if need_ports and not svc.ports:
        raise invalid(f"service {svc.namespace}/{svc.name} has no ports")
    for p in svc.ports:
        if p.protocol == load_balancers_pb2.PROTOCOL_UNSPECIFIED:
            raise invalid(f"port {p.port} has no protocol")
        if not 1 <= p.port <= 65535:
            raise invalid(f"port {p.port} is outside 1..65535")


def _node_names(nodes):
    if any(not n.name for n in nodes):
        raise invalid("a backend node has no name")
    return [n.name for n in nodes]


def _lb_name(uid):
    """Upstream's DefaultLoadBalancerName: "a" + uid without dashes, at most 32 chars."""
    return ("a" + uid.replace("-", ""))[:32]


def _lb_status(lb):
    return load_balancers_pb2.LoadBalancerStatus(ingress=[load_balancers_pb2.LoadBalancerIngress(ip=lb["ip"], ip_mode=load_balancers_pb2.IP_MODE_VIP)])


class LoadBalancers(load_balancers_pb2_grpc.LoadBalancersServiceServicer):
    def __init__(self, cloud):
        self.cloud = cloud

    def GetLoadBalancer(self, request, context):
        _check_service(request.service, False)
        with self.cloud.lock:
            lb = self.cloud.lbs.get((cluster_of(request.meta), request.service.uid))
            if lb is None:
                return load_balancers_pb2.GetLoadBalancerResponse(exists=False)
            return load_balancers_pb2.GetLoadBalancerResponse(exists=True, status=_lb_status(lb))

    def GetLoadBalancerName(self, request, context):
        _check_service(request.service, False)
        return load_balancers_pb2.GetLoadBalancerNameResponse(name=_lb_name(request.service.uid))

    def EnsureLoadBalancer(self, request, context):
        _check_service(request.service, True)
        nodes = _node_names(request.nodes)
        with self.cloud.lock:
            key = (cluster_of(request.meta), request.service.uid)
            lb = self.cloud.lbs.get(key)
            if lb is None:
                lb = {"name": _lb_name(request.service.uid), "ip": self.cloud.alloc_ip()}
                self.cloud.lbs[key] = lb
            lb["ports"] = list(request.service.ports)
            lb["nodes"] = nodes
            # Tagged with the cluster UID (RequestMeta.cluster_uid), as the protocol asks of
            # every load balancer ensured; kept when a host sends none.
            lb["cluster_uid"] = request.meta.cluster_uid or lb.get("cluster_uid", "")
            return load_balancers_pb2.EnsureLoadBalancerResponse(status=_lb_status(lb))

    def UpdateLoadBalancer(self, request, context):
        _check_service(request.service, False)
        nodes = _node_names(request.nodes)
        with self.cloud.lock:
            lb = self.cloud.lbs.get((cluster_of(request.meta), request.service.uid))
            if lb is None:
                svc = request.service
                raise not_found(f"load balancer {_lb_name(svc.uid)} for service {svc.namespace}/{svc.name} does not exist")
            lb["nodes"] = nodes
        return load_balancers_pb2.UpdateLoadBalancerResponse()

    def EnsureLoadBalancerDeleted(self, request, context):
        _check_service(request.service, False)
        with self.cloud.lock:
            self.cloud.lbs.pop((cluster_of(request.meta), request.service.uid), None)
        return load_balancers_pb2.EnsureLoadBalancerDeletedResponse()


class Routes(routes_pb2_grpc.RoutesServiceServicer):
    def __init__(self, cloud):
        self.cloud = cloud

    def _proto(self, r):
        return routes_pb2.Route(name=r["name"], target_node=r["target"], target_node_addresses=r["addresses"],
                                destination_cidr=str(r["dest"]), blackhole=r["target"] not in self.cloud.instances)

    def ListRoutes(self, request, context):
        cluster = cluster_of(request.meta)
        with self.cloud.lock:
            mine = {dest: r for (c, dest), r in self.cloud.routes.items() if c == cluster}
            page, token = paginate(list(mine), request.page_size, request.page_token, "routes", cluster)
            return routes_pb2.ListRoutesResponse(routes=[self._proto(mine[d]) for d in page], next_page_token=token)

    def CreateRoute(self, request, context):
        with self.cloud.lock:
            stored, _ = self.cloud.create_route(cluster_of(request.meta), request.name_hint, request.route)
            return routes_pb2.CreateRouteResponse(route=self._proto(stored))

    def DeleteRoute(self, request, context):
        dest = self.cloud.parse_cidr(request.route.destination_cidr)
        with self.cloud.lock:
            key = (cluster_of(request.meta), str(dest))
            r = self.cloud.routes.get(key)
            if r and (not request.route.target_node or r["target"] == request.route.target_node):
                del self.cloud.routes[key]
        return routes_pb2.DeleteRouteResponse()


def _size_for(cr):
    req, limit = cr.required_bytes, cr.limit_bytes
    if req < 0 or limit < 0:
        raise invalid("capacity_range bytes must be >= 0")
    if limit and req > limit:
        raise invalid(f"capacity_range.required_bytes {req} exceeds limit_bytes {limit}")
    size = (max(req, 1) + GIB - 1) // GIB * GIB
    return min(size, limit) if limit else size


class Volumes(volumes_pb2_grpc.VolumesServiceServicer):
    def __init__(self, cloud):
        self.cloud = cloud

    def _by_id(self, vid):
        return next((v for v in self.cloud.volumes.values() if v["id"] == vid), None)

    @staticmethod
    def _proto(v):
        return volumes_pb2.Volume(volume_id=v["id"], capacity_bytes=v["bytes"], volume_context={"zone": v["zone"]},
                                  accessible_topology=[common_pb2.Topology(segments={ZONE_KEY: v["zone"]})])

    def CreateVolume(self, request, context):
        if not request.name:
            raise invalid("name is required")
        size = _size_for(request.capacity_range)
        with self.cloud.lock:
            v = self.cloud.volumes.get(request.name)
            if v is not None:
                cr = request.capacity_range
                if v["bytes"] < cr.required_bytes or (cr.limit_bytes and v["bytes"] > cr.limit_bytes) or v["params"] != dict(request.parameters):
                    raise already_exists(f"volume {request.name} exists with {v['bytes']} bytes and other parameters")
                return volumes_pb2.CreateVolumeResponse(volume=self._proto(v))
            zone = ""
            for topo in list(request.accessibility_requirements.preferred) + list(request.accessibility_requirements.requisite):
                zone = zone or topo.segments.get(ZONE_KEY, "")
            self.cloud.next_id += 1
            v = {"id": f"vol-{self.cloud.next_id:08x}", "name": request.name, "bytes": size, "zone": zone or self.cloud.zone,
                 "params": dict(request.parameters), "attached": set()}
            self.cloud.volumes[request.name] = v
            return volumes_pb2.CreateVolumeResponse(volume=self._proto(v))

    def DeleteVolume(self, request, context):
        with self.cloud.lock:
            v = self._by_id(request.volume_id)
            if v is not None:
                if v["attached"]:
                    raise in_use(f"volume {v['id']} is attached")
                del self.cloud.volumes[v["name"]]
        return volumes_pb2.DeleteVolumeResponse()

    def ControllerPublishVolume(self, request, context):
        if not request.volume_id or not request.node_id:
            raise invalid("volume_id and node_id are required")
        with self.cloud.lock:
            v = self._by_id(request.volume_id)
            if v is None:
                raise not_found(f"volume {request.volume_id} not found")
            if self.cloud.by_provider_id(request.node_id) is None:
                raise instance_not_found(f"no instance with providerID {request.node_id}")
            if v["attached"] and request.node_id not in v["attached"]:
                raise ProviderError(grpc.StatusCode.FAILED_PRECONDITION, f"volume {v['id']} is attached to another instance; detach it first")
            v["attached"].add(request.node_id)
            return volumes_pb2.ControllerPublishVolumeResponse(publish_context={"devicePath": f"/dev/disk/by-id/mempy-{v['id']}"})

    def ControllerUnpublishVolume(self, request, context):
        with self.cloud.lock:
            v = self._by_id(request.volume_id)
            if v is not None:
                if request.node_id:
                    v["attached"].discard(request.node_id)
                else:
                    v["attached"].clear()
        return volumes_pb2.ControllerUnpublishVolumeResponse()

    def ControllerExpandVolume(self, request, context):
        want, limit = request.capacity_range.required_bytes, request.capacity_range.limit_bytes
        if want <= 0:
            raise invalid("capacity_range.required_bytes is required")
        with self.cloud.lock:
            v = self._by_id(request.volume_id)
            if v is None:
                raise not_found(f"volume {request.volume_id} not found")
            if limit and limit < v["bytes"]:
                raise invalid(f"volume {v['id']} has {v['bytes']} bytes; shrinking to {limit} is not supported")
            if want > v["bytes"]:
                v["bytes"] = _size_for(request.capacity_range)
            return volumes_pb2.ControllerExpandVolumeResponse(capacity_bytes=v["bytes"], node_expansion_required=True)

    def ListVolumes(self, request, context):
        with self.cloud.lock:
            by_id = {v["id"]: v for v in self.cloud.volumes.values()}
            page, token = paginate(list(by_id), request.page_size, request.page_token, "volumes", "")
            return volumes_pb2.ListVolumesResponse(next_page_token=token, entries=[
                volumes_pb2.ListVolumesEntry(volume=self._proto(by_id[i]), published_node_ids=sorted(by_id[i]["attached"])) for i in page])

    def GetVolumeLabels(self, request, context):
        with self.cloud.lock:
            v = self._by_id(request.volume_id)
            if v is None:
                raise not_found(f"volume {request.volume_id} not found")
            return volumes_pb2.GetVolumeLabelsResponse(labels={ZONE_KEY: v["zone"], REGION_KEY: self.cloud.region})


class TestHooks(test_hooks_pb2_grpc.TestHooksServiceServicer):
    """Served only with CCM_PROVIDER_TEST_HOOKS=1."""

    def __init__(self, cloud):
        self.cloud = cloud

    @handles_errors
    def CreateTestInstance(self, request, context):
        if not request.name:
            raise invalid("name is required")
        with self.cloud.lock:
            inst = self.cloud.upsert_instance(request.name, request.internal_ip, request.zone)
            return test_hooks_pb2.CreateTestInstanceResponse(provider_id=inst.provider_id)

    @handles_errors
    def DeleteTestInstance(self, request, context):
        with self.cloud.lock:
            self.cloud.instances.pop(request.name, None)
        return test_hooks_pb2.DeleteTestInstanceResponse()

    @handles_errors
    def SetThrottle(self, request, context):
        with self.cloud.lock:
            self.cloud.throttle = request.retry_delay_ms if request.enabled else None
        return test_hooks_pb2.SetThrottleResponse()

    @handles_errors
    def ListTestLoadBalancers(self, request, context):
        # This cloud has no data plane: tests check the store instead of traffic.
        with self.cloud.lock:
            out = [
                test_hooks_pb2.TestLoadBalancer(
                    cluster_name=cluster, service_uid=uid, name=lb["name"], ingress_ips=[lb["ip"]],
                    ports=[p.port for p in lb["ports"]], node_names=sorted(lb["nodes"]))
                for (cluster, uid), lb in self.cloud.lbs.items()
            ]
        return test_hooks_pb2.ListTestLoadBalancersResponse(load_balancers=out)
