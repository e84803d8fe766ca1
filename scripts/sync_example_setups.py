#!/usr/bin/env python3
"""Write into each family's `example` the setup `segadvise check` reads from that example's config.

usage: scripts/sync_example_setups.py SEGADVISE_BIN SIMPLETUNER_CHECKOUT [--check]
  SIMPLETUNER_CHECKOUT: a folder holding the trainer's simpletuner/examples/ (config.json per example and
  the data-backend files they name).

`advise --model M` with no flags starts from the family's example (families/src/geometry.cpp
default_setup); `check` of that example reads its config and data backend (trained size after bucketing,
frames, batch, attention_mechanism, ...). This script runs `check` on every family's example and stores
what it read, so the two predict the same. With --check it only reports differences (exit 1 if any).
It also copies each example's config.json and data-backend file into tests/fixtures/examples/, where
tests/test_example_setups.cpp reads them (at the same paths under
tests/fixtures/examples/ as under the checkout) through the SimpleTuner reader and compares.
"""
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

FIELDS = {  # check's setup JSON key -> family example key
    "width": "width", "height": "height", "frames": "frames", "batch": "batch",
    "model_type": "model_type", "lora_type": "lora_type", "lora_rank": "lora_rank",
    "optimizer": "optimizer", "base_model_precision": "base_model_precision", "ramtorch": "ramtorch",
    "attention_mechanism": "attention_mechanism", "sdnq_use_hadamard": "sdnq_use_hadamard",
    "ramtorch_transformer_percent": "ramtorch_transformer_percent", "mixed_precision": "mixed_precision",
    "regional_compile": "regional_compile", "lokr_attention_factor": "lokr_attention_factor",
    "lokr_ffn_factor": "lokr_ffn_factor", "lokr_full_matrix": "lokr_full_matrix", "lokr_linear_dim": "lokr_linear_dim",
    "musubi_blocks_to_swap": "musubi_blocks_to_swap",
}
DEFAULTS = {"sdnq_use_hadamard": False, "ramtorch_transformer_percent": 100, "mixed_precision": "bf16",
            "regional_compile": False, "attention_mechanism": "diffusers", "lora_rank": 16,
            "musubi_blocks_to_swap": 0}


def example_config(checkout, name):
    d = os.path.join(checkout, "simpletuner", "examples", name)
    src = os.path.join(d, "config.json")
    return src if os.path.exists(src) else None


def backend_path(checkout, rel):
    return os.path.join(checkout, rel.replace("config/examples/", "simpletuner/examples/", 1))


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    binary, checkout = sys.argv[1], os.path.abspath(sys.argv[2])
    only_check = "--check" in sys.argv[3:]
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    fixtures = os.path.join(root, "tests", "fixtures", "examples")
    differences = 0
    with tempfile.TemporaryDirectory() as tmp:
        for path in sorted(glob.glob(os.path.join(root, "families", "data", "*.json"))):
            text = open(path).read()
            try:
                fam = json.loads(text)
            except json.JSONDecodeError:
                continue  # not a family document
            ex = fam.get("example")
            if not isinstance(ex, dict) or not ex.get("name"):
                continue
            src = example_config(checkout, ex["name"])
            if not src:
                print(f"{fam['id']}: example {ex['name']} not in {checkout}", file=sys.stderr)
                continue
            cfg = json.load(open(src))
            backend = cfg.get("data_backend_config")
            cfg_abs = dict(cfg)
            if backend:
                cfg_abs["data_backend_config"] = os.path.abspath(backend_path(checkout, backend))
            if cfg.get("lycoris_config"):
                p = backend_path(checkout, cfg["lycoris_config"])
                if os.path.exists(p):
                    cfg_abs["lycoris_config"] = os.path.abspath(p)
            tmp_cfg = os.path.join(tmp, ex["name"] + ".json")
            json.dump(cfg_abs, open(tmp_cfg, "w"))
            out = subprocess.run([binary, "check", tmp_cfg, "--gpu", "h100", "--format", "json"],
                                 capture_output=True, text=True)
            try:  # any verdict's exit code (fits, does not fit, borderline) comes with the JSON report
                setup = json.loads(out.stdout)["setup"]
            except (json.JSONDecodeError, KeyError):
                print(f"{fam['id']}: check failed: {out.stderr.strip()}", file=sys.stderr)
                continue
            new = dict(ex)
            for k, e in FIELDS.items():
                if k in setup and (e in ex or setup[k] != DEFAULTS.get(e, object())):
                    new[e] = setup[k]
            # EMA is not in check's setup output: the config's own keys
            if cfg.get("use_ema") is True or "use_ema" in ex:
                new["use_ema"] = cfg.get("use_ema") is True
                new["ema_device"] = cfg.get("ema_device", "cpu")
            if new != ex:
                differences += 1
                moved = {k: (ex.get(k), new[k]) for k in new if ex.get(k) != new[k]}
                print(f"{fam['id']}: {moved}")
            if only_check:
                continue
            # the example keeps its key order; new keys go last
            line = json.dumps(new, separators=(", ", ": "))
            text2 = re.sub(r'"example": \{[^{}]*\}', lambda m: '"example": ' + line, text, count=1)
            if text2 != text:
                open(path, "w").write(text2)
            # fixtures: the config verbatim, and the files it names at the same paths under the checkout
            for rel in [os.path.join("simpletuner", "examples", ex["name"], "config.json")] + [
                    cfg[k].replace("config/examples/", "simpletuner/examples/", 1)
                    for k in ("data_backend_config", "lycoris_config") if cfg.get(k)]:
                src_file = os.path.join(checkout, rel)
                if not os.path.exists(src_file):
                    continue
                dest = os.path.join(fixtures, rel)
                os.makedirs(os.path.dirname(dest), exist_ok=True)
                shutil.copyfile(src_file, dest)
    print(f"{differences} families' examples differ from what check reads", file=sys.stderr)
    return 1 if only_check and differences else 0


if __name__ == "__main__":
    sys.exit(main())
