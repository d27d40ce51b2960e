/**
 * `npm run bench`: measures the figures named in the issues and writes them,
 * with the machine and settings, to docs/benchmarks.md. Figures, not pass/fail
 * tests: targets are listed next to the measurements.
 *
 * `BENCH_ONLY=a,b` runs only those sections and changes nothing else in
 * docs/benchmarks.md (doc.ts: each section, and the header a full run
 * writes, sits between `<!-- bench:<name> -->` and `<!-- /bench:<name> -->`;
 * what is outside the markers is hand-written and kept).
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { cpus, totalmem, release } from 'node:os';
import { ensureBinaries } from '../controlplane/binaries.js';
import { ControlPlane } from '../controlplane/controlplane.js';
import { apiRequestsSection } from './api-requests.js';
import { hollowSection } from './hollow.js';
import { informerCacheSection } from './informer-cache.js';
import { lbCreateSection, lbNodesSection } from './lb.js';
import { lifecycleSection, routesSection } from './lifecycle-routes.js';
import { nodeInitSection } from './node-init.js';
import { twoProvidersSection } from './two-providers.js';
import { rpcSection } from './rpc.js';
import { f1, type BenchSection } from './section.js';
import { HEADER, withPart } from './doc.js';
import { volumesSection } from './volumes.js';
import { crashSoakSection } from './crash-soak.js';
import { scaleSection } from './scale.js';
import { scaleLargeSection } from './large.js';
import { pluginFloodSection } from './plugin-flood.js';
import { shardingSection } from './sharding.js';
import { perObjectCostSection } from './per-object-cost.js';

/** Every section, in document order. Register new sections here. */
const SECTIONS: BenchSection[] = [
  rpcSection,
  apiRequestsSection,
  informerCacheSection,
  nodeInitSection,
  twoProvidersSection,
  lifecycleSection,
  hollowSection,
  routesSection,
  lbCreateSection,
  lbNodesSection,
  scaleSection,
  scaleLargeSection,
  volumesSection,
  crashSoakSection,
  pluginFloodSection,
  shardingSection,
  perObjectCostSection,
];

const DOC = 'docs/benchmarks.md';
/** The same figures as data, for programs comparing runs: `{ machine, sections: { <name>: { measuredAt, figures } } }`. */
const JSON_DOC = 'docs/benchmarks.json';
const log = (s: string) => process.stderr.write(`[bench] ${s}\n`);

/** The header a full run writes (between the `header` markers, under the title). */
function header(when: Date): string {
  const cpu = cpus();
  return `Written by \`npm run bench\` (test/bench/run.ts); this header by the last full run, on ${when.toISOString()}, each section
when it was last measured (\`BENCH_ONLY=<section>\` re-measures one and changes nothing else, e.g. \`BENCH_ONLY=scale-large npm run bench\`;
a section's own settings, such as \`BENCH_LARGE\` and \`BENCH_STEADY_MINUTES\`, are named in its text). Figures, not
pass/fail tests; the targets come from the issues. Text outside the \`<!-- bench:… -->\` markers is written by hand and kept.

## Machine

| | |
|---|---|
| CPU | ${cpu[0]?.model ?? 'unknown'} × ${cpu.length} |
| memory | ${f1(totalmem() / 2 ** 30)} GiB |
| kernel | Linux ${release()} |
| Node.js | ${process.version} |
`;
}

/** The generated parts of the document, in document order. */
const PARTS = [HEADER, ...SECTIONS.map((s) => s.name)];

async function main(): Promise<void> {
  const only = process.env.BENCH_ONLY?.split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const unknown = (only ?? []).filter((n) => !SECTIONS.some((s) => s.name === n));
  if (unknown.length) throw new Error(`unknown BENCH_ONLY section(s) ${unknown.join(', ')}: use ${SECTIONS.map((s) => s.name).join(', ')}`);
  // A full run writes the header; a partial one only its sections (the header describes the full run).
  let doc = await readFile(DOC, 'utf8').catch(() => '');
  if (!only) doc = withPart(doc, HEADER, header(new Date()), PARTS);
  let cp: Promise<ControlPlane> | undefined;
  const ctx = {
    log,
    controlPlane: () =>
      (cp ??= (async () => {
        await ensureBinaries({ onProgress: (l) => log(l) });
        return ControlPlane.start();
      })()),
  };
  const figures = await existingFigures();
  try {
    for (const section of SECTIONS) {
      if (only && !only.includes(section.name)) continue;
      log(`section ${section.name}`);
      const measuredAt = new Date().toISOString();
      const result = await section.run(ctx);
      const body = typeof result === 'string' ? result : result.markdown;
      doc = withPart(doc, section.name, `${body.trimEnd()}\n\n_Measured ${measuredAt}._\n`, PARTS);
      figures[section.name] = { measuredAt, figures: typeof result === 'string' ? null : result.figures };
      // Written after every section so a later failure keeps what was measured.
      await mkdir('docs', { recursive: true });
      await writeFile(DOC, doc);
      await writeFigures(figures);
    }
  } finally {
    if (cp) await (await cp).stop();
  }
  log(`wrote ${DOC}`);
}

type Figures = Record<string, { measuredAt: string; figures: unknown }>;

/** Sections already in docs/benchmarks.json; a missing or unreadable file starts empty. */
async function existingFigures(): Promise<Figures> {
  try {
    const doc = JSON.parse(await readFile(JSON_DOC, 'utf8')) as { sections?: Figures };
    return doc.sections ?? {};
  } catch {
    return {};
  }
}

async function writeFigures(sections: Figures): Promise<void> {
  const cpu = cpus();
  const machine = {
    cpu: cpu[0]?.model ?? 'unknown',
    cores: cpu.length,
    memoryGiB: Number(f1(totalmem() / 2 ** 30)),
    kernel: release(),
    node: process.version,
  };
  const ordered = Object.fromEntries(SECTIONS.filter((s) => sections[s.name]).map((s) => [s.name, sections[s.name]]));
  await writeFile(JSON_DOC, JSON.stringify({ machine, sections: ordered }, null, 2) + '\n');
}

main().catch((err) => {
  process.stderr.write(`[bench] failed: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
