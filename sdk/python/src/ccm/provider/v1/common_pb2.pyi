from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class NodeAddressType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    NODE_ADDRESS_TYPE_UNSPECIFIED: _ClassVar[NodeAddressType]
    NODE_ADDRESS_TYPE_HOSTNAME: _ClassVar[NodeAddressType]
    NODE_ADDRESS_TYPE_INTERNAL_IP: _ClassVar[NodeAddressType]
    NODE_ADDRESS_TYPE_EXTERNAL_IP: _ClassVar[NodeAddressType]
    NODE_ADDRESS_TYPE_INTERNAL_DNS: _ClassVar[NodeAddressType]
    NODE_ADDRESS_TYPE_EXTERNAL_DNS: _ClassVar[NodeAddressType]
NODE_ADDRESS_TYPE_UNSPECIFIED: NodeAddressType
NODE_ADDRESS_TYPE_HOSTNAME: NodeAddressType
NODE_ADDRESS_TYPE_INTERNAL_IP: NodeAddressType
NODE_ADDRESS_TYPE_EXTERNAL_IP: NodeAddressType
NODE_ADDRESS_TYPE_INTERNAL_DNS: NodeAddressType
NODE_ADDRESS_TYPE_EXTERNAL_DNS: NodeAddressType

class RequestMeta(_message.Message):
    __slots__ = ("operation_id", "cluster_name", "attempt", "cluster_uid")
    OPERATION_ID_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_NAME_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_UID_FIELD_NUMBER: _ClassVar[int]
    operation_id: str
    cluster_name: str
    attempt: int
    cluster_uid: str
    def __init__(self, operation_id: _Optional[str] = ..., cluster_name: _Optional[str] = ..., attempt: _Optional[int] = ..., cluster_uid: _Optional[str] = ...) -> None: ...

class NodeAddress(_message.Message):
    __slots__ = ("type", "address")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    type: NodeAddressType
    address: str
    def __init__(self, type: _Optional[_Union[NodeAddressType, str]] = ..., address: _Optional[str] = ...) -> None: ...

class NodeRef(_message.Message):
    __slots__ = ("name", "provider_id", "addresses", "labels", "uid", "annotations", "pod_cidrs", "taints", "unschedulable", "conditions", "node_info")
    class LabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class AnnotationsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    PROVIDER_ID_FIELD_NUMBER: _ClassVar[int]
    ADDRESSES_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    UID_FIELD_NUMBER: _ClassVar[int]
    ANNOTATIONS_FIELD_NUMBER: _ClassVar[int]
    POD_CIDRS_FIELD_NUMBER: _ClassVar[int]
    TAINTS_FIELD_NUMBER: _ClassVar[int]
    UNSCHEDULABLE_FIELD_NUMBER: _ClassVar[int]
    CONDITIONS_FIELD_NUMBER: _ClassVar[int]
    NODE_INFO_FIELD_NUMBER: _ClassVar[int]
    name: str
    provider_id: str
    addresses: _containers.RepeatedCompositeFieldContainer[NodeAddress]
    labels: _containers.ScalarMap[str, str]
    uid: str
    annotations: _containers.ScalarMap[str, str]
    pod_cidrs: _containers.RepeatedScalarFieldContainer[str]
    taints: _containers.RepeatedCompositeFieldContainer[Taint]
    unschedulable: bool
    conditions: _containers.RepeatedCompositeFieldContainer[NodeCondition]
    node_info: NodeSystemInfo
    def __init__(self, name: _Optional[str] = ..., provider_id: _Optional[str] = ..., addresses: _Optional[_Iterable[_Union[NodeAddress, _Mapping]]] = ..., labels: _Optional[_Mapping[str, str]] = ..., uid: _Optional[str] = ..., annotations: _Optional[_Mapping[str, str]] = ..., pod_cidrs: _Optional[_Iterable[str]] = ..., taints: _Optional[_Iterable[_Union[Taint, _Mapping]]] = ..., unschedulable: bool = ..., conditions: _Optional[_Iterable[_Union[NodeCondition, _Mapping]]] = ..., node_info: _Optional[_Union[NodeSystemInfo, _Mapping]] = ...) -> None: ...

class Taint(_message.Message):
    __slots__ = ("key", "value", "effect")
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    EFFECT_FIELD_NUMBER: _ClassVar[int]
    key: str
    value: str
    effect: str
    def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ..., effect: _Optional[str] = ...) -> None: ...

class NodeCondition(_message.Message):
    __slots__ = ("type", "status", "reason")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    type: str
    status: str
    reason: str
    def __init__(self, type: _Optional[str] = ..., status: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class NodeSystemInfo(_message.Message):
    __slots__ = ("machine_id", "system_uuid", "boot_id", "kernel_version", "os_image", "container_runtime_version", "kubelet_version", "operating_system", "architecture")
    MACHINE_ID_FIELD_NUMBER: _ClassVar[int]
    SYSTEM_UUID_FIELD_NUMBER: _ClassVar[int]
    BOOT_ID_FIELD_NUMBER: _ClassVar[int]
    KERNEL_VERSION_FIELD_NUMBER: _ClassVar[int]
    OS_IMAGE_FIELD_NUMBER: _ClassVar[int]
    CONTAINER_RUNTIME_VERSION_FIELD_NUMBER: _ClassVar[int]
    KUBELET_VERSION_FIELD_NUMBER: _ClassVar[int]
    OPERATING_SYSTEM_FIELD_NUMBER: _ClassVar[int]
    ARCHITECTURE_FIELD_NUMBER: _ClassVar[int]
    machine_id: str
    system_uuid: str
    boot_id: str
    kernel_version: str
    os_image: str
    container_runtime_version: str
    kubelet_version: str
    operating_system: str
    architecture: str
    def __init__(self, machine_id: _Optional[str] = ..., system_uuid: _Optional[str] = ..., boot_id: _Optional[str] = ..., kernel_version: _Optional[str] = ..., os_image: _Optional[str] = ..., container_runtime_version: _Optional[str] = ..., kubelet_version: _Optional[str] = ..., operating_system: _Optional[str] = ..., architecture: _Optional[str] = ...) -> None: ...

class Topology(_message.Message):
    __slots__ = ("segments",)
    class SegmentsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    SEGMENTS_FIELD_NUMBER: _ClassVar[int]
    segments: _containers.ScalarMap[str, str]
    def __init__(self, segments: _Optional[_Mapping[str, str]] = ...) -> None: ...
