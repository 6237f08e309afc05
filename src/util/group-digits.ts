/**
 * An integer with its digits grouped by threes with commas ("1,234,567", "-12,345"), as
 * `toLocaleString('en-US')` writes a safe integer, without the locale machinery: a process's first
 * locale-aware call loads ICU's number data (20–30 ms here), which a command that prints one table
 * pays for nothing. Integers of 1e21 or more in magnitude, whose `String` form is exponential, are
 * written as `String` writes them; so are non-integers, and −0 is written "0".
 */
export function groupDigits(n: number): string {
  const s = String(n);
  if (!Number.isInteger(n) || s.includes('e')) return s;
  const neg = s.startsWith('-');
  const digits = neg ? s.slice(1) : s;
  let out = '';
  for (let end = digits.length; end > 0; end -= 3) {
    const part = digits.slice(Math.max(0, end - 3), end);
    out = out === '' ? part : `${part},${out}`;
  }
  return neg ? `-${out}` : out;
}
