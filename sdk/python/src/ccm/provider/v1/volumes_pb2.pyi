from ccm.provider.v1 import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class CapacityRange(_message.Message):
    __slots__ = ("required_bytes", "limit_bytes")
    REQUIRED_BYTES_FIELD_NUMBER: _ClassVar[int]
    LIMIT_BYTES_FIELD_NUMBER: _ClassVar[int]
    required_bytes: int
    limit_bytes: int
    def __init__(self, required_bytes: _Optional[int] = ..., limit_bytes: _Optional[int] = ...) -> None: ...

class TopologyRequirement(_message.Message):
    __slots__ = ("requisite", "preferred")
    REQUISITE_FIELD_NUMBER: _ClassVar[int]
    PREFERRED_FIELD_NUMBER: _ClassVar[int]
    requisite: _containers.RepeatedCompositeFieldContainer[_common_pb2.Topology]
    preferred: _containers.RepeatedCompositeFieldContainer[_common_pb2.Topology]
    def __init__(self, requisite: _Optional[_Iterable[_Union[_common_pb2.Topology, _Mapping]]] = ..., preferred: _Optional[_Iterable[_Union[_common_pb2.Topology, _Mapping]]] = ...) -> None: ...

class Volume(_message.Message):
    __slots__ = ("volume_id", "capacity_bytes", "volume_context", "accessible_topology")
    class VolumeContextEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    VOLUME_ID_FIELD_NUMBER: _ClassVar[int]
    CAPACITY_BYTES_FIELD_NUMBER: _ClassVar[int]
    VOLUME_CONTEXT_FIELD_NUMBER: _ClassVar[int]
    ACCESSIBLE_TOPOLOGY_FIELD_NUMBER: _ClassVar[int]
    volume_id: str
    capacity_bytes: int
    volume_context: _containers.ScalarMap[str, str]
    accessible_topology: _containers.RepeatedCompositeFieldContainer[_common_pb2.Topology]
    def __init__(self, volume_id: _Optional[str] = ..., capacity_bytes: _Optional[int] = ..., volume_context: _Optional[_Mapping[str, str]] = ..., accessible_topology: _Optional[_Iterable[_Union[_common_pb2.Topology, _Mapping]]] = ...) -> None: ...

class CreateVolumeRequest(_message.Message):
    __slots__ = ("meta", "name", "capacity_range", "parameters", "accessibility_requirements")
    class ParametersEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    META_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    CAPACITY_RANGE_FIELD_NUMBER: _ClassVar[int]
    PARAMETERS_FIELD_NUMBER: _ClassVar[int]
    ACCESSIBILITY_REQUIREMENTS_FIELD_NUMBER: _ClassVar[int]
    meta: _common_pb2.RequestMeta
    name: str
    capacity_range: CapacityRange
    parameters: _containers.ScalarMap[str, str]
    accessibility_requirements: TopologyRequirement
    def __init__(self, meta: _Optional[_Union[_common_pb2.RequestMeta, _Mapping]] = ..., name: _Optional[str] = ..., capacity_range: _Optional[_Union[CapacityRange, _Mapping]] = ..., parameters: _Optional[_Mapping[str, str]] = ..., accessibility_requirements: _Optional[_Union[TopologyRequirement, _Mapping]] = ...) -> None: ...

class CreateVolumeResponse(_message.Message):
    __slots__ = ("volume",)
    VOLUME_FIELD_NUMBER: _ClassVar[int]
    volume: Volume
    def __init__(self, volume: _Optional[_Union[Volume, _Mapping]] = ...) -> None: ...

class DeleteVolumeRequest(_message.Message):
    __slots__ = ("meta", "volume_id")
    META_FIELD_NUMBER: _ClassVar[int]
    VOLUME_ID_FIELD_NUMBER: _ClassVar[int]
    meta: _common_pb2.RequestMeta
    volume_id: str
    def __init__(self, meta: _Optional[_Union[_common_pb2.RequestMeta, _Mapping]] = ..., volume_id: _Optional[str] = ...) -> None: ...

class DeleteVolumeResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ControllerPublishVolumeRequest(_message.Message):
    __slots__ = ("meta", "volume_id", "node_id", "readonly", "volume_context")
    class VolumeContextEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    META_FIELD_NUMBER: _ClassVar[int]
    VOLUME_ID_FIELD_NUMBER: _ClassVar[int]
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    READONLY_FIELD_NUMBER: _ClassVar[int]
    VOLUME_CONTEXT_FIELD_NUMBER: _ClassVar[int]
    meta: _common_pb2.RequestMeta
    volume_id: str
    node_id: str
    readonly: bool
    volume_context: _containers.ScalarMap[str, str]
    def __init__(self, meta: _Optional[_Union[_common_pb2.RequestMeta, _Mapping]] = ..., volume_id: _Optional[str] = ..., node_id: _Optional[str] = ..., readonly: bool = ..., volume_context: _Optional[_Mapping[str, str]] = ...) -> None: ...

class ControllerPublishVolumeResponse(_message.Message):
    __slots__ = ("publish_context",)
    class PublishContextEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    PUBLISH_CONTEXT_FIELD_NUMBER: _ClassVar[int]
    publish_context: _containers.ScalarMap[str, str]
    def __init__(self, publish_context: _Optional[_Mapping[str, str]] = ...) -> None: ...

class ControllerUnpublishVolumeRequest(_message.Message):
    __slots__ = ("meta", "volume_id", "node_id")
    META_FIELD_NUMBER: _ClassVar[int]
    VOLUME_ID_FIELD_NUMBER: _ClassVar[int]
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    meta: _common_pb2.RequestMeta
    volume_id: str
    node_id: str
    def __init__(self, meta: _Optional[_Union[_common_pb2.RequestMeta, _Mapping]] = ..., volume_id: _Optional[str] = ..., node_id: _Optional[str] = ...) -> None: ...

class ControllerUnpublishVolumeResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ControllerExpandVolumeRequest(_message.Message):
    __slots__ = ("meta", "volume_id", "capacity_range")
    META_FIELD_NUMBER: _ClassVar[int]
    VOLUME_ID_FIELD_NUMBER: _ClassVar[int]
    CAPACITY_RANGE_FIELD_NUMBER: _ClassVar[int]
    meta: _common_pb2.RequestMeta
    volume_id: str
    capacity_range: CapacityRange
    def __init__(self, meta: _Optional[_Union[_common_pb2.RequestMeta, _Mapping]] = ..., volume_id: _Optional[str] = ..., capacity_range: _Optional[_Union[CapacityRange, _Mapping]] = ...) -> None: ...

class ControllerExpandVolumeResponse(_message.Message):
    __slots__ = ("capacity_bytes", "node_expansion_required")
    CAPACITY_BYTES_FIELD_NUMBER: _ClassVar[int]
    NODE_EXPANSION_REQUIRED_FIELD_NUMBER: _ClassVar[int]
    capacity_bytes: int
    node_expansion_required: bool
    def __init__(self, capacity_bytes: _Optional[int] = ..., node_expansion_required: bool = ...) -> None: ...

class ListVolumesRequest(_message.Message):
    __slots__ = ("meta", "page_size", "page_token")
    META_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    meta: _common_pb2.RequestMeta
    page_size: int
    page_token: str
    def __init__(self, meta: _Optional[_Union[_common_pb2.RequestMeta, _Mapping]] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListVolumesEntry(_message.Message):
    __slots__ = ("volume", "published_node_ids")
    VOLUME_FIELD_NUMBER: _ClassVar[int]
    PUBLISHED_NODE_IDS_FIELD_NUMBER: _ClassVar[int]
    volume: Volume
    published_node_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, volume: _Optional[_Union[Volume, _Mapping]] = ..., published_node_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class ListVolumesResponse(_message.Message):
    __slots__ = ("entries", "next_page_token")
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    entries: _containers.RepeatedCompositeFieldContainer[ListVolumesEntry]
    next_page_token: str
    def __init__(self, entries: _Optional[_Iterable[_Union[ListVolumesEntry, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class GetVolumeLabelsRequest(_message.Message):
    __slots__ = ("meta", "volume_id")
    META_FIELD_NUMBER: _ClassVar[int]
    VOLUME_ID_FIELD_NUMBER: _ClassVar[int]
    meta: _common_pb2.RequestMeta
    volume_id: str
    def __init__(self, meta: _Optional[_Union[_common_pb2.RequestMeta, _Mapping]] = ..., volume_id: _Optional[str] = ...) -> None: ...

class GetVolumeLabelsResponse(_message.Message):
    __slots__ = ("labels",)
    class LabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    LABELS_FIELD_NUMBER: _ClassVar[int]
    labels: _containers.ScalarMap[str, str]
    def __init__(self, labels: _Optional[_Mapping[str, str]] = ...) -> None: ...
