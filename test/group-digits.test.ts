import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { groupDigits } from '../src/util/group-digits.ts';

describe('groupDigits', () => {
  it('groups by threes from the right, sign kept', () => {
    expect(groupDigits(0)).toBe('0');
    expect(groupDigits(999)).toBe('999');
    expect(groupDigits(1000)).toBe('1,000');
    expect(groupDigits(-1000)).toBe('-1,000');
    expect(groupDigits(248320)).toBe('248,320');
    expect(groupDigits(1234567)).toBe('1,234,567');
    expect(groupDigits(-100000)).toBe('-100,000');
  });

  it('writes non-integers and exponential forms as String does', () => {
    expect(groupDigits(1.5)).toBe('1.5');
    expect(groupDigits(NaN)).toBe('NaN');
    expect(groupDigits(Infinity)).toBe('Infinity');
    expect(groupDigits(1e21)).toBe('1e+21');
  });

  it('agrees with toLocaleString("en-US") on safe integers', () => {
    fc.assert(fc.property(fc.maxSafeInteger(), (n) => groupDigits(n) === n.toLocaleString('en-US')), { numRuns: 2000 });
    fc.assert(fc.property(fc.integer({ min: -99_999, max: 99_999 }), (n) => groupDigits(n) === n.toLocaleString('en-US')));
  });
});
