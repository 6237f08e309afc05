/**
 * `chipc store …`: the hashed filesystem store (docs/store.md) on a store file, operated through
 * the compiled weights. Each command loads the file, imports its rows straight into the chip's
 * data-RAM state, runs the operation as a service call token by token (checked against the
 * golden emulator), and — for put and delete, unless --ephemeral — saves the rows read back out
 * of the chip's state to the file atomically.
 *
 *   chipc store init FILE [--max-files F --name-max N --content-max M --chunk-size C --chunk-pool P --vocab V]
 *   chipc store put FILE NAME CONTENT      chipc store get FILE NAME      chipc store delete FILE NAME
 *   chipc store list FILE                  chipc store dump FILE           chipc store export FILE -o OUT
 *   chipc store import FILE [-o OUT]     chipc store batch FILE [SCRIPT|-]
 *   chipc store chip FILE -o OUT.chip      (then any operation with --model OUT.chip: no compile)
 *
 * NAME and CONTENT are comma-separated token ids ("" is empty), or UTF-8 text with --text (one
 * token per byte). `batch` runs a script of such operations (src/store/script.ts) in one run of the chip:
 * one compile, one load, one save at the end. Exit status: 0 when the store answers OK (every
 * operation of a batch), 1 for any other result code (NOT_FOUND, FULL, …: printed), 2 for a
 * ChipcError (then a batch saves nothing).
 */
import fs from 'node:fs';
import type { Command } from 'commander';
import { ChipStore, CHIP_STORE_DEFAULTS, chipChunkPool, storeLimitLines, storeLimits, type ChipStoreCall } from '../../store/chip.ts';
import { encodeStore, loadStoreFile, saveStoreFile, writeFileAtomic } from '../../store/file.ts';
import { StoreModel, TABLE_NAMES, resolveStoreParams, type StoreOptions, type StoreParams } from '../../store/model.ts';
import type { FirmwareResult, StoreRequest } from '../../store/firmware.ts';
import { parseStoreScript, tokenArgument } from '../../store/script.ts';
import { resolveTarget } from '../../model/targets.ts';
import { emitChip } from '../../chip/build.ts';
import type { ServiceEngine } from '../../chip/service.ts';
import { ChipcError } from '../../util/errors.ts';
import { engineOption, integerOption, profileOption } from '../support/options.ts';
import { fmtBytes, fmtInt, makeOut, type Out } from '../support/output.ts';
import type { Runner } from '../support/output.ts';
import { prepareOutput } from '../support/files.ts';
import { summaryOf } from '../support/command-table.ts';

interface CommonOptions {
  text?: boolean;
  engine: string;
  target: string;
  model?: string;
  profile: string;
  ephemeral?: boolean;
  cache: boolean;
  json?: boolean;
}

function parseTokens(s: string, text: boolean, what: string): number[] {
  return tokenArgument(s, text, what, 'cli.tokens');
}

function showTokens(ids: readonly number[], text: boolean): string {
  return text ? JSON.stringify(Buffer.from(ids.map((t) => t & 255)).toString('utf8')) : ids.join(',');
}

const engineOf = (s: string): ServiceEngine => engineOption(s);

async function open(file: string, o: CommonOptions): Promise<{ model: StoreModel; store: ChipStore }> {
  if (!fs.existsSync(file)) throw new ChipcError('store.missing', `${file}: no store file (create one with "chipc store init ${file}")`);
  const model = loadStoreFile(file);
  const profile = profileOption(o.profile);
  if (o.model !== undefined) {
    // the saved store chip: loaded, not compiled
    if (engineOf(o.engine) !== 'weights') throw new ChipcError('cli.model', '--model runs the saved weights: --engine ir does not apply');
    const chip = ChipStore.load(o.model, model.params);
    const store = ChipStore.open(model, { target: chip.res.weights.config, compiled: chip.res, program: chip.prog, memBytes: chip.memBytes, profile });
    return { model, store };
  }
  const target = resolveTarget(o.target);
  const engine = engineOf(o.engine);
  if (engine === 'weights' && o.cache) {
    // the store chip from the chip cache (compiled into it on the first run, as `chipc run` does)
    const chip = await ChipStore.cached(model.params, target, {
      log: (line) => { if (!o.json) process.stderr.write(`${line}\n`); },
      onCompile: () => { if (!o.json) process.stderr.write(`chipc: compiling the store chip for ${target.name} once; later runs take it from the chip cache\n`); },
    });
    const store = ChipStore.open(model, { target: target.config, compiled: chip.res, program: chip.prog, memBytes: chip.memBytes, profile });
    return { model, store };
  }
  const store = ChipStore.open(model, { target: target.config, engine, profile });
  return { model, store };
}

