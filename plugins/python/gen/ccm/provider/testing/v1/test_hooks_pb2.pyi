from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Optional as _Optional

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
