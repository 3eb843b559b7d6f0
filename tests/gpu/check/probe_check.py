"""Checks a run folder the PyTorch probe wrote with a real GradScaler on the GPU: the injected
steps (and only those) skipped, the scale halved at each and never below, the growth tracker
reset there, histograms of every gradient at step 1 and every 50th with the inf of the injected
steps' histograms, memory from the CUDA allocator. Prints one line per check and a verdict.

    probe_check.py FOLDER 30,31
"""
import json
import os
import sys


def main():
    folder, injected = sys.argv[1], [int(s) for s in sys.argv[2].split(",") if s]
    lines = [json.loads(l) for l in open(os.path.join(folder, "metrics.jsonl")) if l.strip()]
    hists = [json.loads(l) for l in open(os.path.join(folder, "histograms.jsonl")) if l.strip()]
    summary = json.load(open(os.path.join(folder, "summary.json")))
    bad = []
    skipped = [m["step"] for m in lines if m["skipped"]]
    if skipped != injected:
        bad.append(f"skipped {skipped}, injected {injected}")
    for m in lines:
        if m["step"] in injected and not (m["scale_after"] == m["scale"] / 2 and m["growth_tracker"] == 0):
            bad.append(f"step {m['step']}: scale {m['scale']} -> {m['scale_after']}, tracker {m['growth_tracker']}")
    steps = sorted({h["step"] for h in hists if h["kind"] == "weight_grad"})
    if not steps or steps[0] != 1:
        bad.append(f"gradient histograms at steps {steps}")
    if not any(m["memory"].get("total", 0) > 0 for m in lines):
        bad.append("no memory figures")
    print(f"probe: {len(lines)} steps, skipped {skipped}, scale {lines[0]['scale']:g} -> {lines[-1]['scale_after']:g}, "
          f"histograms at {steps}, median {summary['median_step_ms']:.3f} ms/step, "
          f"probe cost {summary.get('source', {}).get('probe_overhead_ms_per_step', float('nan')):.3f} ms/step")
    for b in bad:
        print("  MISMATCH", b)
    print("probe check:", "passed" if not bad else "FAILED")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
