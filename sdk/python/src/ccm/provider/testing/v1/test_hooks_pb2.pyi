from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class CreateTestInstanceRequest(_message.Message):
    __slots__ = ("name", "internal_ip", "zone")
    NAME_FIELD_NUMBER: _ClassVar[int]
    INTERNAL_IP_FIELD_NUMBER: _ClassVar[int]
    ZONE_FIELD_NUMBER: _ClassVar[int]
    name: str
    internal_ip: str
    zone: str
    def __init__(self, name: _Optional[str] = ..., internal_ip: _Optional[str] = ..., zone: _Optional[str] = ...) -> None: ...

class CreateTestInstanceResponse(_message.Message):
    __slots__ = ("provider_id",)
    PROVIDER_ID_FIELD_NUMBER: _ClassVar[int]
    provider_id: str
    def __init__(self, provider_id: _Optional[str] = ...) -> None: ...

class DeleteTestInstanceRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class DeleteTestInstanceResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class SetThrottleRequest(_message.Message):
    __slots__ = ("enabled", "retry_delay_ms")
    ENABLED_FIELD_NUMBER: _ClassVar[int]
    RETRY_DELAY_MS_FIELD_NUMBER: _ClassVar[int]
    enabled: bool
    retry_delay_ms: int
    def __init__(self, enabled: bool = ..., retry_delay_ms: _Optional[int] = ...) -> None: ...

class SetThrottleResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListTestLoadBalancersRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class TestLoadBalancer(_message.Message):
    __slots__ = ("cluster_name", "service_uid", "name", "ingress_ips", "ports", "node_names")
    CLUSTER_NAME_FIELD_NUMBER: _ClassVar[int]
    SERVICE_UID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    INGRESS_IPS_FIELD_NUMBER: _ClassVar[int]
    PORTS_FIELD_NUMBER: _ClassVar[int]
    NODE_NAMES_FIELD_NUMBER: _ClassVar[int]
    cluster_name: str
    service_uid: str
    name: str
    ingress_ips: _containers.RepeatedScalarFieldContainer[str]
    ports: _containers.RepeatedScalarFieldContainer[int]
    node_names: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, cluster_name: _Optional[str] = ..., service_uid: _Optional[str] = ..., name: _Optional[str] = ..., ingress_ips: _Optional[_Iterable[str]] = ..., ports: _Optional[_Iterable[int]] = ..., node_names: _Optional[_Iterable[str]] = ...) -> None: ...

class ListTestLoadBalancersResponse(_message.Message):
    __slots__ = ("load_balancers",)
    LOAD_BALANCERS_FIELD_NUMBER: _ClassVar[int]
    load_balancers: _containers.RepeatedCompositeFieldContainer[TestLoadBalancer]
    def __init__(self, load_balancers: _Optional[_Iterable[_Union[TestLoadBalancer, _Mapping]]] = ...) -> None: ...
