"""AMP Studio's TensorBoard export read by TensorBoard itself: runs a short fp16 run with two
injected overflows and histograms, exports it with `ampstudio-cli export --format tensorboard`,
and reads the folder with the tensorboard package's EventAccumulator (the reader behind
`tensorboard --logdir`). Every logged loss, scale and skip must equal metrics.jsonl's (as the
float32 TensorBoard stores), and each exponent histogram the run's histograms.jsonl counts
(zeros, infinities and NaNs included, in num too).

    tensorboard_reader_check.py PYTHON_WITH_TENSORBOARD CLI WORK
Exits 77 (ctest: skipped) when that Python has no tensorboard package.
"""
import json
import os
import shutil
import struct
import subprocess
import sys


def f32(x):
    return struct.unpack("f", struct.pack("f", float(x)))[0]


def main():
    py, cli, work = sys.argv[1:4]
    if os.environ.get("AMP_TB_CHILD") != "1":
        # Re-run under the Python that has tensorboard (the venv test.sh makes, or the one named).
        if not os.path.exists(py) or subprocess.call([py, "-c", "import tensorboard"],
                                                     stderr=subprocess.DEVNULL) != 0:
            print(f"skipped: {py} has no tensorboard package (installer/test.sh installs it from PyPI into a venv)")
            return 77
        env = dict(os.environ, AMP_TB_CHILD="1")
        return subprocess.call([py, __file__] + sys.argv[1:], env=env)

    from tensorboard.backend.event_processing import event_accumulator as ea

    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    run = os.path.join(work, "run")
    subprocess.check_call([cli, "run", "--set", "model.width=32", "--set", "train.batch_size=16",
                           "--set", "train.steps=40", "--set", "amp.mode=fp16", "--set", "scaler.growth_interval=10",
                           "--set", "train.inject_nonfinite=5,6", "--set", "train.histogram_every=10",
                           "--out", run, "--quiet"])
    tb = os.path.join(work, "tb")
    subprocess.check_call([cli, "export", "--run", run, "--format", "tensorboard", "--output", tb])
    (sub,) = os.listdir(tb)
    acc = ea.EventAccumulator(os.path.join(tb, sub), size_guidance={ea.SCALARS: 0, ea.HISTOGRAMS: 0, ea.TENSORS: 0})
    acc.Reload()
    steps = [json.loads(line) for line in open(os.path.join(run, "metrics.jsonl"))]
    loss = {e.step: e.value for e in acc.Scalars("train/loss")}
    scale = {e.step: e.value for e in acc.Scalars("amp/loss_scale")}
    skipped = {e.step: e.value for e in acc.Scalars("amp/skipped")}
    bad = []
    for m in steps:
        s = m["step"]
        if loss.get(s) != f32(m["loss"]):
            bad.append(f"step {s}: loss {loss.get(s)} != {f32(m['loss'])}")
        if scale.get(s) != f32(m["scale"]):
            bad.append(f"step {s}: scale {scale.get(s)} != {m['scale']}")
        if skipped.get(s) != (1.0 if m["skipped"] else 0.0):
            bad.append(f"step {s}: skipped {skipped.get(s)} != {m['skipped']}")
    if [s for s, v in skipped.items() if v] != [5, 6]:
        bad.append(f"skipped steps {sorted(s for s, v in skipped.items() if v)}, expected [5, 6]")
    hist = [json.loads(line) for line in open(os.path.join(run, "histograms.jsonl"))]
    checked = 0
    for h in hist:
        tag = f"exponents_unscaled/{h['kind']}/{h['tensor']}"
        events = {e.step: e for e in acc.Histograms(tag)}
        e = events.get(h["step"])
        if e is None:
            bad.append(f"{tag} at step {h['step']}: missing")
            continue
        # On a log2 axis: the bucket [e, e + 1) is exponent e, [-41, -40) the zeros, [18, 19) inf
        # and NaN; empty end buckets left out, min the first bucket's left edge, num every value.
        hv = e.histogram_value
        u = h["unscaled"]
        want = {float(k): float(c) for k, c in zip(range(h["min_exp"], h["max_exp"] + 1), u[:58])}
        want[-41.0] = float(u[58])
        want[18.0] = float(u[59] + u[60])
        got = {}
        for i, (limit, count) in enumerate(zip(hv.bucket_limit, hv.bucket)):
            left = hv.min if i == 0 else hv.bucket_limit[i - 1]
            if limit != left + 1:
                bad.append(f"{tag} at step {h['step']}: bucket {i} is [{left}, {limit}), not one binade")
            got[left] = count
        if {k: v for k, v in got.items() if v} != {k: v for k, v in want.items() if v}:
            bad.append(f"{tag} at step {h['step']}: buckets differ")
        if hv.num != sum(u):
            bad.append(f"{tag} at step {h['step']}: num {hv.num}, values {sum(u)}")
        checked += 1
    config = acc.Tensors("ampstudio/config")[0].tensor_proto.string_val[0].decode()
    if json.loads(config)["amp"]["mode"] != "fp16":
        bad.append("the config text does not say fp16")
    for b in bad[:20]:
        print("MISMATCH", b)
    print(f"TensorBoard read {len(loss)} steps, {checked} exponent histograms; {len(bad)} mismatches")
    return 1 if bad or checked == 0 or len(loss) != len(steps) else 0


if __name__ == "__main__":
    sys.exit(main())
