/**
 * Properties: whatever the host accepts from a provider passes the API
 * server's rules (test/helpers/apiserver-rules.ts) for the fields it is
 * written into, and is printable ASCII where Kubernetes expects it. One
 * property per answer kind: instance metadata (Node), volumes (PV),
 * publish contexts (VolumeAttachment status), volume labels, routes, load
 * balancer statuses (Service status), error text. Each also checks that both verdicts occur, so a generator that only
 * ever produces valid or only invalid values fails loudly.
 */
import test from 'ava';
import fc from 'fast-check';
import { isIP } from 'node:net';
import { initLabels } from '../../../host/controllers/node/labels.js';
import { nodeAffinityFor } from '../../../host/controllers/volume/pv-spec.js';
import { MAX_MESSAGE_BYTES, sanitizeMessage } from '../../../host/kube/message-text.js';
import { FROM_PB_ADDR } from '../../../host/plugin/grpc-cloud.js';
import { lbStatusProblems } from '../../../host/plugin/validate-load-balancers.js';
import { routeProblems } from '../../../host/plugin/validate-routes.js';
import { labelMapProblems, stringMapProblems, volumeProblems } from '../../../host/plugin/validate-volumes.js';
import { instanceMetadataProblems } from '../../../host/plugin/validate.js';
import { parseCidr } from '../../../host/util/cidr.js';
import {
  attachmentMetadataBytes,
  HIDDEN_CHARACTER,
  isDns1123Subdomain,
  isPrintableAsciiId,
  isQualifiedName,
  isValidLabelValue,
  isWellFormed,
  MAX_ATTACHMENT_METADATA_BYTES,
  MAX_NOTE_BYTES,
} from '../../helpers/apiserver-rules.js';
import { cloudVolumeArb, errorTextArb, instanceMetadataArb, labelMapArb, lbStatusArb, pbRouteArb, stringMapArb } from '../../helpers/fuzz-answers.js';

const PROVIDER = 'fuzz';
const RUNS = 3000;

/** Runs `check` (true = accepted; throws on a rule broken) over `arb`; both verdicts must occur. */
function both<T>(t: { true: (v: boolean, m: string) => void }, arb: fc.Arbitrary<T>, check: (v: T) => boolean): void {
  const seen = { accepted: 0, refused: 0 };
  fc.assert(
    fc.property(arb, (v) => {
      if (check(v)) seen.accepted++;
      else seen.refused++;
    }),
    { numRuns: RUNS },
  );
  t.true(seen.accepted > RUNS / 20, `accepted ${seen.accepted} of ${RUNS}`);
  t.true(seen.refused > RUNS / 20, `refused ${seen.refused} of ${RUNS}`);
}

function fail(what: string, v: unknown): never {
  throw new Error(`accepted ${what}: ${JSON.stringify(v)}`);
}

test('property: accepted instance metadata gives a printable-ASCII providerID, valid labels and distinct, parseable addresses', (t) => {
  both(t, instanceMetadataArb(PROVIDER), (m) => {
    if (instanceMetadataProblems(m, '', PROVIDER).length) return false;
    if (!isPrintableAsciiId(m.providerId) || !m.providerId.startsWith(`${PROVIDER}://`)) fail('providerID', m.providerId);
    for (const [k, v] of Object.entries(initLabels({}, m).set)) {
      if (!isQualifiedName(k)) fail('label key', k);
      if (!isValidLabelValue(v)) fail('label value', v);
    }
    const seen = new Set<string>();
    for (const a of m.nodeAddresses) {
      const key = `${a.type}/${a.address}`;
      if (seen.has(key)) fail('duplicate address (the API server refuses those)', a);
      seen.add(key);
      if ((a.type === 'InternalIP' || a.type === 'ExternalIP') && isIP(a.address) === 0) fail('IP address', a);
      if (!isPrintableAsciiId(a.address)) fail('address', a);
    }
    return true;
  });
});

