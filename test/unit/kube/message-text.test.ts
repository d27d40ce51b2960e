/**
 * Message text (host/kube/message-text.ts): a table of what happens to
 * control, bidi and long text, and properties over arbitrary strings: the
 * result is one line, has no hidden characters, fits in MAX_MESSAGE_BYTES,
 * and leaves plain text alone.
 */
import test from 'ava';
import fc from 'fast-check';
import { MAX_MESSAGE_BYTES, sanitizeMessage, TRUNCATION_SUFFIX } from '../../../host/kube/message-text.js';

interface Case {
  description: string;
  input: string;
  want: string;
}

const cases: Case[] = [
  { description: 'plain text is unchanged', input: 'CreateVolume: quota exceeded', want: 'CreateVolume: quota exceeded' },
  { description: 'non-ASCII text is kept', input: 'zone 東京 unavailable', want: 'zone 東京 unavailable' },
  { description: 'a newline becomes a space (no forged second line)', input: 'failed\nNormal  Synced  ok', want: 'failed Normal  Synced  ok' },
  { description: 'CRLF becomes one space', input: 'a\r\nb', want: 'a b' },
  { description: 'tab and Unicode line separators become spaces', input: 'a\tb\u2028c\u2029d\u0085e', want: 'a b c d e' },
  { description: 'ESC is escaped (no terminal sequences)', input: 'x\u001b[31mred', want: 'x\\u001b[31mred' },
  { description: 'NUL and DEL are escaped', input: 'a\u0000b\u007f', want: 'a\\u0000b\\u007f' },
  { description: 'a C1 control is escaped', input: 'a\u009bb', want: 'a\\u009bb' },
  { description: 'a right-to-left override is escaped', input: 'exe.\u202etxt', want: 'exe.\\u202etxt' },
  { description: 'bidi isolates and zero-width characters are escaped', input: '\u2066a\u2069\u200bb\ufeff', want: '\\u2066a\\u2069\\u200bb\\ufeff' },
  { description: 'a lone surrogate becomes U+FFFD', input: 'a\ud800b', want: 'a\ufffdb' },
  { description: 'a surrogate pair (emoji) is kept', input: 'ok 👍', want: 'ok 👍' },
  { description: `exactly ${MAX_MESSAGE_BYTES} bytes is kept whole`, input: 'x'.repeat(MAX_MESSAGE_BYTES), want: 'x'.repeat(MAX_MESSAGE_BYTES) },
  {
    description: `one byte more is cut to ${MAX_MESSAGE_BYTES} bytes with the suffix`,
    input: 'x'.repeat(MAX_MESSAGE_BYTES + 1),
    want: 'x'.repeat(MAX_MESSAGE_BYTES - TRUNCATION_SUFFIX.length) + TRUNCATION_SUFFIX,
  },
  {
    description: 'multi-byte characters are never split',
    input: '東'.repeat(500),
    // 3 bytes each: 340 fit in 1020 bytes.
    want: '東'.repeat(340) + TRUNCATION_SUFFIX,
  },
  {
    description: 'escapes count towards the limit',
    input: '\u0000'.repeat(300),
    want: '\\u0000'.repeat(170) + TRUNCATION_SUFFIX,
  },
];

for (const c of cases) {
  test(`sanitizeMessage: ${c.description}`, (t) => {
    t.is(sanitizeMessage(c.input), c.want);
  });
}

test('sanitizeMessage: 8 MiB of text is cut to the limit', (t) => {
  const out = sanitizeMessage('e'.repeat(8 << 20));
  t.is(Buffer.byteLength(out), MAX_MESSAGE_BYTES);
  t.true(out.endsWith(TRUNCATION_SUFFIX));
});

test('sanitizeMessage: a smaller limit is honoured', (t) => {
  t.is(sanitizeMessage('abcdefghij', 8), 'abcd ...');
});

/** Everything a plugin could put in an error message. */
const anyText = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 3000 }),
  fc.string({
    unit: fc.constantFrom(
      'a',
      ' ',
      '\n',
      '\r',
      '\t',
      '\u0000',
      '\u001b',
      '\u007f',
      '\u0085',
      '\u202e',
      '\u2066',
      '\u200b',
      '東',
      '👍',
      '\ud800',
      '\udc00',
    ),
    maxLength: 2000,
  }),
  fc.string({ unit: 'grapheme', maxLength: 600 }),
);

// eslint-disable-next-line no-control-regex
const HIDDEN = /[\u0000-\u001f\u007f-\u009f\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2069\u2028\u2029\ufeff]/;
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

test('property: the result is one well-formed line without hidden characters, at most MAX_MESSAGE_BYTES bytes', (t) => {
  fc.assert(
    fc.property(anyText, (s) => {
      const out = sanitizeMessage(s);
      if (HIDDEN.test(out)) throw new Error(`hidden character left in ${JSON.stringify(out)}`);
      if (LONE_SURROGATE.test(out)) throw new Error(`lone surrogate left in ${JSON.stringify(out)}`);
      if (Buffer.byteLength(out) > MAX_MESSAGE_BYTES) throw new Error(`${Buffer.byteLength(out)} bytes`);
      // UTF-8 round trip is exact: what the API server stores is what we wrote.
      if (Buffer.from(out, 'utf8').toString('utf8') !== out) throw new Error('not well-formed');
      return true;
    }),
    { numRuns: 3000 },
  );
  t.pass();
});

test('property: short plain text is unchanged, and a truncated message keeps the start of the text', (t) => {
  fc.assert(
    fc.property(fc.string({ unit: fc.constantFrom(...'abcXYZ09 .:,-_/()[]東👍'), maxLength: 1500 }), (s) => {
      const out = sanitizeMessage(s);
      if (Buffer.byteLength(s) <= MAX_MESSAGE_BYTES) return out === s;
      return out.endsWith(TRUNCATION_SUFFIX) && s.startsWith(out.slice(0, -TRUNCATION_SUFFIX.length));
    }),
    { numRuns: 2000 },
  );
  t.pass();
});
