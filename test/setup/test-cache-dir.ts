/** The chip cache of the test run (`$CHIPC_CACHE_DIR` in every test file): never the user's. */
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const TEST_CACHE_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../node_modules/.cache/chipc-tests');
