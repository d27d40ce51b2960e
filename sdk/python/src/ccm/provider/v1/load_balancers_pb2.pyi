from ccm.provider.v1 import common_pb2 as _common_pb2
from google.rpc import status_pb2 as _status_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Protocol(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    PROTOCOL_UNSPECIFIED: _ClassVar[Protocol]
    PROTOCOL_TCP: _ClassVar[Protocol]
    PROTOCOL_UDP: _ClassVar[Protocol]
    PROTOCOL_SCTP: _ClassVar[Protocol]

class IpFamily(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    IP_FAMILY_UNSPECIFIED: _ClassVar[IpFamily]
    IP_FAMILY_IPV4: _ClassVar[IpFamily]
    IP_FAMILY_IPV6: _ClassVar[IpFamily]

class ExternalTrafficPolicy(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    EXTERNAL_TRAFFIC_POLICY_UNSPECIFIED: _ClassVar[ExternalTrafficPolicy]
    EXTERNAL_TRAFFIC_POLICY_CLUSTER: _ClassVar[ExternalTrafficPolicy]
    EXTERNAL_TRAFFIC_POLICY_LOCAL: _ClassVar[ExternalTrafficPolicy]

class SessionAffinity(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SESSION_AFFINITY_UNSPECIFIED: _ClassVar[SessionAffinity]
    SESSION_AFFINITY_NONE: _ClassVar[SessionAffinity]
    SESSION_AFFINITY_CLIENT_IP: _ClassVar[SessionAffinity]

class IpFamilyPolicy(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    IP_FAMILY_POLICY_UNSPECIFIED: _ClassVar[IpFamilyPolicy]
    IP_FAMILY_POLICY_SINGLE_STACK: _ClassVar[IpFamilyPolicy]
    IP_FAMILY_POLICY_PREFER_DUAL_STACK: _ClassVar[IpFamilyPolicy]
    IP_FAMILY_POLICY_REQUIRE_DUAL_STACK: _ClassVar[IpFamilyPolicy]

class InternalTrafficPolicy(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    INTERNAL_TRAFFIC_POLICY_UNSPECIFIED: _ClassVar[InternalTrafficPolicy]
    INTERNAL_TRAFFIC_POLICY_CLUSTER: _ClassVar[InternalTrafficPolicy]
    INTERNAL_TRAFFIC_POLICY_LOCAL: _ClassVar[InternalTrafficPolicy]

class IpMode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    IP_MODE_UNSPECIFIED: _ClassVar[IpMode]
    IP_MODE_VIP: _ClassVar[IpMode]
    IP_MODE_PROXY: _ClassVar[IpMode]
PROTOCOL_UNSPECIFIED: Protocol
PROTOCOL_TCP: Protocol
PROTOCOL_UDP: Protocol
PROTOCOL_SCTP: Protocol
IP_FAMILY_UNSPECIFIED: IpFamily
IP_FAMILY_IPV4: IpFamily
IP_FAMILY_IPV6: IpFamily
EXTERNAL_TRAFFIC_POLICY_UNSPECIFIED: ExternalTrafficPolicy
EXTERNAL_TRAFFIC_POLICY_CLUSTER: ExternalTrafficPolicy
EXTERNAL_TRAFFIC_POLICY_LOCAL: ExternalTrafficPolicy
SESSION_AFFINITY_UNSPECIFIED: SessionAffinity
SESSION_AFFINITY_NONE: SessionAffinity
SESSION_AFFINITY_CLIENT_IP: SessionAffinity
IP_FAMILY_POLICY_UNSPECIFIED: IpFamilyPolicy
IP_FAMILY_POLICY_SINGLE_STACK: IpFamilyPolicy
IP_FAMILY_POLICY_PREFER_DUAL_STACK: IpFamilyPolicy
IP_FAMILY_POLICY_REQUIRE_DUAL_STACK: IpFamilyPolicy
INTERNAL_TRAFFIC_POLICY_UNSPECIFIED: InternalTrafficPolicy
INTERNAL_TRAFFIC_POLICY_CLUSTER: InternalTrafficPolicy
INTERNAL_TRAFFIC_POLICY_LOCAL: InternalTrafficPolicy
IP_MODE_UNSPECIFIED: IpMode
IP_MODE_VIP: IpMode
IP_MODE_PROXY: IpMode

class ServicePort(_message.Message):
    __slots__ = ("name", "protocol", "port", "node_port", "app_protocol", "target_port", "target_port_name")
    NAME_FIELD_NUMBER: _ClassVar[int]
    PROTOCOL_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    NODE_PORT_FIELD_NUMBER: _ClassVar[int]
    APP_PROTOCOL_FIELD_NUMBER: _ClassVar[int]
    TARGET_PORT_FIELD_NUMBER: _ClassVar[int]
    TARGET_PORT_NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    protocol: Protocol
    port: int
    node_port: int
    app_protocol: str
    target_port: int
    target_port_name: str
    def __init__(self, name: _Optional[str] = ..., protocol: _Optional[_Union[Protocol, str]] = ..., port: _Optional[int] = ..., node_port: _Optional[int] = ..., app_protocol: _Optional[str] = ..., target_port: _Optional[int] = ..., target_port_name: _Optional[str] = ...) -> None: ...

class ServiceRef(_message.Message):
    __slots__ = ("uid", "namespace", "name", "annotations", "labels", "ports", "load_balancer_ip", "load_balancer_source_ranges", "ip_families", "external_traffic_policy", "health_check_node_port", "session_affinity", "load_balancer_class", "session_affinity_timeout_seconds", "selector", "cluster_ips", "ip_family_policy", "external_ips", "allocate_load_balancer_node_ports", "internal_traffic_policy", "status", "endpoints", "pod_backends")
    class AnnotationsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class LabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class SelectorEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    UID_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    ANNOTATIONS_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    PORTS_FIELD_NUMBER: _ClassVar[int]
    LOAD_BALANCER_IP_FIELD_NUMBER: _ClassVar[int]
    LOAD_BALANCER_SOURCE_RANGES_FIELD_NUMBER: _ClassVar[int]
    IP_FAMILIES_FIELD_NUMBER: _ClassVar[int]
    EXTERNAL_TRAFFIC_POLICY_FIELD_NUMBER: _ClassVar[int]
    HEALTH_CHECK_NODE_PORT_FIELD_NUMBER: _ClassVar[int]
    SESSION_AFFINITY_FIELD_NUMBER: _ClassVar[int]
    LOAD_BALANCER_CLASS_FIELD_NUMBER: _ClassVar[int]
    SESSION_AFFINITY_TIMEOUT_SECONDS_FIELD_NUMBER: _ClassVar[int]
    SELECTOR_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_IPS_FIELD_NUMBER: _ClassVar[int]
    IP_FAMILY_POLICY_FIELD_NUMBER: _ClassVar[int]
    EXTERNAL_IPS_FIELD_NUMBER: _ClassVar[int]
    ALLOCATE_LOAD_BALANCER_NODE_PORTS_FIELD_NUMBER: _ClassVar[int]
    INTERNAL_TRAFFIC_POLICY_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    ENDPOINTS_FIELD_NUMBER: _ClassVar[int]
    POD_BACKENDS_FIELD_NUMBER: _ClassVar[int]
    uid: str
    namespace: str
    name: str
    annotations: _containers.ScalarMap[str, str]
    labels: _containers.ScalarMap[str, str]
    ports: _containers.RepeatedCompositeFieldContainer[ServicePort]
    load_balancer_ip: str
    load_balancer_source_ranges: _containers.RepeatedScalarFieldContainer[str]
    ip_families: _containers.RepeatedScalarFieldContainer[IpFamily]
    external_traffic_policy: ExternalTrafficPolicy
    health_check_node_port: int
    session_affinity: SessionAffinity
    load_balancer_class: str
    session_affinity_timeout_seconds: int
    selector: _containers.ScalarMap[str, str]
    cluster_ips: _containers.RepeatedScalarFieldContainer[str]
    ip_family_policy: IpFamilyPolicy
    external_ips: _containers.RepeatedScalarFieldContainer[str]
    allocate_load_balancer_node_ports: bool
    internal_traffic_policy: InternalTrafficPolicy
    status: LoadBalancerStatus
    endpoints: _containers.RepeatedCompositeFieldContainer[EndpointBackend]
    pod_backends: PodBackends
    def __init__(self, uid: _Optional[str] = ..., namespace: _Optional[str] = ..., name: _Optional[str] = ..., annotations: _Optional[_Mapping[str, str]] = ..., labels: _Optional[_Mapping[str, str]] = ..., ports: _Optional[_Iterable[_Union[ServicePort, _Mapping]]] = ..., load_balancer_ip: _Optional[str] = ..., load_balancer_source_ranges: _Optional[_Iterable[str]] = ..., ip_families: _Optional[_Iterable[_Union[IpFamily, str]]] = ..., external_traffic_policy: _Optional[_Union[ExternalTrafficPolicy, str]] = ..., health_check_node_port: _Optional[int] = ..., session_affinity: _Optional[_Union[SessionAffinity, str]] = ..., load_balancer_class: _Optional[str] = ..., session_affinity_timeout_seconds: _Optional[int] = ..., selector: _Optional[_Mapping[str, str]] = ..., cluster_ips: _Optional[_Iterable[str]] = ..., ip_family_policy: _Optional[_Union[IpFamilyPolicy, str]] = ..., external_ips: _Optional[_Iterable[str]] = ..., allocate_load_balancer_node_ports: bool = ..., internal_traffic_policy: _Optional[_Union[InternalTrafficPolicy, str]] = ..., status: _Optional[_Union[LoadBalancerStatus, _Mapping]] = ..., endpoints: _Optional[_Iterable[_Union[EndpointBackend, _Mapping]]] = ..., pod_backends: _Optional[_Union[PodBackends, _Mapping]] = ...) -> None: ...

class PodBackends(_message.Message):
    __slots__ = ("traffic_distribution", "omitted_endpoints")
    TRAFFIC_DISTRIBUTION_FIELD_NUMBER: _ClassVar[int]
    OMITTED_ENDPOINTS_FIELD_NUMBER: _ClassVar[int]
    traffic_distribution: str
    omitted_endpoints: int
    def __init__(self, traffic_distribution: _Optional[str] = ..., omitted_endpoints: _Optional[int] = ...) -> None: ...

class EndpointBackend(_message.Message):
    __slots__ = ("addresses", "ip_family", "ports", "ready", "serving", "terminating", "node_name", "zone", "pod")
    ADDRESSES_FIELD_NUMBER: _ClassVar[int]
    IP_FAMILY_FIELD_NUMBER: _ClassVar[int]
    PORTS_FIELD_NUMBER: _ClassVar[int]
    READY_FIELD_NUMBER: _ClassVar[int]
    SERVING_FIELD_NUMBER: _ClassVar[int]
    TERMINATING_FIELD_NUMBER: _ClassVar[int]
    NODE_NAME_FIELD_NUMBER: _ClassVar[int]
    ZONE_FIELD_NUMBER: _ClassVar[int]
    POD_FIELD_NUMBER: _ClassVar[int]
    addresses: _containers.RepeatedScalarFieldContainer[str]
    ip_family: IpFamily
    ports: _containers.RepeatedCompositeFieldContainer[EndpointPort]
    ready: bool
    serving: bool
    terminating: bool
    node_name: str
    zone: str
    pod: str
    def __init__(self, addresses: _Optional[_Iterable[str]] = ..., ip_family: _Optional[_Union[IpFamily, str]] = ..., ports: _Optional[_Iterable[_Union[EndpointPort, _Mapping]]] = ..., ready: bool = ..., serving: bool = ..., terminating: bool = ..., node_name: _Optional[str] = ..., zone: _Optional[str] = ..., pod: _Optional[str] = ...) -> None: ...

class EndpointPort(_message.Message):
    __slots__ = ("name", "service_port", "protocol", "port")
    NAME_FIELD_NUMBER: _ClassVar[int]
    SERVICE_PORT_FIELD_NUMBER: _ClassVar[int]
    PROTOCOL_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    name: str
    service_port: int
    protocol: Protocol
    port: int
    def __init__(self, name: _Optional[str] = ..., service_port: _Optional[int] = ..., protocol: _Optional[_Union[Protocol, str]] = ..., port: _Optional[int] = ...) -> None: ...

class PortStatus(_message.Message):
    __slots__ = ("port", "protocol", "error")
    PORT_FIELD_NUMBER: _ClassVar[int]
    PROTOCOL_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    port: int
    protocol: Protocol
    error: str
    def __init__(self, port: _Optional[int] = ..., protocol: _Optional[_Union[Protocol, str]] = ..., error: _Optional[str] = ...) -> None: ...

class LoadBalancerIngress(_message.Message):
    __slots__ = ("ip", "hostname", "ip_mode", "ports")
    IP_FIELD_NUMBER: _ClassVar[int]
    HOSTNAME_FIELD_NUMBER: _ClassVar[int]
    IP_MODE_FIELD_NUMBER: _ClassVar[int]
    PORTS_FIELD_NUMBER: _ClassVar[int]
    ip: str
    hostname: str
    ip_mode: IpMode
    ports: _containers.RepeatedCompositeFieldContainer[PortStatus]
    def __init__(self, ip: _Optional[str] = ..., hostname: _Optional[str] = ..., ip_mode: _Optional[_Union[IpMode, str]] = ..., ports: _Optional[_Iterable[_Union[PortStatus, _Mapping]]] = ...) -> None: ...

class LoadBalancerStatus(_message.Message):
    __slots__ = ("ingress",)
    INGRESS_FIELD_NUMBER: _ClassVar[int]
    ingress: _containers.RepeatedCompositeFieldContainer[LoadBalancerIngress]
    def __init__(self, ingress: _Optional[_Iterable[_Union[LoadBalancerIngress, _Mapping]]] = ...) -> None: ...

class GetLoadBalancerRequest(_message.Message):
    __slots__ = ("meta", "service")
    META_FIELD_NUMBER: _ClassVar[int]
    SERVICE_FIELD_NUMBER: _ClassVar[int]
    meta: _common_pb2.RequestMeta
    service: ServiceRef
    def __init__(self, meta: _Optional[_Union[_common_pb2.RequestMeta, _Mapping]] = ..., service: _Optional[_Union[ServiceRef, _Mapping]] = ...) -> None: ...

class GetLoadBalancerResponse(_message.Message):
    __slots__ = ("exists", "status")
    EXISTS_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    exists: bool
    status: LoadBalancerStatus
    def __init__(self, exists: bool = ..., status: _Optional[_Union[LoadBalancerStatus, _Mapping]] = ...) -> None: ...

class GetLoadBalancerNameRequest(_message.Message):
    __slots__ = ("meta", "service")
    META_FIELD_NUMBER: _ClassVar[int]
    SERVICE_FIELD_NUMBER: _ClassVar[int]
    meta: _common_pb2.RequestMeta
    service: ServiceRef
    def __init__(self, meta: _Optional[_Union[_common_pb2.RequestMeta, _Mapping]] = ..., service: _Optional[_Union[ServiceRef, _Mapping]] = ...) -> None: ...

class GetLoadBalancerNameResponse(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class EnsureLoadBalancerRequest(_message.Message):
    __slots__ = ("meta", "service", "nodes")
    META_FIELD_NUMBER: _ClassVar[int]
    SERVICE_FIELD_NUMBER: _ClassVar[int]
    NODES_FIELD_NUMBER: _ClassVar[int]
    meta: _common_pb2.RequestMeta
    service: ServiceRef
    nodes: _containers.RepeatedCompositeFieldContainer[_common_pb2.NodeRef]
    def __init__(self, meta: _Optional[_Union[_common_pb2.RequestMeta, _Mapping]] = ..., service: _Optional[_Union[ServiceRef, _Mapping]] = ..., nodes: _Optional[_Iterable[_Union[_common_pb2.NodeRef, _Mapping]]] = ...) -> None: ...

class EnsureLoadBalancerResponse(_message.Message):
    __slots__ = ("status",)
    STATUS_FIELD_NUMBER: _ClassVar[int]
    status: LoadBalancerStatus
    def __init__(self, status: _Optional[_Union[LoadBalancerStatus, _Mapping]] = ...) -> None: ...

class UpdateLoadBalancerRequest(_message.Message):
    __slots__ = ("meta", "service", "nodes")
    META_FIELD_NUMBER: _ClassVar[int]
    SERVICE_FIELD_NUMBER: _ClassVar[int]
    NODES_FIELD_NUMBER: _ClassVar[int]
    meta: _common_pb2.RequestMeta
    service: ServiceRef
    nodes: _containers.RepeatedCompositeFieldContainer[_common_pb2.NodeRef]
    def __init__(self, meta: _Optional[_Union[_common_pb2.RequestMeta, _Mapping]] = ..., service: _Optional[_Union[ServiceRef, _Mapping]] = ..., nodes: _Optional[_Iterable[_Union[_common_pb2.NodeRef, _Mapping]]] = ...) -> None: ...

class UpdateLoadBalancerResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class EnsureLoadBalancerDeletedRequest(_message.Message):
    __slots__ = ("meta", "service")
    META_FIELD_NUMBER: _ClassVar[int]
    SERVICE_FIELD_NUMBER: _ClassVar[int]
    meta: _common_pb2.RequestMeta
    service: ServiceRef
    def __init__(self, meta: _Optional[_Union[_common_pb2.RequestMeta, _Mapping]] = ..., service: _Optional[_Union[ServiceRef, _Mapping]] = ...) -> None: ...

class EnsureLoadBalancerDeletedResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class UpdateLoadBalancerHostsRequest(_message.Message):
    __slots__ = ("meta", "services", "nodes")
    META_FIELD_NUMBER: _ClassVar[int]
    SERVICES_FIELD_NUMBER: _ClassVar[int]
    NODES_FIELD_NUMBER: _ClassVar[int]
    meta: _common_pb2.RequestMeta
    services: _containers.RepeatedCompositeFieldContainer[ServiceRef]
    nodes: _containers.RepeatedCompositeFieldContainer[_common_pb2.NodeRef]
    def __init__(self, meta: _Optional[_Union[_common_pb2.RequestMeta, _Mapping]] = ..., services: _Optional[_Iterable[_Union[ServiceRef, _Mapping]]] = ..., nodes: _Optional[_Iterable[_Union[_common_pb2.NodeRef, _Mapping]]] = ...) -> None: ...

class UpdateLoadBalancerHostsResult(_message.Message):
    __slots__ = ("service_uid", "error")
    SERVICE_UID_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    service_uid: str
    error: _status_pb2.Status
    def __init__(self, service_uid: _Optional[str] = ..., error: _Optional[_Union[_status_pb2.Status, _Mapping]] = ...) -> None: ...

class UpdateLoadBalancerHostsResponse(_message.Message):
    __slots__ = ("results",)
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[UpdateLoadBalancerHostsResult]
    def __init__(self, results: _Optional[_Iterable[_Union[UpdateLoadBalancerHostsResult, _Mapping]]] = ...) -> None: ...

class ListLoadBalancersRequest(_message.Message):
    __slots__ = ("meta", "page_size", "page_token")
    META_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    meta: _common_pb2.RequestMeta
    page_size: int
    page_token: str
    def __init__(self, meta: _Optional[_Union[_common_pb2.RequestMeta, _Mapping]] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class LoadBalancerSummary(_message.Message):
    __slots__ = ("name", "cluster_name", "service_uid", "service_namespace", "service_name", "cluster_uid")
    NAME_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_NAME_FIELD_NUMBER: _ClassVar[int]
    SERVICE_UID_FIELD_NUMBER: _ClassVar[int]
    SERVICE_NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    SERVICE_NAME_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_UID_FIELD_NUMBER: _ClassVar[int]
    name: str
    cluster_name: str
    service_uid: str
    service_namespace: str
    service_name: str
    cluster_uid: str
    def __init__(self, name: _Optional[str] = ..., cluster_name: _Optional[str] = ..., service_uid: _Optional[str] = ..., service_namespace: _Optional[str] = ..., service_name: _Optional[str] = ..., cluster_uid: _Optional[str] = ...) -> None: ...

class ListLoadBalancersResponse(_message.Message):
    __slots__ = ("load_balancers", "next_page_token")
    LOAD_BALANCERS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    load_balancers: _containers.RepeatedCompositeFieldContainer[LoadBalancerSummary]
    next_page_token: str
    def __init__(self, load_balancers: _Optional[_Iterable[_Union[LoadBalancerSummary, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class EnsureLoadBalancersRequest(_message.Message):
    __slots__ = ("meta", "services", "nodes")
    META_FIELD_NUMBER: _ClassVar[int]
    SERVICES_FIELD_NUMBER: _ClassVar[int]
    NODES_FIELD_NUMBER: _ClassVar[int]
    meta: _common_pb2.RequestMeta
    services: _containers.RepeatedCompositeFieldContainer[ServiceRef]
    nodes: _containers.RepeatedCompositeFieldContainer[_common_pb2.NodeRef]
    def __init__(self, meta: _Optional[_Union[_common_pb2.RequestMeta, _Mapping]] = ..., services: _Optional[_Iterable[_Union[ServiceRef, _Mapping]]] = ..., nodes: _Optional[_Iterable[_Union[_common_pb2.NodeRef, _Mapping]]] = ...) -> None: ...

class EnsureLoadBalancersResult(_message.Message):
    __slots__ = ("service_uid", "status", "error")
    SERVICE_UID_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    service_uid: str
    status: LoadBalancerStatus
    error: _status_pb2.Status
    def __init__(self, service_uid: _Optional[str] = ..., status: _Optional[_Union[LoadBalancerStatus, _Mapping]] = ..., error: _Optional[_Union[_status_pb2.Status, _Mapping]] = ...) -> None: ...

class EnsureLoadBalancersResponse(_message.Message):
    __slots__ = ("results",)
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[EnsureLoadBalancersResult]
    def __init__(self, results: _Optional[_Iterable[_Union[EnsureLoadBalancersResult, _Mapping]]] = ...) -> None: ...
