/** Go-compatible value parsers: durations, bools, numbers. */
import test from 'ava';
import { formatGoDuration, parseGoBool, parseGoDuration, parseGoFloat, parseGoInt } from '../../../host/config/values.js';

const durations: [string, number | undefined][] = [
  ['0', 0],
  ['0s', 0],
  ['500ms', 500],
  ['10s', 10_000],
  ['5m', 300_000],
  ['1h30m', 5_400_000],
  ['1h30m15s', 5_415_000],
  ['1.5h', 5_400_000],
  ['.5s', 500],
  ['1500us', 1.5],
  ['1500µs', 1.5],
  ['2000000ns', 2],
  ['-2s', -2_000],
  ['+3s', 3_000],
  ['12h', 43_200_000],
  ['', undefined],
  ['10', undefined],
  ['s', undefined],
  ['5 m', undefined],
  ['5min', undefined],
  ['1d', undefined],
  ['1h-30m', undefined],
  ['.s', undefined],
];
for (const [text, want] of durations) {
  test(`parseGoDuration(${JSON.stringify(text)})`, (t) => {
    t.is(parseGoDuration(text), want);
  });
}

test('parseGoBool accepts Go spellings only', (t) => {
  for (const s of ['1', 't', 'T', 'TRUE', 'true', 'True']) t.is(parseGoBool(s), true, s);
  for (const s of ['0', 'f', 'F', 'FALSE', 'false', 'False']) t.is(parseGoBool(s), false, s);
  for (const s of ['', 'yes', 'on', 'tRUE']) t.is(parseGoBool(s), undefined, s);
});

test('parseGoInt is strict', (t) => {
  t.is(parseGoInt('42'), 42);
  t.is(parseGoInt('-1'), -1);
  for (const s of ['', '1.0', '1e3', '0x10', ' 1', '99999999999999999999']) t.is(parseGoInt(s), undefined, s);
});

test('parseGoFloat', (t) => {
  t.is(parseGoFloat('0.5'), 0.5);
  t.is(parseGoFloat('20'), 20);
  t.is(parseGoFloat('1e2'), 100);
  for (const s of ['', 'abc', 'Infinity', '1,5']) t.is(parseGoFloat(s), undefined, s);
});

test('formatGoDuration prints like Go', (t) => {
  t.is(formatGoDuration(0), '0s');
  t.is(formatGoDuration(500), '500ms');
  t.is(formatGoDuration(10_000), '10s');
  t.is(formatGoDuration(300_000), '5m0s');
  t.is(formatGoDuration(5_400_000), '1h30m0s');
  t.is(formatGoDuration(1_500), '1.5s');
});
