/**
 * Store scripts (src/store/script.ts, `chipc store batch`): every operation and argument form is
 * read back as the request it writes, random requests survive being written as a script, and every
 * malformed line is refused with its line number before anything runs.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { parseStoreScript, tokenArgument } from '../src/store/script.ts';
import type { StoreRequest } from '../src/store/firmware.ts';
import { ChipcError } from '../src/util/errors.ts';

const ids = (src: string) => parseStoreScript(src, { text: false, label: 's' });
const text = (src: string) => parseStoreScript(src, { text: true, label: 's' });
const bytes = (s: string) => [...Buffer.from(s, 'utf8')];

function refusal(f: () => unknown): ChipcError {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(ChipcError);
    return e as ChipcError;
  }
  throw new Error('expected a ChipcError');
}

describe('store scripts', () => {
  it('reads every operation, token ids and the empty sequence, skipping blanks and comments', () => {
    const ops = ids('# a comment\n\nput 1,2 5,6,7\n  get 1,2\t\r\ndelete 3\nlist\nput 9 ""\n   # indented comment\nput "4, 5" 6\n');
    expect(ops).toEqual([
      { line: 3, request: { op: 'put', name: [1, 2], content: [5, 6, 7] } },
      { line: 4, request: { op: 'get', name: [1, 2] } },
      { line: 5, request: { op: 'delete', name: [3] } },
      { line: 6, request: { op: 'list' } },
      { line: 7, request: { op: 'put', name: [9], content: [] } },
      { line: 9, request: { op: 'put', name: [4, 5], content: [6] } },
    ]);
    expect(ids('')).toEqual([]);
  });

  it('reads text arguments as UTF-8 bytes, quoted ones with blanks and JSON escapes', () => {
    expect(text('put notes "buy milk"\nget "say \\"hi\\"\\n"\nput é ""').map((o) => o.request)).toEqual([
      { op: 'put', name: bytes('notes'), content: bytes('buy milk') },
      { op: 'get', name: bytes('say "hi"\n') },
      { op: 'put', name: [0xc3, 0xa9], content: [] },
    ]);
  });

  it('gives back random requests written as a script, in both modes', () => {
    const idList = fc.array(fc.nat({ max: 300_000 }), { maxLength: 6 });
    const req = <T>(arb: fc.Arbitrary<T>) => fc.oneof(
      fc.record({ op: fc.constant('put' as const), name: arb, content: arb }),
      fc.record({ op: fc.constant('get' as const), name: arb }),
      fc.record({ op: fc.constant('delete' as const), name: arb }),
      fc.constant({ op: 'list' as const }),
    );
    const write = (q: { op: string; name?: unknown; content?: unknown }, arg: (x: never) => string) =>
      [q.op, ...(q.name === undefined ? [] : [arg(q.name as never)]), ...(q.content === undefined ? [] : [arg(q.content as never)])].join(' ');
    fc.assert(fc.property(fc.array(req(idList), { maxLength: 12 }), (qs) => {
      // ids: plain where non-empty, "" for the empty sequence
      const src = qs.map((q) => write(q, (x: number[]) => (x.length === 0 ? '""' : x.join(',')))).join('\n');
      expect(ids(src).map((o) => o.request)).toEqual(qs);
    }));
    fc.assert(fc.property(fc.array(req(fc.string({ unit: 'grapheme', maxLength: 8 })), { maxLength: 12 }), (qs) => {
      const src = qs.map((q) => write(q, (x: string) => JSON.stringify(x))).join('\n');
      const want: StoreRequest[] = qs.map((q) =>
        q.op === 'put' ? { op: 'put', name: bytes(q.name), content: bytes(q.content) } : q.op === 'list' ? q : { op: q.op, name: bytes(q.name) });
      expect(text(src).map((o) => o.request)).toEqual(want);
    }));
  });

  it('refuses a malformed line, naming the script, the line and the problem', () => {
    const cases: [string, RegExp][] = [
      ['list\ngte 1', /^s:2: unknown operation "gte"/],
      ['put 1', /^s:1: put takes 2 arguments \(put NAME CONTENT\), got 1/],
      ['list 3', /^s:1: list takes 0 arguments/],
      ['get 1 2', /^s:1: get takes 1 argument \(get NAME\), got 2/],
      ['\n\nget 1,x', /^s:3: NAME: "x" is not a token id/],
      ['get -1', /^s:1: NAME: "-1" is not a token id/],
      ['put 1 2,,3', /^s:1: CONTENT: "" is not a token id/],
      ['get 1e3', /is not a token id/],
      ['get "abc', /^s:1: unterminated string/],
      ['get "a\\q"', /^s:1: "a\\q" is not a valid JSON string literal/],
      ['get "a"b', /^s:1: a quoted argument must be followed by a blank/],
      ['get a"b"', /^s:1: stray quote/],
    ];
    for (const [src, msg] of cases) {
      const e = refusal(() => ids(src));
      expect(e.code, src).toBe('store.script');
      expect(e.message, src).toMatch(msg);
    }
  });

  it('reads a single command argument the same way (the CLI uses tokenArgument too)', () => {
    expect(tokenArgument(' 1, 2 ,3', false, 'NAME', 'cli.tokens')).toEqual([1, 2, 3]);
    expect(tokenArgument('  ', false, 'NAME', 'cli.tokens')).toEqual([]);
    expect(tokenArgument('hé', true, 'NAME', 'cli.tokens')).toEqual(bytes('hé'));
    expect(refusal(() => tokenArgument('1,2.5', false, 'NAME', 'cli.tokens')).code).toBe('cli.tokens');
    expect(refusal(() => tokenArgument('9007199254740993', false, 'NAME', 'cli.tokens')).message).toMatch(/not a token id/);
  });
});
