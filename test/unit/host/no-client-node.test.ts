/**
 * The host binary must not load `@kubernetes/client-node` at run time
 * (~70 MB of RSS and 0.7 s of start-up); its types are imported type-only.
 * A child process imports the host's module graph under a resolve hook that
 * refuses any module of that package, naming the importer.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import test from 'ava';

const hostDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../host');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'no-client-node-'));
test.after.always(() => fs.rmSync(tmp, { recursive: true, force: true }));

const hooks = path.join(tmp, 'hooks.mjs');
fs.writeFileSync(
  hooks,
  `export async function resolve(specifier, context, next) {
  const r = await next(specifier, context);
  if (r.url.includes('/@kubernetes/client-node/')) throw new Error('client-node loaded by ' + context.parentURL);
  return r;
}
`,
);

/** Imports `modules` in a child under the hook; resolves with its exit code and stderr. */
function importUnderHook(modules: string[]): Promise<{ code: number; stderr: string }> {
  const script = `import { register } from 'node:module';
register(${JSON.stringify(pathToFileURL(hooks).href)});
for (const m of ${JSON.stringify(modules)}) await import(m);
`;
  return new Promise((resolve) => {
    execFile(process.execPath, ['--input-type=module', '-e', script], { cwd: hostDir, timeout: 60_000 }, (err, _stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stderr }),
    );
  });
}

const table: { name: string; modules: string[]; loads: boolean }[] = [
  {
    name: 'the host (app, flags, main dependencies)',
    modules: ['app.js', 'config/flags.js', 'log.js', 'redact.js'].map((m) => pathToFileURL(path.join(hostDir, m)).href),
    loads: false,
  },
  // The hook itself works: importing the package is refused.
  { name: 'client-node itself (control)', modules: ['@kubernetes/client-node'], loads: true },
];

for (const { name, modules, loads } of table) {
  test(`client-node at run time: ${name} ${loads ? 'loads it' : 'does not load it'}`, async (t) => {
    const { code, stderr } = await importUnderHook(modules);
    if (loads) t.regex(stderr, /client-node loaded by/);
    else t.is(code, 0, stderr);
  });
}
