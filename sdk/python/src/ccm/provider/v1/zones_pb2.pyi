from ccm.provider.v1 import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Zone(_message.Message):
    __slots__ = ("failure_domain", "region")
    FAILURE_DOMAIN_FIELD_NUMBER: _ClassVar[int]
    REGION_FIELD_NUMBER: _ClassVar[int]
    failure_domain: str
    region: str
    def __init__(self, failure_domain: _Optional[str] = ..., region: _Optional[str] = ...) -> None: ...

class GetZoneRequest(_message.Message):
    __slots__ = ("meta",)
    META_FIELD_NUMBER: _ClassVar[int]
    meta: _common_pb2.RequestMeta
    def __init__(self, meta: _Optional[_Union[_common_pb2.RequestMeta, _Mapping]] = ...) -> None: ...

class GetZoneResponse(_message.Message):
    __slots__ = ("zone",)
    ZONE_FIELD_NUMBER: _ClassVar[int]
    zone: Zone
    def __init__(self, zone: _Optional[_Union[Zone, _Mapping]] = ...) -> None: ...

class GetZoneByProviderIdRequest(_message.Message):
    __slots__ = ("meta", "provider_id")
    META_FIELD_NUMBER: _ClassVar[int]
    PROVIDER_ID_FIELD_NUMBER: _ClassVar[int]
    meta: _common_pb2.RequestMeta
    provider_id: str
    def __init__(self, meta: _Optional[_Union[_common_pb2.RequestMeta, _Mapping]] = ..., provider_id: _Optional[str] = ...) -> None: ...

class GetZoneByProviderIdResponse(_message.Message):
    __slots__ = ("zone",)
    ZONE_FIELD_NUMBER: _ClassVar[int]
    zone: Zone
    def __init__(self, zone: _Optional[_Union[Zone, _Mapping]] = ...) -> None: ...

class GetZoneByNodeNameRequest(_message.Message):
    __slots__ = ("meta", "node_name")
    META_FIELD_NUMBER: _ClassVar[int]
    NODE_NAME_FIELD_NUMBER: _ClassVar[int]
    meta: _common_pb2.RequestMeta
    node_name: str
    def __init__(self, meta: _Optional[_Union[_common_pb2.RequestMeta, _Mapping]] = ..., node_name: _Optional[str] = ...) -> None: ...

class GetZoneByNodeNameResponse(_message.Message):
    __slots__ = ("zone",)
    ZONE_FIELD_NUMBER: _ClassVar[int]
    zone: Zone
    def __init__(self, zone: _Optional[_Union[Zone, _Mapping]] = ...) -> None: ...

class ListClustersRequest(_message.Message):
    __slots__ = ("meta",)
    META_FIELD_NUMBER: _ClassVar[int]
    meta: _common_pb2.RequestMeta
    def __init__(self, meta: _Optional[_Union[_common_pb2.RequestMeta, _Mapping]] = ...) -> None: ...

class ListClustersResponse(_message.Message):
    __slots__ = ("clusters",)
    CLUSTERS_FIELD_NUMBER: _ClassVar[int]
    clusters: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, clusters: _Optional[_Iterable[str]] = ...) -> None: ...

class MasterRequest(_message.Message):
    __slots__ = ("meta", "cluster_name")
    META_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_NAME_FIELD_NUMBER: _ClassVar[int]
    meta: _common_pb2.RequestMeta
    cluster_name: str
    def __init__(self, meta: _Optional[_Union[_common_pb2.RequestMeta, _Mapping]] = ..., cluster_name: _Optional[str] = ...) -> None: ...

class MasterResponse(_message.Message):
    __slots__ = ("address",)
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    address: str
    def __init__(self, address: _Optional[str] = ...) -> None: ...

class ScrubDnsRequest(_message.Message):
    __slots__ = ("meta", "nameservers", "searches")
    META_FIELD_NUMBER: _ClassVar[int]
    NAMESERVERS_FIELD_NUMBER: _ClassVar[int]
    SEARCHES_FIELD_NUMBER: _ClassVar[int]
    meta: _common_pb2.RequestMeta
    nameservers: _containers.RepeatedScalarFieldContainer[str]
    searches: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, meta: _Optional[_Union[_common_pb2.RequestMeta, _Mapping]] = ..., nameservers: _Optional[_Iterable[str]] = ..., searches: _Optional[_Iterable[str]] = ...) -> None: ...

class ScrubDnsResponse(_message.Message):
    __slots__ = ("nameservers", "searches")
    NAMESERVERS_FIELD_NUMBER: _ClassVar[int]
    SEARCHES_FIELD_NUMBER: _ClassVar[int]
    nameservers: _containers.RepeatedScalarFieldContainer[str]
    searches: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, nameservers: _Optional[_Iterable[str]] = ..., searches: _Optional[_Iterable[str]] = ...) -> None: ...
