/**
 * The bad-input catalog's cases (test/bad-input-catalog.test.ts): each makes its inputs in a fresh
 * folder and says which command to run, which error code it must end with, which input the message
 * must name, and which output must not appear.
 */
import fs from 'node:fs';
import path from 'node:path';

export interface BadInputCase {
  area: string;
  label: string;
  /** Makes the inputs in `dir`; returns the command line, the input the message must name, and an output that must not appear. */
  make(dir: string): { args: string[]; names: string; output?: string };
  /** The error code (exact). */
  code: string;
}

const TINY = path.resolve('fixtures/tiny');
const HELLO = path.resolve('fixtures/firmware/hello.elf');
const INTERP = path.resolve('fixtures/firmware/interp.elf');
const ZBA = path.resolve('fixtures/isa/zba.exit.elf');
const DSL = JSON.stringify(path.resolve('src/dsl/index.ts'));

function write(dir: string, name: string, data: string | Uint8Array): string {
  const p = path.join(dir, name);
  fs.mkdirSync(path.dirname(p), { recursive: true });
  fs.writeFileSync(p, data);
  return p;
}

/** A safetensors file: 8-byte header length, the header JSON, then `data`. */
function safetensors(header: unknown, data: Uint8Array, lengthOverride?: number): Uint8Array {
  const h = new TextEncoder().encode(typeof header === 'string' ? header : JSON.stringify(header));
  const out = new Uint8Array(8 + h.length + data.length);
  new DataView(out.buffer).setBigUint64(0, BigInt(lengthOverride ?? h.length), true);
  out.set(h, 8);
  out.set(data, 8 + h.length);
  return out;
}

const f32 = (n: number) => new Uint8Array(4 * n);

/** A copy of the tiny checkpoint in dir/name with `edit` applied to its files. */
function tinyCopy(dir: string, name: string, edit: (d: string) => void): string {
  const d = path.join(dir, name);
  fs.cpSync(TINY, d, { recursive: true });
  edit(d);
  return d;
}

function circuit(dir: string, name: string, body: string): string {
  return write(dir, name, `import { defineCircuit } from ${DSL};\n${body}\n`);
}

const ELF = () => new Uint8Array(fs.readFileSync(HELLO));
function patched(at: number, bytes: number[]): Uint8Array {
  const e = ELF();
  bytes.forEach((b, i) => { e[at + i] = b; });
  return e;
}

