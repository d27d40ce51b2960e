/** The Service validation webhook's decisions (host/controllers/service/admission.ts), over the real schema check. */
import test from 'ava';
import type { V1Service } from '@kubernetes/client-node';
import { GetProviderSchemaResponse, SchemaObjectKind, SchemaValueType } from '../../../proto/gen/ccm/provider/v1/identity.js';
import { AnnotationSchema } from '../../../host/plugin/provider-schema.js';
import { admitService, type AdmissionProvider, type FailurePolicy } from '../../../host/controllers/service/admission.js';
import { LbClassResolver } from '../../../host/lb-classes.js';

const compiled = AnnotationSchema.compile(
  GetProviderSchemaResponse.fromPartial({
    annotationPrefixes: ['x.dev/'],
    annotations: [
      {
        key: 'x.dev/mode',
        objectKind: SchemaObjectKind.SCHEMA_OBJECT_KIND_SERVICE,
        type: SchemaValueType.SCHEMA_VALUE_TYPE_ENUM,
        allowedValues: ['a', 'b'],
      },
      {
        key: 'x.dev/old-mode',
        objectKind: SchemaObjectKind.SCHEMA_OBJECT_KIND_SERVICE,
        type: SchemaValueType.SCHEMA_VALUE_TYPE_ENUM,
        allowedValues: ['a', 'b'],
        deprecated: true,
        replacement: 'x.dev/mode',
      },
    ],
  }),
);
if ('problem' in compiled) throw new Error(compiled.problem);
const schema = compiled.schema;

function provider(name: string, classes: string[], unclassed: boolean, o: { ready?: boolean; schema?: boolean } = {}): AdmissionProvider {
  return {
    name,
    classes: { classes, unclassed },
    ready: () => o.ready ?? true,
    lbs: {
      annotationProblems: (a) => (o.schema === false ? [] : schema.serviceProblems(a)),
      annotationDeprecations: (a) => (o.schema === false ? [] : schema.serviceDeprecations(a)),
    },
  };
}

const resolver = (ready = true) =>
  new LbClassResolver<AdmissionProvider>([provider('x', [], true, { ready }), provider('plain', ['plain.dev/lb'], false, { schema: false })]);

function service(annotations: Record<string, string>, spec: Partial<NonNullable<V1Service['spec']>> = {}): V1Service {
  return { metadata: { name: 's', namespace: 'n', annotations }, spec: { type: 'LoadBalancer', ...spec } };
}

const rows: {
  name: string;
  op?: 'CREATE' | 'UPDATE';
  obj: V1Service;
  old?: V1Service;
  ready?: boolean;
  policy?: FailurePolicy;
  allowed: boolean;
  message?: RegExp;
  warnings?: RegExp[];
}[] = [
  { name: 'good', obj: service({ 'x.dev/mode': 'a' }), allowed: true },
  {
    name: 'bad value',
    obj: service({ 'x.dev/mode': 'c' }),
    allowed: false,
    message: /^annotation x\.dev\/mode="c": not an allowed value \(allowed: a, b\)$/,
  },
  {
    name: 'typo, known lists current keys only',
    obj: service({ 'x.dev/mdoe': 'a' }),
    allowed: false,
    message: /misspelled\?\); known: x\.dev\/mode$/,
  },
  { name: 'not a LoadBalancer', obj: service({ 'x.dev/mdoe': 'a' }, { type: 'ClusterIP' }), allowed: true },
  { name: 'a class nobody here serves', obj: service({ 'x.dev/mdoe': 'a' }, { loadBalancerClass: 'other.dev/lb' }), allowed: true },
  { name: 'a provider without a schema', obj: service({ 'x.dev/mdoe': 'a' }, { loadBalancerClass: 'plain.dev/lb' }), allowed: true },
  { name: 'being deleted', obj: { ...service({ 'x.dev/mdoe': 'a' }), metadata: { deletionTimestamp: new Date() } }, allowed: true },
  {
    name: 'deprecated: allowed with a warning',
    obj: service({ 'x.dev/old-mode': 'a' }),
    allowed: true,
    warnings: [/^annotation x\.dev\/old-mode is deprecated; use x\.dev\/mode instead$/],
  },
  { name: 'provider not ready, Ignore', obj: service({ 'x.dev/mdoe': 'a' }), ready: false, allowed: true },
  {
    name: 'provider not ready, Fail',
    obj: service({ 'x.dev/mode': 'a' }),
    ready: false,
    policy: 'Fail',
    allowed: false,
    message: /load-balancer provider x is not ready/,
  },
  {
    name: 'update introducing a typo',
    op: 'UPDATE',
    obj: service({ 'x.dev/mdoe': 'a' }),
    old: service({}),
    allowed: false,
    message: /x\.dev\/mdoe is not one/,
  },
  {
    name: 'update keeping a problem the Service had: a warning',
    op: 'UPDATE',
    obj: service({ 'x.dev/mdoe': 'a', other: 'y' }),
    old: service({ 'x.dev/mdoe': 'a' }),
    allowed: true,
    warnings: [/x\.dev\/mdoe is not one/],
  },
  {
    name: 'update into LoadBalancer with a typo',
    op: 'UPDATE',
    obj: service({ 'x.dev/mdoe': 'a' }),
    old: service({ 'x.dev/mdoe': 'a' }, { type: 'ClusterIP' }),
    allowed: false,
  },
];

for (const r of rows) {
  test(r.name, (t) => {
    const answer = admitService(
      { uid: 'u1', kind: { kind: 'Service' }, operation: r.op ?? 'CREATE', object: r.obj, oldObject: r.old },
      resolver(r.ready ?? true),
      r.policy ?? 'Ignore',
    );
    t.is(answer.uid, 'u1');
    t.is(answer.allowed, r.allowed);
    if (r.message) t.regex(answer.status?.message ?? '', r.message);
    if (!r.allowed) t.is(answer.status?.code, 400);
    t.is(answer.warnings?.length ?? 0, r.warnings?.length ?? 0);
    for (const [i, w] of (r.warnings ?? []).entries()) t.regex(answer.warnings![i]!, w);
  });
}
