from ccm.provider.v1 import common_pb2 as _common_pb2
from google.rpc import status_pb2 as _status_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Route(_message.Message):
    __slots__ = ("name", "target_node", "target_node_addresses", "destination_cidr", "blackhole")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TARGET_NODE_FIELD_NUMBER: _ClassVar[int]
    TARGET_NODE_ADDRESSES_FIELD_NUMBER: _ClassVar[int]
    DESTINATION_CIDR_FIELD_NUMBER: _ClassVar[int]
    BLACKHOLE_FIELD_NUMBER: _ClassVar[int]
    name: str
    target_node: str
    target_node_addresses: _containers.RepeatedCompositeFieldContainer[_common_pb2.NodeAddress]
    destination_cidr: str
    blackhole: bool
    def __init__(self, name: _Optional[str] = ..., target_node: _Optional[str] = ..., target_node_addresses: _Optional[_Iterable[_Union[_common_pb2.NodeAddress, _Mapping]]] = ..., destination_cidr: _Optional[str] = ..., blackhole: bool = ...) -> None: ...

class ListRoutesRequest(_message.Message):
    __slots__ = ("meta", "page_size", "page_token")
    META_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    meta: _common_pb2.RequestMeta
    page_size: int
    page_token: str
    def __init__(self, meta: _Optional[_Union[_common_pb2.RequestMeta, _Mapping]] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListRoutesResponse(_message.Message):
    __slots__ = ("routes", "next_page_token")
    ROUTES_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    routes: _containers.RepeatedCompositeFieldContainer[Route]
    next_page_token: str
    def __init__(self, routes: _Optional[_Iterable[_Union[Route, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class CreateRouteRequest(_message.Message):
    __slots__ = ("meta", "name_hint", "route")
    META_FIELD_NUMBER: _ClassVar[int]
    NAME_HINT_FIELD_NUMBER: _ClassVar[int]
    ROUTE_FIELD_NUMBER: _ClassVar[int]
    meta: _common_pb2.RequestMeta
    name_hint: str
    route: Route
    def __init__(self, meta: _Optional[_Union[_common_pb2.RequestMeta, _Mapping]] = ..., name_hint: _Optional[str] = ..., route: _Optional[_Union[Route, _Mapping]] = ...) -> None: ...

class CreateRouteResponse(_message.Message):
    __slots__ = ("route",)
    ROUTE_FIELD_NUMBER: _ClassVar[int]
    route: Route
    def __init__(self, route: _Optional[_Union[Route, _Mapping]] = ...) -> None: ...

class DeleteRouteRequest(_message.Message):
    __slots__ = ("meta", "route")
    META_FIELD_NUMBER: _ClassVar[int]
    ROUTE_FIELD_NUMBER: _ClassVar[int]
    meta: _common_pb2.RequestMeta
    route: Route
    def __init__(self, meta: _Optional[_Union[_common_pb2.RequestMeta, _Mapping]] = ..., route: _Optional[_Union[Route, _Mapping]] = ...) -> None: ...

class DeleteRouteResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ReconcileRoutesRequest(_message.Message):
    __slots__ = ("meta", "desired", "cluster_cidrs")
    META_FIELD_NUMBER: _ClassVar[int]
    DESIRED_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_CIDRS_FIELD_NUMBER: _ClassVar[int]
    meta: _common_pb2.RequestMeta
    desired: _containers.RepeatedCompositeFieldContainer[Route]
    cluster_cidrs: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, meta: _Optional[_Union[_common_pb2.RequestMeta, _Mapping]] = ..., desired: _Optional[_Iterable[_Union[Route, _Mapping]]] = ..., cluster_cidrs: _Optional[_Iterable[str]] = ...) -> None: ...

class RouteFailure(_message.Message):
    __slots__ = ("route", "error")
    ROUTE_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    route: Route
    error: _status_pb2.Status
    def __init__(self, route: _Optional[_Union[Route, _Mapping]] = ..., error: _Optional[_Union[_status_pb2.Status, _Mapping]] = ...) -> None: ...

class ReconcileRoutesResponse(_message.Message):
    __slots__ = ("created", "deleted", "failed")
    CREATED_FIELD_NUMBER: _ClassVar[int]
    DELETED_FIELD_NUMBER: _ClassVar[int]
    FAILED_FIELD_NUMBER: _ClassVar[int]
    created: _containers.RepeatedCompositeFieldContainer[Route]
    deleted: _containers.RepeatedCompositeFieldContainer[Route]
    failed: _containers.RepeatedCompositeFieldContainer[RouteFailure]
    def __init__(self, created: _Optional[_Iterable[_Union[Route, _Mapping]]] = ..., deleted: _Optional[_Iterable[_Union[Route, _Mapping]]] = ..., failed: _Optional[_Iterable[_Union[RouteFailure, _Mapping]]] = ...) -> None: ...
