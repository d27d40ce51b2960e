/** Plain-text tables for the CLI: a header row and left-aligned, space-padded columns. */

/** Formats rows under `headers`; every row must have as many cells as there are headers. */
export function formatTable(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, i) => (i === cells.length - 1 ? cell : cell.padEnd(widths[i] ?? 0)))
      .join('   ')
      .trimEnd();
  return [line(headers), ...rows.map(line)].join('\n') + '\n';
}
