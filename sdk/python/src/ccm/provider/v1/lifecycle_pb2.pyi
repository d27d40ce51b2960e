import datetime

from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ConfigureRequest(_message.Message):
    __slots__ = ("cloud_config", "cluster_name", "host_version", "cluster_uid", "provider_args", "controllers", "node_selector", "watch_namespace", "controllers_lease")
    CLOUD_CONFIG_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_NAME_FIELD_NUMBER: _ClassVar[int]
    HOST_VERSION_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_UID_FIELD_NUMBER: _ClassVar[int]
    PROVIDER_ARGS_FIELD_NUMBER: _ClassVar[int]
    CONTROLLERS_FIELD_NUMBER: _ClassVar[int]
    NODE_SELECTOR_FIELD_NUMBER: _ClassVar[int]
    WATCH_NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    CONTROLLERS_LEASE_FIELD_NUMBER: _ClassVar[int]
    cloud_config: bytes
    cluster_name: str
    host_version: str
    cluster_uid: str
    provider_args: _containers.RepeatedScalarFieldContainer[str]
    controllers: _containers.RepeatedScalarFieldContainer[str]
    node_selector: str
    watch_namespace: str
    controllers_lease: _duration_pb2.Duration
    def __init__(self, cloud_config: _Optional[bytes] = ..., cluster_name: _Optional[str] = ..., host_version: _Optional[str] = ..., cluster_uid: _Optional[str] = ..., provider_args: _Optional[_Iterable[str]] = ..., controllers: _Optional[_Iterable[str]] = ..., node_selector: _Optional[str] = ..., watch_namespace: _Optional[str] = ..., controllers_lease: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class ConfigureResponse(_message.Message):
    __slots__ = ("warnings",)
    WARNINGS_FIELD_NUMBER: _ClassVar[int]
    warnings: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, warnings: _Optional[_Iterable[str]] = ...) -> None: ...

class ShutdownRequest(_message.Message):
    __slots__ = ("grace_period",)
    GRACE_PERIOD_FIELD_NUMBER: _ClassVar[int]
    grace_period: _duration_pb2.Duration
    def __init__(self, grace_period: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class ShutdownResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...
