from ccm.provider.v1 import common_pb2 as _common_pb2
from google.rpc import status_pb2 as _status_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class InstanceExistsRequest(_message.Message):
    __slots__ = ("meta", "node")
    META_FIELD_NUMBER: _ClassVar[int]
    NODE_FIELD_NUMBER: _ClassVar[int]
    meta: _common_pb2.RequestMeta
    node: _common_pb2.NodeRef
    def __init__(self, meta: _Optional[_Union[_common_pb2.RequestMeta, _Mapping]] = ..., node: _Optional[_Union[_common_pb2.NodeRef, _Mapping]] = ...) -> None: ...

class InstanceExistsResponse(_message.Message):
    __slots__ = ("exists",)
    EXISTS_FIELD_NUMBER: _ClassVar[int]
    exists: bool
    def __init__(self, exists: bool = ...) -> None: ...

class InstanceShutdownRequest(_message.Message):
    __slots__ = ("meta", "node")
    META_FIELD_NUMBER: _ClassVar[int]
    NODE_FIELD_NUMBER: _ClassVar[int]
    meta: _common_pb2.RequestMeta
    node: _common_pb2.NodeRef
    def __init__(self, meta: _Optional[_Union[_common_pb2.RequestMeta, _Mapping]] = ..., node: _Optional[_Union[_common_pb2.NodeRef, _Mapping]] = ...) -> None: ...

class InstanceShutdownResponse(_message.Message):
    __slots__ = ("shutdown",)
    SHUTDOWN_FIELD_NUMBER: _ClassVar[int]
    shutdown: bool
    def __init__(self, shutdown: bool = ...) -> None: ...

class InstanceMetadata(_message.Message):
    __slots__ = ("provider_id", "instance_type", "node_addresses", "zone", "region", "additional_labels")
    class AdditionalLabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    PROVIDER_ID_FIELD_NUMBER: _ClassVar[int]
    INSTANCE_TYPE_FIELD_NUMBER: _ClassVar[int]
    NODE_ADDRESSES_FIELD_NUMBER: _ClassVar[int]
    ZONE_FIELD_NUMBER: _ClassVar[int]
    REGION_FIELD_NUMBER: _ClassVar[int]
    ADDITIONAL_LABELS_FIELD_NUMBER: _ClassVar[int]
    provider_id: str
    instance_type: str
    node_addresses: _containers.RepeatedCompositeFieldContainer[_common_pb2.NodeAddress]
    zone: str
    region: str
    additional_labels: _containers.ScalarMap[str, str]
    def __init__(self, provider_id: _Optional[str] = ..., instance_type: _Optional[str] = ..., node_addresses: _Optional[_Iterable[_Union[_common_pb2.NodeAddress, _Mapping]]] = ..., zone: _Optional[str] = ..., region: _Optional[str] = ..., additional_labels: _Optional[_Mapping[str, str]] = ...) -> None: ...

class InstanceMetadataRequest(_message.Message):
    __slots__ = ("meta", "node")
    META_FIELD_NUMBER: _ClassVar[int]
    NODE_FIELD_NUMBER: _ClassVar[int]
    meta: _common_pb2.RequestMeta
    node: _common_pb2.NodeRef
    def __init__(self, meta: _Optional[_Union[_common_pb2.RequestMeta, _Mapping]] = ..., node: _Optional[_Union[_common_pb2.NodeRef, _Mapping]] = ...) -> None: ...

class InstanceMetadataResponse(_message.Message):
    __slots__ = ("metadata",)
    METADATA_FIELD_NUMBER: _ClassVar[int]
    metadata: InstanceMetadata
    def __init__(self, metadata: _Optional[_Union[InstanceMetadata, _Mapping]] = ...) -> None: ...

