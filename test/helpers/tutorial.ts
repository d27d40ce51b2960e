/**
 * Runs a tutorial of docs/providers as printed: its ```sh run blocks with
 * bash and its ```<lang> file=<path> blocks written to their files, in
 * order, in one directory (docs/providers/README.md, "How these tutorials
 * are tested").
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join, normalize } from 'node:path';
import { execa } from 'execa';

/** One block a tutorial's reader acts on. */
export type TutorialStep = { kind: 'run'; code: string; line: number } | { kind: 'file'; path: string; code: string; line: number };

/** The run and file blocks of a Markdown text, in order; other blocks are prose. */
export function tutorialSteps(markdown: string): TutorialStep[] {
  const steps: TutorialStep[] = [];
  const fence = /^```([^\n]*)\n([\s\S]*?)^```$/gm;
  for (const m of markdown.matchAll(fence)) {
    const [lang = '', ...attrs] = m[1].trim().split(/\s+/);
    const line = markdown.slice(0, m.index).split('\n').length;
    const file = attrs.find((a) => a.startsWith('file='))?.slice('file='.length);
    if (file) {
      const path = normalize(file);
      if (path.startsWith('..') || path.startsWith('/')) throw new Error(`line ${line}: file=${file} leaves the tutorial's directory`);
      steps.push({ kind: 'file', path, code: m[2], line });
    } else if (lang === 'sh' && attrs.includes('run')) steps.push({ kind: 'run', code: m[2], line });
  }
  return steps;
}

/** What a tutorial run printed, block by block (for a failing test's message). */
export interface TutorialRun {
  transcript: string;
  /** stdout of the last run block (the kit's report). */
  lastStdout: string;
}

/**
 * Runs the tutorial at `doc` in the empty directory `dir` with `env` added
 * to this process's environment. Throws at the first failing command, with
 * the block's line and everything printed so far.
 */
export async function runTutorial(doc: string, dir: string, env: Record<string, string>, timeoutMs = 10 * 60_000): Promise<TutorialRun> {
  const steps = tutorialSteps(await readFile(doc, 'utf8'));
  let transcript = '';
  let lastStdout = '';
  for (const step of steps) {
    if (step.kind === 'file') {
      await mkdir(dirname(join(dir, step.path)), { recursive: true });
      await writeFile(join(dir, step.path), step.code);
      transcript += `# ${doc}:${step.line}: wrote ${step.path}\n`;
      continue;
    }
    const r = await execa('bash', ['-euo', 'pipefail', '-c', step.code], {
      cwd: dir,
      env: { ...env },
      extendEnv: true,
      reject: false,
      all: true,
      timeout: timeoutMs,
      maxBuffer: 16 * 1024 * 1024,
    });
    transcript += `# ${doc}:${step.line}: ran block (exit ${r.exitCode ?? r.signal})\n${r.all ?? ''}\n`;
    if (r.exitCode !== 0) throw new Error(`${doc}:${step.line}: the block failed (exit ${r.exitCode ?? r.signal})\n${transcript.slice(-20_000)}`);
    lastStdout = r.stdout;
  }
  return { transcript, lastStdout };
}