test('property: an accepted volume gives a printable-ASCII volumeHandle, plain attributes and a valid node affinity', (t) => {
  both(t, cloudVolumeArb, (v) => {
    if (volumeProblems(v).length) return false;
    if (!isPrintableAsciiId(v.volumeId)) fail('volume_id', v.volumeId);
    if (!Number.isSafeInteger(v.capacityBytes) || v.capacityBytes < 0) fail('capacity', v.capacityBytes);
    for (const [k, val] of Object.entries(v.volumeContext)) {
      for (const s of [k, val]) if (HIDDEN_CHARACTER.test(s) || !isWellFormed(s)) fail('volume_context text', s);
    }
    for (const term of nodeAffinityFor(v.accessibleTopology)?.required?.nodeSelectorTerms ?? []) {
      for (const e of term.matchExpressions ?? []) {
        if (!isQualifiedName(e.key)) fail('node affinity key', e.key);
        if (!(e.values ?? []).every((x) => x !== '' && isValidLabelValue(x))) fail('node affinity values', e.values);
      }
    }
    return true;
  });
});

test('property: an accepted publish context fits VolumeAttachment status.attachmentMetadata', (t) => {
  const big = fc.dictionary(fc.string({ maxLength: 8 }), fc.constant('v'.repeat(4096)), { minKeys: 60, maxKeys: 64 });
  both(t, fc.oneof(stringMapArb, big), (m) => {
    if (stringMapProblems('publish_context', m).length) return false;
    if (attachmentMetadataBytes(m) > MAX_ATTACHMENT_METADATA_BYTES) fail('publish_context size', attachmentMetadataBytes(m));
    for (const [k, v] of Object.entries(m)) for (const s of [k, v]) if (HIDDEN_CHARACTER.test(s) || !isWellFormed(s)) fail('publish_context text', s);
    return true;
  });
});

test('property: accepted volume labels are valid label keys and values', (t) => {
  both(t, labelMapArb, (m) => {
    if (labelMapProblems('labels', m).length) return false;
    for (const [k, v] of Object.entries(m)) if (!isQualifiedName(k) || !isValidLabelValue(v)) fail('label', [k, v]);
    return true;
  });
});

test('property: an accepted route has a canonical CIDR and printable-ASCII names', (t) => {
  both(t, pbRouteArb, (r) => {
    const checked = routeProblems(r, FROM_PB_ADDR);
    if ('problems' in checked) return false;
    if (parseCidr(checked.cidr)?.text !== checked.cidr) fail('destination', r.destinationCidr);
    for (const s of [r.name, r.targetNode]) if (s !== '' && !isPrintableAsciiId(s)) fail('route name or target node', s);
    return true;
  });
});

test('property: an accepted load balancer status has IP literals, DNS hostnames that are not IPs, ports in range and CamelCase port errors', (t) => {
  both(t, lbStatusArb, (s) => {
    if (lbStatusProblems(s).length) return false;
    for (const ing of s.ingress) {
      if (!ing.ip && !ing.hostname) fail('empty ingress', ing);
      if (ing.ip && isIP(ing.ip) === 0) fail('ingress ip', ing.ip);
      if (ing.hostname && (!isDns1123Subdomain(ing.hostname) || isIP(ing.hostname) !== 0)) fail('ingress hostname', ing.hostname);
      if (ing.ipMode && !ing.ip) fail('ipMode without ip', ing);
      for (const p of ing.ports ?? []) {
        if (!(p.port >= 1 && p.port <= 65535)) fail('port', p);
        if (p.error !== undefined && !/^[A-Za-z][A-Za-z0-9]{0,315}$/.test(p.error)) fail('port error', p.error);
      }
    }
    return true;
  });
});

test('property: error text becomes one well-formed line without hidden characters that fits an events.k8s.io note and a VolumeError', (t) => {
  fc.assert(
    fc.property(errorTextArb, (s) => {
      const out = sanitizeMessage(s);
      if (HIDDEN_CHARACTER.test(out) || !isWellFormed(out)) fail('message text', out);
      return Buffer.byteLength(out) <= Math.min(MAX_MESSAGE_BYTES, MAX_NOTE_BYTES);
    }),
    { numRuns: RUNS },
  );
  t.pass();
});
