/**
 * docs/protocol.md, "Protocol versions", states the current protocol minor
 * and lists every minor; it must agree with PROTOCOL_MINOR (sdk/protocol.ts),
 * the Go SDK's ProtocolMinor and the Python SDK's PROTOCOL_MINOR, so a
 * release that bumps one without the others fails here.
 */
import test from 'ava';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { PROTOCOL_MINOR, SUPPORTED_PROTOCOL_VERSIONS } from '../../../sdk/protocol.js';

const ROOT = fileURLToPath(new URL('../../../../', import.meta.url));
const read = (path: string) => readFileSync(`${ROOT}${path}`, 'utf8');

function versionsSection(): string {
  const doc = read('docs/protocol.md');
  const start = doc.indexOf('### Protocol versions');
  if (start < 0) throw new Error('docs/protocol.md has no "### Protocol versions" section');
  const end = doc.indexOf('\n## ', start);
  return doc.slice(start, end < 0 ? undefined : end);
}

test('the current minor in docs/protocol.md is PROTOCOL_MINOR, and the history lists every minor up to it', (t) => {
  const section = versionsSection();
  const current = /\*\*Current: protocol (\d+), minor (\d+)\*\*/.exec(section);
  t.truthy(current, 'no "**Current: protocol N, minor M**" line');
  t.is(Number(current![1]), Math.max(...SUPPORTED_PROTOCOL_VERSIONS));
  t.is(Number(current![2]), PROTOCOL_MINOR, 'docs/protocol.md states another current minor than sdk/protocol.ts');
  const major = current![1]!;
  const rows = [...section.matchAll(new RegExp(`^\\| ${major}\\.(\\d+) \\|`, 'gm'))].map((m) => Number(m[1]));
  t.deepEqual(
    rows,
    Array.from({ length: PROTOCOL_MINOR + 1 }, (_, i) => i),
    'the history table has one row per minor, 0..current, in order',
  );
});

test('the Go and Python SDKs report the same minor', (t) => {
  const go = /ProtocolMinor\s*=\s*(\d+)/.exec(read('sdk/go/protocol.go'));
  t.is(Number(go?.[1]), PROTOCOL_MINOR, 'sdk/go/protocol.go ProtocolMinor');
  const py = /^PROTOCOL_MINOR = (\d+)$/m.exec(read('sdk/python/src/ccm_provider_sdk/protocol.py'));
  t.is(Number(py?.[1]), PROTOCOL_MINOR, 'sdk/python PROTOCOL_MINOR');
});

test('support-matrix.md keeps no history of its own: it links to docs/protocol.md', (t) => {
  const matrix = read('docs/support-matrix.md');
  t.regex(matrix, /protocol\.md#protocol-versions/);
  t.notRegex(matrix, /^\| 1\.0 \|/m);
});
