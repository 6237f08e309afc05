#!/usr/bin/env bash
# Bundles the chipc CLI into one file, build/cli/chipc.mjs, that runs with plain `node` and no
# node_modules (docs/hf-check.md "Without npm"). It must stay two directories below the repository
# root: the bundle finds targets/ and fixtures/ relative to itself. esbuild comes with tsx.
set -euo pipefail
cd "$(dirname "$0")/.."
npx esbuild tools/cli-bundle-entry.ts --bundle --platform=node --format=esm --target=node20 --log-level=warning \
  --outfile=build/cli/chipc.mjs \
  --banner:js="import { createRequire as __chipcCreateRequire } from 'module'; const require = __chipcCreateRequire(import.meta.url);"
echo "build/cli/chipc.mjs: $(wc -c <build/cli/chipc.mjs) bytes; run it as: node build/cli/chipc.mjs --help"
