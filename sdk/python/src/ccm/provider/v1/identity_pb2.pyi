from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Service(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SERVICE_UNSPECIFIED: _ClassVar[Service]
    SERVICE_INSTANCES: _ClassVar[Service]
    SERVICE_ZONES: _ClassVar[Service]
    SERVICE_CLUSTERS: _ClassVar[Service]
    SERVICE_LOAD_BALANCERS: _ClassVar[Service]
    SERVICE_ROUTES: _ClassVar[Service]
    SERVICE_VOLUMES: _ClassVar[Service]

class Capability(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CAPABILITY_UNSPECIFIED: _ClassVar[Capability]
    CAPABILITY_INSTANCES_BATCH: _ClassVar[Capability]
    CAPABILITY_INSTANCES_LEGACY: _ClassVar[Capability]
    CAPABILITY_LOAD_BALANCER_BATCH_HOSTS: _ClassVar[Capability]
    CAPABILITY_LOAD_BALANCER_IP_MODE_PROXY: _ClassVar[Capability]
    CAPABILITY_ROUTES_RECONCILE: _ClassVar[Capability]
    CAPABILITY_VOLUMES_LIST_PUBLISHED_NODES: _ClassVar[Capability]
    CAPABILITY_VOLUMES_EXPAND_ONLINE: _ClassVar[Capability]
    CAPABILITY_LOAD_BALANCER_LIST: _ClassVar[Capability]
    CAPABILITY_LOAD_BALANCER_BATCH_ENSURE: _ClassVar[Capability]
    CAPABILITY_METRICS: _ClassVar[Capability]
    CAPABILITY_PROVIDER_SCHEMA: _ClassVar[Capability]
    CAPABILITY_LOAD_BALANCER_POD_BACKENDS: _ClassVar[Capability]

class SchemaObjectKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SCHEMA_OBJECT_KIND_UNSPECIFIED: _ClassVar[SchemaObjectKind]
    SCHEMA_OBJECT_KIND_SERVICE: _ClassVar[SchemaObjectKind]
    SCHEMA_OBJECT_KIND_NODE: _ClassVar[SchemaObjectKind]

class SchemaValueType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SCHEMA_VALUE_TYPE_UNSPECIFIED: _ClassVar[SchemaValueType]
    SCHEMA_VALUE_TYPE_STRING: _ClassVar[SchemaValueType]
    SCHEMA_VALUE_TYPE_BOOL: _ClassVar[SchemaValueType]
    SCHEMA_VALUE_TYPE_INT: _ClassVar[SchemaValueType]
    SCHEMA_VALUE_TYPE_DURATION: _ClassVar[SchemaValueType]
    SCHEMA_VALUE_TYPE_ENUM: _ClassVar[SchemaValueType]
    SCHEMA_VALUE_TYPE_CIDR_LIST: _ClassVar[SchemaValueType]
    SCHEMA_VALUE_TYPE_STRING_LIST: _ClassVar[SchemaValueType]
    SCHEMA_VALUE_TYPE_KEY_VALUE_LIST: _ClassVar[SchemaValueType]
SERVICE_UNSPECIFIED: Service
SERVICE_INSTANCES: Service
SERVICE_ZONES: Service
SERVICE_CLUSTERS: Service
SERVICE_LOAD_BALANCERS: Service
SERVICE_ROUTES: Service
SERVICE_VOLUMES: Service
CAPABILITY_UNSPECIFIED: Capability
CAPABILITY_INSTANCES_BATCH: Capability
CAPABILITY_INSTANCES_LEGACY: Capability
CAPABILITY_LOAD_BALANCER_BATCH_HOSTS: Capability
CAPABILITY_LOAD_BALANCER_IP_MODE_PROXY: Capability
CAPABILITY_ROUTES_RECONCILE: Capability
CAPABILITY_VOLUMES_LIST_PUBLISHED_NODES: Capability
CAPABILITY_VOLUMES_EXPAND_ONLINE: Capability
CAPABILITY_LOAD_BALANCER_LIST: Capability
CAPABILITY_LOAD_BALANCER_BATCH_ENSURE: Capability
CAPABILITY_METRICS: Capability
CAPABILITY_PROVIDER_SCHEMA: Capability
CAPABILITY_LOAD_BALANCER_POD_BACKENDS: Capability
SCHEMA_OBJECT_KIND_UNSPECIFIED: SchemaObjectKind
SCHEMA_OBJECT_KIND_SERVICE: SchemaObjectKind
SCHEMA_OBJECT_KIND_NODE: SchemaObjectKind
SCHEMA_VALUE_TYPE_UNSPECIFIED: SchemaValueType
SCHEMA_VALUE_TYPE_STRING: SchemaValueType
SCHEMA_VALUE_TYPE_BOOL: SchemaValueType
SCHEMA_VALUE_TYPE_INT: SchemaValueType
SCHEMA_VALUE_TYPE_DURATION: SchemaValueType
SCHEMA_VALUE_TYPE_ENUM: SchemaValueType
SCHEMA_VALUE_TYPE_CIDR_LIST: SchemaValueType
SCHEMA_VALUE_TYPE_STRING_LIST: SchemaValueType
SCHEMA_VALUE_TYPE_KEY_VALUE_LIST: SchemaValueType

class GetPluginInfoRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetPluginInfoResponse(_message.Message):
    __slots__ = ("name", "vendor_version", "protocol_version", "protocol_minor", "instance_id", "manifest", "provider_flags", "provider_controllers")
    class ManifestEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    VENDOR_VERSION_FIELD_NUMBER: _ClassVar[int]
    PROTOCOL_VERSION_FIELD_NUMBER: _ClassVar[int]
    PROTOCOL_MINOR_FIELD_NUMBER: _ClassVar[int]
    INSTANCE_ID_FIELD_NUMBER: _ClassVar[int]
    MANIFEST_FIELD_NUMBER: _ClassVar[int]
    PROVIDER_FLAGS_FIELD_NUMBER: _ClassVar[int]
    PROVIDER_CONTROLLERS_FIELD_NUMBER: _ClassVar[int]
    name: str
    vendor_version: str
    protocol_version: int
    protocol_minor: int
    instance_id: str
    manifest: _containers.ScalarMap[str, str]
    provider_flags: _containers.RepeatedScalarFieldContainer[str]
    provider_controllers: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, name: _Optional[str] = ..., vendor_version: _Optional[str] = ..., protocol_version: _Optional[int] = ..., protocol_minor: _Optional[int] = ..., instance_id: _Optional[str] = ..., manifest: _Optional[_Mapping[str, str]] = ..., provider_flags: _Optional[_Iterable[str]] = ..., provider_controllers: _Optional[_Iterable[str]] = ...) -> None: ...

class GetPluginCapabilitiesRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetPluginCapabilitiesResponse(_message.Message):
    __slots__ = ("services", "capabilities", "provider_name", "has_cluster_id", "provider_id_prefixes", "node_selector", "load_balancer_classes", "load_balancer_classes_only", "volume_provisioners")
    SERVICES_FIELD_NUMBER: _ClassVar[int]
    CAPABILITIES_FIELD_NUMBER: _ClassVar[int]
    PROVIDER_NAME_FIELD_NUMBER: _ClassVar[int]
    HAS_CLUSTER_ID_FIELD_NUMBER: _ClassVar[int]
    PROVIDER_ID_PREFIXES_FIELD_NUMBER: _ClassVar[int]
    NODE_SELECTOR_FIELD_NUMBER: _ClassVar[int]
    LOAD_BALANCER_CLASSES_FIELD_NUMBER: _ClassVar[int]
    LOAD_BALANCER_CLASSES_ONLY_FIELD_NUMBER: _ClassVar[int]
    VOLUME_PROVISIONERS_FIELD_NUMBER: _ClassVar[int]
    services: _containers.RepeatedScalarFieldContainer[Service]
    capabilities: _containers.RepeatedScalarFieldContainer[Capability]
    provider_name: str
    has_cluster_id: bool
    provider_id_prefixes: _containers.RepeatedScalarFieldContainer[str]
    node_selector: str
    load_balancer_classes: _containers.RepeatedScalarFieldContainer[str]
    load_balancer_classes_only: bool
    volume_provisioners: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, services: _Optional[_Iterable[_Union[Service, str]]] = ..., capabilities: _Optional[_Iterable[_Union[Capability, str]]] = ..., provider_name: _Optional[str] = ..., has_cluster_id: bool = ..., provider_id_prefixes: _Optional[_Iterable[str]] = ..., node_selector: _Optional[str] = ..., load_balancer_classes: _Optional[_Iterable[str]] = ..., load_balancer_classes_only: bool = ..., volume_provisioners: _Optional[_Iterable[str]] = ...) -> None: ...

class GetMetricsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetMetricsResponse(_message.Message):
    __slots__ = ("text",)
    TEXT_FIELD_NUMBER: _ClassVar[int]
    text: str
    def __init__(self, text: _Optional[str] = ...) -> None: ...

class ProbeRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ProbeResponse(_message.Message):
    __slots__ = ("ready",)
    READY_FIELD_NUMBER: _ClassVar[int]
    ready: bool
    def __init__(self, ready: bool = ...) -> None: ...

class GetProviderSchemaRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetProviderSchemaResponse(_message.Message):
    __slots__ = ("annotation_prefixes", "annotations", "cloud_config_keys")
    ANNOTATION_PREFIXES_FIELD_NUMBER: _ClassVar[int]
    ANNOTATIONS_FIELD_NUMBER: _ClassVar[int]
    CLOUD_CONFIG_KEYS_FIELD_NUMBER: _ClassVar[int]
    annotation_prefixes: _containers.RepeatedScalarFieldContainer[str]
    annotations: _containers.RepeatedCompositeFieldContainer[SchemaAnnotation]
    cloud_config_keys: _containers.RepeatedCompositeFieldContainer[SchemaConfigKey]
    def __init__(self, annotation_prefixes: _Optional[_Iterable[str]] = ..., annotations: _Optional[_Iterable[_Union[SchemaAnnotation, _Mapping]]] = ..., cloud_config_keys: _Optional[_Iterable[_Union[SchemaConfigKey, _Mapping]]] = ...) -> None: ...

