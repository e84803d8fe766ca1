#!/usr/bin/env python3
"""Copies the SimpleTuner sweep's calibration cases into segadvise's measured-run format
(calibration/data/measured-runs.json, documented in docs/calibration.md).

The sweep's case fields already are the format's fields; this adds a stable id per run and names
the source. Usage: scripts/convert_sweep.py SWEEP.json OUT.json
"""
import json
import sys


def main():
    src, out = sys.argv[1], sys.argv[2]
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
        runs.append(row)
    doc = {
        "source": "shared/reference/simpletuner-sweep/calibration-cases.json: " + sweep.get("source", "") +
                  " (copied by scripts/convert_sweep.py)",
        "note": sweep.get("note", ""),
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
