/**
 * Whatever the host accepts from a provider, the real kube-apiserver accepts
 * where the host writes it. fast-check generates provider answers
 * (test/helpers/fuzz-answers.ts: valid values, valid values with a hostile
 * character spliced in, arbitrary and very long strings); every answer the
 * host's validation accepts is written as the host would write it, with
 * `dryRun=All` (validated and admitted, never stored):
 *
 * - instance metadata: labels and providerID patched onto a Node, addresses
 *   onto its status (a Node without a providerID, as when initializing);
 * - volumes: the PersistentVolume the provisioner would create, with the
 *   labels GetVolumeLabels would add;
 * - publish contexts and error text: a VolumeAttachment's status;
 * - load balancer statuses: a Service's status.loadBalancer;
 * - error text: a core/v1 Event's message and an events.k8s.io/v1 note
 *   (whose 1 KiB limit the API server enforces).
 *
 * Refused answers are written too, to report how many of them the API server
 * would have stored (the host is stricter on purpose: a providerID can be set
 * once only, and hidden characters mislead whoever reads the object).
 */
import anyTest, { type TestFn } from 'ava';
import fc from 'fast-check';
import { randomBytes } from 'node:crypto';
import { CoreV1Api, EventsV1Api, StorageV1Api, type V1PersistentVolumeClaim, type V1StorageClass } from '@kubernetes/client-node';
import { initLabels } from '../../host/controllers/node/labels.js';
import { persistentVolumeFor } from '../../host/controllers/volume/pv-spec.js';
import { sanitizeMessage } from '../../host/kube/message-text.js';
import { patchOptions } from '../helpers/kube-patch.js';
import { lbStatusProblems } from '../../host/plugin/validate-load-balancers.js';
import { labelMapProblems, stringMapProblems, volumeProblems } from '../../host/plugin/validate-volumes.js';
import { instanceMetadataProblems } from '../../host/plugin/validate.js';
import { testKubeConfig } from '../controlplane/shared.js';
import { cloudVolumeArb, errorTextArb, instanceMetadataArb, labelMapArb, lbStatusArb, stringMapArb } from '../helpers/fuzz-answers.js';
import { testScope } from '../helpers/nodes.js';

const PROVIDER = 'apifuzz';
const DRIVER = 'apifuzz.example.com';
const RUNS = 150;
const DRY_RUN = 'All';
const scope = testScope('apifuzz');

const test = anyTest as TestFn<{ core: CoreV1Api; storage: StorageV1Api; events: EventsV1Api; node: string; va: string; ns: string }>;

test.before(async (t) => {
  const kc = await testKubeConfig();
  // The API server is driven with client-node: what is checked is what it accepts, not how the host sends it.
  const core = kc.makeApiClient(CoreV1Api);
  const id = randomBytes(4).toString('hex');
  const node = `apifuzz-${id}`;
  const va = `apifuzz-${id}`;
  const ns = `apifuzz-${id}`;
  t.context = { core, storage: kc.makeApiClient(StorageV1Api), events: kc.makeApiClient(EventsV1Api), node, va, ns };
  await core.createNamespace({ body: { metadata: { name: ns } } });
  await core.createNode({ body: { metadata: { name: node, labels: scope.labels } } });
  // A class no controller implements: only this test writes its status.
  await core.createNamespacedService({
    namespace: ns,
    body: {
      metadata: { name: 'lb' },
      spec: { type: 'LoadBalancer', loadBalancerClass: 'example.com/apifuzz-none', ports: [{ port: 80, protocol: 'TCP' }] },
    },
  });
  await t.context.storage.createVolumeAttachment({
    body: { metadata: { name: va }, spec: { attacher: DRIVER, nodeName: node, source: { persistentVolumeName: `apifuzz-pv-${id}` } } },
  });
});

test.after.always(async (t) => {
  const { core, storage, node, va, ns } = t.context;
  if (!core) return;
  await storage.deleteVolumeAttachment({ name: va }).catch(() => undefined);
  await core.deleteNode({ name: node }).catch(() => undefined);
  await core.deleteNamespace({ name: ns }).catch(() => undefined);
});

/** Resolves to the API server's refusal message, or undefined when it accepted. */
async function refusal(write: Promise<unknown>): Promise<string | undefined> {
  try {
    await write;
    return undefined;
  } catch (err) {
    const e = err as { code?: number; body?: unknown };
    if (e.code !== 422 && e.code !== 400) throw err;
    const body = typeof e.body === 'string' ? e.body : JSON.stringify(e.body);
    return body.slice(0, 600);
  }
}

