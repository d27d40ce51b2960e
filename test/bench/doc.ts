/**
 * How `npm run bench` (run.ts) writes docs/benchmarks.md: each generated
 * part sits between `<!-- bench:<name> -->` and `<!-- /bench:<name> -->`
 * (the header under the name `header`, each section under its own), and a
 * run replaces only the parts it wrote. Everything outside the markers is
 * hand-written (notes between sections, a re-measurement made by hand) and
 * is kept byte for byte, as are the sections a `BENCH_ONLY` run did not run.
 */

/** The marker name of the header (machine, when, how to re-run): written by a full run only. */
export const HEADER = 'header';

/** The document's first line when there is no document yet. */
export const TITLE = '# Benchmarks\n';

export const openMarker = (name: string) => `<!-- bench:${name} -->`;
export const closeMarker = (name: string) => `<!-- /bench:${name} -->`;

/** Where part `name`'s text lies in `doc` (between its markers), or undefined when it is not there. */
function span(doc: string, name: string): { start: number; end: number } | undefined {
  const open = `${openMarker(name)}\n`;
  const at = doc.indexOf(open);
  if (at < 0) return undefined;
  const start = at + open.length;
  const end = doc.indexOf(closeMarker(name), start);
  return end < 0 ? undefined : { start, end };
}

/**
 * `doc` with part `name`'s text set to `text` (which ends with a newline):
 * only the bytes between its markers change. A part not yet in `doc` is
 * inserted, as its own paragraph, after the nearest part before it in
 * `order` that is in `doc`, else before the nearest one after it, else at
 * the end. `order` lists every part's name in document order, `name`
 * among them. Pure; idempotent.
 */
export function withPart(doc: string, name: string, text: string, order: readonly string[]): string {
  const at = span(doc, name);
  if (at) return doc.slice(0, at.start) + text + doc.slice(at.end);
  const block = `${openMarker(name)}\n${text}${closeMarker(name)}\n`;
  const i = order.indexOf(name);
  if (i < 0) throw new Error(`bench part ${JSON.stringify(name)} is not in the document order`);
  for (const before of order.slice(0, i).reverse()) {
    const s = span(doc, before);
    if (!s) continue;
    const after = s.end + closeMarker(before).length;
    const lineEnd = doc.startsWith('\n', after) ? after + 1 : after;
    return `${doc.slice(0, lineEnd)}\n${block}${doc.slice(lineEnd)}`;
  }
  for (const next of order.slice(i + 1)) {
    const s = span(doc, next);
    if (!s) continue;
    const start = s.start - `${openMarker(next)}\n`.length;
    return `${doc.slice(0, start)}${block}\n${doc.slice(start)}`;
  }
  const base = doc === '' ? TITLE : doc.endsWith('\n') ? doc : `${doc}\n`;
  return `${base}\n${block}`;
}
