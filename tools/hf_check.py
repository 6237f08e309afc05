#!/usr/bin/env python3
"""Run an emitted chipc checkpoint in Hugging Face transformers and compare its greedy tokens
with chipc's golden trace (issue 6, item 5; results in docs/hf-check.md).

Used only on a machine with PyTorch and transformers (a version that knows the checkpoint's
model_type: qwen3_5_text / qwen3_next). The checkpoint and the trace come from chipc:

    npx chipc cpu -o CKPT --attention-layer                       # the generic chip, generate()-ready
    npx chipc trace fixtures/firmware/hello.elf --model CKPT -o hello.trace.json
    python tools/hf_check.py CKPT --trace hello.trace.json        # model.generate(), float32
    python tools/hf_check.py CKPT --trace hello.trace.json --dtype bfloat16

The prompt is the loader prompt (write tokens), so plain greedy decoding runs the program: no
state file, no driver.

Without --trace, a token-list check of any checkpoint (e.g. a compiled example circuit):
    python tools/hf_check.py CKPT --tokens 1,2,3 --generate 8 [--expect 4,5,6,...]
prints the last prompt position's top logits (and the sha256 of the float32 logits vector) as
`npx chipc exec CKPT --tokens ... --json` does, and the greedy continuation.

Modes (--mode; default generate, or prefill for a model without an attention layer):
  generate  one `model.generate(prompt, do_sample=False)` call: the whole prompt in one forward
            (transformers' chunked GDN kernel), then one cached forward per generated token. The
            chip is exact on it (every RAM row changes at most once in a loader prompt:
            docs/numerics.md "Chunked prefill"). transformers cannot run generate() on a model
            whose layers are all linear attention (its cache cannot report a length), so a chip
            made without `chipc cpu --attention-layer` runs in prefill mode by default.
  prefill   the same forwards driven by this script: the whole prompt in one forward, then one
            cached forward per generated token, positions passed explicitly, no masks built (one
            unpadded sequence).
  stepwise  the prompt fed one token at a time with the cache (the recurrent GDN kernel
            throughout), then greedy decoding.
Every mode compares each token as it is generated and stops at the first divergence.

Numerics: TF32 is switched off for matmuls and cuDNN convolutions unless --allow-tf32 is given
(TF32 rounds float32 inputs to 10 mantissa bits, which no exactness argument survives).
--time-limit S stops after S seconds of prompt and decoding; the report then says how many tokens
were compared and "complete": false.

Exit status: 0 every compared token matches, 1 a divergence (the first one is reported), 2 an error.
"""
import argparse
import hashlib
import json
import os
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


def load_model(path, dtype_name, torch, device, attn="eager"):
    """Loads straight onto the device (no host copy of the upcast weights: several checks can share a host)."""
    from transformers import AutoModelForCausalLM
    dtype = torch.float32 if dtype_name == "float32" else torch.bfloat16
    kwargs = {"attn_implementation": attn}
    try:
        import accelerate  # noqa: F401 - device_map needs it
        kwargs["device_map"] = device
    except ImportError:
        pass
    try:
        model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype, **kwargs)
    except TypeError:  # transformers before `dtype=` (4.56)
        model = AutoModelForCausalLM.from_pretrained(path, torch_dtype=dtype, **kwargs)
    return model.to(device).eval()


def checkpoint_tensors(path):
    """{tensor name: safetensors file} of a checkpoint directory, sharded (an index) or not."""
    index = os.path.join(path, "model.safetensors.index.json")
    if os.path.exists(index):
        with open(index, "r", encoding="utf-8") as f:
            return {k: os.path.join(path, v) for k, v in json.load(f)["weight_map"].items()}
    single = os.path.join(path, "model.safetensors")
    if not os.path.exists(single):
        fail(f"{path} holds neither model.safetensors nor model.safetensors.index.json")
    from safetensors import safe_open
    with safe_open(single, "pt") as f:
        return {k: single for k in f.keys()}


