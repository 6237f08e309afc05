/** Run the chipc CLI in-process, capturing its exit code, stdout and stderr. */
import { vi } from 'vitest';
import { main } from '../../src/cli/main.ts';

export async function cli(...args: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const so = vi.spyOn(process.stdout, 'write').mockImplementation((s: string | Uint8Array) => {
    out += String(s);
    return true;
  });
  const se = vi.spyOn(process.stderr, 'write').mockImplementation((s: string | Uint8Array) => {
    err += String(s);
    return true;
  });
  try {
    const code = await main(['node', 'chipc', ...args]);
    return { code, out, err };
  } finally {
    so.mockRestore();
    se.mockRestore();
  }
}
