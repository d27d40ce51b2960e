/**
 * The local cloud's `respell` test knob (plugins/local/knobs.ts): which
 * answer fields it rewrites, and which rules it refuses.
 */
import test from 'ava';
import { parseKnobValue, respellAnswer } from '../../../plugins/local/knobs.js';

const RULES = 'fd00::5=FD00:0:0::5,10.0.0.5=010.000.000.005';

test('respellAnswer: node address and ingress ip fields equal to a rule are rewritten; other fields and other IPs stay', (t) => {
  const answer = {
    metadata: {
      providerId: 'local://10.0.0.5',
      nodeAddresses: [
        { type: 2, address: 'fd00::5' },
        { type: 2, address: 'fd00::6' },
        { type: 3, address: '10.0.0.5' },
      ],
    },
    status: { ingress: [{ ip: '10.0.0.5', hostname: '10.0.0.5', ports: [] }] },
    data: Buffer.from('10.0.0.5'),
  };
  const out = respellAnswer(RULES, answer);
  t.deepEqual(
    out.metadata.nodeAddresses.map((a) => a.address),
    ['FD00:0:0::5', 'fd00::6', '010.000.000.005'],
  );
  t.is(out.status.ingress[0]!.ip, '010.000.000.005');
  t.is(out.status.ingress[0]!.hostname, '10.0.0.5', 'only address and ip fields');
  t.is(out.metadata.providerId, 'local://10.0.0.5');
  t.is(out.data, answer.data, 'a Buffer goes back as it is');
  t.is(answer.metadata.nodeAddresses[0]!.address, 'fd00::5', 'the answer itself is not changed');
  t.is(respellAnswer('', answer), answer, 'no rules: the same object');
});

const knobRows: { value: string; ok: boolean }[] = [
  { value: RULES, ok: true },
  { value: '', ok: true },
  { value: 'fd00::5', ok: false },
  { value: '=x', ok: false },
  { value: '10.0.0.5=', ok: false },
  { value: 'x'.repeat(2000), ok: false },
];
for (const r of knobRows) {
  test(`parseKnobValue(respell, ${JSON.stringify(r.value.slice(0, 30))}) is ${r.ok ? 'accepted' : 'refused'}`, (t) => {
    if (r.ok) t.is(parseKnobValue('respell', r.value), r.value);
    else t.throws(() => parseKnobValue('respell', r.value), { message: /knob respell/ });
  });
}