class GetInstancesStatusRequest(_message.Message):
    __slots__ = ("meta", "nodes")
    META_FIELD_NUMBER: _ClassVar[int]
    NODES_FIELD_NUMBER: _ClassVar[int]
    meta: _common_pb2.RequestMeta
    nodes: _containers.RepeatedCompositeFieldContainer[_common_pb2.NodeRef]
    def __init__(self, meta: _Optional[_Union[_common_pb2.RequestMeta, _Mapping]] = ..., nodes: _Optional[_Iterable[_Union[_common_pb2.NodeRef, _Mapping]]] = ...) -> None: ...

class InstanceStatusResult(_message.Message):
    __slots__ = ("node_name", "exists", "shutdown", "error")
    NODE_NAME_FIELD_NUMBER: _ClassVar[int]
    EXISTS_FIELD_NUMBER: _ClassVar[int]
    SHUTDOWN_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    node_name: str
    exists: bool
    shutdown: bool
    error: _status_pb2.Status
    def __init__(self, node_name: _Optional[str] = ..., exists: bool = ..., shutdown: bool = ..., error: _Optional[_Union[_status_pb2.Status, _Mapping]] = ...) -> None: ...

class GetInstancesStatusResponse(_message.Message):
    __slots__ = ("results",)
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[InstanceStatusResult]
    def __init__(self, results: _Optional[_Iterable[_Union[InstanceStatusResult, _Mapping]]] = ...) -> None: ...

class GetInstancesMetadataRequest(_message.Message):
    __slots__ = ("meta", "nodes")
    META_FIELD_NUMBER: _ClassVar[int]
    NODES_FIELD_NUMBER: _ClassVar[int]
    meta: _common_pb2.RequestMeta
    nodes: _containers.RepeatedCompositeFieldContainer[_common_pb2.NodeRef]
    def __init__(self, meta: _Optional[_Union[_common_pb2.RequestMeta, _Mapping]] = ..., nodes: _Optional[_Iterable[_Union[_common_pb2.NodeRef, _Mapping]]] = ...) -> None: ...

class InstanceMetadataResult(_message.Message):
    __slots__ = ("node_name", "metadata", "error")
    NODE_NAME_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    node_name: str
    metadata: InstanceMetadata
    error: _status_pb2.Status
    def __init__(self, node_name: _Optional[str] = ..., metadata: _Optional[_Union[InstanceMetadata, _Mapping]] = ..., error: _Optional[_Union[_status_pb2.Status, _Mapping]] = ...) -> None: ...

class GetInstancesMetadataResponse(_message.Message):
    __slots__ = ("results",)
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[InstanceMetadataResult]
    def __init__(self, results: _Optional[_Iterable[_Union[InstanceMetadataResult, _Mapping]]] = ...) -> None: ...

class NodeAddressesRequest(_message.Message):
    __slots__ = ("meta", "node_name")
    META_FIELD_NUMBER: _ClassVar[int]
    NODE_NAME_FIELD_NUMBER: _ClassVar[int]
    meta: _common_pb2.RequestMeta
    node_name: str
    def __init__(self, meta: _Optional[_Union[_common_pb2.RequestMeta, _Mapping]] = ..., node_name: _Optional[str] = ...) -> None: ...

class NodeAddressesResponse(_message.Message):
    __slots__ = ("addresses",)
    ADDRESSES_FIELD_NUMBER: _ClassVar[int]
    addresses: _containers.RepeatedCompositeFieldContainer[_common_pb2.NodeAddress]
    def __init__(self, addresses: _Optional[_Iterable[_Union[_common_pb2.NodeAddress, _Mapping]]] = ...) -> None: ...

class NodeAddressesByProviderIdRequest(_message.Message):
    __slots__ = ("meta", "provider_id")
    META_FIELD_NUMBER: _ClassVar[int]
    PROVIDER_ID_FIELD_NUMBER: _ClassVar[int]
    meta: _common_pb2.RequestMeta
    provider_id: str
    def __init__(self, meta: _Optional[_Union[_common_pb2.RequestMeta, _Mapping]] = ..., provider_id: _Optional[str] = ...) -> None: ...

