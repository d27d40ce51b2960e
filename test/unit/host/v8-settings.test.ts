import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import test from 'ava';
import { HOST_V8_SETTINGS, v8SettingsFor } from '../../../host/v8-settings.js';

const ALL = HOST_V8_SETTINGS.map((s) => s.flag);
const GROWTH = '--semi-space-growth-factor=1';
const PERCENT = '--heap-growing-percent=50';

const table: { name: string; startFlags: string[]; applied: string[] }[] = [
  { name: 'no V8 flags given: every setting', startFlags: [], applied: ALL },
  { name: 'unrelated flags do not count', startFlags: ['--enable-source-maps', '--import=x.js'], applied: ALL },
  { name: '--max-semi-space-size given: the young generation is the operator’s', startFlags: ['--max-semi-space-size=2'], applied: [PERCENT] },
  { name: 'underscores name the same flag', startFlags: ['--max_semi_space_size=8'], applied: [PERCENT] },
  { name: '--semi-space-growth-factor given', startFlags: ['--semi-space-growth-factor=2'], applied: [PERCENT] },
  { name: '--max-old-space-size given: the old generation is the operator’s', startFlags: ['--max-old-space-size=512'], applied: [GROWTH] },
  { name: 'docs/memory.md’s NODE_OPTIONS: nothing', startFlags: ['--max-semi-space-size=2', '--max-old-space-size=256'], applied: [] },
];

for (const { name, startFlags, applied } of table) {
  test(`v8SettingsFor: ${name}`, (t) => {
    t.deepEqual(v8SettingsFor(HOST_V8_SETTINGS, startFlags), applied);
  });
}

test('the host applies its settings at import, and V8 accepts them', (t) => {
  const module = fileURLToPath(new URL('../../../host/v8-settings.js', import.meta.url));
  const script = `import('${module}').then((m) => console.log(JSON.stringify(m.appliedV8Settings)))`;
  const run = (env: NodeJS.ProcessEnv) => JSON.parse(execFileSync(process.execPath, ['-e', script], { env, encoding: 'utf8' })) as string[];
  const env = { ...process.env };
  delete env.NODE_OPTIONS;
  t.deepEqual(run(env), ALL);
  t.deepEqual(run({ ...env, NODE_OPTIONS: '--max-old-space-size=300' }), [GROWTH]);
});