/** The cost of a call (or of several, summed). */
type Cost = Pick<ChipStoreCall, 'promptTokens' | 'generatedTokens' | 'instructions' | 'seconds'>;

function costLine(c: Cost): string {
  return `${fmtInt(c.promptTokens)} request + ${fmtInt(c.generatedTokens)} generated tokens, ${fmtInt(c.instructions)} instructions, ${c.seconds.toFixed(2)} s`;
}

function costDoc(c: Cost) {
  return { promptTokens: c.promptTokens, generatedTokens: c.generatedTokens, instructions: c.instructions, seconds: +c.seconds.toFixed(3) };
}

/** Saves the chip's rows unless ephemeral; returns whether it wrote. */
function save(file: string, store: ChipStore, o: CommonOptions): boolean {
  if (o.ephemeral) return false;
  saveStoreFile(file, store.exportModel());
  return true;
}

function limits(p: StoreParams): Record<string, number> {
  return storeLimits(p);
}

function printLimits(out: Out, p: StoreParams): void {
  for (const line of storeLimitLines(p)) out.line(`  ${line}`);
}

function common(cmd: Command): Command {
  return cmd
    .option('--text', 'NAME and CONTENT are UTF-8 text, one token per byte (default: comma-separated token ids)')
    .option('--engine <e>', 'weights (the compiled chip in the reference executor) or ir (the chip circuit)', 'weights')
    .option('--target <name|config.json>', 'target model shape', 'chip-test')
    .option('--model <chip>', 'run the store chip saved by "chipc store chip" (a directory or .chip file) instead of compiling one')
    .option('--profile <p>', 'numeric profile: f32 or bf16', 'f32')
    .option('--ephemeral', 'do not write the store file back (the result is printed, nothing is saved)')
    .option('--no-cache', 'compile the store chip in this process instead of taking it from the chip cache')
    .option('--json', 'print one JSON document');
}

/** The answer's data for --json: the slot and whether it replaced (put), the content (get), the names (list). */
function answerDoc(r: FirmwareResult): Record<string, unknown> {
  if (r.code !== 'OK') return {};
  if (r.op === 'put') return { slot: r.slot, replaced: r.replaced };
  if (r.op === 'get') return { content: r.content };
  if (r.op === 'list') return { names: r.names };
  return {};
}

/** A non-list answer in words: its code, "OK (new, slot 3)" for a put, the content for a get. */
function answerText(r: FirmwareResult, text: boolean): string {
  if (r.code !== 'OK') return r.code;
  if (r.op === 'put') return `OK (${r.replaced ? 'replaced' : 'new'}, slot ${r.slot})`;
  if (r.op === 'get') return showTokens(r.content, text);
  return 'OK';
}

/** What an operation names, as a script line would write it (for batch output). */
function requestLabel(q: StoreRequest, text: boolean): string {
  return q.op === 'list' ? 'list' : `${q.op} ${text ? showTokens(q.name, true) : q.name.join(',') || '""'}`;
}

