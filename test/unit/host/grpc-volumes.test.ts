/**
 * GrpcVolumes against in-process providers: requests carry what the host
 * asked for, good answers come back converted, invalid answers are rejected
 * with InvalidCloudResponseError before any controller sees them, and errors
 * keep their meaning (transient or final).
 */
import anyTest, { type ExecutionContext, type TestFn } from 'ava';
import { pino } from 'pino';
import type { Volumes } from '../../../host/cloud-volumes.js';
import { CloudCallError, InvalidCloudResponseError, UnusableVolumeError } from '../../../host/errors.js';
import { createLogger } from '../../../host/log.js';
import { GrpcCloud } from '../../../host/plugin/grpc-cloud.js';
import { PluginSupervisor } from '../../../host/plugin/supervisor.js';
import type { Volume } from '../../../proto/gen/ccm/provider/v1/volumes.js';
import { InvalidArgumentError, UnavailableError, type CloudProvider, type VolumesProvider } from '../../../sdk/index.js';
import { startInProcess } from '../../../sdk/testing.js';

const test = anyTest as TestFn<unknown>;
const ZONE = 'topology.kubernetes.io/zone';

async function volumesFor(t: ExecutionContext<unknown>, volumes: Partial<VolumesProvider>): Promise<Volumes> {
  const provider: CloudProvider = {
    info: { name: 'acme.example.com', vendorVersion: '1', providerName: 'acme' },
    volumes: volumes as VolumesProvider,
  };
  const p = await startInProcess(provider, { logger: pino({ level: 'silent' }) });
  const supervisor = new PluginSupervisor({
    name: 'acme',
    mode: { kind: 'socket', endpoint: p.endpoint },
    startTimeoutMs: 10_000,
    shutdownGraceMs: 100,
    configure: { cloudConfig: Buffer.alloc(0), clusterName: 'test', hostVersion: 'test' },
    probeIntervalMs: 60_000,
    log: createLogger({ level: 'silent' }),
  });
  t.teardown(async () => {
    await supervisor.stop();
    await p.close();
  });
  await supervisor.start();
  const v = new GrpcCloud(supervisor, { readMs: 5_000, mutateMs: 5_000 }).volumes();
  if (!v) throw new Error('no volumes capability');
  return v;
}

const REQ = { name: 'pvc-1', requiredBytes: 1024, limitBytes: 0, parameters: { type: 'ssd' }, requisite: [{ [ZONE]: 'a' }], preferred: [] };
const vol = (over: Partial<Volume> = {}): Volume => ({
  volumeId: 'vol-1',
  capacityBytes: 1024,
  volumeContext: {},
  accessibleTopology: [{ segments: { [ZONE]: 'a' } }],
  ...over,
});

test('createVolume sends name, size, parameters and topology, and converts the answer', async (t) => {
  let seen: unknown;
  const v = await volumesFor(t, {
    async createVolume(req) {
      seen = req;
      return { volume: vol() };
    },
  });
  const got = await v.createVolume(REQ, 3);
  t.deepEqual(got, { volumeId: 'vol-1', capacityBytes: 1024, volumeContext: {}, accessibleTopology: [{ [ZONE]: 'a' }] });
  const r = seen as {
    name: string;
    meta: { operationId: string; attempt: number };
    capacityRange: { requiredBytes: number };
    parameters: Record<string, string>;
    accessibilityRequirements: { requisite: { segments: Record<string, string> }[] };
  };
  t.is(r.name, 'pvc-1');
  t.is(r.meta.operationId, 'pvc-1');
  t.is(r.meta.attempt, 3);
  t.is(Number(r.capacityRange.requiredBytes), 1024);
  t.deepEqual(r.parameters, { type: 'ssd' });
  t.deepEqual(r.accessibilityRequirements.requisite[0]!.segments, { [ZONE]: 'a' });
});

