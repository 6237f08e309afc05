/**
 * The test run's own setup: the files the sequencer starts first exist (a renamed or removed
 * file would silently drop out of the order) and are test files the run includes.
 */
import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { HEAVY_FILES } from './setup/sequencer.ts';

describe('test sequencer', () => {
  it('names existing test files, each once', () => {
    expect(HEAVY_FILES.length).toBeGreaterThan(0);
    expect(new Set(HEAVY_FILES).size).toBe(HEAVY_FILES.length);
    for (const f of HEAVY_FILES) {
      expect(f, f).toMatch(/^test\/[\w.-]+\.test\.ts$/);
      expect(fs.existsSync(f), f).toBe(true);
    }
  });
});