export function registerStore(program: Command, run: Runner): void {
  const store = program.command('store').description(summaryOf('store'));

  store
    .command('init')
    .description('create an empty store file and print its limits')
    .argument('<file>', 'the store file to create')
    .option('--max-files <n>', 'files the store holds', String(CHIP_STORE_DEFAULTS.maxFiles))
    .option('--name-max <n>', 'longest name in tokens', String(CHIP_STORE_DEFAULTS.nameMax))
    .option('--content-max <n>', 'longest content in tokens', String(CHIP_STORE_DEFAULTS.contentMax))
    .option('--chunk-size <n>', 'tokens per chunk', String(CHIP_STORE_DEFAULTS.chunkSize))
    .option('--chunk-pool <n>', `chunks in all (default: 2 per file, at least one maximum-size file's: ${CHIP_STORE_DEFAULTS.chunkPool} at the defaults)`)
    .option('--vocab <n>', 'token ids are < this', String(CHIP_STORE_DEFAULTS.vocab))
    .option('--overwrite', 'replace an existing store file')
    .option('--json', 'print one JSON document')
    .action((file: string, o: Record<string, string | boolean | undefined>) =>
      run(() => {
        const out = makeOut(Boolean(o.json));
        if (fs.existsSync(file) && !o.overwrite) throw new ChipcError('store.exists', `${file} exists (use --overwrite to replace it)`);
        prepareOutput(file, { option: 'the store file', inputs: [], overwrite: true });
        const num = (k: string, flag: string) => integerOption(String(o[k]), flag, 'cli.option', { min: 1 });
        const opts: StoreOptions = {
          maxFiles: num('maxFiles', '--max-files'), nameMax: num('nameMax', '--name-max'), contentMax: num('contentMax', '--content-max'),
          chunkSize: num('chunkSize', '--chunk-size'), vocab: num('vocab', '--vocab'),
        };
        opts.chunkPool = o.chunkPool === undefined ? chipChunkPool(opts as Parameters<typeof chipChunkPool>[0]) : num('chunkPool', '--chunk-pool');
        const p = resolveStoreParams(opts);
        const l = limits(p); // also refuses a store the chip cannot hold (store.mem, store.params)
        const model = new StoreModel(p);
        saveStoreFile(file, model);
        const bytes = encodeStore(model).length;
        out.emit({ file, bytes, limits: l });
        out.line(`wrote ${file} (${fmtBytes(bytes)}): an empty store`);
        printLimits(out, p);
        return 0;
      })(),
    );

  store
    .command('chip')
    .description('compile the chip for a store file\'s capacity and save it, for --model (no compile per command)')
    .argument('<file>', 'the store file (its limits set the chip\'s data RAM)')
    .requiredOption('-o, --output <out>', 'the checkpoint to write: a directory, or a .chip file')
    .option('--target <name|config.json>', 'target model shape', 'chip-test')
    .option('--dtype <d>', 'bf16 or f32', 'bf16')
    .option('--overwrite', 'replace an existing output')
    .option('--no-cache', 'compile the chip in this process (a bf16 .chip output is otherwise a copy of the chip cache\'s, compiled into it when missing)')
    .option('--json', 'print one JSON document')
    .action((file: string, o: { output: string; target: string; dtype: string; overwrite?: boolean; cache: boolean; json?: boolean }) =>
      run(async () => {
        const out = makeOut(Boolean(o.json));
        if (!fs.existsSync(file)) throw new ChipcError('store.missing', `${file}: no store file (create one with "chipc store init ${file}")`);
        if (o.dtype !== 'bf16' && o.dtype !== 'f32') throw new ChipcError('cli.dtype', `--dtype must be bf16 or f32, not "${o.dtype}"`);
        const params = loadStoreFile(file).params;
        const target = resolveTarget(o.target);
        // refused before the compile, not after it
        prepareOutput(o.output, { option: '-o', inputs: [file, fs.existsSync(o.target) ? o.target : undefined], overwrite: true });
        if (fs.existsSync(o.output) && !o.overwrite) throw new ChipcError('store.chip-exists', `${o.output} exists (use --overwrite to replace it)`);
        let layers: number;
        let memBytes: number;
        let compileSeconds = 0;
        let cache: { hit: boolean; path: string } | null = null;
        if (o.cache && o.dtype === 'bf16' && o.output.endsWith('.chip')) {
          // the chip cache holds this chip as a bf16 .chip, written by the same emitter: a copy is
          // byte-identical to a fresh emission
          const c = await ChipStore.cachedFile(params, target, {
            onCompile: () => { if (!o.json) process.stderr.write(`chipc: compiling the store chip for ${target.name} into the chip cache\n`); },
          });
          const tmp = `${o.output}.tmp-${process.pid}`;
          try {
            fs.copyFileSync(c.path, tmp);
            fs.renameSync(tmp, o.output);
          } finally {
            fs.rmSync(tmp, { force: true });
          }
          ({ memBytes, compileSeconds } = c);
          layers = c.layers;
          cache = { hit: c.hit, path: c.path };
        } else {
          const t0 = performance.now();
          const { prog, res, memBytes: m } = ChipStore.compile(params, target.config);
          compileSeconds = (performance.now() - t0) / 1000;
          emitChip(o.output, res, prog.chip, target.name, { dtype: o.dtype === 'bf16' ? 'BF16' : 'F32', overwrite: Boolean(o.overwrite) });
          layers = res.weights.config.numLayers;
          memBytes = m;
        }
        out.emit({ file, output: o.output, target: target.name, memBytes, layers, compileSeconds: +compileSeconds.toFixed(2), cache });
        out.line(`${o.output}: the store chip for ${file} (${memBytes / 1024} KiB data RAM) for ${target.name}, ` +
          (cache === null ? `compiled in ${compileSeconds.toFixed(1)} s` : cache.hit ? 'from the chip cache' : `compiled into the chip cache in ${compileSeconds.toFixed(1)} s`) +
          ` (${layers} layers); run store commands on it with --model ${o.output}`);
        return 0;
      })(),
    );

  const op = (name: string, desc: string, args: string[], fn: (s: ChipStore, a: string[], o: CommonOptions) => ChipStoreCall, mutates: boolean) => {
    const cmd = common(store.command(name).description(desc).argument('<file>', 'the store file'));
    for (const a of args) cmd.argument(`<${a}>`);
    cmd.action((file: string, ...rest: unknown[]) =>
      run(async () => {
        const o = rest[args.length] as CommonOptions;
        const out = makeOut(Boolean(o.json));
        const { store: s } = await open(file, o);
        const c = fn(s, rest.slice(0, args.length) as string[], o);
        const r = c.result as FirmwareResult;
        const saved = mutates && r.code === 'OK' ? save(file, s, o) : false;
        out.emit({ file, op: name, code: r.code, ...costDoc(c), saved, ...answerDoc(r) });
        if (r.code === 'OK' && r.op === 'list') for (const n of r.names) out.line(showTokens(n, Boolean(o.text)));
        else if (r.code === 'OK' && r.op === 'get') out.line(showTokens(r.content, Boolean(o.text)));
        else out.line(`${name}: ${answerText(r, Boolean(o.text))}`);
        out.line(`  (${costLine(c)}${saved ? `; saved ${file}` : mutates && r.code === 'OK' ? '; ephemeral: not saved' : ''})`);
        return r.code === 'OK' ? 0 : 1;
      })(),
    );
  };
  op('put', 'store CONTENT under NAME (replacing an existing file)', ['name', 'content'],
    (s, [n, c], o) => s.put(parseTokens(n!, Boolean(o.text), 'NAME'), parseTokens(c!, Boolean(o.text), 'CONTENT')), true);
  op('get', 'print the content stored under NAME', ['name'], (s, [n], o) => s.get(parseTokens(n!, Boolean(o.text), 'NAME')), false);
  op('delete', 'delete the file NAME', ['name'], (s, [n], o) => s.delete(parseTokens(n!, Boolean(o.text), 'NAME')), true);
  op('list', 'print every name, in directory order', [], (s) => s.list(), false);

  common(store.command('batch').description('run a script of put / get / delete / list lines in one run of the chip (one compile, one load, one save)')
    .argument('<file>', 'the store file')
    .argument('[script]', 'the script: one operation per line (docs/store.md "Scripts"); - or none reads stdin'))
    .action((file: string, script: string | undefined, o: CommonOptions) =>
      run(async () => {
        const out = makeOut(Boolean(o.json));
        const fromStdin = script === undefined || script === '-';
        if (script === undefined && process.stdin.isTTY) {
          throw new ChipcError('store.script', 'no script: give a script file, pipe one in, or pass - to type it (end with Ctrl-D)');
        }
        if (!fromStdin && !fs.existsSync(script)) throw new ChipcError('store.script', `${script}: no such script file`);
        const src = fs.readFileSync(fromStdin ? 0 : script, 'utf8');
        // the whole script is checked before the chip is compiled or anything runs
        const ops = parseStoreScript(src, { text: Boolean(o.text), label: fromStdin ? 'stdin' : script });
        const t0 = performance.now();
        const { store: s } = await open(file, o);
        const openSeconds = (performance.now() - t0) / 1000;
        const docs: Record<string, unknown>[] = [];
        let changed = false;
        let notOk = 0;
        const total = { promptTokens: 0, generatedTokens: 0, instructions: 0, seconds: 0 };
        for (const { line, request } of ops) {
          const c = s.apply(request);
          const r = c.result as FirmwareResult;
          if (r.code === 'OK' && (request.op === 'put' || request.op === 'delete')) changed = true;
          if (r.code !== 'OK') notOk++;
          total.promptTokens += c.promptTokens;
          total.generatedTokens += c.generatedTokens;
          total.instructions += c.instructions;
          total.seconds += c.seconds;
          docs.push({ line, op: request.op, code: r.code, ...costDoc(c), ...answerDoc(r) });
          const label = requestLabel(request, Boolean(o.text));
          if (r.code === 'OK' && r.op === 'list') {
            out.line(`${label}: ${r.names.length} name${r.names.length === 1 ? '' : 's'}`);
            for (const n of r.names) out.line(`  ${showTokens(n, Boolean(o.text))}`);
          } else out.line(`${label}: ${answerText(r, Boolean(o.text))}`);
        }
        // the state after the batch (non-OK answers leave it as it was): saved once, atomically
        const saved = changed ? save(file, s, o) : false;
        out.emit({ file, ops: docs, ok: ops.length - notOk, notOk, saved, openSeconds: +openSeconds.toFixed(3), ...costDoc(total) });
        out.line(`${fmtInt(ops.length)} operation${ops.length === 1 ? '' : 's'}, ${fmtInt(ops.length - notOk)} OK: ${costLine(total)}; chip opened in ${openSeconds.toFixed(1)} s` +
          (saved ? `; saved ${file}` : changed ? '; ephemeral: not saved' : ''));
        return notOk === 0 ? 0 : 1;
      })(),
    );

  common(store.command('dump').description('print the limits, counters and every file (name, content) as the chip holds them')
    .argument('<file>', 'the store file'))
    .action((file: string, o: CommonOptions) =>
      run(async () => {
        const out = makeOut(Boolean(o.json));
        const { store: s } = await open(file, o);
        const l = s.list();
        if (l.result.code !== 'OK') throw new ChipcError('store.corrupt', `${file}: list answered ${l.result.code}`);
        const files = l.result.names.map((name) => {
          const g = s.get(name);
          if (g.result.code !== 'OK') throw new ChipcError('store.corrupt', `${file}: a listed name is not found (${g.result.code})`);
          return { name, content: g.result.content };
        });
        const m = s.exportModel();
        const rows = Object.fromEntries(TABLE_NAMES.map((t) => [t, [...m.rows(t)].length]));
        out.emit({ file, limits: limits(s.params), files, rows });
        out.line(`${file}: ${files.length} file(s)`);
        printLimits(out, s.params);
        for (const f of files) out.line(`  ${showTokens(f.name, Boolean(o.text))}  (${f.content.length} tokens): ${showTokens(f.content, Boolean(o.text))}`);
        return 0;
      })(),
    );

  const roundTrip = async (file: string, output: string | undefined, o: CommonOptions & { output?: string; overwrite?: boolean }, verb: string) => {
    const out = makeOut(Boolean(o.json));
    if (output !== undefined) prepareOutput(output, { option: '-o', inputs: [file, o.model], overwrite: o.overwrite === true });
    const { model, store: s } = await open(file, o);
    const back = s.exportModel();
    const want = encodeStore(model);
    const got = encodeStore(back);
    // The chip's state holds no written-but-zero rows: compare the nonzero rows, table by table.
    for (const t of TABLE_NAMES) {
      const a = JSON.stringify([...model.rows(t)].filter(([, f]) => f.some((v) => v !== 0)));
      const b = JSON.stringify([...back.rows(t)]);
      if (a !== b) throw new ChipcError('store.divergence', `${file}: the ${t} rows read back from the chip differ from the file's`);
    }
    if (output !== undefined) writeFileAtomic(output, got);
    out.emit({ file, output: output ?? null, fileBytes: want.length, exportedBytes: got.length, rows: Object.fromEntries(TABLE_NAMES.map((t) => [t, [...back.rows(t)].length])) });
    out.line(`${verb} ${file}: every nonzero row is bit-identical in the chip's state (${fmtBytes(want.length)} file)` +
      (output !== undefined ? `; wrote ${output} (${fmtBytes(got.length)}) from the chip's state` : ''));
    return 0;
  };
  common(store.command('export').description("write the store rows read back out of the chip's state to a store file")
    .argument('<file>', 'the store file loaded into the chip'))
    .requiredOption('-o, --output <file>', 'the store file to write (atomically)')
    .option('--overwrite', 'replace an existing output file')
    .action((file: string, o: CommonOptions & { output: string; overwrite?: boolean }) => run(() => roundTrip(file, o.output, o, 'exported'))());
  common(store.command('import').description("load a store file into a fresh chip state and check every row bit for bit")
    .argument('<file>', 'the store file'))
    .option('-o, --output <file>', 'also write the rows read back from the chip')
    .option('--overwrite', 'replace an existing output file')
    .action((file: string, o: CommonOptions & { output?: string; overwrite?: boolean }) => run(() => roundTrip(file, o.output, o, 'imported'))());
}
