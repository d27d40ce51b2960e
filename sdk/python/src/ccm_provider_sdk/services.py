"""The cloud services a provider may serve, how a provider object offers
them, and the GetPluginCapabilities answer derived from what it implements."""
import inspect
from dataclasses import dataclass, field

from google.protobuf import message_factory

from ccm.provider.v1 import (
    identity_pb2,
    instances_pb2,
    instances_pb2_grpc,
    load_balancers_pb2,
    load_balancers_pb2_grpc,
    routes_pb2,
    routes_pb2_grpc,
    volumes_pb2,
    volumes_pb2_grpc,
    zones_pb2,
    zones_pb2_grpc,
)


@dataclass(frozen=True)
class Info:
    """What a provider declares about itself (GetPluginInfo, GetPluginCapabilities)."""

    name: str  # DNS-style implementation name, e.g. "example.com"
    provider_name: str  # used in providerIDs ("<provider_name>://<id>"): a lowercase DNS label
    vendor_version: str = ""
    has_cluster_id: bool = False  # cloud objects are tagged with the cluster name (upstream HasClusterID)
    manifest: dict = field(default_factory=dict)  # free-form build facts
    # CAPABILITY_LOAD_BALANCER_IP_MODE_PROXY (only with a load balancer service).
    load_balancer_ip_mode_proxy: bool = False
    # CAPABILITY_LOAD_BALANCER_POD_BACKENDS (protocol 1.1; only with a load balancer service): the host
    # sends ServiceRef.endpoints and pod_backends for the Services that ask for pod backends.
    load_balancer_pod_backends: bool = False
    # CAPABILITY_VOLUMES_EXPAND_ONLINE (only with a volume service).
    volumes_expand_online: bool = False
    # Node ownership (KEP-5778): the providerID prefixes of the Nodes this provider owns, each ending
    # in "://" (empty: "<provider_name>://"); the host never sends it a Node with another prefix.
    provider_id_prefixes: tuple = ()
    # Label selector (kubectl -l syntax) claiming Nodes without a providerID yet. Empty: with one
    # provider in the host, every such Node; with several, none.
    node_selector: str = ""
    # Service spec.loadBalancerClass values the load balancers serve (only with
    # a load balancer service); Services without a class too unless
    # load_balancer_classes_only. Default: Services without a class only.
    load_balancer_classes: tuple = ()
    load_balancer_classes_only: bool = False
    # StorageClass provisioner (CSI driver) names the volumes serve (only with a
    # volume service): the host sends this provider only the claims, PVs and
    # VolumeAttachments of these names. Default: the host's
    # --volume-provisioner-name, else `name`.
    volume_provisioners: tuple = ()


@dataclass(frozen=True)
class ServiceEntry:
    attribute: str  # the provider attribute holding the service object
    descriptor: object  # the ServiceDescriptor
    servicer: type  # the generated XServiceServicer, whose methods do not count as implemented
    service: int  # the Service enum value


def _entry(attribute, module, grpc_module, name, service):
    return ServiceEntry(attribute, module.DESCRIPTOR.services_by_name[name], getattr(grpc_module, name + "Servicer"), service)


# Every optional cloud service, in Service enum order.
SERVICES = [
    _entry("instances", instances_pb2, instances_pb2_grpc, "InstancesService", identity_pb2.SERVICE_INSTANCES),
    _entry("zones", zones_pb2, zones_pb2_grpc, "ZonesService", identity_pb2.SERVICE_ZONES),
    _entry("clusters", zones_pb2, zones_pb2_grpc, "ClustersService", identity_pb2.SERVICE_CLUSTERS),
    _entry("load_balancers", load_balancers_pb2, load_balancers_pb2_grpc, "LoadBalancersService", identity_pb2.SERVICE_LOAD_BALANCERS),
    _entry("routes", routes_pb2, routes_pb2_grpc, "RoutesService", identity_pb2.SERVICE_ROUTES),
    _entry("volumes", volumes_pb2, volumes_pb2_grpc, "VolumesService", identity_pb2.SERVICE_VOLUMES),
]

# InstancesService RPCs of the legacy (Instances v1) surface.
LEGACY_INSTANCES_METHODS = ["NodeAddresses", "NodeAddressesByProviderId", "InstanceId", "InstanceType",
                            "InstanceTypeByProviderId", "AddSshKeyToAllInstances", "CurrentNodeName"]

_CLOUD_PREFIXES = tuple(f"/{e.descriptor.full_name}/" for e in SERVICES)


def is_cloud_method(full_method):
    """A call of a cloud service (not Identity, Lifecycle, health or the test
    hooks): what answers NOT_CONFIGURED before the first Configure."""
    return full_method.startswith(_CLOUD_PREFIXES)


def provider_info(provider):
    info = provider.info() if callable(getattr(provider, "info", None)) else getattr(provider, "info", None)
    if not isinstance(info, Info):
        raise TypeError(f"{type(provider).__name__}.info is {type(info).__name__}, want a ccm_provider_sdk.Info")
    return info


@dataclass
class BoundService:
    """A provider's service object with its implemented RPCs looked up."""

    entry: ServiceEntry
    obj: object
    methods: dict  # RPC name -> bound method

    def has(self, name):
        return name in self.methods


