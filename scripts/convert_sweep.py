#!/usr/bin/env python3
"""Copies the SimpleTuner sweep's calibration cases into segadvise's measured-run format
(calibration/data/measured-runs.json, documented in docs/calibration.md).

The sweep's case fields already are the format's fields; this adds a stable id per run and names
the source. With an EXAMPLES folder and a segadvise binary it also ties every run to the setup its
example's own config.json and data backend give (`segadvise check`, as a user's pre-flight check and
the end-to-end scorer read them): the trained width/height/frames/batch after the trainer's bucketing,
the modelled family id, LoRA and optimizer. The sweep's recorded shape (often the validation
resolution: Wan's 832x480 is a pixel_area 480 bucket, ~640x352, in training) is kept as
recorded_shape. Calibrating on the shape users get is what makes the fit transfer to `check`.

The sweep's `mode` names are kept as they are; they mean what the sweep ran
(docs/sources/measured-sweep.md), and `segadvise` parses them that way: `activation-offload` is
per-block checkpointing PLUS attention offload (`gradient_checkpointing: true`,
`gradient_checkpointing_offload_attention: true`), not offload without checkpointing (that one is `none-offload`).

Usage: scripts/convert_sweep.py SWEEP.json OUT.json [EXAMPLES_DIR SEGADVISE_BIN]
"""
import json
import os
import subprocess
import sys
import tempfile

# the keys each sweep mode set on top of the example config (docs/sources/measured-sweep.md)
MODE_KEYS = {
    "none": {"gradient_checkpointing": False},
    "layer": {"gradient_checkpointing": True},
    "interval2": {"gradient_checkpointing": True, "gradient_checkpointing_interval": 2},
    "seg2-stride4": {"gradient_checkpointing": True, "gradient_checkpointing_interval": 2,
                     "gradient_checkpointing_segment_stride": 4},
    "activation-offload": {"gradient_checkpointing": True, "gradient_checkpointing_offload_attention": True},
    "seg2-stride4-offload": {"gradient_checkpointing": True, "gradient_checkpointing_interval": 2,
                             "gradient_checkpointing_segment_stride": 4,
                             "gradient_checkpointing_offload_attention": True},
}
VARIED = ["gradient_checkpointing", "gradient_checkpointing_interval", "gradient_checkpointing_segment_stride",
          "gradient_checkpointing_offload_attention", "base_model_precision", "sdnq_use_hadamard"]


def derived_setup(case, examples, binary, workdir, cache):
    """The setup `segadvise check` reads from the case's example config (schedule-independent)."""
    if case["example"] in cache:
        return cache[case["example"]]
    src = os.path.join(examples, "simpletuner", "examples", case["example"], "config.json")
    setup = None
    if os.path.exists(src):
        cfg = json.load(open(src))
        for k in VARIED:
            cfg.pop(k, None)
        cfg["gradient_checkpointing"] = True
        for key in ("data_backend_config", "lycoris_config"):
            rel = cfg.get(key)
            if rel:
                path = os.path.join(examples, rel.replace("config/examples/", "simpletuner/examples/", 1))
                if os.path.exists(path):
                    cfg[key] = os.path.abspath(path)
        path = os.path.join(workdir, case["example"] + ".json")
        json.dump(cfg, open(path, "w"))
        p = subprocess.run([binary, "check", path, "--gpu", "h100", "--format", "json"], capture_output=True, text=True)
        try:
            setup = json.loads(p.stdout)["setup"]
        except (ValueError, KeyError):
            print("no setup for", case["example"], p.stderr.strip()[:200], file=sys.stderr)
    cache[case["example"]] = setup
    return setup


def main():
    src, out = sys.argv[1], sys.argv[2]
    examples = sys.argv[3] if len(sys.argv) > 4 else None
    binary = sys.argv[4] if len(sys.argv) > 4 else None
    workdir, cache = tempfile.mkdtemp(), {}
    with open(src) as f:
        sweep = json.load(f)
    runs = []
    seen = {}
    for c in sweep["cases"]:
        key = "{model}|{gpu}|{precision}|{mode}|{variant}|{b}".format(b=c.get("backend", ""), **c)
        seen[key] = seen.get(key, 0) + 1
        rid = "{model}/{gpu}/{precision}/{mode}".format(**c)
        if c.get("variant", "main") != "main":
            rid += "/" + c["variant"] + ("-" + c["backend"] if c.get("backend") else "")
        if seen[key] > 1:
            rid += "#%d" % seen[key]
        row = {"id": rid}
        row.update(c)
        setup = derived_setup(c, examples, binary, workdir, cache) if examples else None
        if setup:
            row["recorded_shape"] = "%sx%sx%sf batch %s" % (c.get("width"), c.get("height"), c.get("frames"), c.get("batch"))
            row["family_id"] = setup["model"]
            for k in ("width", "height", "frames", "batch", "lora_type", "lora_rank", "optimizer", "ramtorch"):
                row[k] = setup[k]
            row["text_tokens"] = int(setup["text_tokens"])
            # the no-compile variant is the same example with regional compilation turned off
            row["regional_compile"] = bool(setup.get("regional_compile")) and c.get("variant") != "no-compile"
        runs.append(row)
    unknown = sorted({r["mode"] for r in runs} - set(MODE_KEYS))
    if unknown:
        print("modes the sweep README does not describe (kept as named):", ", ".join(unknown), file=sys.stderr)
    doc = {
        "source": sweep.get("source", "") +
                  " (copied by scripts/convert_sweep.py; described in docs/sources/measured-sweep.md)",
        "note": sweep.get("note", "") + "; mode = the keys the sweep set (docs/sources/measured-sweep.md): "
                "activation-offload is per-block checkpointing plus attention offload",
        "runs": runs,
    }
    with open(out, "w") as f:
        f.write("{\n")
        f.write(' "source": %s,\n' % json.dumps(doc["source"]))
        f.write(' "note": %s,\n' % json.dumps(doc["note"]))
        f.write(' "runs": [\n')
        f.write(",\n".join("  " + json.dumps(r) for r in runs))
        f.write("\n ]\n}\n")


if __name__ == "__main__":
    main()