class NodeAddressesByProviderIdResponse(_message.Message):
    __slots__ = ("addresses",)
    ADDRESSES_FIELD_NUMBER: _ClassVar[int]
    addresses: _containers.RepeatedCompositeFieldContainer[_common_pb2.NodeAddress]
    def __init__(self, addresses: _Optional[_Iterable[_Union[_common_pb2.NodeAddress, _Mapping]]] = ...) -> None: ...

class InstanceIdRequest(_message.Message):
    __slots__ = ("meta", "node_name")
    META_FIELD_NUMBER: _ClassVar[int]
    NODE_NAME_FIELD_NUMBER: _ClassVar[int]
    meta: _common_pb2.RequestMeta
    node_name: str
    def __init__(self, meta: _Optional[_Union[_common_pb2.RequestMeta, _Mapping]] = ..., node_name: _Optional[str] = ...) -> None: ...

class InstanceIdResponse(_message.Message):
    __slots__ = ("instance_id",)
    INSTANCE_ID_FIELD_NUMBER: _ClassVar[int]
    instance_id: str
    def __init__(self, instance_id: _Optional[str] = ...) -> None: ...

class InstanceTypeRequest(_message.Message):
    __slots__ = ("meta", "node_name")
    META_FIELD_NUMBER: _ClassVar[int]
    NODE_NAME_FIELD_NUMBER: _ClassVar[int]
    meta: _common_pb2.RequestMeta
    node_name: str
    def __init__(self, meta: _Optional[_Union[_common_pb2.RequestMeta, _Mapping]] = ..., node_name: _Optional[str] = ...) -> None: ...

class InstanceTypeResponse(_message.Message):
    __slots__ = ("instance_type",)
    INSTANCE_TYPE_FIELD_NUMBER: _ClassVar[int]
    instance_type: str
    def __init__(self, instance_type: _Optional[str] = ...) -> None: ...

class InstanceTypeByProviderIdRequest(_message.Message):
    __slots__ = ("meta", "provider_id")
    META_FIELD_NUMBER: _ClassVar[int]
    PROVIDER_ID_FIELD_NUMBER: _ClassVar[int]
    meta: _common_pb2.RequestMeta
    provider_id: str
    def __init__(self, meta: _Optional[_Union[_common_pb2.RequestMeta, _Mapping]] = ..., provider_id: _Optional[str] = ...) -> None: ...

class InstanceTypeByProviderIdResponse(_message.Message):
    __slots__ = ("instance_type",)
    INSTANCE_TYPE_FIELD_NUMBER: _ClassVar[int]
    instance_type: str
    def __init__(self, instance_type: _Optional[str] = ...) -> None: ...

class AddSshKeyToAllInstancesRequest(_message.Message):
    __slots__ = ("meta", "user", "key_data")
    META_FIELD_NUMBER: _ClassVar[int]
    USER_FIELD_NUMBER: _ClassVar[int]
    KEY_DATA_FIELD_NUMBER: _ClassVar[int]
    meta: _common_pb2.RequestMeta
    user: str
    key_data: bytes
    def __init__(self, meta: _Optional[_Union[_common_pb2.RequestMeta, _Mapping]] = ..., user: _Optional[str] = ..., key_data: _Optional[bytes] = ...) -> None: ...

class AddSshKeyToAllInstancesResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class CurrentNodeNameRequest(_message.Message):
    __slots__ = ("meta", "hostname")
    META_FIELD_NUMBER: _ClassVar[int]
    HOSTNAME_FIELD_NUMBER: _ClassVar[int]
    meta: _common_pb2.RequestMeta
    hostname: str
    def __init__(self, meta: _Optional[_Union[_common_pb2.RequestMeta, _Mapping]] = ..., hostname: _Optional[str] = ...) -> None: ...

class CurrentNodeNameResponse(_message.Message):
    __slots__ = ("node_name",)
    NODE_NAME_FIELD_NUMBER: _ClassVar[int]
    node_name: str
    def __init__(self, node_name: _Optional[str] = ...) -> None: ...
