/**
 * `chipc cache …`: the cache of compiled chips (src/chip/cache.ts, docs/cli.md "chipc cache").
 *
 *   chipc cache ls [--json]               every entry: target, options, dtype, size, age, status
 *   chipc cache clear [--stale] [--json]  remove every entry, or only stale and corrupt ones
 *   chipc cache path [--json]             the cache root ($CHIPC_CACHE_DIR, XDG, platform default)
 *
 * Exit status 0 (a listing with stale or corrupt entries is still a report), 2 for a ChipcError
 * (`cache.unreadable`, `cache.unwritable`).
 */
import type { Command } from 'commander';
import { cacheRoot, clearCache, compilerHash, listCacheEntries, type ChipCacheListing } from '../../chip/cache.ts';
import { EXIT_OK, fmtBytes, makeOut, table } from '../support/output.ts';
import type { Runner } from '../support/output.ts';
import { summaryOf } from '../support/command-table.ts';

/** "3 s", "5 min", "2 h", "4 d" since the ISO time `iso`. */
export function ageText(iso: string, now = Date.now()): string {
  const s = Math.max(0, Math.round((now - Date.parse(iso)) / 1000));
  if (!Number.isFinite(s)) return '?';
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min`;
  if (s < 86_400) return `${Math.floor(s / 3600)} h`;
  return `${Math.floor(s / 86_400)} d`;
}

function optionsText(o: Record<string, number | string>): string {
  return Object.keys(o).sort().map((k) => `${k}=${o[k]}`).join(' ');
}

function statusText(e: ChipCacheListing): string {
  if (e.corrupt !== undefined) return `corrupt: ${e.corrupt}`;
  return e.stale ? 'stale' : 'ok';
}

export function registerCache(program: Command, run: Runner): void {
  const cache = program
    .command('cache')
    .description(summaryOf('cache'));

  cache
    .command('ls')
    .description('list the cached chips: key, size, age, and whether each is stale (another compiler) or corrupt')
    .option('--json', 'print one JSON document')
    .action((o: { json?: boolean }) =>
      run(() => {
        const out = makeOut(Boolean(o.json));
        const root = cacheRoot();
        const entries = listCacheEntries({ root });
        const bytes = entries.reduce((s, e) => s + e.bytes, 0);
        out.emit({ root, compilerHash: compilerHash(), entries, bytes });
        if (entries.length === 0) {
          out.line(`no cached chips in ${root}`);
          return EXIT_OK;
        }
        out.line(table(
          ['entry', 'circuit', 'target', 'options', 'dtype', 'size', 'age', 'status'],
          entries.map((e) => [
            e.entry, e.key?.circuit ?? '?', e.key?.target ?? '?', e.key ? optionsText(e.key.options) : '?', e.key?.dtype ?? '?',
            fmtBytes(e.bytes), ageText(e.created), statusText(e),
          ]),
        ));
        const stale = entries.filter((e) => e.stale || e.corrupt !== undefined).length;
        out.line(`${entries.length} cached chip${entries.length === 1 ? '' : 's'}, ${fmtBytes(bytes)} in ${root}` +
          (stale > 0 ? `; ${stale} stale or corrupt (chipc cache clear --stale removes them)` : ''));
        return EXIT_OK;
      })(),
    );

  cache
    .command('clear')
    .description('remove every cached chip, or with --stale only stale and corrupt ones')
    .option('--stale', 'remove only entries built by another compiler or failing verification')
    .option('--json', 'print one JSON document')
    .action((o: { json?: boolean; stale?: boolean }) =>
      run(() => {
        const out = makeOut(Boolean(o.json));
        const root = cacheRoot();
        const r = clearCache({ root, staleOnly: Boolean(o.stale) });
        out.emit({ root, stale: Boolean(o.stale), removed: r.removed, bytes: r.bytes });
        out.line(`removed ${r.removed} ${o.stale ? 'stale or corrupt ' : ''}cached chip${r.removed === 1 ? '' : 's'} (${fmtBytes(r.bytes)}) from ${root}`);
        return EXIT_OK;
      })(),
    );

  cache
    .command('path')
    .description('print the cache folder ($CHIPC_CACHE_DIR, else $XDG_CACHE_HOME/chipc, else the platform cache folder)')
    .option('--json', 'print one JSON document')
    .action((o: { json?: boolean }) =>
      run(() => {
        const out = makeOut(Boolean(o.json));
        const root = cacheRoot();
        out.emit({ root });
        out.line(root);
        return EXIT_OK;
      })(),
    );
}
