#!/usr/bin/env python3
"""Cross-check a chipc checkpoint in Hugging Face transformers (run only on a machine with
PyTorch and transformers; nothing in the test suite needs it).

Loads DIR with AutoModelForCausalLM in float32 or bfloat16, runs the given token ids, and prints
one JSON line per mode:
  - "prefill": the next-token logits of the last prompt position (top-k ids, values, and the full
    float32 vector's sha256), as `npx chipc exec DIR --tokens … --json` prints them;
  - "generate": greedy generate() continuation of N tokens (decode path, recurrent GDN).
Compare with chipc: `npx chipc exec DIR --tokens 1,2,3 --generate N --json` (f32) or with
`--profile bf16`. Exit 0 when the greedy tokens agree with --expect (comma list), 1 otherwise.

  python3 tools/hf_check.py DIR --tokens 1,2,3 --generate 8 [--dtype float32|bfloat16]
         [--attn eager|sdpa] [--expect 4,5,6,…] [--device cuda]
"""
import argparse
import hashlib
import json
import sys


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--tokens", required=True)
    ap.add_argument("--generate", type=int, default=0)
    ap.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"])
    ap.add_argument("--attn", default="eager", choices=["eager", "sdpa"])
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--top", type=int, default=5)
    ap.add_argument("--expect", default=None, help="comma-separated expected greedy tokens")
    args = ap.parse_args()

    import torch
    from transformers import AutoModelForCausalLM

    dtype = torch.float32 if args.dtype == "float32" else torch.bfloat16
    model = AutoModelForCausalLM.from_pretrained(args.dir, torch_dtype=dtype, attn_implementation=args.attn)
    model.to(args.device).eval()
    ids = torch.tensor([[int(t) for t in args.tokens.split(",")]], device=args.device)
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


if __name__ == "__main__":
    sys.exit(main())
