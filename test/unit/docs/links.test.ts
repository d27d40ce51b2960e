/**
 * Relative links in the docs resolve: every `[text](target)` in README.md,
 * CONTRIBUTING.md and docs/**\/*.md that is not a URL names a file or
 * directory that exists, and a `#fragment` names a heading of the file it
 * points into (GitHub's heading anchors). Moving a section between files
 * must move its links with it.
 */
import test from 'ava';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../../../', import.meta.url));

/** Every Markdown file under dir, recursively, as paths relative to the repository. */
function markdownUnder(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? markdownUnder(join(dir, e.name)) : e.name.endsWith('.md') ? [join(dir, e.name)] : [],
  );
}

const DOCS = ['README.md', 'CONTRIBUTING.md', ...markdownUnder('docs')];

/** The text outside fenced code blocks and inline code spans (a link there is code, not a link). */
function prose(text: string): string {
  return text.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '').replace(/`[^`\n]*`/g, '');
}

/** GitHub's anchor for a heading: lower case, punctuation but `-` and `_` dropped, spaces to `-`. */
function slug(heading: string): string {
  return heading
    .replace(/`/g, '')
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** The anchors of a Markdown file's headings (a repeated heading gets -1, -2, ... as on GitHub). */
function anchors(file: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  const text = readFileSync(file, 'utf8').replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '');
  for (const m of text.matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const base = slug(m[1]!);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

for (const doc of DOCS) {
  test(`${doc}: relative links resolve`, (t) => {
    const path = join(ROOT, doc);
    if (!existsSync(path)) return t.fail(`${doc} does not exist`);
    const broken: string[] = [];
    for (const m of prose(readFileSync(path, 'utf8')).matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
      const target = m[1]!;
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:, ...
      const [file, fragment] = target.split('#', 2) as [string, string | undefined];
      const resolved = file === '' ? path : join(dirname(path), decodeURIComponent(file));
      if (!existsSync(resolved)) {
        broken.push(`${target}: no ${relative(ROOT, resolved)}`);
        continue;
      }
      if (fragment !== undefined && resolved.endsWith('.md') && statSync(resolved).isFile() && !anchors(resolved).has(fragment)) {
        broken.push(`${target}: no heading #${fragment} in ${relative(ROOT, resolved)}`);
      }
    }
    t.deepEqual(broken, [], `${doc} has links that lead nowhere`);
  });
}
