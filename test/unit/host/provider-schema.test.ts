/** The host's check of Service annotations against a provider's schema (host/plugin/provider-schema.ts). */
import test from 'ava';
import {
  GetProviderSchemaResponse,
  SchemaObjectKind,
  SchemaValueType,
  type DeepPartial,
  type SchemaAnnotation,
} from '../../../proto/gen/ccm/provider/v1/identity.js';
import { AnnotationSchema, MAX_SCHEMA_BYTES } from '../../../host/plugin/provider-schema.js';
import { deriveCapabilities } from '../../../sdk/capabilities.js';
import { Capability } from '../../../proto/gen/ccm/provider/v1/identity.js';
import { createLocalCloud } from '../../../plugins/local/cloud.js';

const P = 'example.com/lb-';
const T = SchemaValueType;
const svc = (key: string, type: SchemaValueType, more: Partial<SchemaAnnotation> = {}): DeepPartial<SchemaAnnotation> => ({
  key: `${P}${key}`,
  objectKind: SchemaObjectKind.SCHEMA_OBJECT_KIND_SERVICE,
  type,
  ...more,
});

function compile(partial: DeepPartial<GetProviderSchemaResponse>): AnnotationSchema | string {
  const r = AnnotationSchema.compile(GetProviderSchemaResponse.fromPartial(partial));
  return 'problem' in r ? r.problem : r.schema;
}

const schema = compile({
  annotationPrefixes: [P],
  annotations: [
    svc('mode', T.SCHEMA_VALUE_TYPE_ENUM, { allowedValues: ['VIP', 'Proxy'], caseInsensitive: true }),
    svc('internal', T.SCHEMA_VALUE_TYPE_BOOL),
    svc('idle', T.SCHEMA_VALUE_TYPE_INT),
    svc('timeout', T.SCHEMA_VALUE_TYPE_DURATION),
    svc('ranges', T.SCHEMA_VALUE_TYPE_CIDR_LIST),
    svc('zones', T.SCHEMA_VALUE_TYPE_STRING_LIST, { allowedValues: ['a', 'b'] }),
    svc('tags', T.SCHEMA_VALUE_TYPE_KEY_VALUE_LIST),
    svc('name', T.SCHEMA_VALUE_TYPE_STRING, { pattern: '[a-z]{1,8}' }),
    { key: 'other.io/listed', objectKind: SchemaObjectKind.SCHEMA_OBJECT_KIND_SERVICE, type: T.SCHEMA_VALUE_TYPE_BOOL },
  ],
}) as AnnotationSchema;

const cases: { annotations: Record<string, string>; want: RegExp | undefined }[] = [
  { annotations: { [`${P}mode`]: 'proxy', [`${P}internal`]: 'True', [`${P}idle`]: '-3', [`${P}timeout`]: '1m30s' }, want: undefined },
  { annotations: { [`${P}ranges`]: '10.0.0.0/8, 2001:db8::/32', [`${P}zones`]: 'a,b', [`${P}tags`]: 'team=a,env=' }, want: undefined },
  { annotations: { [`${P}name`]: 'web', 'other.io/unlisted': 'x', 'kubernetes.io/x': 'y' }, want: undefined },
  { annotations: { [`${P}mode`]: 'Sideways' }, want: /mode="Sideways": not an allowed value \(allowed: VIP, Proxy\)/ },
  {
    annotations: { [`${P}mdoe`]: 'VIP' },
    want: /lb-mdoe is not one the provider reads under its prefix example\.com\/lb- \(misspelled\?\); known: /,
  },
  { annotations: { [`${P}internal`]: 'yes' }, want: /must be true or false/ },
  { annotations: { [`${P}idle`]: '1.5' }, want: /must be an integer/ },
  { annotations: { [`${P}timeout`]: '30' }, want: /must be a duration/ },
  { annotations: { [`${P}ranges`]: '10.0.0.0/8,10.0.0.1' }, want: /"10\.0\.0\.1" is not a CIDR/ },
  { annotations: { [`${P}zones`]: 'a,c' }, want: /item "c" is not allowed/ },
  { annotations: { [`${P}tags`]: 'team' }, want: /item "team" is not key=value/ },
  { annotations: { [`${P}name`]: 'Web' }, want: /does not match \[a-z\]\{1,8\}/ },
  { annotations: { 'other.io/listed': 'maybe' }, want: /other\.io\/listed="maybe": must be true or false/ },
];

for (const [i, c] of cases.entries()) {
  test(`case ${i}: ${JSON.stringify(c.annotations)}`, (t) => {
    const problems = schema.serviceProblems(c.annotations);
    if (!c.want) t.deepEqual(problems, []);
    else {
      t.is(problems.length, 1);
      t.regex(problems[0]!, c.want);
    }
  });
}

test('schemas the host cannot use are refused in one line', (t) => {
  const rows: { partial: DeepPartial<GetProviderSchemaResponse>; want: RegExp }[] = [
    { partial: { annotations: [svc('m', T.SCHEMA_VALUE_TYPE_ENUM)] }, want: /enum without allowed values/ },
    { partial: { annotations: [svc('m', T.SCHEMA_VALUE_TYPE_UNSPECIFIED)] }, want: /has no type/ },
    { partial: { annotations: [svc('m', T.SCHEMA_VALUE_TYPE_STRING, { pattern: '(' })] }, want: /cannot compile/ },
    { partial: { annotations: [svc('m', T.SCHEMA_VALUE_TYPE_BOOL), svc('m', T.SCHEMA_VALUE_TYPE_BOOL)] }, want: /listed twice/ },
    { partial: { annotationPrefixes: [''] }, want: /is empty/ },
    {
      partial: { annotations: [svc('m', T.SCHEMA_VALUE_TYPE_STRING, { description: 'x'.repeat(MAX_SCHEMA_BYTES) })] },
      want: /bytes, over the limit of 1048576/,
    },
  ];
  for (const r of rows) t.regex(compile(r.partial) as string, r.want);
});

test('the local cloud publishes its schema (CAPABILITY_PROVIDER_SCHEMA), and none with LOCALCLOUD_NO_SCHEMA=1', (t) => {
  const dir = `/tmp/unused-${process.pid}`;
  const cloud = createLocalCloud({ stateDir: dir, env: {} });
  t.true(deriveCapabilities(cloud).capabilities.includes(Capability.CAPABILITY_PROVIDER_SCHEMA));
  const s = compile(cloud.schema!);
  t.true(s instanceof AnnotationSchema, String(s));
  t.deepEqual((s as AnnotationSchema).serviceProblems({ 'local.ccm.dev/ip-mode': 'proxy' }), []);
  const without = createLocalCloud({ stateDir: dir, env: { LOCALCLOUD_NO_SCHEMA: '1' } });
  t.is(without.schema, undefined);
  t.false(deriveCapabilities(without).capabilities.includes(Capability.CAPABILITY_PROVIDER_SCHEMA));
});
