/**
 * The annotation references in docs/providers/ are what their providers
 * publish: docs/providers/local-annotations.md is the local cloud's schema
 * rendered by the kit's --render-schema (regenerate: npm run
 * docs:annotations, tools/annotation-docs.ts), so a changed annotation cannot leave the reference
 * behind. (docs/providers/aws-annotations.md is checked the same way in
 * test/integration/providers/aws-bridge.test.ts, which has the bridged AWS
 * provider running.) Also the renderer's own table rules.
 */
import test from 'ava';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { fetchSchema, renderSchemaMarkdown, SchemaUnavailable } from '../../../conformance/schema-doc.js';
import { ANNOTATION_REFERENCES, renderReference } from '../../../tools/annotation-docs.js';
import { GetProviderSchemaResponse, SchemaObjectKind, SchemaValueType } from '../../../proto/gen/ccm/provider/v1/identity.js';

const ROOT = fileURLToPath(new URL('../../../../', import.meta.url));

test("docs/providers/local-annotations.md is the local cloud's schema as the kit renders it (npm run docs:annotations)", async (t) => {
  t.timeout(60_000);
  const local = ANNOTATION_REFERENCES.find((r) => r.name === 'local')!;
  const rendered = await renderReference(local, join(ROOT, 'dist/plugins/local/main.js'));
  t.is(rendered, await readFile(local.file, 'utf8'), 'stale: run npm run docs:annotations -- local');
  t.regex(
    rendered,
    /\| `local\.ccm\.dev\/ingress-ip-mode` \| enum \| .* \| deprecated: use `local\.ccm\.dev\/ip-mode` \|/,
    'the deprecated key and its replacement',
  );
});

const row = (md: string, key: string) => md.split('\n').find((l) => l.startsWith(`| \`${key}\``));

test('the renderer: one table per object kind, pipes escaped, empty cells a dash, no prefix said so', (t) => {
  const md = renderSchemaMarkdown({
    name: 'x.example',
    schema: GetProviderSchemaResponse.fromPartial({
      annotations: [
        {
          key: 'x.example/mode',
          objectKind: SchemaObjectKind.SCHEMA_OBJECT_KIND_SERVICE,
          type: SchemaValueType.SCHEMA_VALUE_TYPE_STRING,
          pattern: 'a|b',
          description: 'Two\nlines.',
        },
        {
          key: 'x.example/old',
          objectKind: SchemaObjectKind.SCHEMA_OBJECT_KIND_SERVICE,
          type: SchemaValueType.SCHEMA_VALUE_TYPE_BOOL,
          deprecated: true,
        },
        {
          key: 'x.example/node',
          objectKind: SchemaObjectKind.SCHEMA_OBJECT_KIND_NODE,
          type: SchemaValueType.SCHEMA_VALUE_TYPE_CIDR_LIST,
          defaultValue: '10.0.0.0/8',
        },
      ],
    }),
  });
  const cases: [string, string | undefined][] = [
    ['x.example/mode', '| `x.example/mode` | string | pattern `a\\|b` | – | – | Two lines. |'],
    ['x.example/old', '| `x.example/old` | bool | – | – | deprecated | – |'],
    ['x.example/node', '| `x.example/node` | cidr-list | – | `10.0.0.0/8` | – | – |'],
  ];
  for (const [key, want] of cases) t.is(row(md, key), want, key);
  t.true(md.indexOf('## Service annotations') < md.indexOf('x.example/old') && md.indexOf('## Node annotations') < md.indexOf('x.example/node'));
  t.regex(md, /## Owned prefixes\n\nNone: only the keys listed below are checked/);
  t.regex(md, /## Cloud-config keys\n\nNone published\./);
});

test('a provider without CAPABILITY_PROVIDER_SCHEMA has no reference to render: one line, not an empty document', async (t) => {
  t.timeout(60_000);
  const target = {
    kind: 'exec' as const,
    path: join(ROOT, 'dist/plugins/local/main.js'),
    env: ['LOCALCLOUD_ALLOW_SIMULATION=true', 'LOCALCLOUD_NO_SCHEMA=1'],
  };
  const err = await t.throwsAsync(fetchSchema(target, 30_000), { instanceOf: SchemaUnavailable });
  t.regex(err!.message, /declares no CAPABILITY_PROVIDER_SCHEMA/);
});