/** [what, answer, the volume id the error carries (the volume exists; undefined: it cannot be named)]. */
const invalid: [string, Volume | undefined, string | undefined][] = [
  ['no volume', undefined, undefined],
  ['empty id', vol({ volumeId: '' }), undefined],
  ['smaller than asked', vol({ capacityBytes: 10 }), 'vol-1'],
  ['larger than the limit', vol({ capacityBytes: 4096 }), 'vol-1'],
  ['65 volume_context entries', vol({ volumeContext: Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`k${i}`, 'v'])) }), 'vol-1'],
  ['topology value not a label value', vol({ accessibleTopology: [{ segments: { [ZONE]: 'a b' } }] }), 'vol-1'],
  ['topology key not a label key', vol({ accessibleTopology: [{ segments: { 'bad key': 'a' } }] }), 'vol-1'],
];
for (const [what, answer, volumeId] of invalid) {
  test(`createVolume rejects an invalid answer as an unusable volume: ${what}`, async (t) => {
    const v = await volumesFor(t, { createVolume: async () => ({ volume: answer }) });
    const err = await t.throwsAsync(v.createVolume({ ...REQ, limitBytes: 2048 }), { instanceOf: UnusableVolumeError });
    t.true(err instanceof InvalidCloudResponseError);
    t.is(err?.volumeId, volumeId);
  });
}

test('a capacity of 0 means "as requested"', async (t) => {
  const v = await volumesFor(t, { createVolume: async () => ({ volume: vol({ capacityBytes: 0 }) }) });
  t.is((await v.createVolume(REQ)).capacityBytes, 1024);
});

test('errors keep their meaning: UNAVAILABLE is transient, INVALID_ARGUMENT final', async (t) => {
  const v = await volumesFor(t, {
    async createVolume(req) {
      if (req.name === 'busy') throw new UnavailableError('try later');
      throw new InvalidArgumentError('bad parameter');
    },
  });
  const busy = await t.throwsAsync(v.createVolume({ ...REQ, name: 'busy' }), { instanceOf: CloudCallError });
  t.true((busy as CloudCallError).transient);
  const bad = await t.throwsAsync(v.createVolume(REQ), { instanceOf: CloudCallError });
  t.false((bad as CloudCallError).transient);
  t.is((bad as CloudCallError).code, 'INVALID_ARGUMENT');
});

test('getVolumeLabels rejects labels that are not valid label keys/values', async (t) => {
  const good = await volumesFor(t, { getVolumeLabels: async () => ({ labels: { [ZONE]: 'a' } }) });
  t.deepEqual(await good.getVolumeLabels('vol-1'), { [ZONE]: 'a' });
  const bad = await volumesFor(t, { getVolumeLabels: async () => ({ labels: { [ZONE]: 'not/valid' } }) });
  await t.throwsAsync(bad.getVolumeLabels('vol-1'), { instanceOf: InvalidCloudResponseError });
});

test('listVolumes follows pages and checks published node ids', async (t) => {
  const v = await volumesFor(t, {
    async listVolumes(req) {
      if (!req.pageToken) return { entries: [{ volume: vol(), publishedNodeIds: ['acme://i-1'] }], nextPageToken: 'p2' };
      return { entries: [{ volume: vol({ volumeId: 'vol-2' }), publishedNodeIds: [] }], nextPageToken: '' };
    },
  });
  const all = await v.listVolumes();
  t.deepEqual(
    all.map((e) => [e.volume.volumeId, e.publishedNodeIds]),
    [
      ['vol-1', ['acme://i-1']],
      ['vol-2', []],
    ],
  );
  const loop = await volumesFor(t, { listVolumes: async () => ({ entries: [], nextPageToken: 'same' }) });
  await t.throwsAsync(loop.listVolumes(), { instanceOf: InvalidCloudResponseError, message: /repeats/ });
  const badId = await volumesFor(t, {
    listVolumes: async () => ({ entries: [{ volume: vol(), publishedNodeIds: ['not a provider id'] }], nextPageToken: '' }),
  });
  await t.throwsAsync(badId.listVolumes(), { instanceOf: InvalidCloudResponseError });
});

test('expandVolume reports node expansion and refuses a smaller answer', async (t) => {
  const v = await volumesFor(t, {
    controllerExpandVolume: async (req) => ({ capacityBytes: req.capacityRange!.requiredBytes, nodeExpansionRequired: true }),
  });
  t.deepEqual(await v.expandVolume('vol-1', 2048), { capacityBytes: 2048, nodeExpansionRequired: true });
  const shrunk = await volumesFor(t, { controllerExpandVolume: async () => ({ capacityBytes: 1, nodeExpansionRequired: false }) });
  await t.throwsAsync(shrunk.expandVolume('vol-1', 2048), { instanceOf: InvalidCloudResponseError });
});
