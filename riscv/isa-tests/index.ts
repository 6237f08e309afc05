/**
 * chipc's own self-checking RV32IM + Zba ISA test programs: the groups, in fixture order.
 * `buildProgram(group, { mode })` (program.ts) turns one into an ELF; tools/make-isa-tests.ts
 * writes them all to fixtures/isa/. See docs/isa-tests.md.
 */
import type { TestGroup } from './program.ts';
import { aluGroup } from './alu.ts';
import { branchGroup } from './branch.ts';
import { loadStoreGroup } from './load-store.ts';
import { divGroup, mulGroup, zbaGroup } from './mul-div-zba.ts';
import { fenceGroup } from './fence.ts';
import { bnGroup } from './bignum-unit.ts';

export const ISA_TEST_GROUPS: readonly TestGroup[] = [aluGroup, branchGroup, loadStoreGroup, mulGroup, divGroup, zbaGroup, fenceGroup, bnGroup];

export { buildProgram, casePrefix, CODE_BASE, DATA_BASE, RAM_SIZE, type BuildOptions, type BuiltProgram, type Check, type ExitMode, type TestGroup } from './program.ts';
