#!/usr/bin/env node
/**
 * Regenerates the service reference in docs/protocol.md from the comments in
 * proto/ccm/provider/v1/*.proto (via `buf build` with source info), so the
 * document cannot drift from the proto. Only the text between the markers is
 * replaced. `--check` exits 1 (and says so) when the document is stale.
 *
 *   node dist/tools/protocol-doc.js [--check]
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';

const REPO = fileURLToPath(new URL('../../', import.meta.url));
export const DOC = join(REPO, 'docs', 'protocol.md');
const BEGIN = '<!-- BEGIN GENERATED SERVICE REFERENCE (npm run docs:protocol) -->';
const END = '<!-- END GENERATED SERVICE REFERENCE -->';

interface Location {
  path?: number[];
  leadingComments?: string;
  trailingComments?: string;
}
interface Field {
  name: string;
  number: number;
  label?: string;
  type?: string;
  typeName?: string;
}
interface Message {
  name: string;
  field?: Field[];
  nestedType?: Message[];
  options?: { mapEntry?: boolean };
}
interface EnumValue {
  name: string;
  number?: number;
}
interface Enum {
  name: string;
  value?: EnumValue[];
}
interface Method {
  name: string;
  inputType: string;
  outputType: string;
}
interface ServiceDesc {
  name: string;
  method?: Method[];
}
interface File {
  name: string;
  package?: string;
  messageType?: Message[];
  enumType?: Enum[];
  service?: ServiceDesc[];
  sourceCodeInfo?: { location?: Location[] };
}

function comment(locs: Map<string, Location>, path: number[]): string {
  const l = locs.get(path.join('.'));
  return (l?.leadingComments ?? l?.trailingComments ?? '').trim().replace(/\s*\n\s*/g, ' ');
}

function shortType(name: string): string {
  return name.replace(/^\.ccm\.provider\.v1\./, '').replace(/^\./, '');
}

function fieldType(f: Field, msg: Message): string {
  if (f.type === 'TYPE_MESSAGE' || f.type === 'TYPE_ENUM') {
    const entry = msg.nestedType?.find((n) => n.options?.mapEntry && f.typeName?.endsWith(`.${n.name}`));
    if (entry) return `map<${fieldType(entry.field![0]!, entry)}, ${fieldType(entry.field![1]!, entry)}>`;
    const t = shortType(f.typeName ?? '');
    return f.label === 'LABEL_REPEATED' ? `repeated ${t}` : t;
  }
  const t = (f.type ?? '').replace(/^TYPE_/, '').toLowerCase();
  return f.label === 'LABEL_REPEATED' ? `repeated ${t}` : t;
}

function cell(text: string): string {
  return text.replace(/\|/g, '\\|') || '—';
}

/** The generated Markdown for every ccm.provider.v1 file. */
export async function renderReference(): Promise<string> {
  const r = await execa(join(REPO, 'node_modules', '.bin', 'buf'), ['build', '--exclude-path', 'proto/ccm/provider/testing', '-o', '-#format=json'], {
    cwd: REPO,
  });
  const files = (JSON.parse(r.stdout) as { file: File[] }).file
    .filter((f) => f.package === 'ccm.provider.v1')
    .sort((a, b) => a.name.localeCompare(b.name));
  const out: string[] = [];
  for (const f of files) {
    const locs = new Map((f.sourceCodeInfo?.location ?? []).map((l) => [(l.path ?? []).join('.'), l]));
    out.push(`### \`${f.name}\``, '');
    const header = (locs.get('12')?.leadingComments ?? '').replace(/^ /gm, '').trim();
    if (header) out.push('```text', header, '```', '');
    for (const [si, s] of (f.service ?? []).entries()) {
      out.push(`#### service \`${s.name}\``, '', comment(locs, [6, si]), '', '| RPC | request → response | contract |', '|---|---|---|');
      for (const [mi, m] of (s.method ?? []).entries()) {
        out.push(`| \`${m.name}\` | \`${shortType(m.inputType)}\` → \`${shortType(m.outputType)}\` | ${cell(comment(locs, [6, si, 2, mi]))} |`);
      }
      out.push('');
    }
    for (const [ei, e] of (f.enumType ?? []).entries()) {
      out.push(`#### enum \`${e.name}\``, '', comment(locs, [5, ei]), '', '| value | number | meaning |', '|---|---|---|');
      for (const [vi, v] of (e.value ?? []).entries()) out.push(`| \`${v.name}\` | ${v.number ?? 0} | ${cell(comment(locs, [5, ei, 2, vi]))} |`);
      out.push('');
    }
    for (const [mi, m] of (f.messageType ?? []).entries()) {
      out.push(`#### message \`${m.name}\``, '', comment(locs, [4, mi]), '');
      if (m.field?.length) {
        out.push('| field | type | # | meaning |', '|---|---|---|---|');
        for (const [fi, fld] of m.field.entries())
          out.push(`| \`${fld.name}\` | \`${fieldType(fld, m)}\` | ${fld.number} | ${cell(comment(locs, [4, mi, 2, fi]))} |`);
        out.push('');
      }
    }
  }
  return out.join('\n').replace(/\n{3,}/g, '\n\n');
}

/** docs/protocol.md with the reference section regenerated. */
export async function renderDocument(current: string): Promise<string> {
  const b = current.indexOf(BEGIN);
  const e = current.indexOf(END);
  if (b < 0 || e < b) throw new Error(`${DOC} lacks the markers ${BEGIN} … ${END}`);
  return `${current.slice(0, b + BEGIN.length)}\n\n${await renderReference()}\n${current.slice(e)}`;
}

async function main(): Promise<number> {
  const current = await readFile(DOC, 'utf8');
  const next = await renderDocument(current);
  if (process.argv.includes('--check')) {
    if (next !== current) {
      process.stderr.write('docs/protocol.md is stale: run npm run docs:protocol\n');
      return 1;
    }
    return 0;
  }
  if (next !== current) await writeFile(DOC, next);
  return 0;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  main().then(
    (c) => process.exit(c),
    (err) => {
      process.stderr.write(`${(err as Error).message}\n`);
      process.exit(1);
    },
  );
}
