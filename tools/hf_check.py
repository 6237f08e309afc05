#!/usr/bin/env python3
"""Run an emitted chipc checkpoint in Hugging Face transformers and compare its greedy tokens
with chipc's golden trace (issue 6, item 5).

Used only on a machine with PyTorch and transformers (a version that knows the checkpoint's
model_type: qwen3_5_text / qwen3_next). The trace comes from chipc:

    npx chipc compile circuits/rv32im/cpu.ts --target chip-test -o CKPT     # or a merged model
    npx chipc trace fixtures/firmware/hello.elf -o hello.trace.json
    python tools/hf_check.py CKPT --trace hello.trace.json --dtype float32
    python tools/hf_check.py CKPT --trace hello.trace.json --dtype bfloat16 --mode stepwise

Without --trace, a token-list check of any checkpoint (e.g. a compiled example circuit):
    python tools/hf_check.py CKPT --tokens 1,2,3 --generate 8 [--expect 4,5,6,...]
prints the last prompt position's top logits (and the sha256 of the float32 logits vector) as
`npx chipc exec CKPT --tokens ... --json` does, and the greedy continuation.

The RV32 chip needs a checkpoint compiled for the program (`chipc run` compiles one per program: the
code RAM is sized to it); `--model` must be that checkpoint. The prompt is the loader prompt (write
tokens), so plain greedy decoding runs the program: no state file, no driver.

Modes:
  generate  one `model.generate(prompt, do_sample=False)` call (the prompt goes through the
            model's prefill; its GDN layers use the chunked kernel there);
  stepwise  the prompt fed one token at a time with the cache (the recurrent kernel throughout),
            then greedy decoding, as chipc's executor does.
Exit status: 0 every generated token matches, 1 a divergence (first one reported), 2 an error.
"""
import argparse
import json
import sys
import time


def fail(msg):
    print(f"hf_check: error: {msg}", file=sys.stderr)
    sys.exit(2)


