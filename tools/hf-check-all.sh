#!/usr/bin/env bash
# Runs the firmware demos on the RV32 chip in Hugging Face transformers, in parallel, and collects
# tools/hf_check.py's reports (docs/hf-check.md). Needs Python with PyTorch and transformers, and
# chipc (`npx chipc` by default; set CHIPC to another launcher, e.g. `node bundle.mjs`).
#
#   bash tools/hf-check-all.sh OUTDIR [JOBS]
#
# JOBS is a list of `program:dtype:mode:limit[:target]` (default below: every bundled firmware in
# generate mode, float32 and bfloat16, on chip-test (qwen3_5_text) and qwen3-next-80b (qwen3_next)).
# For each target the generic chip is written once (`chipc cpu --attention-layer`, bf16 weights,
# which every job loads: `float32` jobs compute in float32 over the exact upcast, `bfloat16` jobs
# in bf16) and each program's golden trace for that chip; every job then runs as its own process.
# `limit` is `0` (the whole trace), `Ns` (stop after N seconds of prompt and decoding) or `Nt`
# (compare the first N generated tokens); a bare number is seconds. `mode` is generate, prefill,
# stepwise, or any of them with `-tf32` (TF32 left on). Each job's JSON report is
# OUTDIR/PROGRAM-TARGET-DTYPE-MODE.json, its stderr beside it as .log; OUTDIR/summary.txt lists
# them. $HF_CHECK_PARALLEL caps how many jobs run at once (default: all of them, as on a GPU
# machine; on a CPU, one per core). $HF_CHECK_ARGS is added to every hf_check.py command line, e.g.
# `--sparse-linear` (the CPU route: docs/hf-check.md).
# Checkpoints and traces go to $HF_CHECK_WORK (the checkpoints are removed at the end), or to a
# temporary directory removed at the end.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: hf-check-all.sh OUTDIR [JOBS]}
default_jobs=$(for target in chip-test qwen3-next-80b; do
  for dtype in float32 bfloat16; do
    for p in hello accum bignum store interp calc fixedpoint crc32 sort bench bigfact; do echo "$p:$dtype:generate:5000t:$target"; done
  done
done)
jobs=${2:-$default_jobs}
chipc=${CHIPC:-npx chipc}
python=${PYTHON:-python3}
mkdir -p "$out"
if [ -n "${HF_CHECK_WORK:-}" ]; then
  work=$HF_CHECK_WORK
  mkdir -p "$work"
  trap 'rm -rf "$work"/ck-*' EXIT
else
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
fi

targets=$(for j in $jobs; do IFS=: read -r _ _ _ _ t <<<"$j"; echo "${t:-chip-test}"; done | sort -u)
echo "hf-check-all: writing the generic chip for:" $targets >&2
t0=$(date +%s)
for target in $targets; do
  (
    $chipc cpu --target "$target" -o "$work/ck-$target" --dtype bf16 --attention-layer >"$out/cpu-$target.log" 2>&1 ||
      echo "hf-check-all: writing the chip for $target failed (see cpu-$target.log)" >&2
  ) &
done
wait
for pt in $(for j in $jobs; do IFS=: read -r p _ _ _ t <<<"$j"; echo "$p:${t:-chip-test}"; done | sort -u); do
  p=${pt%%:*} target=${pt#*:}
  $chipc trace "fixtures/firmware/$p.elf" --model "$work/ck-$target" -o "$work/$p-$target.trace.json" --overwrite >"$out/$p-$target-trace.log" 2>&1 ||
    echo "hf-check-all: the trace of $p for $target failed (see $p-$target-trace.log)" >&2
done
echo "hf-check-all: chips and traces written in $(( $(date +%s) - t0 )) s" >&2

for j in $jobs; do
  IFS=: read -r p dtype mode secs target <<<"$j"
  target=${target:-chip-test}
  name="$p-$target-$dtype-$mode"
  extra=()
  case $secs in
    0) ;;
    *t) extra+=(--max-new-tokens "${secs%t}") ;;
    *) extra+=(--time-limit "${secs%s}") ;;
  esac
  case $mode in
    *-tf32) extra+=(--mode "${mode%-tf32}" --allow-tf32) ;;
    *) extra+=(--mode "$mode") ;;
  esac
  while [ "$(jobs -rp | wc -l)" -ge "${HF_CHECK_PARALLEL:-1000000}" ]; do wait -n; done
  # shellcheck disable=SC2086 - HF_CHECK_ARGS is a list of options
  OMP_NUM_THREADS=1 PYTHONUNBUFFERED=1 $python tools/hf_check.py ${HF_CHECK_ARGS:-} "$work/ck-$target" --trace "$work/$p-$target.trace.json" \
    --dtype "$dtype" --json --progress 5000 "${extra[@]}" >"$out/$name.json" 2>"$out/$name.log" &
done
wait
echo "hf-check-all: all jobs done in $(( $(date +%s) - t0 )) s" >&2

{
  for j in $jobs; do
    IFS=: read -r p dtype mode secs target <<<"$j"
    name="$p-${target:-chip-test}-$dtype-$mode"
    if [ -s "$out/$name.json" ]; then
      $python - "$out/$name.json" "$name" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
d = r["divergence"]
fed = r.get("promptFed", r["promptTokens"])
if fed < r["promptTokens"]:
    verdict = f"the time limit ran out in the prompt ({fed} of {r['promptTokens']} tokens fed)"
elif d is None:
    verdict = "0 divergences"
else:
    verdict = f"DIVERGES at generated token {d['index']} (expected {d['expected']}, got {d['got']})"
print(f"{sys.argv[2]}: {r['compared']}/{r['expectedTokens']} tokens, {'complete' if r['complete'] else 'partial'}, "
      f"{verdict}; load {r['loadSeconds']} s, prompt {r['promptSeconds']} s, decode {r['decodeSeconds']} s "
      f"({r['decodeTokensPerSecond']} tok/s); {r['deviceName'] or r['device']}, torch {r['torch']}, transformers {r['transformers']}")
EOF
    else
      echo "$name: no report (see $name.log)"
    fi
  done
} | tee "$out/summary.txt"
