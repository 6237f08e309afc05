#!/usr/bin/env python3
"""Compare Hugging Face transformers with chipc's reference executor layer by layer, bit for bit
(docs/hf-check.md). The dump comes from chipc:

    npx tsx tools/layer-dump.ts CKPT --trace TRACE.json --steps 359 -o DUMP
    python tools/hf_layers.py CKPT --dump DUMP [--mode stepwise|prefill] [--dtype float32] [--device cpu]

Feeds the dump's tokens to the checkpoint in transformers with the cache — stepwise: one token per
forward, as the dump was made; prefill: the loader prompt in one forward (the chunked GDN kernel),
then one token per forward — and compares, as float32 bit patterns:
  - the residual stream after every decoder layer at every position (a forward hook per layer);
  - the GDN recurrent state of every linear_attention layer after the last prompt token.
Reports the first position and layer where they differ (with the first differing dims and both
values), or that all are identical. Exit status: 0 identical, 1 a difference, 2 an error.
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hf_check import CachedRunner, has_attention_layer, load_model, load_model_sparse  # noqa: E402 - the shared transformers driver


def fail(msg):
    print(f"hf_layers: error: {msg}", file=sys.stderr)
    sys.exit(2)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model", help="checkpoint directory (the one the dump was made from)")
    ap.add_argument("--dump", required=True, help="directory written by tools/layer-dump.ts")
    ap.add_argument("--mode", choices=["stepwise", "prefill"], default="stepwise")
    ap.add_argument("--dtype", choices=["float32", "bfloat16"], default="float32",
                    help="compute dtype (the dump is chipc's float32 profile)")
    ap.add_argument("--device", default=None, help="torch device (default: cuda if available, else cpu)")
    ap.add_argument("--allow-tf32", action="store_true", help="leave TF32 on (off by default)")
    ap.add_argument("--sparse-linear", action="store_true",
                    help="run every nn.Linear as a float32 CSR product (hf_check.py --sparse-linear): this comparison "
                         "then shows that route computes the same bits")
    ap.add_argument("--json", action="store_true", help="print one JSON document")
    args = ap.parse_args()
    try:
        with open(os.path.join(args.dump, "meta.json"), encoding="utf-8") as f:
            meta = json.load(f)
    except (OSError, ValueError) as e:
        fail(f"cannot read {args.dump}/meta.json: {e}")
    if meta.get("format") != "chipc-layer-dump" or meta.get("version") != 1:
        fail(f"{args.dump} is not a chipc layer dump (tools/layer-dump.ts)")
    try:
        import numpy as np
        import torch
    except ImportError as e:
        fail(f"needs NumPy, PyTorch and transformers ({e})")
    torch.backends.cuda.matmul.allow_tf32 = args.allow_tf32
    torch.backends.cudnn.allow_tf32 = args.allow_tf32

    L, P, H = meta["layers"], meta["positions"], meta["hidden"]
    prompt_len, tokens, gdn_layers = meta["promptTokens"], meta["tokens"], meta["gdnLayers"]
    nv, dk, dv = meta["stateShape"]
    ours = np.fromfile(os.path.join(args.dump, "layers.f32"), dtype="<f4")
    ours_states = np.fromfile(os.path.join(args.dump, "states.f32"), dtype="<f4")
    if ours.size != L * P * H or ours_states.size != len(gdn_layers) * nv * dk * dv:
        fail(f"{args.dump}: the .f32 files do not match meta.json's shapes")
    ours = ours.reshape(L, P, H).view(np.uint32)
    ours_states = ours_states.reshape(len(gdn_layers), nv * dk * dv).view(np.uint32)

    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    if args.sparse_linear:
        model = load_model_sparse(args.model, args.dtype, torch)[0]
    else:
        model = load_model(args.model, args.dtype, torch, device)
    if model.config.num_hidden_layers != L or model.config.hidden_size != H:
        fail(f"{args.model} has {model.config.num_hidden_layers} layers of {model.config.hidden_size}; the dump {L} of {H}")
    runner = CachedRunner(model, device, torch, explicit_masks=not has_attention_layer(model.config))

    captured = {}

    def hook(i):
        def fn(_mod, _inp, out):
            captured[i] = (out[0] if isinstance(out, tuple) else out)[0].detach().float().cpu().numpy()
        return fn

    for i, layer in enumerate(model.model.layers):
        layer.register_forward_hook(hook(i))

    forward = runner.forward
    first = None

    def compare(p0, n):
        nonlocal first
        if first is not None:
            return
        for i in range(L):
            got = np.ascontiguousarray(captured[i][-n:], dtype=np.float32).view(np.uint32)
            want = ours[i, p0:p0 + n]
            bad = np.argwhere(got != want)
            if len(bad):
                p, _ = bad[0]
                dims = [int(d) for q, d in bad if q == p][:8]
                first = {
                    "position": int(p0 + p), "layer": i, "dims": dims,
                    "transformers": [float(captured[i][-n:][p, d]) for d in dims],
                    "chipc": [float(ours[i, p0 + p, d:d + 1].view(np.float32)[0]) for d in dims],
                }
                return

    with torch.no_grad():
        if args.mode == "prefill":
            forward(tokens[:prompt_len])
            compare(0, prompt_len)
        else:
            for p in range(prompt_len):
                forward([tokens[p]])
                compare(p, 1)
        cache = runner.past
        hf_states = np.stack([
            cache.layers[i].recurrent_states[0][0].float().cpu().numpy().reshape(-1) for i in gdn_layers
        ]).view(np.uint32)
        state_diffs = int((hf_states != ours_states).sum())
        for p in range(prompt_len, P):
            forward([tokens[p]])
            compare(p, 1)
            if first is not None:
                break

    result = {"model": args.model, "dump": args.dump, "mode": args.mode, "dtype": args.dtype, "device": device,
              "positions": P, "layers": L, "hidden": H, "promptTokens": prompt_len,
              "stateEntriesDiffering": state_diffs, "firstDifference": first,
              "identical": first is None and state_diffs == 0,
              "torch": torch.__version__}
    try:
        import transformers
        result["transformers"] = transformers.__version__
    except ImportError:
        pass
    if args.json:
        print(json.dumps(result))
    else:
        print(f"{P} positions × {L} layers × {H} ({args.mode}, {args.dtype}, {device}): "
              f"GDN states after the prompt: {state_diffs} of {hf_states.size} entries differ")
        if first is None:
            print("every layer output at every position is bit-identical")
        else:
            print(f"first difference at position {first['position']} (prompt {prompt_len}), layer {first['layer']}, "
                  f"dims {first['dims']}: transformers {first['transformers']}, chipc {first['chipc']}")
    sys.exit(0 if result["identical"] else 1)


if __name__ == "__main__":
    main()