interface Tally {
  accepted: number;
  refused: number;
  refusedButStorable: number;
}

function report(t: { log: (...a: unknown[]) => void; true: (v: boolean, m: string) => void }, what: string, n: Tally): void {
  t.log(`${what}: host accepted ${n.accepted}, refused ${n.refused} (the API server would have stored ${n.refusedButStorable} of those)`);
  t.true(n.accepted >= RUNS / 10 && n.refused >= RUNS / 10, `both verdicts exercised for ${what}`);
}

test('instance metadata the host accepts is accepted on a Node (labels, providerID, addresses)', async (t) => {
  const { core, node } = t.context;
  const n: Tally = { accepted: 0, refused: 0, refusedButStorable: 0 };
  await fc.assert(
    fc.asyncProperty(instanceMetadataArb(PROVIDER), async (m) => {
      const ok = instanceMetadataProblems(m, '', PROVIDER).length === 0;
      const spec = m.providerId ? { providerID: m.providerId } : {};
      const meta = refusal(
        core.patchNode({ name: node, body: { metadata: { labels: initLabels({}, m).set }, spec }, dryRun: DRY_RUN }, patchOptions('merge')),
      );
      const status = refusal(
        core.patchNodeStatus({ name: node, body: { status: { addresses: m.nodeAddresses } }, dryRun: DRY_RUN }, patchOptions('merge')),
      );
      const refused = (await meta) ?? (await status);
      if (ok) {
        n.accepted++;
        if (refused) throw new Error(`the host accepted ${JSON.stringify(m)}, the API server refused it: ${refused}`);
      } else {
        n.refused++;
        if (!refused) n.refusedButStorable++;
      }
    }),
    { numRuns: RUNS, includeErrorInReport: true },
  );
  report(t, 'instance metadata', n);
});

const REQUESTED_BYTES = 2 ** 30;
const claim: V1PersistentVolumeClaim = {
  metadata: { name: 'data', namespace: 'apifuzz', uid: '00000000-0000-4000-8000-000000000001' },
  spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
};
const sc: V1StorageClass = { metadata: { name: 'apifuzz' }, provisioner: DRIVER, reclaimPolicy: 'Delete' };

test('a volume and volume labels the host accepts make a PersistentVolume the API server accepts', async (t) => {
  const { core } = t.context;
  const n: Tally = { accepted: 0, refused: 0, refusedButStorable: 0 };
  await fc.assert(
    fc.asyncProperty(cloudVolumeArb, labelMapArb, async (volume, labels) => {
      const ok = volumeProblems(volume).length === 0 && labelMapProblems('labels', labels).length === 0;
      // As GrpcVolumes.createVolume: capacity 0 (unknown, as CSI allows) becomes the requested size.
      const pv = persistentVolumeFor(claim, sc, { ...volume, capacityBytes: volume.capacityBytes || REQUESTED_BYTES }, DRIVER, 'apifuzz-identity');
      pv.metadata = { ...pv.metadata, name: `apifuzz-${randomBytes(4).toString('hex')}`, labels };
      const refused = await refusal(core.createPersistentVolume({ body: pv, dryRun: DRY_RUN }));
      if (ok) {
        n.accepted++;
        if (refused) throw new Error(`the host accepted ${JSON.stringify({ volume, labels })}, the API server refused its PV: ${refused}`);
      } else {
        n.refused++;
        if (!refused) n.refusedButStorable++;
      }
    }),
    { numRuns: RUNS, includeErrorInReport: true },
  );
  report(t, 'volumes', n);
});