def load_model_sparse(path, dtype_name, torch, attn="eager"):
    """The checkpoint in transformers with every nn.Linear (projections, MLPs, LM head) run as a float32
    CSR product and the embedding gathered from CSR rows; the dense matrices are never held.

    A compiled chip's matrices are almost all zeros (chip-test: 0.65 M non-zeros in its layers and
    5.5 M in the LM head and embedding, against ≈ 1.8 G dense entries), so on a CPU a dense decode
    step spends nearly all its time multiplying zeros, and a merged model's dense matrices outgrow the
    memory of a small machine. The products keep transformers' numerics where the chip relies on them:
    every matmul row of a chip is exact in any summation order for exact inputs (docs/numerics.md
    "Order invariance"), so the sparse sum is the dense one's value; it accumulates in float32 and
    rounds once to the compute dtype, as a dense bf16 GEMM does. Everything else — the chunked and
    recurrent GDN kernels, the causal conv, the norms, attention, the cache and `generate()` — is
    transformers' own. The model is built on the meta device from config.json and each tensor is
    read from the safetensors by its name (the names of a qwen3_5_text / qwen3_next checkpoint are
    the modules' own). Returns (model, layers replaced, non-zeros kept).
    """
    from safetensors import safe_open
    from transformers import AutoConfig, AutoModelForCausalLM
    dtype = torch.float32 if dtype_name == "float32" else torch.bfloat16
    config = AutoConfig.from_pretrained(path)
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config, dtype=dtype, attn_implementation=attn)
    files = checkpoint_tensors(path)
    wanted = set(model.state_dict().keys())
    if wanted != set(files):
        missing, extra = sorted(wanted - set(files)), sorted(set(files) - wanted)
        fail(f"--sparse-linear reads tensors by the model's own names; {path} differs (missing {missing[:3]}, "
             f"unexpected {extra[:3]}): load it without --sparse-linear")
    handles = {}

    def tensor(name):
        f = files[name]
        if f not in handles:
            handles[f] = safe_open(f, "pt")
        return handles[f].get_tensor(name)

    replaced, kept = 0, 0
    for mname, module in model.named_modules():
        prefix = f"{mname}." if mname else ""
        if isinstance(module, torch.nn.Linear):
            csr = tensor(prefix + "weight").to(torch.float32).to_sparse_csr()
            kept += int(csr.values().numel())
            bias = None if module.bias is None else tensor(prefix + "bias").to(torch.float32)
            out_features = module.out_features

            def linear(x, csr=csr, bias=bias, out_features=out_features):
                y = torch.sparse.mm(csr, x.reshape(-1, x.shape[-1]).to(torch.float32).t()).t()
                if bias is not None:
                    y = y + bias
                return y.to(x.dtype).reshape(*x.shape[:-1], out_features)

            module.forward = linear
            module.weight = torch.nn.Parameter(torch.empty(0, dtype=dtype), requires_grad=False)
            if module.bias is not None:
                module.bias = torch.nn.Parameter(torch.empty(0, dtype=dtype), requires_grad=False)
            replaced += 1
        elif isinstance(module, torch.nn.Embedding):
            csr = tensor(prefix + "weight").to(torch.float32).to_sparse_csr()
            kept += int(csr.values().numel())
            crow, col, val = csr.crow_indices().tolist(), csr.col_indices(), csr.values()
            hidden = module.embedding_dim

            def embed(ids, crow=crow, col=col, val=val, hidden=hidden):
                flat = ids.reshape(-1).tolist()
                out = torch.zeros(len(flat), hidden, dtype=torch.float32)
                for i, t in enumerate(flat):
                    out[i, col[crow[t]:crow[t + 1]]] = val[crow[t]:crow[t + 1]]
                return out.to(dtype).reshape(*ids.shape, hidden)

            module.forward = embed
            module.weight = torch.nn.Parameter(torch.empty(0, dtype=dtype), requires_grad=False)
        else:
            for pname, _ in list(module.named_parameters(recurse=False)):
                setattr(module, pname, torch.nn.Parameter(tensor(prefix + pname).to(dtype), requires_grad=False))
    # Buffers made on the meta device (the rotary frequencies) are computed again on the CPU.
    for mname, module in model.named_modules():
        if any(b.is_meta for b in module.buffers(recurse=False)):
            parent_name, _, child = mname.rpartition(".")
            parent = model.get_submodule(parent_name) if parent_name else model
            setattr(parent, child, type(module)(config=module.config if hasattr(module, "config") else config.get_text_config()))
    still = [n for n, t in list(model.named_parameters()) + list(model.named_buffers()) if t.is_meta]
    if still:
        fail(f"--sparse-linear left tensors unloaded: {still[:5]}")
    return model.eval(), replaced, kept


