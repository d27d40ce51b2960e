/** The 403 scan of test host logs (test/helpers/forbidden.ts): what counts as a 403 and what does not. */
import test from 'ava';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { forbiddenInLog, forbiddenLogTimes } from '../../helpers/forbidden.js';

const lines = [
  { line: '{"level":"info","time":"2026-01-01T00:00:00.000Z","code":403,"msg":"watch failed; relisting after backoff"}', forbidden: true },
  {
    line: '{"level":"debug","time":"2026-01-01T00:00:01.000Z","err":"PUT /apis/coordination.k8s.io/v1/namespaces/kube-system/leases/x: HTTP 403: forbidden","msg":"lease renewal failed"}',
    forbidden: true,
  },
  {
    line: '{"level":"info","time":"2026-01-01T00:00:02.000Z","err":"GET /api/v1/nodes: HTTP 404: not found","msg":"requeue after error"}',
    forbidden: false,
  },
  { line: '{"level":"info","time":"2026-01-01T00:00:03.000Z","code":4030,"msg":"not a 403"}', forbidden: false },
  { line: '{"level":"info","time":"2026-01-01T00:00:04.000Z","msg":"node 10.0.4.03 HTTP 4030 is not one either"}', forbidden: false },
];

test('forbiddenInLog counts watch and request 403 lines only, from an offset', async (t) => {
  const path = join(await mkdtemp(join(tmpdir(), 'forbidden-')), 'host.log');
  const text = lines.map((l) => l.line).join('\n') + '\n';
  await writeFile(path, text);
  t.is(await forbiddenInLog(path), lines.filter((l) => l.forbidden).length);
  t.is(await forbiddenInLog(path, Buffer.byteLength(lines[0]!.line) + 1), 1, 'lines before the offset (an earlier run) do not count');
  t.deepEqual(await forbiddenLogTimes(path), [Date.parse('2026-01-01T00:00:00.000Z'), Date.parse('2026-01-01T00:00:01.000Z')]);
  t.is(await forbiddenInLog(join(path, 'missing')), 0, 'no log, no 403');
});