class SchemaAnnotation(_message.Message):
    __slots__ = ("key", "object_kind", "type", "allowed_values", "case_insensitive", "pattern", "default_value", "deprecated", "replacement", "description")
    KEY_FIELD_NUMBER: _ClassVar[int]
    OBJECT_KIND_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    ALLOWED_VALUES_FIELD_NUMBER: _ClassVar[int]
    CASE_INSENSITIVE_FIELD_NUMBER: _ClassVar[int]
    PATTERN_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_VALUE_FIELD_NUMBER: _ClassVar[int]
    DEPRECATED_FIELD_NUMBER: _ClassVar[int]
    REPLACEMENT_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    key: str
    object_kind: SchemaObjectKind
    type: SchemaValueType
    allowed_values: _containers.RepeatedScalarFieldContainer[str]
    case_insensitive: bool
    pattern: str
    default_value: str
    deprecated: bool
    replacement: str
    description: str
    def __init__(self, key: _Optional[str] = ..., object_kind: _Optional[_Union[SchemaObjectKind, str]] = ..., type: _Optional[_Union[SchemaValueType, str]] = ..., allowed_values: _Optional[_Iterable[str]] = ..., case_insensitive: bool = ..., pattern: _Optional[str] = ..., default_value: _Optional[str] = ..., deprecated: bool = ..., replacement: _Optional[str] = ..., description: _Optional[str] = ...) -> None: ...

class SchemaConfigKey(_message.Message):
    __slots__ = ("section", "key", "type", "allowed_values", "default_value", "deprecated", "replacement", "description")
    SECTION_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    ALLOWED_VALUES_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_VALUE_FIELD_NUMBER: _ClassVar[int]
    DEPRECATED_FIELD_NUMBER: _ClassVar[int]
    REPLACEMENT_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    section: str
    key: str
    type: SchemaValueType
    allowed_values: _containers.RepeatedScalarFieldContainer[str]
    default_value: str
    deprecated: bool
    replacement: str
    description: str
    def __init__(self, section: _Optional[str] = ..., key: _Optional[str] = ..., type: _Optional[_Union[SchemaValueType, str]] = ..., allowed_values: _Optional[_Iterable[str]] = ..., default_value: _Optional[str] = ..., deprecated: bool = ..., replacement: _Optional[str] = ..., description: _Optional[str] = ...) -> None: ...