def has_attention_layer(config):
    """False for a model whose layers are all linear attention (the chip alone): see CachedRunner."""
    layer_types = getattr(config, "layer_types", None) or []
    return any(t != "linear_attention" for t in layer_types) or not layer_types


class CachedRunner:
    """Forward calls on one sequence with the model's cache, positions given explicitly.

    A cache of linear-attention layers only cannot report its length (transformers'
    get_seq_length raises), so neither positions nor the causal mask can be derived from it; with
    one unpadded sequence no mask is needed, and passing the mask mapping skips building one.
    """

    NO_MASKS = {"full_attention": None, "linear_attention": None, "sliding_attention": None}

    def __init__(self, model, device, torch, explicit_masks):
        self.model, self.device, self.torch = model, device, torch
        self.explicit_masks = explicit_masks
        self.past, self.logits, self.pos = None, None, 0

    def forward(self, tokens):
        torch = self.torch
        n = len(tokens)
        kwargs = {}
        if self.explicit_masks:
            kwargs["attention_mask"] = self.NO_MASKS
        r = self.model(
            torch.tensor([tokens], dtype=torch.long, device=self.device), past_key_values=self.past,
            position_ids=torch.arange(self.pos, self.pos + n, dtype=torch.long, device=self.device)[None, :],
            use_cache=True, **kwargs,
        )
        self.past, self.logits, self.pos = r.past_key_values, r.logits, self.pos + n

    def argmax(self):
        return int(self.torch.argmax(self.logits[0, -1]).item())


def token_list_check(args, model, device, torch, has_attention):
    """The token-list mode: prefill logits of the last position, then an optional greedy continuation."""
    prompt = [int(t) for t in args.tokens.split(",")]
    runner = CachedRunner(model, device, torch, explicit_masks=not has_attention)
    with torch.no_grad():
        runner.forward(prompt)
        logits = runner.logits[0, -1].float().cpu()
        top = torch.topk(logits, args.top)
        print(json.dumps({
            "mode": "prefill", "dtype": args.dtype, "attn": args.attn,
            "top": [{"token": int(i), "logit": float(v)} for v, i in zip(top.values, top.indices)],
            "logits_sha256": hashlib.sha256(logits.numpy().tobytes()).hexdigest(),
        }))
        gen = []
        for _ in range(args.generate):
            gen.append(runner.argmax())
            runner.forward([gen[-1]])
    ok = True
    if args.generate > 0:
        print(json.dumps({"mode": "prefill", "dtype": args.dtype, "attn": args.attn, "generated": gen}))
        if args.expect is not None:
            want = [int(t) for t in args.expect.split(",")]
            ok = gen == want
            print(json.dumps({"expected": want, "match": ok}))
    return 0 if ok else 1


