/**
 * The annotation reference of a provider, rendered from its schema
 * (IdentityService.GetProviderSchema, protocol 1.1) as Markdown: the owned
 * annotation prefixes, one table per object kind (key, type, allowed values
 * or pattern, default, deprecation, description) and the cloud-config keys.
 *
 * `ccm-provider-conformance --plugin-path X --render-schema FILE` starts the
 * provider as the kit does (or connects to --plugin-endpoint), asks for the
 * schema and writes the reference; docs/providers/*-annotations.md are made
 * this way and tests regenerate them to keep them honest.
 */
import { writeFile } from 'node:fs/promises';
import {
  Capability,
  SchemaObjectKind,
  SchemaValueType,
  type GetPluginCapabilitiesResponse,
  type GetPluginInfoResponse,
  type GetProviderSchemaResponse,
  type SchemaAnnotation,
  type SchemaConfigKey,
} from '../proto/gen/ccm/provider/v1/identity.js';
import { AnnotationSchema } from '../host/plugin/provider-schema.js';
import { parseHandshake } from '../sdk/protocol.js';
import type { TargetSpec } from './kit.js';
import { describeExit, Launched } from './launch.js';
import { Rpc } from './rpc.js';

/** What the renderer needs from a provider. */
export interface SchemaSource {
  /** GetPluginInfo.name. */
  name: string;
  schema: GetProviderSchemaResponse;
}

/** A failure the command reports in one line (exit 1). */
export class SchemaUnavailable extends Error {
  override name = 'SchemaUnavailable';
}

/**
 * Starts (exec) or reaches (endpoint) the provider and asks for its name and
 * schema; always ends a process it started. Rejects with SchemaUnavailable
 * when the provider declares no CAPABILITY_PROVIDER_SCHEMA or publishes a
 * schema the host would ignore (the reference would document nothing real).
 */
export async function fetchSchema(target: TargetSpec, startTimeoutMs: number): Promise<SchemaSource> {
  let proc: Launched | undefined;
  let rpc: Rpc | undefined;
  try {
    let endpoint: string;
    if (target.kind === 'endpoint') endpoint = target.endpoint;
    else {
      proc = await Launched.start({ path: target.path, env: target.env });
      const line = await proc.firstLine(startTimeoutMs);
      if (line === undefined)
        throw new SchemaUnavailable(
          `${proc.exit ? `the provider exited (${describeExit(proc.exit)}) before its handshake` : `no handshake within ${startTimeoutMs} ms`}${proc.stderrSummary()}`,
        );
      const parsed = parseHandshake(line);
      if (parsed.kind !== 'handshake')
        throw new SchemaUnavailable(`the first stdout line is not a valid handshake: ${JSON.stringify(line.slice(0, 200))}`);
      endpoint = `unix://${parsed.handshake.address}`;
    }
    rpc = new Rpc(endpoint, startTimeoutMs);
    const info = await rpc.call<GetPluginInfoResponse>(rpc.conn.identity, 'GetPluginInfo', {});
    const caps = await rpc.call<GetPluginCapabilitiesResponse>(rpc.conn.identity, 'GetPluginCapabilities', {});
    if (!caps.capabilities.includes(Capability.CAPABILITY_PROVIDER_SCHEMA))
      throw new SchemaUnavailable(`${info.name} declares no CAPABILITY_PROVIDER_SCHEMA: it publishes no schema to render`);
    const schema = await rpc.call<GetProviderSchemaResponse>(rpc.conn.identity, 'GetProviderSchema', {});
    const compiled = AnnotationSchema.compile(schema);
    if ('problem' in compiled) throw new SchemaUnavailable(`the host would ignore ${info.name}'s schema: ${compiled.problem}`);
    return { name: info.name, schema };
  } finally {
    rpc?.close();
    await proc?.kill();
  }
}

/** "cidr-list" for SCHEMA_VALUE_TYPE_CIDR_LIST. */
function typeName(t: SchemaValueType): string {
  const n = SchemaValueType[t] as string | undefined;
  return n
    ? n
        .replace(/^SCHEMA_VALUE_TYPE_/, '')
        .toLowerCase()
        .replace(/_/g, '-')
    : String(t);
}

/** A table cell: one line, pipes escaped, empty shown as a dash. */
function cell(s: string): string {
  const t = s.replace(/\s*\n\s*/g, ' ').trim();
  return t === '' ? '–' : t.replace(/\|/g, '\\|');
}

