/**
 * How `npm run bench` writes docs/benchmarks.md (test/bench/doc.ts): a run
 * replaces only the parts it ran, between their markers, and keeps every
 * other byte (hand-written text between and around the sections, the
 * sections it did not run, the header on a partial run).
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import test from 'ava';
import { closeMarker, HEADER, openMarker, TITLE, withPart } from '../../bench/doc.js';
import { REPO } from '../../../tools/release/files.js';

const ORDER = [HEADER, 'a', 'b', 'c'];
const part = (name: string, text: string) => `${openMarker(name)}\n${text}${closeMarker(name)}\n`;

/** Hand-written text before, between and after the generated parts. */
const DOC = [
  TITLE,
  '\nA note under the title.\n\n',
  part(HEADER, 'Written on day 1.\n'),
  '\n',
  part('a', '## A\n\nold a\n'),
  '\n### A note between a and c, by hand\n\nIt stays.\n\n',
  part('c', '## C\n\nold c\n'),
  '\nTrailing hand-written text.\n',
].join('');

const CASES: { name: string; doc: string; writes: [string, string][]; want: string }[] = [
  {
    name: 'a partial run of one section replaces its text only',
    doc: DOC,
    writes: [['a', '## A\n\nnew a\n']],
    want: DOC.replace('old a', 'new a'),
  },
  {
    name: 'a full run replaces the header and each section, the hand-written text stays',
    doc: DOC,
    writes: [
      [HEADER, 'Written on day 2.\n'],
      ['a', '## A\n\nnew a\n'],
      ['c', '## C\n\nnew c\n'],
    ],
    want: DOC.replace('day 1', 'day 2').replace('old a', 'new a').replace('old c', 'new c'),
  },
  {
    name: 'a section not yet in the document goes after the one before it, before the hand-written note',
    doc: DOC,
    writes: [['b', '## B\n\nnew b\n']],
    want: DOC.replace(`${closeMarker('a')}\n`, `${closeMarker('a')}\n\n${part('b', '## B\n\nnew b\n')}`),
  },
  {
    name: 'a first section with none before it goes before the next one',
    doc: `${TITLE}\nHand.\n\n${part('c', 'c\n')}`,
    writes: [['a', 'a\n']],
    want: `${TITLE}\nHand.\n\n${part('a', 'a\n')}\n${part('c', 'c\n')}`,
  },
  {
    name: 'no document yet: the title, then each part as its own paragraph',
    doc: '',
    writes: [
      [HEADER, 'h\n'],
      ['a', 'a\n'],
      ['c', 'c\n'],
    ],
    want: `${TITLE}\n${part(HEADER, 'h\n')}\n${part('a', 'a\n')}\n${part('c', 'c\n')}`,
  },
  {
    name: 'the same text again changes nothing',
    doc: DOC,
    writes: [['c', '## C\n\nold c\n']],
    want: DOC,
  },
];

for (const c of CASES)
  test(`withPart: ${c.name}`, (t) => {
    t.is(
      c.writes.reduce((doc, [name, text]) => withPart(doc, name, text, ORDER), c.doc),
      c.want,
    );
  });

test('withPart refuses a part outside the document order', (t) => {
  t.throws(() => withPart(DOC, 'z', 'z\n', ORDER), { message: /"z" is not in the document order/ });
});

test('docs/benchmarks.md has the header between its markers, so a full run replaces it rather than adding one', async (t) => {
  const doc = await readFile(join(REPO, 'docs', 'benchmarks.md'), 'utf8');
  t.true(doc.startsWith(`${TITLE}\n${openMarker(HEADER)}\n`));
  t.is(doc.split(openMarker(HEADER)).length, 2);
  t.is(doc.split(closeMarker(HEADER)).length, 2);
});