def check_generate(args, model, device, torch, prompt, expected):
    """One `model.generate(prompt, do_sample=False)` call. A stopping criterion compares each new token
    with the trace as it is generated: generation stops at the first divergence, at --time-limit, and
    prints --progress lines, so a long program need not run to its end to be judged."""
    from transformers import StoppingCriteria, StoppingCriteriaList

    ids = torch.tensor([prompt], dtype=torch.long, device=device)
    t0 = time.time()
    deadline = None if args.time_limit is None else t0 + args.time_limit
    seen = {"first_step_at": None}

    class CompareWithTrace(StoppingCriteria):
        def __call__(self, input_ids, scores, **kwargs):
            if seen["first_step_at"] is None:
                seen["first_step_at"] = time.time()
            i = input_ids.shape[1] - len(prompt) - 1
            stop = int(input_ids[0, -1]) != expected[i]
            if args.progress and not stop and (i + 1) % args.progress == 0:
                print(f"hf_check: {i + 1} tokens match ({time.time() - t0:.1f} s)", file=sys.stderr, flush=True)
            if deadline is not None and time.time() >= deadline:
                stop = True
            return torch.full((input_ids.shape[0],), stop, dtype=torch.bool, device=input_ids.device)

    out = model.generate(
        ids, max_new_tokens=len(expected), do_sample=False, num_beams=1,
        eos_token_id=None, pad_token_id=0, use_cache=True,
        stopping_criteria=StoppingCriteriaList([CompareWithTrace()]),
    )
    got = out[0, len(prompt):].tolist()
    first = next((i for i, (a, b) in enumerate(zip(got, expected)) if a != b), None)
    # The first token comes out of the prefill forward: the time to it is the prompt's.
    prompt_s = (seen["first_step_at"] or time.time()) - t0
    return got, first, prompt_s, time.time() - t0 - prompt_s, len(prompt)


