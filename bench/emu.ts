/**
 * Emulator throughput: instructions per second of the golden RV32IM+Zba emulator on
 * compute-heavy loops assembled with riscv/asm.ts. Prints a table and one JSON line.
 * Run: npx tsx bench/emu.ts
 */
import { assembleElf, cpuForProgram, loadElf } from '../riscv/index.ts';
import { table } from '../src/cli/support/output.ts';

const KERNELS: Record<string, string> = {
  // ALU + M + Zba mix: an LCG, a multiply-high, a divide, a shifted add, per iteration.
  'alu-m-zba': `
    li s0, 200000
    li a0, 12345
    li a1, 0
  loop:
    li t0, 1103515245
    mul a0, a0, t0
    addi a0, a0, 1013
    mulhu t1, a0, t0
    xor a1, a1, t1
    ori t2, a0, 1
    divu t3, a1, t2
    sh2add a1, t3, a1
    srli t4, a0, 7
    add a1, a1, t4
    addi s0, s0, -1
    bnez s0, loop
    mv a0, a1
    li a7, 93
    ecall`,
  // Memory: sum and rewrite a 4 KiB array.
  'load-store': `
    la s1, buf
    li s0, 20000
  outer:
    mv t0, s1
    li t1, 256
  inner:
    lw t2, 0(t0)
    add t2, t2, t1
    sw t2, 0(t0)
    lbu t3, 1(t0)
    add a1, a1, t3
    addi t0, t0, 16
    addi t1, t1, -1
    bnez t1, inner
    addi s0, s0, -1
    bnez s0, outer
    mv a0, a1
    li a7, 93
    ecall
  buf: .zero 4096`,
};

const rows: (string | number)[][] = [];
const results: Record<string, { instructions: number; seconds: number; ips: number }> = {};
for (const [name, src] of Object.entries(KERNELS)) {
  const { elf } = assembleElf(src);
  cpuForProgram(loadElf(elf)).run({ maxInstructions: 2_000_000 }); // warm-up (JIT)
  const cpu = cpuForProgram(loadElf(elf));
  const t0 = performance.now();
  const r = cpu.run({ maxInstructions: 1e9 });
  const seconds = (performance.now() - t0) / 1000;
  if (r.reason !== 'exit') throw new Error(`${name}: ${r.message}`);
  const ips = Math.round(r.instret / seconds);
  results[name] = { instructions: r.instret, seconds: Number(seconds.toFixed(3)), ips };
  rows.push([name, r.instret, seconds.toFixed(3), ips]);
}
console.log(table(['kernel', 'instructions', 'seconds', 'instructions/s'], rows));
console.log(JSON.stringify({ bench: 'emu', results }));