/** Inline code (pipes are escaped by cell). */
function code(s: string): string {
  return s === '' ? '' : `\`${s}\``;
}

function allowedOf(e: Pick<SchemaAnnotation, 'allowedValues'> & Partial<Pick<SchemaAnnotation, 'pattern' | 'caseInsensitive'>>): string {
  const parts: string[] = [];
  if (e.allowedValues.length) parts.push(e.allowedValues.map(code).join(', ') + (e.caseInsensitive ? ' (any case)' : ''));
  if (e.pattern) parts.push(`pattern ${code(e.pattern)}`);
  return parts.join('; ');
}

function deprecationOf(e: { deprecated: boolean; replacement: string }): string {
  if (!e.deprecated) return '';
  return e.replacement ? `deprecated: use ${code(e.replacement)}` : 'deprecated';
}

const KIND_TITLES: readonly [SchemaObjectKind, string][] = [
  [SchemaObjectKind.SCHEMA_OBJECT_KIND_SERVICE, 'Service annotations'],
  [SchemaObjectKind.SCHEMA_OBJECT_KIND_NODE, 'Node annotations'],
];

function annotationTable(entries: readonly SchemaAnnotation[]): string[] {
  return [
    '| Key | Type | Allowed values / pattern | Default | Deprecated | Description |',
    '| --- | --- | --- | --- | --- | --- |',
    ...entries.map(
      (a) =>
        `| ${cell(code(a.key))} | ${typeName(a.type)} | ${cell(allowedOf(a))} | ${cell(code(a.defaultValue))} | ${cell(deprecationOf(a))} | ${cell(a.description)} |`,
    ),
  ];
}

function configTable(entries: readonly SchemaConfigKey[]): string[] {
  return [
    '| Section | Key | Type | Allowed values | Default | Deprecated | Description |',
    '| --- | --- | --- | --- | --- | --- | --- |',
    ...entries.map(
      (c) =>
        `| ${cell(c.section)} | ${cell(code(c.key))} | ${typeName(c.type)} | ${cell(allowedOf(c))} | ${cell(code(c.defaultValue))} | ${cell(deprecationOf(c))} | ${cell(c.description)} |`,
    ),
  ];
}

/**
 * The Markdown reference of one provider's schema. Deterministic: the
 * provider's own order within each kind, so the same schema renders the same
 * bytes (the docs tests compare them).
 */
export function renderSchemaMarkdown(src: SchemaSource): string {
  const { name, schema } = src;
  const out = [
    `# Annotation reference: ${name}`,
    '',
    `<!-- Generated from ${name}'s GetProviderSchema by \`ccm-provider-conformance --render-schema\`; do not edit (see docs/protocol.md, "Provider schema"). -->`,
    '',
    `What ${name} reads from Kubernetes objects and from its cloud config, as it publishes it (IdentityService.GetProviderSchema, protocol 1.1).`,
    'The host checks every Service against the Service annotations before any cloud call; a bad value, or an unlisted key under an owned prefix, gets a Warning `InvalidLoadBalancerAnnotation` and no cloud call.',
    'Deprecated keys are still read.',
    '',
    '## Owned prefixes',
    '',
  ];
  if (schema.annotationPrefixes.length === 0) out.push('None: only the keys listed below are checked, misspellings are not caught.');
  else {
    out.push('Every Service annotation under these prefixes must be one listed below: any other is a misspelling.', '');
    for (const p of schema.annotationPrefixes) out.push(`- ${code(p)}`);
  }
  for (const [kind, title] of KIND_TITLES) {
    const entries = schema.annotations.filter((a) => a.objectKind === kind);
    if (entries.length === 0) continue;
    out.push('', `## ${title}`, '', ...annotationTable(entries));
  }
  out.push('', '## Cloud-config keys', '');
  if (schema.cloudConfigKeys.length === 0) out.push('None published.');
  else out.push(...configTable(schema.cloudConfigKeys));
  return out.join('\n') + '\n';
}

/** --render-schema: fetches, renders and writes to `file` ("-": stdout). */
export async function renderSchemaCommand(target: TargetSpec, startTimeoutMs: number, file: string): Promise<void> {
  const md = renderSchemaMarkdown(await fetchSchema(target, startTimeoutMs));
  if (file === '-') process.stdout.write(md);
  else await writeFile(file, md);
}
