import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { loadCircuitFile } from '../src/dsl/load.ts';
import { decodeIR, encodeIR } from '../src/ir/serialize.ts';
import { Interpreter } from '../src/ir/interpret.ts';
import { ChipcError } from '../src/util/errors.ts';

describe('IR files', () => {
  it('round-trips a circuit and the decoded IR runs identically', async () => {
    const ir = await loadCircuitFile('circuits/examples/counter.ts');
    const bytes = encodeIR(ir);
    expect(Buffer.from(encodeIR(ir)).equals(Buffer.from(bytes))).toBe(true); // deterministic
    const back = decodeIR(bytes);
    expect(back).toEqual(ir);
    const a = new Interpreter(ir).generate([16], 10).map((p) => p.emitted);
    const b = new Interpreter(back).generate([16], 10).map((p) => p.emitted);
    expect(b).toEqual(a);
  });

  it('refuses every truncation and every single-byte corruption with a ChipcError', async () => {
    const ir = await loadCircuitFile('circuits/examples/counter.ts');
    const bytes = encodeIR(ir);
    for (let n = 0; n < bytes.length; n += Math.max(1, Math.floor(bytes.length / 40))) {
      expect(() => decodeIR(bytes.slice(0, n))).toThrow(ChipcError);
    }
    fc.assert(
      fc.property(fc.integer({ min: 0, max: bytes.length - 1 }), fc.integer({ min: 1, max: 255 }), (i, x) => {
        const b = bytes.slice();
        b[i] = b[i]! ^ x;
        let ok = false;
        try {
          // Every byte is either covered by the payload checksum or part of a checked envelope
          // field (magic, version, checksum text, msgpack framing).
          decodeIR(b);
        } catch (e) {
          ok = e instanceof ChipcError;
        }
        expect(ok).toBe(true);
      }),
      { numRuns: 300 },
    );
  });
});
