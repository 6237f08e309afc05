/** Builds SHARED_CHIPS[argv[2]] into the chip cache (run by test/setup/shared-chips.ts). */
import { buildSharedChip, SHARED_CHIPS } from '../helpers/shared-chips.ts';

const spec = SHARED_CHIPS[Number(process.argv[2])];
if (spec === undefined) throw new Error(`no shared chip ${process.argv[2]}`);
const r = await buildSharedChip(spec);
console.log(`${r.hit ? 'cached' : 'built'} ${spec.target} ${spec.codeBytes}/${spec.memBytes}${spec.attentionLayer ? ' +attention' : ''}`);
