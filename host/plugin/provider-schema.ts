/**
 * A provider's schema (IdentityService.GetProviderSchema, protocol 1.1,
 * announced by CAPABILITY_PROVIDER_SCHEMA), compiled once per provider
 * process, and the check of a Service's annotations against it that the
 * service controller runs before every EnsureLoadBalancer and
 * UpdateLoadBalancer.
 *
 * Prefixes: the provider declares the annotation prefixes it owns
 * (`annotation_prefixes`, e.g. "local.ccm.dev/" or
 * "service.beta.kubernetes.io/aws-load-balancer-"). A key under an owned
 * prefix that the schema does not list is a misspelling; a key under no owned
 * prefix is checked only when listed. A schema the host cannot use (too big,
 * an invalid entry, a pattern that does not compile) is ignored whole, with
 * one line: the provider then checks its input alone, as before.
 */
import ipaddr from 'ipaddr.js';
import { GetProviderSchemaResponse, SchemaObjectKind, SchemaValueType, type SchemaAnnotation } from '../../proto/gen/ccm/provider/v1/identity.js';

/** Largest schema accepted, encoded (the protocol's limit). */
export const MAX_SCHEMA_BYTES = 1024 * 1024;
/** Longest value quoted in a problem line. */
const MAX_QUOTED = 100;
/** Allowed values listed in a problem line at most. */
const MAX_LISTED = 10;

