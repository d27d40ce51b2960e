/**
 * One part of `npm run bench`. Each section measures one issue's figures and
 * renders its own markdown; run.ts writes it between
 * `<!-- bench:<name> -->` markers in docs/benchmarks.md, and its figures
 * under its name in docs/benchmarks.json, so running one section
 * (`BENCH_ONLY=<name>`) replaces only its own text and figures.
 */
import type { ControlPlane } from '../controlplane/controlplane.js';

export interface BenchContext {
  /** Started lazily on first use and shared by the sections of one run. */
  controlPlane(): Promise<ControlPlane>;
  log(line: string): void;
}

export interface BenchSection {
  /** Marker name and BENCH_ONLY value, e.g. "node-init". */
  name: string;
  /**
   * Measures and returns markdown starting with a `## ` heading, and the
   * figures behind it for docs/benchmarks.json (plain JSON data: settings and
   * numbers per side), or only the markdown.
   */
  run(ctx: BenchContext): Promise<string | SectionResult>;
}

/** What a section measured: its markdown and the same figures as data. */
export interface SectionResult {
  markdown: string;
  figures: unknown;
}

export const f1 = (n: number) => n.toFixed(1);
export const f2 = (n: number) => n.toFixed(2);
export const f3 = (n: number) => n.toFixed(3);
export const int = (n: number) => Math.round(n).toLocaleString('en-US');