test('a publish context the host accepts, and any error text once sanitized, fit a VolumeAttachment status', async (t) => {
  const { storage, va } = t.context;
  const big = fc.dictionary(fc.string({ unit: fc.constantFrom('a', 'b', 'c'), minLength: 1, maxLength: 8 }), fc.constant('v'.repeat(4096)), {
    minKeys: 60,
    maxKeys: 64,
  });
  const n: Tally = { accepted: 0, refused: 0, refusedButStorable: 0 };
  await fc.assert(
    fc.asyncProperty(fc.oneof({ weight: 4, arbitrary: stringMapArb }, { weight: 1, arbitrary: big }), errorTextArb, async (ctx, text) => {
      const ok = stringMapProblems('publish_context', ctx).length === 0;
      const time = new Date().toISOString();
      const body = { status: { attached: true, attachmentMetadata: ctx, attachError: { time, message: sanitizeMessage(text) } } };
      const refused = await refusal(storage.patchVolumeAttachmentStatus({ name: va, body, dryRun: DRY_RUN }, patchOptions('merge')));
      if (ok) {
        n.accepted++;
        if (refused) throw new Error(`the host accepted publish_context ${JSON.stringify(ctx).slice(0, 300)}, the API server refused it: ${refused}`);
      } else {
        n.refused++;
        if (!refused) n.refusedButStorable++;
      }
    }),
    { numRuns: RUNS, includeErrorInReport: true },
  );
  report(t, 'publish contexts', n);
});

test('a load balancer status the host accepts is accepted as a Service status', async (t) => {
  const { core, ns } = t.context;
  const n: Tally = { accepted: 0, refused: 0, refusedButStorable: 0 };
  await fc.assert(
    fc.asyncProperty(lbStatusArb, async (s) => {
      const ok = lbStatusProblems(s).length === 0;
      const body = { status: { loadBalancer: { ingress: s.ingress } } };
      const refused = await refusal(core.patchNamespacedServiceStatus({ namespace: ns, name: 'lb', body, dryRun: DRY_RUN }, patchOptions('merge')));
      if (ok) {
        n.accepted++;
        if (refused) throw new Error(`the host accepted ${JSON.stringify(s).slice(0, 400)}, the API server refused it: ${refused}`);
      } else {
        n.refused++;
        if (!refused) n.refusedButStorable++;
      }
    }),
    { numRuns: RUNS, includeErrorInReport: true },
  );
  report(t, 'load balancer statuses', n);
});

test('error text once sanitized is accepted as a core/v1 Event message and as an events.k8s.io/v1 note', async (t) => {
  const { core, events, ns } = t.context;
  await fc.assert(
    fc.asyncProperty(errorTextArb, async (text) => {
      const message = sanitizeMessage(text);
      const name = `apifuzz.${randomBytes(6).toString('hex')}`;
      const involvedObject = { kind: 'ConfigMap', apiVersion: 'v1', name: 'apifuzz', namespace: ns };
      const legacy = refusal(
        core.createNamespacedEvent({
          namespace: ns,
          dryRun: DRY_RUN,
          body: { metadata: { name, namespace: ns }, involvedObject, type: 'Warning', reason: 'ApiFuzz', message, count: 1 },
        }),
      );
      const note = refusal(
        events.createNamespacedEvent({
          namespace: ns,
          dryRun: DRY_RUN,
          body: {
            metadata: { name, namespace: ns },
            // MicroTime: six fractional digits.
            eventTime: new Date().toISOString().replace(/Z$/, '000Z') as never,
            reportingController: 'example.com/apifuzz',
            reportingInstance: 'apifuzz-it',
            action: 'Fuzz',
            reason: 'ApiFuzz',
            type: 'Warning',
            regarding: involvedObject,
            note: message,
          },
        }),
      );
      for (const [what, r] of [
        ['core/v1 Event', await legacy],
        ['events.k8s.io/v1 note', await note],
      ] as const) {
        if (r) throw new Error(`${what} refused for ${JSON.stringify(message.slice(0, 200))}: ${r}`);
      }
    }),
    { numRuns: RUNS, includeErrorInReport: true },
  );
  t.pass();
});

test('providerIDs with NUL, ESC, DEL, U+202E or CJK: the API server would store them (and never allow a change), the host refuses them', async (t) => {
  const { core, node } = t.context;
  for (const id of ['\u0000', '\u001b[2J', '\u007f', '\u202e', '東京']) {
    const providerId = `${PROVIDER}://i-${id}1`;
    const problems = instanceMetadataProblems(
      { providerId, instanceType: '', zone: '', region: '', nodeAddresses: [], additionalLabels: {} },
      '',
      PROVIDER,
    );
    t.regex(problems.join('; '), /providerID .* is not of the form <provider>:\/\/<id> \(printable ASCII, no spaces\)/, JSON.stringify(providerId));
    t.is(
      await refusal(core.patchNode({ name: node, body: { spec: { providerID: providerId } }, dryRun: DRY_RUN }, patchOptions('merge'))),
      undefined,
      JSON.stringify(providerId),
    );
  }
});