def check_cached(args, model, device, torch, prompt, expected, has_attention):
    runner = CachedRunner(model, device, torch, explicit_masks=not has_attention)
    t0 = time.time()
    deadline = None if args.time_limit is None else t0 + args.time_limit
    got = []
    first = None
    if args.mode == "prefill":
        runner.forward(prompt)
    else:
        for t in prompt:
            runner.forward([t])
            if deadline is not None and time.time() >= deadline and runner.pos < len(prompt):
                return got, first, time.time() - t0, 0.0, runner.pos  # the prompt did not finish: nothing compared
    if device == "cuda":
        torch.cuda.synchronize()
    prompt_s = time.time() - t0
    for i, want in enumerate(expected):
        nxt = runner.argmax()
        got.append(nxt)
        if nxt != want:
            first = i
            break
        if args.progress and (i + 1) % args.progress == 0:
            print(f"hf_check: {i + 1} tokens match ({time.time() - t0:.1f} s)", file=sys.stderr, flush=True)
        if i + 1 == len(expected) or (deadline is not None and time.time() >= deadline):
            break
        runner.forward([nxt])
    return got, first, prompt_s, time.time() - t0 - prompt_s, len(prompt)


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
    ap.add_argument("--mode", choices=["stepwise", "prefill", "generate"], default=None,
                    help="default generate; prefill for a model without an attention layer (see above)")
    ap.add_argument("--device", default=None, help="torch device (default: cuda if available, else cpu)")
    ap.add_argument("--max-new-tokens", type=int, default=None, help="compare only this many generated tokens")
    ap.add_argument("--time-limit", type=float, default=None,
                    help="stop after this many seconds of prompt and decoding; the report says complete: false")
    ap.add_argument("--allow-tf32", action="store_true", help="leave TF32 on for matmuls and cuDNN (off by default)")
    ap.add_argument("--progress", type=int, default=0, help="print a line on stderr every N matching tokens")
    ap.add_argument("--sparse-linear", action="store_true",
                    help="CPU: run every nn.Linear as a float32 CSR product and gather the embedding from CSR rows "
                         "(see load_model_sparse): a decode step then costs milliseconds instead of seconds and the "
                         "dense matrices are never held; the GDN kernels and generate() are transformers' own")
    ap.add_argument("--json", action="store_true", help="print one JSON document")
    args = ap.parse_args()
    if (args.trace is None) == (args.tokens is None):
        fail("give exactly one of --trace FILE or --tokens IDS")
    if args.time_limit is not None and args.time_limit <= 0:
        fail("--time-limit must be positive")

    trace = load_trace(args.trace) if args.trace is not None else None
    try:
        import torch
        import transformers
    except ImportError as e:
        fail(f"needs PyTorch and transformers ({e})")
    torch.backends.cuda.matmul.allow_tf32 = args.allow_tf32
    torch.backends.cudnn.allow_tf32 = args.allow_tf32

    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    t0 = time.time()
    if args.sparse_linear:
        if device != "cpu":
            fail("--sparse-linear is the CPU route (a GPU multiplies the dense matrices fast enough)")
        model, replaced, kept = load_model_sparse(args.model, args.dtype, torch, args.attn)
        print(f"hf_check: {replaced} linear layers run as CSR products, the embedding gathered from CSR rows "
              f"({kept:,} non-zeros)", file=sys.stderr)
    else:
        model = load_model(args.model, args.dtype, torch, device, args.attn)
    load_s = time.time() - t0
    has_attention = has_attention_layer(model.config)
    if trace is None:
        sys.exit(token_list_check(args, model, device, torch, has_attention))
    if args.mode == "generate" and not has_attention:
        fail("transformers' generate() cannot run a model without an attention layer (its cache cannot report "
             "its length); make the chip with `chipc cpu --attention-layer`, or use --mode prefill (the same forwards)")
    if args.mode is None:
        args.mode = "generate" if has_attention else "prefill"
        if not has_attention:
            print("hf_check: the model has no attention layer, so transformers' generate() cannot run it; "
                  "running --mode prefill (the forwards generate() makes). `chipc cpu --attention-layer` "
                  "makes a chip that generate() runs.", file=sys.stderr)

    vocab = model.config.vocab_size
    prompt = trace["prompt"]
    expected = trace["expected"]
    if args.max_new_tokens is not None:
        expected = expected[: max(1, args.max_new_tokens)]
    if max(prompt + expected) >= vocab:
        fail(f"the trace uses token id {max(prompt + expected)} but the model's vocabulary has {vocab}")

    with torch.no_grad():
        if args.mode == "generate":
            got, first, prompt_s, decode_s, fed = check_generate(args, model, device, torch, prompt, expected)
        else:
            got, first, prompt_s, decode_s, fed = check_cached(args, model, device, torch, prompt, expected, has_attention)
    compared = len(got) if first is None else first + 1
    result = {
        "model": args.model, "trace": args.trace, "elf": trace.get("elf", {}).get("name"), "dtype": args.dtype,
        "mode": args.mode, "device": device, "sparseLinear": args.sparse_linear,
        "deviceName": torch.cuda.get_device_name(0) if device == "cuda" else None,
        "tf32": args.allow_tf32, "promptTokens": len(prompt), "promptFed": fed, "expectedTokens": len(expected),
        "compared": compared, "complete": first is None and len(got) == len(expected),
        "divergence": None if first is None else {
            "index": first, "expected": expected[first] if first < len(expected) else None,
            "got": got[first] if first < len(got) else None,
        },
        "loadSeconds": round(load_s, 2),
        "promptSeconds": None if prompt_s is None else round(prompt_s, 2),
        "decodeSeconds": round(decode_s, 2),
        "decodeTokensPerSecond": round(len(got) / decode_s, 1) if decode_s > 0 else None,
        "torch": torch.__version__, "transformers": transformers.__version__,
    }
    if args.json:
        print(json.dumps(result))
    else:
        state = "all" if result["complete"] else "the first"
        print(f"{result['elf']}: {compared} of {len(expected)} tokens compared ({args.mode}, {args.dtype}, {device}), "
              f"{result['decodeTokensPerSecond']} tokens/s")
        if fed < len(prompt):
            print(f"the time limit ran out in the prompt ({fed} of {len(prompt)} tokens fed): nothing compared")
        elif first is None:
            print(f"0 divergences from the golden trace in {state} {compared} tokens")
        else:
            print(f"divergence at generated token {first}: expected {result['divergence']['expected']}, "
                  f"got {result['divergence']['got']}")
    sys.exit(0 if first is None else 1)


if __name__ == "__main__":
    main()
