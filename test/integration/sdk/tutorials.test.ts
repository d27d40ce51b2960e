/**
 * docs/providers: every tutorial runs as printed, from an empty directory to
 * a provider that passes the conformance kit (docs/providers/README.md, "How
 * these tutorials are tested"). CCM_REPO is this repository, as the
 * tutorials' "Before you start" sets it; the kit, the SDKs and the bridge
 * come from it. The Go code a tutorial prints must be gofmt-clean.
 */
import test from 'ava';
import { mkdtemp, readdir, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { REPO } from '../../helpers/providers.js';
import { runTutorial, tutorialSteps } from '../../helpers/tutorial.js';

const DOCS = join(REPO, 'docs', 'providers');

/** Each tutorial, and the kit checks its provider must pass (beyond "0 failed"). */
const TUTORIALS = [
  { doc: 'go.md', pass: ['launch/handshake', 'lifecycle/bad-config', 'instances/test-instance', 'instances/foreign-provider-id'] },
  { doc: 'python.md', pass: ['launch/handshake', 'lifecycle/bad-config', 'instances/test-instance', 'instances/foreign-provider-id'] },
  { doc: 'typescript.md', pass: ['launch/handshake', 'lifecycle/bad-config', 'instances/test-instance', 'instances/foreign-provider-id'] },
  { doc: 'existing-go-provider.md', pass: ['launch/handshake', 'instances/test-instance', 'instances/foreign-provider-id', 'instances/absent'] },
] as const;

for (const { doc, pass } of TUTORIALS) {
  test(`docs/providers/${doc} runs as printed and its provider passes the conformance kit`, async (t) => {
    t.timeout(15 * 60_000);
    const dir = await mkdtemp(join(tmpdir(), 'ccm-tutorial-'));
    const run = await runTutorial(join(DOCS, doc), dir, { CCM_REPO: REPO });
    const report = run.lastStdout;
    t.regex(report, /^conformance: [1-9]\d* passed, 0 failed, \d+ skipped$/m, run.transcript.slice(-8_000));
    for (const id of pass) t.regex(report, new RegExp(`^PASS {2}${id.replace('/', '\\/')} `, 'm'), id);
    const goFiles = tutorialSteps(await readFile(join(DOCS, doc), 'utf8')).filter((s) => s.kind === 'file' && s.path.endsWith('.go'));
    if (goFiles.length) {
      const unformatted = (await execa('gofmt', ['-l', ...goFiles.map((s) => (s.kind === 'file' ? s.path : ''))], { cwd: dir })).stdout;
      t.is(unformatted, '', 'the printed Go code is gofmt-clean');
    }
  });
}

test('the tutorials index lists every tutorial, and each ends by running the kit', async (t) => {
  const index = await readFile(join(DOCS, 'README.md'), 'utf8');
  const docs = (await readdir(DOCS)).filter((f) => f.endsWith('.md') && f !== 'README.md');
  for (const doc of docs) t.true(index.includes(`(${doc})`), `docs/providers/README.md links ${doc}`);
  for (const { doc } of TUTORIALS) {
    const steps = tutorialSteps(await readFile(join(DOCS, doc), 'utf8'));
    const last = steps.at(-1);
    t.is(last?.kind, 'run', doc);
    t.regex(last?.code ?? '', /run -s conformance -- --plugin-path/, `${doc} ends with the kit`);
  }
});

test('a tutorial block may only write inside the tutorial directory', (t) => {
  t.throws(() => tutorialSteps('```go file=../main.go\npackage main\n```\n'), { message: /leaves the tutorial's directory/ });
  t.deepEqual(
    tutorialSteps('text\n```sh\necho not run\n```\n```sh run\necho run\n```\n```json file=a/b.json\n{}\n```\n').map((s) => s.kind),
    ['run', 'file'],
  );
});