def load_trace(path):
    try:
        with open(path, "r", encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        fail(f"cannot read trace {path}: {e}")
    if not isinstance(doc, dict) or doc.get("format") != "chipc-trace" or doc.get("version") != 1:
        fail(f"{path} is not a chipc trace (format chipc-trace, version 1); make one with `chipc trace`")
    for key in ("prompt", "expected"):
        v = doc.get(key)
        if not isinstance(v, list) or not all(isinstance(t, int) and t >= 0 for t in v) or not v:
            fail(f"{path}: '{key}' must be a non-empty list of token ids")
    return doc


def token_list_check(args, model, device, torch):
    """The token-list mode: prefill logits of the last position, then an optional greedy continuation."""
    import hashlib
    ids = torch.tensor([[int(t) for t in args.tokens.split(",")]], device=device)
    with torch.no_grad():
        logits = model(ids).logits[0, -1].float().cpu()
    top = torch.topk(logits, args.top)
    print(json.dumps({
        "mode": "prefill", "dtype": args.dtype, "attn": args.attn,
        "top": [{"token": int(i), "logit": float(v)} for v, i in zip(top.values, top.indices)],
        "logits_sha256": hashlib.sha256(logits.numpy().tobytes()).hexdigest(),
    }))
    ok = True
    if args.generate > 0:
        with torch.no_grad():
            out = model.generate(ids, max_new_tokens=args.generate, do_sample=False, num_beams=1,
                                 pad_token_id=0, eos_token_id=None)
        gen = [int(t) for t in out[0, ids.shape[1]:].tolist()]
        print(json.dumps({"mode": "generate", "dtype": args.dtype, "attn": args.attn, "generated": gen}))
        if args.expect is not None:
            want = [int(t) for t in args.expect.split(",")]
            ok = gen == want
            print(json.dumps({"expected": want, "match": ok}))
    return 0 if ok else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model", help="checkpoint directory (config.json + safetensors)")
    ap.add_argument("--trace", help="trace JSON from `chipc trace` (firmware run by greedy decoding)")
    ap.add_argument("--tokens", help="token-list mode: comma-separated prompt ids")
    ap.add_argument("--generate", type=int, default=0, help="token-list mode: greedy tokens to generate")
    ap.add_argument("--expect", default=None, help="token-list mode: comma-separated expected greedy tokens")
    ap.add_argument("--top", type=int, default=5, help="token-list mode: top logits to print")
    ap.add_argument("--attn", default="eager", choices=["eager", "sdpa"], help="attention implementation")
    ap.add_argument("--dtype", choices=["float32", "bfloat16"], default="float32")
    ap.add_argument("--mode", choices=["generate", "stepwise"], default="generate")
    ap.add_argument("--device", default=None, help="torch device (default: cuda if available, else cpu)")
    ap.add_argument("--max-new-tokens", type=int, default=None, help="compare only this many generated tokens")
    ap.add_argument("--json", action="store_true", help="print one JSON document")
    args = ap.parse_args()
    if (args.trace is None) == (args.tokens is None):
        fail("give exactly one of --trace FILE or --tokens IDS")

    trace = load_trace(args.trace) if args.trace is not None else None
    try:
        import torch
        from transformers import AutoModelForCausalLM
    except ImportError as e:
        fail(f"needs PyTorch and transformers ({e})")

    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    dtype = torch.float32 if args.dtype == "float32" else torch.bfloat16
    t0 = time.time()
    model = AutoModelForCausalLM.from_pretrained(args.model, torch_dtype=dtype, attn_implementation=args.attn)
    model.to(device).eval()
    load_s = time.time() - t0
    if trace is None:
        sys.exit(token_list_check(args, model, device, torch))
    vocab = model.config.vocab_size
    prompt = trace["prompt"]
    expected = trace["expected"]
    if args.max_new_tokens is not None:
        expected = expected[: max(1, args.max_new_tokens)]
    if max(prompt + expected) >= vocab:
        fail(f"the trace uses token id {max(prompt + expected)} but the model's vocabulary has {vocab}")

    t1 = time.time()
    with torch.no_grad():
        if args.mode == "generate":
            ids = torch.tensor([prompt], dtype=torch.long, device=device)
            out = model.generate(
                ids, max_new_tokens=len(expected), min_new_tokens=len(expected), do_sample=False, num_beams=1,
                eos_token_id=None, pad_token_id=0, use_cache=True,
            )
            got = out[0, len(prompt):].tolist()
        else:
            past = None
            logits = None
            for t in prompt:
                r = model(torch.tensor([[t]], dtype=torch.long, device=device), past_key_values=past, use_cache=True)
                past, logits = r.past_key_values, r.logits
            got = []
            for _ in range(len(expected)):
                nxt = int(torch.argmax(logits[0, -1]).item())
                got.append(nxt)
                r = model(torch.tensor([[nxt]], dtype=torch.long, device=device), past_key_values=past, use_cache=True)
                past, logits = r.past_key_values, r.logits
    gen_s = time.time() - t1

    first = next((i for i, (a, b) in enumerate(zip(got, expected)) if a != b), None)
    if first is None and len(got) != len(expected):
        first = min(len(got), len(expected))
    result = {
        "model": args.model, "trace": args.trace, "elf": trace.get("elf", {}).get("name"), "dtype": args.dtype,
        "mode": args.mode, "device": device, "promptTokens": len(prompt), "compared": len(expected),
        "divergence": None if first is None else {
            "index": first, "expected": expected[first] if first < len(expected) else None,
            "got": got[first] if first < len(got) else None,
        },
        "loadSeconds": round(load_s, 2), "generateSeconds": round(gen_s, 2),
        "tokensPerSecond": round(len(got) / gen_s, 1) if gen_s > 0 else None,
        "torch": torch.__version__,
    }
    try:
        import transformers
        result["transformers"] = transformers.__version__
    except Exception:  # noqa: BLE001 - version reporting only
        pass
    if args.json:
        print(json.dumps(result))
    else:
        print(f"{result['elf']}: {len(expected)} tokens compared ({args.mode}, {args.dtype}, {device}), "
              f"{result['tokensPerSecond']} tokens/s")
        if first is None:
            print("0 divergences from the golden trace")
        else:
            print(f"divergence at generated token {first}: expected {result['divergence']['expected']}, "
                  f"got {result['divergence']['got']}")
    sys.exit(0 if first is None else 1)


if __name__ == "__main__":
    main()