const BOOLS = new Set(['1', 't', 'T', 'TRUE', 'true', 'True', '0', 'f', 'F', 'FALSE', 'false', 'False']);
const INT = /^[+-]?\d+$/;
const DURATION = /^[+-]?(\d+(\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)((\d+(\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h))*$|^0$/;

interface Entry {
  a: SchemaAnnotation;
  pattern?: RegExp;
  allowed?: Set<string>;
}

/** A usable schema: the Service annotations a provider reads and the prefixes it owns. */
export class AnnotationSchema {
  private constructor(
    private readonly prefixes: readonly string[],
    private readonly service: ReadonlyMap<string, Entry>,
  ) {}

  /** Compiles a GetProviderSchema answer, or says in one line why the host cannot use it. */
  static compile(resp: GetProviderSchemaResponse): { schema: AnnotationSchema } | { problem: string } {
    const size = GetProviderSchemaResponse.encode(resp).finish().length;
    if (size > MAX_SCHEMA_BYTES) return { problem: `the schema is ${size} bytes, over the limit of ${MAX_SCHEMA_BYTES}` };
    const problems: string[] = [];
    const prefixes = new Set<string>();
    for (const p of resp.annotationPrefixes) {
      if (p === '' || p.length > 253) problems.push(`annotation prefix ${JSON.stringify(p.slice(0, MAX_QUOTED))} is empty or over 253 characters`);
      else if (prefixes.has(p)) problems.push(`annotation prefix ${JSON.stringify(p)} is declared twice`);
      prefixes.add(p);
    }
    const service = new Map<string, Entry>();
    const seen = new Set<string>();
    for (const a of resp.annotations) {
      const where = `annotation ${JSON.stringify(a.key.slice(0, MAX_QUOTED))}`;
      if (a.key === '') problems.push('an annotation has no key');
      if (a.objectKind === SchemaObjectKind.SCHEMA_OBJECT_KIND_UNSPECIFIED || !(a.objectKind in SchemaObjectKind))
        problems.push(`${where} has no object kind`);
      if (a.type === SchemaValueType.SCHEMA_VALUE_TYPE_UNSPECIFIED || !(a.type in SchemaValueType)) problems.push(`${where} has no type`);
      if (a.type === SchemaValueType.SCHEMA_VALUE_TYPE_ENUM && a.allowedValues.length === 0)
        problems.push(`${where} is an enum without allowed values`);
      const id = `${a.objectKind}/${a.key}`;
      if (seen.has(id)) problems.push(`${where} is listed twice`);
      seen.add(id);
      let pattern: RegExp | undefined;
      if (a.pattern !== '') {
        try {
          pattern = new RegExp(`^(?:${a.pattern})$`, 'u');
        } catch {
          problems.push(`${where} has a pattern the host cannot compile: ${JSON.stringify(a.pattern.slice(0, MAX_QUOTED))}`);
        }
      }
      const fold = (v: string) => (a.caseInsensitive ? v.toLowerCase() : v);
      const allowed = a.allowedValues.length > 0 ? new Set(a.allowedValues.map(fold)) : undefined;
      if (a.objectKind === SchemaObjectKind.SCHEMA_OBJECT_KIND_SERVICE) service.set(a.key, { a, pattern, allowed });
    }
    if (problems.length > 0) return { problem: problems.slice(0, 5).join('; ') + (problems.length > 5 ? `; and ${problems.length - 5} more` : '') };
    return { schema: new AnnotationSchema([...prefixes], service) };
  }

  /** How many Service annotations the schema lists (for the start-up log line). */
  get serviceAnnotations(): number {
    return this.service.size;
  }

  /**
   * One line per bad annotation of a Service: a key under an owned prefix the
   * schema does not list, or a value that does not fit its entry. Empty: all
   * good. Sorted by key, so the message of an unchanged Service is stable.
   */
  serviceProblems(annotations: Readonly<Record<string, string>> | undefined): string[] {
    const out: string[] = [];
    for (const key of Object.keys(annotations ?? {}).sort()) {
      const value = annotations![key]!;
      const entry = this.service.get(key);
      if (entry) {
        const why = valueProblem(entry, value);
        if (why) out.push(`annotation ${key}=${quote(value)}: ${why}`);
        continue;
      }
      const prefix = this.prefixes.find((p) => key.startsWith(p));
      if (prefix === undefined) continue;
      // Deprecated keys are not suggested: the replacement is.
      const known = [...this.service.entries()]
        .filter(([k, e]) => k.startsWith(prefix) && !e.a.deprecated)
        .map(([k]) => k)
        .sort();
      out.push(
        `annotation ${key} is not one the provider reads under its prefix ${prefix} (misspelled?)` +
          (known.length > 0 ? `; known: ${list(known)}` : ''),
      );
    }
    return out;
  }

  /**
   * One line per deprecated annotation the Service carries, naming its
   * replacement when the schema gives one. Still valid (serviceProblems
   * checks their values as usual); sorted by key, so the lines of an
   * unchanged Service are stable.
   */
  serviceDeprecations(annotations: Readonly<Record<string, string>> | undefined): string[] {
    return Object.keys(annotations ?? {})
      .sort()
      .flatMap((key) => {
        const a = this.service.get(key)?.a;
        if (!a?.deprecated) return [];
        return [`annotation ${key} is deprecated` + (a.replacement ? `; use ${a.replacement} instead` : '')];
      });
  }
}

function quote(v: string): string {
  return JSON.stringify(v.length > MAX_QUOTED ? `${v.slice(0, MAX_QUOTED)}…` : v);
}

function list(values: readonly string[]): string {
  return values.length > MAX_LISTED ? `${values.slice(0, MAX_LISTED).join(', ')}, … (${values.length} in all)` : values.join(', ');
}

/** Why `raw` does not fit the entry, or undefined. */
function valueProblem({ a, pattern, allowed }: Entry, raw: string): string | undefined {
  const value = raw.trim();
  const fold = (v: string) => (a.caseInsensitive ? v.toLowerCase() : v);
  const allowedText = () => `allowed: ${list(a.allowedValues)}`;
  const items = () => value.split(',').map((s) => s.trim());
  const matches = (v: string) => !pattern || pattern.test(v);
  switch (a.type) {
    case SchemaValueType.SCHEMA_VALUE_TYPE_STRING:
      return matches(value) ? undefined : `does not match ${a.pattern}`;
    case SchemaValueType.SCHEMA_VALUE_TYPE_BOOL:
      return BOOLS.has(value) ? undefined : 'must be true or false';
    case SchemaValueType.SCHEMA_VALUE_TYPE_INT:
      return INT.test(value) && matches(value) ? undefined : `must be an integer${pattern ? ` matching ${a.pattern}` : ''}`;
    case SchemaValueType.SCHEMA_VALUE_TYPE_DURATION:
      return DURATION.test(value) && matches(value) ? undefined : 'must be a duration such as 30s or 1m30s';
    case SchemaValueType.SCHEMA_VALUE_TYPE_ENUM:
      return allowed!.has(fold(value)) ? undefined : `not an allowed value (${allowedText()})`;
    case SchemaValueType.SCHEMA_VALUE_TYPE_CIDR_LIST: {
      const bad = items().find((c) => !ipaddr.isValidCIDR(c));
      return bad === undefined ? undefined : `${quote(bad)} is not a CIDR (a comma-separated list of CIDRs, e.g. 10.0.0.0/8)`;
    }
    case SchemaValueType.SCHEMA_VALUE_TYPE_STRING_LIST: {
      const bad = items().find((s) => s === '' || !matches(s) || (allowed !== undefined && !allowed.has(fold(s))));
      if (bad === undefined) return undefined;
      return bad === ''
        ? 'has an empty item'
        : allowed
          ? `item ${quote(bad)} is not allowed (${allowedText()})`
          : `item ${quote(bad)} does not match ${a.pattern}`;
    }
    case SchemaValueType.SCHEMA_VALUE_TYPE_KEY_VALUE_LIST: {
      const bad = items().find((s) => !/^[^=]+=/.test(s) || !matches(s));
      return bad === undefined ? undefined : `item ${quote(bad)} is not key=value`;
    }
    default:
      return undefined;
  }
}
