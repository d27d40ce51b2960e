/**
 * README.md stays a front door: what the project is, its two commands, and
 * where to go next, in under 300 lines. Reference material belongs in docs/
 * (docs/README.md is the index), contributors' in CONTRIBUTING.md.
 */
import test from 'ava';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../../../', import.meta.url));
const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
const scripts = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;

test('README.md is under 300 lines', (t) => {
  const lines = readme.split('\n').length;
  t.true(lines < 300, `README.md has ${lines} lines: move reference text to docs/ and link it`);
});

test('the quick start gives the two commands, and package.json has both scripts', (t) => {
  const quickStart = readme.slice(readme.indexOf('## Quick start'));
  const block = /```sh\n([\s\S]*?)```/.exec(quickStart)?.[1] ?? '';
  t.regex(block, /^npm install && npm start\b/m);
  t.regex(block, /^npm install && npm test\b/m);
  t.truthy(scripts.start, 'package.json has no start script');
  t.truthy(scripts.test, 'package.json has no test script');
});

test('README.md links the docs index, CONTRIBUTING.md and the architecture', (t) => {
  for (const target of ['docs/README.md', 'CONTRIBUTING.md', 'docs/architecture.md']) t.true(readme.includes(`](${target})`), target);
});
