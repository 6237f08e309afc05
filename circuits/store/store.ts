/**
 * The store circuit (issue 5, docs/store.md "The store through the compiled weights"): the RV32 chip shaped for the store
 * service (fixtures/firmware/store.elf, built from firmware/lib/store.c): a code RAM sized to the
 * image and the data RAM that holds the store's directory, chunk pool, chunk links and free stack
 * at the default capacity (CHIP_STORE_DEFAULTS: 512 files, names ≤ 32 tokens, contents ≤ 1,024,
 * 1,024 chunks of 16 tokens). Put / get / delete / list run as the firmware's token traces through
 * these layers; `chipc store …` drives them (and takes the capacity as options of `chipc store
 * init`). `chipc compile circuits/store/store.ts --target chip-test --report` prints the limits.
 */
import fs from 'node:fs';
import type { CircuitDef, TargetShape } from '../../src/dsl/index.ts';
import { cpuCircuit } from '../../src/cpu/cpu.ts';
import { programOf } from '../../src/chip/run.ts';
import { CHIP_STORE_DEFAULTS, STORE_ELF, storeLimitLines, storeMemBytes } from '../../src/store/chip.ts';
import { resolveStoreParams } from '../../src/store/model.ts';

const elf = fs.readFileSync(STORE_ELF);
const params = resolveStoreParams({ ...CHIP_STORE_DEFAULTS });
const notes = [...storeLimitLines(params, elf), 'firmware: fixtures/firmware/store.elf (a service: loaded once, called per request)'];
/** The store chip, its data RAM in banks that fit one layer of `target` (or of chip-test without one). */
function storeChip(target?: TargetShape): CircuitDef {
  const chip = cpuCircuit(programOf(elf, storeMemBytes(params, elf), target).chip);
  return { ...chip, meta: { ...chip.meta, name: 'store', notes } };
}

export default { ...storeChip(), retarget: (t: TargetShape) => storeChip(t) } satisfies CircuitDef;