export const BAD_INPUTS: BadInputCase[] = [
  // ── safetensors files ──────────────────────────────────────────────────────────────────────
  { area: 'safetensors', label: 'empty file', code: 'safetensors.file-too-small', make: (d) => { const f = write(d, 'e.safetensors', ''); return { args: ['inspect', f], names: f }; } },
  { area: 'safetensors', label: 'header length past the end', code: 'safetensors.header-past-eof', make: (d) => { const f = write(d, 'h.safetensors', safetensors({ a: { dtype: 'F32', shape: [1], data_offsets: [0, 4] } }, f32(1), 1 << 20)); return { args: ['inspect', f], names: f }; } },
  { area: 'safetensors', label: 'header not JSON', code: 'safetensors.header-json', make: (d) => { const f = write(d, 'j.safetensors', safetensors('{not json', f32(1))); return { args: ['inspect', f], names: f }; } },
  { area: 'safetensors', label: 'offsets past the data', code: 'safetensors.truncated', make: (d) => { const f = write(d, 'o.safetensors', safetensors({ a: { dtype: 'F32', shape: [4], data_offsets: [0, 16] } }, f32(1))); return { args: ['inspect', f], names: f }; } },
  { area: 'safetensors', label: 'unknown dtype', code: 'safetensors.dtype', make: (d) => { const f = write(d, 'd.safetensors', safetensors({ a: { dtype: 'Q7', shape: [1], data_offsets: [0, 4] } }, f32(1))); return { args: ['inspect', f], names: f }; } },
  { area: 'safetensors', label: 'shape and byte range disagree', code: 'safetensors.tensor-size', make: (d) => { const f = write(d, 's.safetensors', safetensors({ a: { dtype: 'F32', shape: [2], data_offsets: [0, 4] } }, f32(1))); return { args: ['inspect', f], names: f }; } },
  { area: 'safetensors', label: 'overlapping tensors', code: 'safetensors.offset-overlap', make: (d) => { const f = write(d, 'v.safetensors', safetensors({ a: { dtype: 'F32', shape: [2], data_offsets: [0, 8] }, b: { dtype: 'F32', shape: [2], data_offsets: [4, 12] } }, f32(3))); return { args: ['inspect', f], names: f }; } },
  { area: 'safetensors', label: 'diff against a corrupt file', code: 'safetensors.header-start', make: (d) => { const f = write(d, 'c.safetensors', safetensors('[1,2', f32(1))); return { args: ['diff', path.join(TINY, 'model.safetensors'), f], names: f }; } },
  { area: 'safetensors', label: 'exec on a corrupt file', code: 'safetensors.header-json', make: (d) => { const f = write(d, 'x.safetensors', safetensors('{', f32(1))); return { args: ['exec', f, '--target', 'tiny', '--tokens', '1'], names: f }; } },
  { area: 'safetensors', label: '--write-golden of a corrupt file writes nothing', code: 'safetensors.header-json', make: (d) => { const f = write(d, 'g.safetensors', safetensors('{', f32(1))); return { args: ['diff', f, '--write-golden', path.join(d, 'golden.json')], names: f, output: path.join(d, 'golden.json') }; } },

  // ── checkpoint directories and configs ─────────────────────────────────────────────────────
  { area: 'checkpoint', label: 'a folder without safetensors', code: 'checkpoint.not-found', make: (d) => { const c = path.join(d, 'empty-ckpt'); fs.mkdirSync(c); return { args: ['inspect', c], names: c }; } },
  { area: 'checkpoint', label: 'an index naming a missing shard', code: 'checkpoint.index-shard-missing', make: (d) => { const c = path.join(d, 'sharded'); fs.mkdirSync(c); write(c, 'model.safetensors.index.json', JSON.stringify({ weight_map: { a: 'model-00001-of-00002.safetensors' } })); return { args: ['inspect', c], names: 'model-00001-of-00002.safetensors' }; } },
  { area: 'checkpoint', label: 'an index that is not JSON', code: 'checkpoint.index-json', make: (d) => { const c = path.join(d, 'badindex'); fs.mkdirSync(c); write(c, 'model.safetensors.index.json', '{{'); return { args: ['inspect', c], names: 'model.safetensors.index.json' }; } },
  { area: 'checkpoint', label: 'config.json not JSON', code: 'cli.config', make: (d) => { const c = tinyCopy(d, 'cfgjson', (x) => write(x, 'config.json', '{oops')); return { args: ['exec', c, '--tokens', '1'], names: 'config.json' }; } },
  { area: 'checkpoint', label: 'config.json of an unknown model type', code: 'target.config', make: (d) => { const c = tinyCopy(d, 'cfgtype', (x) => { const j = JSON.parse(fs.readFileSync(path.join(x, 'config.json'), 'utf8')); j.model_type = 'gpt2'; write(x, 'config.json', JSON.stringify(j)); }); return { args: ['exec', c, '--tokens', '1'], names: path.join(c, 'config.json') }; } },
  { area: 'checkpoint', label: 'a tensor missing from the checkpoint', code: 'weights.mismatch', make: (d) => { const c = tinyCopy(d, 'notensor', (x) => { const j = JSON.parse(fs.readFileSync(path.join(x, 'config.json'), 'utf8')); j.num_hidden_layers += 1; j.layer_types?.push(j.layer_types[0]); write(x, 'config.json', JSON.stringify(j)); }); return { args: ['exec', c, '--tokens', '1'], names: `${c}: checkpoint does not match` }; } },
  { area: 'checkpoint', label: 'a checkpoint that does not exist', code: 'checkpoint.not-found', make: (d) => ({ args: ['inspect', path.join(d, 'nowhere')], names: path.join(d, 'nowhere') }) },
  { area: 'checkpoint', label: '--target of a malformed config file', code: 'target.config', make: (d) => { const f = write(d, 'bad-target.json', '{"model_type":'); return { args: ['cpu', '-o', path.join(d, 'out.chip'), '--target', f], names: f, output: path.join(d, 'out.chip') }; } },
  { area: 'checkpoint', label: '--target of an unknown name', code: 'target.unknown', make: (d) => ({ args: ['cpu', '-o', path.join(d, 'out2.chip'), '--target', 'qwen9-999b'], names: 'qwen9-999b', output: path.join(d, 'out2.chip') }) },

  // ── circuits ───────────────────────────────────────────────────────────────────────────────
  { area: 'circuit', label: 'a file that does not exist', code: 'circuit.file', make: (d) => ({ args: ['build', path.join(d, 'none.ts'), '-o', path.join(d, 'none.ir')], names: 'none.ts', output: path.join(d, 'none.ir') }) },
  { area: 'circuit', label: 'a syntax error', code: 'circuit.import', make: (d) => { const f = circuit(d, 'syntax.mts', 'export default defineCircuit({ name: "s", vocab: 4 }, (c) => { c.emit([; });'); return { args: ['build', f, '-o', path.join(d, 's.ir')], names: 'syntax.mts', output: path.join(d, 's.ir') }; } },
  { area: 'circuit', label: 'no default export', code: 'circuit.export', make: (d) => { const f = circuit(d, 'noexport.mts', 'export const x = 1;'); return { args: ['build', f, '-o', path.join(d, 'n.ir')], names: 'noexport.mts', output: path.join(d, 'n.ir') }; } },
  { area: 'circuit', label: 'a default export that is not a circuit', code: 'circuit.export', make: (d) => { const f = circuit(d, 'notcircuit.mts', 'export default { name: "x" };'); return { args: ['compile', f, '-o', path.join(d, 'nc')], names: 'notcircuit.mts', output: path.join(d, 'nc') }; } },
  { area: 'circuit', label: 'build() throws', code: 'circuit.build', make: (d) => { const f = circuit(d, 'throws.mts', 'export default defineCircuit({ name: "t", vocab: 4 }, () => { throw new Error("no"); });'); return { args: ['build', f, '-o', path.join(d, 't.ir')], names: 'throws.mts', output: path.join(d, 't.ir') }; } },
  { area: 'circuit', label: 'vocab 0', code: 'circuit.invalid', make: (d) => { const f = circuit(d, 'vocab0.mts', 'export default defineCircuit({ name: "v", vocab: 0 }, () => {});'); return { args: ['build', f, '-o', path.join(d, 'v.ir')], names: 'vocab0.mts', output: path.join(d, 'v.ir') }; } },
  { area: 'circuit', label: 'a value outside its declared range', code: 'circuit.invalid', make: (d) => { const f = circuit(d, 'range.mts', 'export default defineCircuit({ name: "r", vocab: 8 }, (c) => { const x = c.tokenField("x", (t) => t, [0, 7]); c.emit([c.table("t", [x], (v) => v * 3, [0, 9])]); });'); return { args: ['compile', f, '-o', path.join(d, 'r')], names: 'range.mts', output: path.join(d, 'r') }; } },
  { area: 'circuit', label: 'a wire read but never assigned', code: 'circuit.invalid', make: (d) => { const f = circuit(d, 'wire.mts', 'export default defineCircuit({ name: "w", vocab: 4 }, (c) => { const w = c.wire("w", [0, 3]); c.emit([w]); });'); return { args: ['check', f], names: 'wire.mts' }; } },
  { area: 'circuit', label: 'a circuit that emits nothing', code: 'circuit.no-emit', make: (d) => { const f = circuit(d, 'quiet.mts', 'export default defineCircuit({ name: "quiet", vocab: 4 }, (c) => { c.tokenField("x", (t) => t); });'); return { args: ['compile', f, '-o', path.join(d, 'q')], names: 'quiet', output: path.join(d, 'q') }; } },
  { area: 'circuit', label: 'a token id outside the vocabulary in the emit', code: 'circuit.invalid', make: (d) => { const f = circuit(d, 'emitid.mts', 'export default defineCircuit({ name: "e", vocab: 4 }, (c) => { const x = c.tokenField("x", (t) => t, [0, 3]); c.emit([x], (v) => v + 10); });'); return { args: ['build', f, '-o', path.join(d, 'e.ir')], names: 'emitid.mts', output: path.join(d, 'e.ir') }; } },

  // ── ELF programs ───────────────────────────────────────────────────────────────────────────
  { area: 'elf', label: 'not an ELF file (run)', code: 'elf.truncated', make: (d) => { const f = write(d, 'text.elf', 'hello\n'); return { args: ['run', f], names: f }; } },
  { area: 'elf', label: 'bad magic (emu)', code: 'elf.magic', make: (d) => { const f = write(d, 'magic.elf', patched(0, [0x7f, 0x45, 0x4c, 0x47])); return { args: ['emu', f], names: f }; } },
  { area: 'elf', label: 'a 64-bit ELF (trace)', code: 'elf.class', make: (d) => { const f = write(d, 'class.elf', patched(4, [2])); return { args: ['trace', f, '-o', path.join(d, 'c.json')], names: f, output: path.join(d, 'c.json') }; } },
  { area: 'elf', label: 'big-endian', code: 'elf.endian', make: (d) => { const f = write(d, 'endian.elf', patched(5, [2])); return { args: ['emu', f], names: f }; } },
  { area: 'elf', label: 'not RISC-V', code: 'elf.machine', make: (d) => { const f = write(d, 'machine.elf', patched(18, [3, 0])); return { args: ['run', f], names: f }; } },
  { area: 'elf', label: 'truncated after the header', code: 'elf.truncated', make: (d) => { const f = write(d, 'cut.elf', ELF().subarray(0, 60)); return { args: ['emu', f], names: f }; } },
  { area: 'elf', label: 'code larger than the code RAM', code: 'chip.code', make: (d) => { const f = write(d, 'big.elf', ELF()); return { args: ['run', f, '--code-size', '256'], names: f }; } },
  { area: 'elf', label: 'a program file that does not exist', code: 'cli.file', make: (d) => ({ args: ['run', path.join(d, 'absent.elf')], names: 'absent.elf' }) },

  // ── IR files ───────────────────────────────────────────────────────────────────────────────
  { area: 'ir', label: 'not an IR file', code: 'ir.file', make: (d) => { const f = write(d, 'junk.chip-ir', 'junk'); return { args: ['compile', f, '-o', path.join(d, 'j')], names: f, output: path.join(d, 'j') }; } },
  { area: 'ir', label: 'an empty IR file', code: 'ir.file', make: (d) => { const f = write(d, 'empty.chip-ir', ''); return { args: ['compile', f, '-o', path.join(d, 'k')], names: f, output: path.join(d, 'k') }; } },
  { area: 'ir', label: 'an IR file that does not exist', code: 'ir.file', make: (d) => ({ args: ['compile', path.join(d, 'gone.chip-ir'), '-o', path.join(d, 'g')], names: 'gone.chip-ir', output: path.join(d, 'g') }) },

  // ── .chip files ────────────────────────────────────────────────────────────────────────────
  { area: 'chip', label: 'a .chip that is neither .chip nor safetensors', code: 'safetensors.header-too-large', make: (d) => { const f = write(d, 'm.chip', new Uint8Array(200).fill(7)); return { args: ['inspect', f], names: f }; } },
  { area: 'chip', label: 'expand of a non-.chip file', code: 'chipfile.magic', make: (d) => { const f = write(d, 'x.chip', new Uint8Array(200).fill(7)); return { args: ['expand', f, '-o', path.join(d, 'xdir')], names: f, output: path.join(d, 'xdir') }; } },
  { area: 'chip', label: 'run --model of a file that is no checkpoint', code: 'chipfile.magic', make: (d) => { const f = write(d, 'model.chip', new Uint8Array(300).fill(1)); return { args: ['run', HELLO, '--model', f], names: f }; } },
  { area: 'chip', label: 'exec of a .chip without a config', code: 'cli.config', make: (d) => { const f = write(d, 'short.chip', new TextEncoder().encode('CHIPC\0\0\0')); return { args: ['exec', f, '--tokens', '1'], names: f }; } },

  // ── store files ────────────────────────────────────────────────────────────────────────────
  { area: 'store', label: 'a store file that does not exist', code: 'store.missing', make: (d) => ({ args: ['store', 'list', path.join(d, 'none.cst'), '--engine', 'ir'], names: 'none.cst' }) },
  { area: 'store', label: 'a store file of garbage', code: 'store.format', make: (d) => { const f = write(d, 'junk.cst', new Uint8Array(64).fill(3)); return { args: ['store', 'list', f, '--engine', 'ir'], names: f }; } },
  { area: 'store', label: 'an empty store file', code: 'store.truncated', make: (d) => { const f = write(d, 'empty.cst', ''); return { args: ['store', 'get', f, '--text', 'a', '--engine', 'ir'], names: f }; } },
  { area: 'store', label: 'store chip of a garbage store', code: 'store.format', make: (d) => { const f = write(d, 'g.cst', new Uint8Array(64).fill(9)); return { args: ['store', 'chip', f, '-o', path.join(d, 'g.chip')], names: f, output: path.join(d, 'g.chip') }; } },
  { area: 'store', label: 'store init of a store the chip cannot hold', code: 'store.mem', make: (d) => ({ args: ['store', 'init', path.join(d, 'huge.cst'), '--max-files', '20000'], names: '--max-files', output: path.join(d, 'huge.cst') }) },

  // ── merge hosts ────────────────────────────────────────────────────────────────────────────
  { area: 'merge', label: 'a host folder that does not exist', code: 'checkpoint.not-found', make: (d) => ({ args: ['merge', '--host', path.join(d, 'nohost'), '--chip', TINY, '-o', path.join(d, 'm1')], names: 'nohost', output: path.join(d, 'm1') }) },
  { area: 'merge', label: 'a host without config.json', code: 'target.config', make: (d) => { const h = tinyCopy(d, 'hostnocfg', (x) => fs.rmSync(path.join(x, 'config.json'))); return { args: ['merge', '--host', h, '--chip', TINY, '-o', path.join(d, 'm2')], names: 'hostnocfg', output: path.join(d, 'm2') }; } },
  { area: 'merge', label: 'a host whose config is not JSON', code: 'target.config', make: (d) => { const h = tinyCopy(d, 'hostbadcfg', (x) => write(x, 'config.json', '[')); return { args: ['merge', '--host', h, '--chip', TINY, '-o', path.join(d, 'm3')], names: 'hostbadcfg', output: path.join(d, 'm3') }; } },
  { area: 'merge', label: 'a chip path that is not a checkpoint', code: 'checkpoint.not-found', make: (d) => { const c = path.join(d, 'nochip'); fs.mkdirSync(c); write(c, 'config.json', fs.readFileSync(path.join(TINY, 'config.json'))); return { args: ['merge', '--host', TINY, '--chip', c, '-o', path.join(d, 'm4')], names: 'nochip', output: path.join(d, 'm4') }; } },

  // ── option values ──────────────────────────────────────────────────────────────────────────
  { area: 'cli', label: 'run --max-tokens 1e3', code: 'cli.max-tokens', make: () => ({ args: ['run', HELLO, '--max-tokens', '1e3'], names: '--max-tokens' }) },
  { area: 'cli', label: 'run --mem-size 100', code: 'chip.mem', make: () => ({ args: ['run', HELLO, '--mem-size', '100'], names: '--mem-size' }) },
  { area: 'cli', label: 'cpu --code-size 3000', code: 'cli.code-size', make: (d) => ({ args: ['cpu', '-o', path.join(d, 'c3.chip'), '--code-size', '3000'], names: '3000', output: path.join(d, 'c3.chip') }) },
  { area: 'cli', label: 'exec --tokens x', code: 'cli.tokens', make: () => ({ args: ['exec', TINY, '--tokens', 'x'], names: '--tokens' }) },
  { area: 'cli', label: 'exec --top 0', code: 'cli.top', make: () => ({ args: ['exec', TINY, '--tokens', '1', '--top', '0'], names: '--top' }) },
  { area: 'cli', label: 'exec --silu tanh', code: 'cli.silu', make: () => ({ args: ['exec', TINY, '--tokens', '1', '--silu', 'tanh'], names: '--silu' }) },
  { area: 'cli', label: 'compile --dtype f16', code: 'cli.dtype', make: (d) => ({ args: ['compile', 'circuits/examples/counter.ts', '--dtype', 'f16', '-o', path.join(d, 'f16')], names: '--dtype', output: path.join(d, 'f16') }) },
  { area: 'cli', label: 'compact --min-gap 0', code: 'cli.min-gap', make: (d) => ({ args: ['compact', TINY, '-o', path.join(d, 'mg.chip'), '--min-gap', '0'], names: '--min-gap', output: path.join(d, 'mg.chip') }) },
  { area: 'cli', label: 'run --prefill chunked:0', code: 'cli.prefill', make: () => ({ args: ['run', HELLO, '--prefill', 'chunked:0'], names: '--prefill' }) },
  { area: 'cli', label: 'run --input longer than the input area', code: 'input.too-long', make: () => ({ args: ['run', INTERP, '--engine', 'ir', '--input', 'x'.repeat(2045)], names: 'interp.elf' }) },
  { area: 'cli', label: 'run --input for a program without an input area', code: 'input.none', make: () => ({ args: ['run', ZBA, '--input', 'x'], names: 'zba.exit.elf' }) },
  { area: 'cli', label: 'repl -e longer than the interpreter\'s input area', code: 'input.too-long', make: () => ({ args: ['repl', '--engine', 'ir', '-e', '1'.repeat(2045)], names: 'input is 2045 bytes' }) },
  { area: 'cli', label: 'run --order bogus', code: 'cli.order', make: () => ({ args: ['run', HELLO, '--order', 'bogus'], names: '--order' }) },
  { area: 'cli', label: 'trace --max-instructions -5', code: 'cli.max-instructions', make: (d) => ({ args: ['trace', HELLO, '-o', path.join(d, 'mi.json'), '--max-instructions', '-5'], names: '--max-instructions', output: path.join(d, 'mi.json') }) },
  { area: 'cli', label: 'store init --vocab 0', code: 'cli.option', make: (d) => ({ args: ['store', 'init', path.join(d, 'v0.cst'), '--vocab', '0'], names: '--vocab', output: path.join(d, 'v0.cst') }) },
  { area: 'cli', label: 'compile --hidden 3', code: 'cli.hidden', make: (d) => ({ args: ['compile', 'circuits/examples/counter.ts', '--hidden', '3', '-o', path.join(d, 'h3')], names: '--hidden', output: path.join(d, 'h3') }) },
  { area: 'cli', label: 'emu --mem-size 12q', code: 'cli.number', make: () => ({ args: ['emu', HELLO, '--mem-size', '12q'], names: '--mem-size' }) },
  { area: 'cli', label: 'run --engine gpu', code: 'cli.engine', make: () => ({ args: ['run', HELLO, '--engine', 'gpu'], names: '--engine' }) },
];
