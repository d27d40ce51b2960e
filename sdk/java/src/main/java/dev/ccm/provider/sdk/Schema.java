package dev.ccm.provider.sdk;

import dev.ccm.provider.v1.GetProviderSchemaResponse;
import dev.ccm.provider.v1.SchemaAnnotation;
import dev.ccm.provider.v1.SchemaConfigKey;
import dev.ccm.provider.v1.SchemaObjectKind;
import dev.ccm.provider.v1.SchemaValueType;
import java.util.List;

/**
 * Builders for {@link Provider#schema()} (IdentityService/GetProviderSchema,
 * protocol 1.1), shorter than the generated ones for the usual entries; chain
 * the generated setters for the rest (setPattern, setCaseInsensitive, ...).
 *
 * <pre>{@code
 * Schema.of(List.of("example.com/lb-"),
 *     List.of(Schema.service("example.com/lb-mode", SchemaValueType.SCHEMA_VALUE_TYPE_ENUM, "The mode.")
 *             .addAllAllowedValues(List.of("fast", "safe")).setDefaultValue("safe").build(),
 *         Schema.deprecated(Schema.service("example.com/lb-kind", SchemaValueType.SCHEMA_VALUE_TYPE_ENUM, "Earlier name."),
 *             "example.com/lb-mode").addAllAllowedValues(List.of("fast", "safe")).build()),
 *     List.of());
 * }</pre>
 */
public final class Schema {
  private Schema() {}

  /** The whole answer: owned annotation prefixes, annotations, cloud-config keys. */
  public static GetProviderSchemaResponse of(List<String> prefixes, List<SchemaAnnotation> annotations, List<SchemaConfigKey> cloudConfigKeys) {
    return GetProviderSchemaResponse.newBuilder().addAllAnnotationPrefixes(prefixes).addAllAnnotations(annotations).addAllCloudConfigKeys(cloudConfigKeys).build();
  }

  /** A Service annotation of `type`, with its one-or-two-sentence description. */
  public static SchemaAnnotation.Builder service(String key, SchemaValueType type, String description) {
    return SchemaAnnotation.newBuilder().setKey(key).setObjectKind(SchemaObjectKind.SCHEMA_OBJECT_KIND_SERVICE).setType(type).setDescription(description);
  }

  /** A Node annotation of `type`. */
  public static SchemaAnnotation.Builder node(String key, SchemaValueType type, String description) {
    return SchemaAnnotation.newBuilder().setKey(key).setObjectKind(SchemaObjectKind.SCHEMA_OBJECT_KIND_NODE).setType(type).setDescription(description);
  }

  /** A cloud-config key (section "" for a JSON/YAML top level). */
  public static SchemaConfigKey.Builder configKey(String section, String key, SchemaValueType type, String description) {
    return SchemaConfigKey.newBuilder().setSection(section).setKey(key).setType(type).setDescription(description);
  }

  /** Marks an annotation deprecated, still read; `replacement` is the key to use instead ("" when none). */
  public static SchemaAnnotation.Builder deprecated(SchemaAnnotation.Builder a, String replacement) {
    return a.setDeprecated(true).setReplacement(replacement);
  }

  /** Marks a cloud-config key deprecated; `replacement` is the key to use instead ("" when none). */
  public static SchemaConfigKey.Builder deprecated(SchemaConfigKey.Builder c, String replacement) {
    return c.setDeprecated(true).setReplacement(replacement);
  }
}