def _implemented(obj, entry, name):
    """obj's method for RPC `name`, or None: a method inherited from the
    generated servicer (which only answers UNIMPLEMENTED) does not count."""
    method = getattr(obj, name, None)
    if method is None or not callable(method):
        return None
    inherited = getattr(entry.servicer, name, None)
    if inherited is not None and getattr(method, "__func__", None) is inherited:
        return None
    try:
        inspect.signature(method).bind(None, None)
    except TypeError:
        raise TypeError(f"{type(obj).__name__}.{name} cannot be called as {name}(request, context), "
                        f"the signature of {entry.descriptor.full_name}/{name}") from None
    except ValueError:
        pass  # No signature to inspect (a builtin): trust it.
    return method


def bind_services(provider):
    """{attribute: BoundService} for every service object the provider has (an
    attribute that is absent or None: not served). Raises TypeError for an
    RPC method that cannot take (request, context)."""
    out = {}
    for e in SERVICES:
        obj = getattr(provider, e.attribute, None)
        if obj is None:
            continue
        methods = {}
        for m in e.descriptor.methods:
            impl = _implemented(obj, e, m.name)
            if impl is not None:
                methods[m.name] = impl
        out[e.attribute] = BoundService(e, obj, methods)
    return out


def message_class(descriptor):
    return message_factory.GetMessageClass(descriptor)


def derive_capabilities(provider, bound=None):
    """The GetPluginCapabilitiesResponse for `provider`, derived from what it
    implements (the rules of the TypeScript and Go SDKs):
      services: one per service object;
      INSTANCES_BATCH: instances has GetInstancesStatus and GetInstancesMetadata;
      INSTANCES_LEGACY: instances has any legacy (Instances v1) method;
      LOAD_BALANCER_BATCH_HOSTS / _BATCH_ENSURE / _LIST: load balancers have
        UpdateLoadBalancerHosts / EnsureLoadBalancers / ListLoadBalancers;
      LOAD_BALANCER_IP_MODE_PROXY: info.load_balancer_ip_mode_proxy and a load balancer service;
      LOAD_BALANCER_POD_BACKENDS: info.load_balancer_pod_backends and a load balancer service;
      ROUTES_RECONCILE: routes have ReconcileRoutes;
      VOLUMES_LIST_PUBLISHED_NODES: volumes have ListVolumes;
      VOLUMES_EXPAND_ONLINE: info.volumes_expand_online and a volume service;
      METRICS: the provider has metrics();
      PROVIDER_SCHEMA: the provider has provider_schema().
    The load balancer class declaration (info.load_balancer_classes,
    info.load_balancer_classes_only) is sent as is with a load balancer service,
    the volume provisioner names (info.volume_provisioners) with a volume service.
    Capabilities are sorted. Fixed for the life of the process."""
    info = provider_info(provider)
    bound = bind_services(provider) if bound is None else bound
    inst, lb, routes, vols = (bound.get(k) for k in ("instances", "load_balancers", "routes", "volumes"))

    def has(b, name):
        return b is not None and b.has(name)

    caps = []
    rules = [
        (has(inst, "GetInstancesStatus") and has(inst, "GetInstancesMetadata"), identity_pb2.CAPABILITY_INSTANCES_BATCH),
        (any(has(inst, m) for m in LEGACY_INSTANCES_METHODS), identity_pb2.CAPABILITY_INSTANCES_LEGACY),
        (has(lb, "UpdateLoadBalancerHosts"), identity_pb2.CAPABILITY_LOAD_BALANCER_BATCH_HOSTS),
        (has(lb, "EnsureLoadBalancers"), identity_pb2.CAPABILITY_LOAD_BALANCER_BATCH_ENSURE),
        (has(lb, "ListLoadBalancers"), identity_pb2.CAPABILITY_LOAD_BALANCER_LIST),
        (lb is not None and info.load_balancer_ip_mode_proxy, identity_pb2.CAPABILITY_LOAD_BALANCER_IP_MODE_PROXY),
        (lb is not None and info.load_balancer_pod_backends, identity_pb2.CAPABILITY_LOAD_BALANCER_POD_BACKENDS),
        (has(routes, "ReconcileRoutes"), identity_pb2.CAPABILITY_ROUTES_RECONCILE),
        (has(vols, "ListVolumes"), identity_pb2.CAPABILITY_VOLUMES_LIST_PUBLISHED_NODES),
        (vols is not None and info.volumes_expand_online, identity_pb2.CAPABILITY_VOLUMES_EXPAND_ONLINE),
        (callable(getattr(provider, "metrics", None)), identity_pb2.CAPABILITY_METRICS),
        (callable(getattr(provider, "provider_schema", None)), identity_pb2.CAPABILITY_PROVIDER_SCHEMA),
    ]
    for on, cap in rules:
        if on:
            caps.append(cap)
    return identity_pb2.GetPluginCapabilitiesResponse(
        services=[e.service for e in SERVICES if e.attribute in bound], capabilities=sorted(caps),
        provider_name=info.provider_name, has_cluster_id=info.has_cluster_id,
        provider_id_prefixes=list(info.provider_id_prefixes), node_selector=info.node_selector,
        load_balancer_classes=list(info.load_balancer_classes) if lb is not None else [],
        load_balancer_classes_only=info.load_balancer_classes_only if lb is not None else False,
        volume_provisioners=list(info.volume_provisioners) if vols is not None else [])
