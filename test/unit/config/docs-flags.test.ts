/**
 * Operator docs name only flags the host has: every `--flag` written in
 * README.md, CONTRIBUTING.md and docs/*.md (docs/flags.md is the reference)
 * is one of the host's flags or an upstream flag it accepts (so a renamed or
 * removed flag cannot linger in the docs).
 */
import test from 'ava';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { FLAGS } from '../../../host/config/flags.js';
import { INERT_FLAGS } from '../../../host/config/upstream-flags.js';
import { PROVIDER_OWNED, REMOVED_FLAGS } from '../../../host/config/provider-owned.js';

const ROOT = fileURLToPath(new URL('../../../../', import.meta.url));
/** Flags the host handles before parsing (main.ts). */
const SPECIAL = ['version', 'help'];
/** Flags of other programs the docs mention: kubelet, kube-controller-manager, kube-apiserver, kubectl, node, the localcloud CLI, the conformance kit, ava, docker/buildah, the release command (tools/release), a provider's `probe` (sdk/probe.ts). */
const OTHER_PROGRAMS = [
  'cloud-provider',
  'node-ip',
  'node-monitor-grace-period',
  'admission-control-config-file',
  'dry-run',
  'field-selector',
  'max-old-space-size',
  'init',
  'state',
  'address',
  'type',
  'zone',
  'region',
  'label',
  'node',
  'cluster',
  'endpoint',
  'test-hook-command',
  'junit',
  'focus',
  'start-timeout',
  'shutdown-grace',
  'bad-cloud-config',
  'match',
  'target',
  'build-arg',
  'storage-driver',
  'platform',
  'isolation',
  'images',
  'arch',
  'out',
  'date',
  'ready',
  'timeout',
  // The conformance kit's annotation reference.
  'render-schema',
  // kube-apiserver in the bench's control plane.
  'max-requests-inflight',
  // V8 / node (the host's own heap settings, profiling).
  'semi-space-growth-factor',
  'heap-growing-percent',
  'max-semi-space-size',
  'cpu-prof',
  // Upstream components' tracing flag, which the host does not take (docs/upstream-parity.md says so).
  'tracing-config-file', // The release command's and its publish commands' flags (docs/releasing.md): npm publish, gh release, python -m build.
  'no-java',
  'access',
  'title',
  'no-isolation',
];

const DOCS = [
  'README.md',
  'CONTRIBUTING.md',
  ...readdirSync(`${ROOT}docs`)
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

for (const doc of DOCS) {
  test(`${doc} names only flags the host accepts`, (t) => {
    const ours = [...FLAGS.map((f) => f.name), ...INERT_FLAGS.map((f) => f.name), ...SPECIAL];
    // Providers' own flags and the ones upstream removed: the docs say where they go instead.
    const refused = [...PROVIDER_OWNED.flatMap((e) => e.flags ?? []), ...Object.keys(REMOVED_FLAGS)];
    const known = new Set([...ours, ...OTHER_PROGRAMS, ...refused]);
    const text = readFileSync(`${ROOT}${doc}`, 'utf8');
    // `--authentication-*` names a family: some flag must start with it.
    const isKnown = (f: string) => (f.endsWith('-') ? ours.some((o) => o.startsWith(f)) : known.has(f));
    const unknown = [...new Set([...text.matchAll(/`--([a-z][a-z0-9-]*)/g)].map((m) => m[1]!))].filter((f) => !isKnown(f));
    t.deepEqual(unknown, [], `${doc} mentions flags the host does not have`);
  });
}
