/**
 * Bignum through the chip: the bignum service (fixtures/firmware/bignum.elf, docs/bignum.md)
 * called with random full-length operands, through the compiled weights (or the IR), every
 * generated token compared with the golden stream and the result read back from the chip's data
 * RAM and compared with BigInt. Prints per operation: instructions, request (prompt) tokens,
 * generated tokens, seconds, tokens/s.
 *
 *   npx tsx bench/bignum-chip.ts [--ops umul,udivmod] [--bits 1024,4096] [--engine weights|ir|golden] [--target chip-test]
 *                                [--elf FILE] [--json]
 *
 * For udivmod the dividend has 2·bits bits and the divisor bits bits. `--engine golden` runs no chip:
 * the golden emulator's stream gives the tokens the chip would generate (seconds are then the
 * emulator's), fast enough for 4,096-bit operands; `--elf` takes another service image (for
 * example one built before a firmware change, to compare token counts on the same operands).
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Command } from 'commander';
import { BignumService, BIGNUM_OPS, operandOf, valueOf, type BignumOp } from '../src/bignum/service.ts';
import { ChipService, type ServiceEngine } from '../src/chip/service.ts';
import { programOf } from '../src/chip/run.ts';
import { compileChip } from '../src/chip/build.ts';
import { resolveTarget } from '../src/model/targets.ts';

const ROOT = path.join(path.dirname(fileURLToPath(import.meta.url)), '..');
const MEM = 32 * 1024;

const opts = new Command()
  .option('--ops <list>', 'operations', 'umul,udivmod')
  .option('--bits <list>', 'operand sizes in bits', '1024,4096')
  .option('--engine <e>', 'weights, ir or golden', 'weights')
  .option('--target <t>', 'target', 'chip-test')
  .option('--elf <file>', 'service image', path.join(ROOT, 'fixtures', 'firmware', 'bignum.elf'))
  .option('--json', 'print JSON')
  .parse().opts<{ ops: string; bits: string; engine: ServiceEngine | 'golden'; target: string; elf: string; json?: boolean }>();
const ELF = fs.readFileSync(opts.elf);
const golden = opts.engine === 'golden';

/** xorshift32 stream of random full-length operands (top bit set). */
let seed = 0x9e3779b9;
function rand32(): number {
  seed ^= seed << 13; seed >>>= 0;
  seed ^= seed >>> 17;
  seed ^= seed << 5; seed >>>= 0;
  return seed;
}
function randomBits(bits: number): bigint {
  let x = 0n;
  for (let i = 0; i < bits / 32; i++) x = (x << 32n) | BigInt(rand32());
  return x | (1n << BigInt(bits - 1));
}

const prog = programOf(ELF, MEM);
const svc = BignumService.load(ELF, MEM, prog.codeBytes);
const t0 = performance.now();
const res = golden ? null : compileChip(prog.chip, resolveTarget(opts.target).config);
const compileSeconds = (performance.now() - t0) / 1000;
const chip = res === null ? null : new ChipService(res, prog, { engine: opts.engine as ServiceEngine });

/** Reads the number at area word `index` from the chip's data RAM (memoryReader). */
function chipNumber(read32: (address: number) => number, index: number): bigint {
  const word = (i: number) => read32(svc.area + 4 * i);
  const len = word(index + 1);
  return valueOf(word(index), Array.from({ length: len }, (_, k) => word(index + 2 + k)));
}

const rows: Record<string, unknown>[] = [];
for (const bits of opts.bits.split(',').map(Number)) {
  for (const op of opts.ops.split(',') as BignumOp[]) {
    const a = randomBits(op === 'udivmod' ? 2 * bits : bits);
    const b = randomBits(bits);
    const writes = svc.requestWrites(BIGNUM_OPS[op], operandOf(a), operandOf(b));
    const tc = performance.now();
    const call = svc.emu.call(writes, { trace: true });
    const r = chip === null
      ? { generated: call.trace!.tokens.slice(call.prompt.length), seconds: (performance.now() - tc) / 1000, divergence: null }
      : chip.call(call.prompt, { golden: call.trace!.tokens });
    if (r.divergence !== null) throw new Error(`${op} ${bits}: divergence at generated token ${r.divergence.index}: expected ${r.divergence.expected}, got ${r.divergence.got}`);
    const mem = chip === null ? (addr: number) => svc.emu.memory.read32(addr) : chip.memoryReader();
    const first = chipNumber(mem, 2);
    const want = op === 'udivmod' ? [a / b, a % b] : op === 'umul' ? [a * b] : op === 'uadd' ? [a + b] : null;
    if (want === null) throw new Error(`bench: no BigInt reference for ${op}`);
    const got = [first];
    if (op === 'udivmod') got.push(chipNumber(mem, 4 + limbCount(first)));
    for (let i = 0; i < want.length; i++) if (got[i] !== want[i]) throw new Error(`${op} ${bits}: the chip's result ${i} differs from BigInt`);
    const row = {
      op, bits, instructions: call.instructions, promptTokens: call.prompt.length, generatedTokens: r.generated.length,
      seconds: +r.seconds.toFixed(2), tokensPerSecond: Math.round(r.generated.length / r.seconds), divergences: 0, equalsBigInt: true,
    };
    rows.push(row);
    if (!opts.json) console.log(`${op} ${bits} bits: ${call.instructions} instructions, ${call.prompt.length} request tokens, ${r.generated.length} generated tokens, ${row.seconds} s (${row.tokensPerSecond} tokens/s), 0 divergences, equal to BigInt`);
  }
}

function limbCount(x: bigint): number {
  let n = 0;
  for (let y = x; y > 0n; y >>= 32n) n++;
  return n;
}

const layers = res === null ? null : res.weights.config.numLayers;
if (opts.json) console.log(JSON.stringify({ target: golden ? null : opts.target, engine: opts.engine, layers, compileSeconds: +compileSeconds.toFixed(1), rows }, null, 2));
else console.log(golden ? '(golden emulator: the tokens the chip generates; seconds are the emulator\'s)' : `(${opts.engine}, ${opts.target}: ${layers} layers; compile ${compileSeconds.toFixed(1)} s)`);
