/**
 * Vitest global setup: builds the shared test chips (test/helpers/shared-chips.ts) that the chip
 * cache lacks, one child process per chip so that they compile in parallel, before any test file
 * starts (files that run them then load them instead of compiling them, and never race to build
 * the same one). With a warm cache (a second `npm test` on an unchanged compiler) it costs the
 * hash checks only; entries of an earlier compiler are removed.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { clearCache } from '../../src/chip/cache.ts';
import { SHARED_CHIPS } from '../helpers/shared-chips.ts';
import { TEST_CACHE_DIR } from './test-cache-dir.ts';

const here = path.dirname(fileURLToPath(import.meta.url));

function build(index: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(here, 'build-shared-chip.ts'), String(index)], {
      cwd: path.resolve(here, '../..'), env: { ...process.env, CHIPC_CACHE_DIR: TEST_CACHE_DIR }, stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => { out += d.toString(); });
    child.stderr.on('data', (d: Buffer) => { out += d.toString(); });
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve(out.trim()) : reject(new Error(`building shared test chip ${JSON.stringify(SHARED_CHIPS[index])} failed (exit ${code}):\n${out}`))));
  });
}

export default async function setup(): Promise<void> {
  const t0 = performance.now();
  // chips of an earlier compiler are never loaded again: drop them so the folder stays small
  clearCache({ root: TEST_CACHE_DIR, staleOnly: true });
  const lines = await Promise.all(SHARED_CHIPS.map((_, i) => build(i)));
  const built = lines.filter((l) => l.startsWith('built'));
  if (built.length > 0) console.log(`shared test chips: ${built.join('; ')} (${((performance.now() - t0) / 1000).toFixed(1)} s)`);
}
