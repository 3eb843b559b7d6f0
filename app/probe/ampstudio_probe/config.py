"""config.json: what the probe can tell about a run, in AMP Studio's config keys.

The reader (engine/io/config_json.cpp -> setConfigValue) refuses any key that is not in
engine/config/config_schema.cpp, so this module writes only keys from SCHEMA_KEYS (a test checks
that list against the C++ file) plus "format_version". A nested object stands for dotted keys:
{"scaler": {"init_scale": 65536}} is scaler.init_scale.

A model or data set defined outside AMP Studio is model.name / data.name "external"; the user's
config= overrides can name one of ours instead ({"model.name": "recipe_mlp", "model.width": 512}).
"""
from __future__ import annotations

from typing import Any, Dict, Optional, Tuple

import torch

FORMAT_VERSION = 1  # config.json's "format_version": the reader refuses a larger number
EXTERNAL = "external"

# Keys of buildKeys() in engine/config/config_schema.cpp (tests/test_probe.py checks that each
# is still there): what the probe writes and what config= may set.
SCHEMA_KEYS = frozenset("""
name seed amp.mode backend tf32 reduced_precision_reduction
scaler.kind scaler.enabled scaler.init_scale scaler.growth_factor scaler.backoff_factor
scaler.growth_interval scaler.min_scale scaler.max_scale scaler.hysteresis
optimizer.name optimizer.lr optimizer.momentum optimizer.nesterov optimizer.weight_decay
optimizer.beta1 optimizer.beta2 optimizer.eps
schedule.name schedule.step_size schedule.gamma schedule.warmup_steps schedule.min_lr
model.name model.width model.layers model.heads model.embd model.block model.hidden
model.activation model.dropout model.batchnorm model.cnn model.depth model.base_width model.stem
data.name data.path data.test_path data.image_size data.channels data.pad_to data.augment_crop
data.augment_flip data.cache data.subset data.test_subset data.device_cache data.normalize
data.test_fraction data.samples data.noise data.classes data.batches data.label_column data.header
train.steps train.epochs train.batch_size train.accumulation train.clip_norm train.loss
train.loss_weight train.histogram_every train.eval_every train.on_divergence
train.inject_nonfinite train.inject_param train.post_unscale_check train.threads
checkpoint.every checkpoint.at_end
""".split())

MODES = ("fp32", "fp16", "bf16", "pure_fp16")  # amp.mode's choices

# What the reader (setConfigValue) accepts for each key, so that the probe refuses at construction
# what the app and CLI would refuse when opening the run (seed=-1, width "wide"), not after a whole
# run was recorded. tests/test_probe.py checks these against config_schema.cpp's intKey, numKey,
# boolKey, strKey, listKey and choiceKey lines.
INT_KEYS = frozenset("""
seed scaler.growth_interval scaler.hysteresis schedule.step_size schedule.warmup_steps
model.width model.layers model.heads model.embd model.block model.depth model.base_width
data.image_size data.channels data.pad_to data.augment_crop data.subset data.test_subset
data.samples data.classes data.batches train.steps train.epochs train.batch_size
train.accumulation train.histogram_every train.eval_every train.threads checkpoint.every
""".split())
NUM_KEYS = frozenset("""
scaler.init_scale scaler.growth_factor scaler.backoff_factor scaler.min_scale scaler.max_scale
optimizer.lr optimizer.momentum optimizer.weight_decay optimizer.beta1 optimizer.beta2 optimizer.eps
schedule.gamma schedule.min_lr model.dropout data.test_fraction data.noise train.clip_norm
train.loss_weight
""".split())
BOOL_KEYS = frozenset("tf32 reduced_precision_reduction optimizer.nesterov model.batchnorm data.augment_flip "
                      "checkpoint.at_end".split())
STR_KEYS = frozenset("name model.cnn data.path data.test_path data.label_column train.inject_param".split())
LIST_KEYS = frozenset("model.hidden train.inject_nonfinite".split())
CHOICES = {
    "amp.mode": MODES, "backend": ("auto", "cpu", "cuda"), "data.cache": ("on", "off"),
    "data.device_cache": ("auto", "on", "off"), "data.header": ("auto", "yes", "no"),
    "data.name": ("synthetic", "fmnist", "cifar10", "images", "spirals", "circles", "blobs", "csv", "text",
                  "copy", "reverse", "sort", "add", "external"),
    "data.normalize": ("unit", "standard", "none"), "model.activation": ("relu", "tanh", "sigmoid", "gelu"),
    "model.name": ("recipe_mlp", "mlp", "cnn", "resnet", "gpt", "external"), "model.stem": ("auto", "cifar", "imagenet"),
    "optimizer.name": ("sgd", "adam", "adamw"), "scaler.enabled": ("auto", "true", "false"),
    "scaler.kind": ("dynamic", "static", "none", "apex_dynamic", "hysteresis"),
    "schedule.name": ("constant", "step", "cosine"), "train.loss": ("auto", "cross_entropy", "mse"),
    "train.on_divergence": ("stop", "continue"), "train.post_unscale_check": ("warn", "skip"),
}
_INT32 = (-2 ** 31, 2 ** 31 - 1)
MAX_STRING_BYTES = 4096  # kMaxStringValueBytes


def _as_int(v):
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, str):
        try:
            return int(v.strip(), 10)
        except ValueError:
            return None
    return None


def check_value(key: str, v: Any) -> None:
    """Refuses a value the reader would refuse for `key` (one line naming the key and value)."""
    def bad(what):
        raise ValueError(f"config {key}={v!r}: expected {what}; AMP Studio would refuse to open the run")
    if key in INT_KEYS:
        x = _as_int(v)
        lo, hi = (0, 2 ** 64 - 1) if key == "seed" else _INT32
        if x is None or not lo <= x <= hi:
            bad(f"an integer from {lo} to {hi}")
    elif key in NUM_KEYS:
        try:
            x = float(v) if not isinstance(v, bool) else None
        except (TypeError, ValueError):
            x = None
        if x is None or x != x or x in (float("inf"), float("-inf")):
            bad("a finite number")
    elif key in BOOL_KEYS:
        if not (isinstance(v, bool) or v in ("true", "false")):
            bad("true or false")
    elif key in STR_KEYS:
        if not isinstance(v, str) or len(v.encode()) > MAX_STRING_BYTES:
            bad(f"a string of at most {MAX_STRING_BYTES} bytes")
    elif key in LIST_KEYS:
        items = v if isinstance(v, (list, tuple, set)) else str(v).split(",") if isinstance(v, (str, int)) else None
        if items is None or any(_as_int(i) is None for i in items):
            bad("a list of integers")
    elif key in CHOICES:
        if str(v) not in CHOICES[key]:
            bad("one of " + " | ".join(CHOICES[key]))

# torch.optim classes AMP Studio has an equivalent of: optimizer.name and the hyperparameters.
_OPTIMIZERS = {"SGD": "sgd", "Adam": "adam", "AdamW": "adamw"}


def flatten(d: Dict[str, Any], prefix: str = "") -> Dict[str, Any]:
    """{"a": {"b": 1}, "c.d": 2} -> {"a.b": 1, "c.d": 2}: the user may give either form."""
    out: Dict[str, Any] = {}
    for k, v in d.items():
        key = prefix + str(k)
        if isinstance(v, dict):
            out.update(flatten(v, key + "."))
        else:
            out[key] = v
    return out


def nest(flat: Dict[str, Any]) -> Dict[str, Any]:
    """Dotted keys to nested objects, as configToJson() writes them."""
    root: Dict[str, Any] = {}
    for key, v in flat.items():
        node = root
        *heads, last = key.split(".")
        for h in heads:
            node = node.setdefault(h, {})
        node[last] = v
    return root


def check_keys(flat: Dict[str, Any]) -> None:
    """Refuses, at construction, a key AMP Studio's reader would refuse when opening the run."""
    for k in flat:
        if k == "format_version" or k in SCHEMA_KEYS or (k.startswith("autocast.") and len(k) > 9):
            continue
        raise ValueError(f"config key {k!r} is not one of AMP Studio's config keys "
                         "(engine/config/config_schema.cpp); the app would refuse the run")
    for k, v in flat.items():
        if k != "format_version":
            check_value(k, v)


def optimizer_settings(opt) -> Tuple[Dict[str, Any], str]:
    """(config keys, class name) of a torch.optim optimizer; keys only where the schema has them."""
    if opt is None:
        return {}, ""
    cls = type(opt).__name__
    g = opt.param_groups[0] if getattr(opt, "param_groups", None) else {}
    out: Dict[str, Any] = {}
    # The schedule's starting lr (a scheduler keeps it as "initial_lr" and may already have
    # moved "lr", e.g. a warm-up's first factor), as AMP Studio's optimizer.lr is.
    lr = g.get("initial_lr", g.get("lr"))
    if lr is not None:
        out["optimizer.lr"] = float(lr)  # also a tensor lr
    name = _OPTIMIZERS.get(cls)
    if name is None:
        return out, cls  # the default optimizer.name stays; summary.json's source names the class
    out["optimizer.name"] = name
    wd = float(g.get("weight_decay", 0.0))
    out["optimizer.weight_decay"] = wd
    if name == "sgd":
        out["optimizer.momentum"] = float(g.get("momentum", 0.0))
        # AMP Studio refuses nesterov without momentum, as PyTorch does at construction.
        out["optimizer.nesterov"] = bool(g.get("nesterov", False))
    else:
        b1, b2 = g.get("betas", (0.9, 0.999))
        out["optimizer.beta1"], out["optimizer.beta2"] = float(b1), float(b2)
        out["optimizer.eps"] = float(g.get("eps", 1e-8))
    return out, cls


def scaler_enabled(scaler) -> bool:
    if scaler is None:
        return False
    is_enabled = getattr(scaler, "is_enabled", None)
    return bool(is_enabled()) if callable(is_enabled) else True


def scaler_settings(scaler) -> Dict[str, Any]:
    """scaler.* keys from a GradScaler's settings (or any object with the same attributes)."""
    if scaler is None:
        return {"scaler.enabled": "false"}
    out: Dict[str, Any] = {"scaler.kind": "dynamic",  # GradScaler's rule
                           "scaler.enabled": "true" if scaler_enabled(scaler) else "false"}
    for key, attr in (("scaler.init_scale", "_init_scale"), ("scaler.growth_factor", "_growth_factor"),
                      ("scaler.backoff_factor", "_backoff_factor"),
                      ("scaler.growth_interval", "_growth_interval")):
        v = getattr(scaler, attr, None)
        if v is not None:
            out[key] = int(v) if key == "scaler.growth_interval" else float(v)
    return out


def device_settings(device: torch.device, mode: str) -> Dict[str, Any]:
    """backend, and the GPU's reduced-precision switches where the schema has them."""
    if device.type == "cuda":
        out: Dict[str, Any] = {"backend": "cuda", "tf32": bool(torch.backends.cuda.matmul.allow_tf32)}
        flag = {"fp16": "allow_fp16_reduced_precision_reduction",
                "bf16": "allow_bf16_reduced_precision_reduction"}.get(mode)
        if flag and hasattr(torch.backends.cuda.matmul, flag):
            out["reduced_precision_reduction"] = bool(getattr(torch.backends.cuda.matmul, flag))
        return out
    threads = torch.get_num_threads()
    out = {"backend": "cpu"}
    if 0 < threads <= 1024:
        out["train.threads"] = threads
    return out


def build_config(*, name: str, mode: str, device: torch.device, scaler, optimizer,
                 histogram_every: int, batch_size: Optional[int], seed: Optional[int],
                 steps: Optional[int], overrides: Dict[str, Any],
                 optimizer_keys: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """The nested config.json object; overrides (already flattened and checked) win.
    optimizer_keys: the optimizer's settings as read at the start (a run's config is its start,
    not where a schedule left the lr); else read from `optimizer` now."""
    flat: Dict[str, Any] = {"format_version": FORMAT_VERSION, "name": name, "amp.mode": mode,
                            "model.name": EXTERNAL, "data.name": EXTERNAL,
                            "train.histogram_every": int(histogram_every)}
    flat.update(device_settings(device, mode))
    flat.update(scaler_settings(scaler))
    flat.update(optimizer_keys if optimizer_keys is not None else optimizer_settings(optimizer)[0])
    if batch_size:
        flat["train.batch_size"] = int(batch_size)
    if seed is not None:
        flat["seed"] = int(seed)
    if steps:
        flat["train.steps"] = int(steps)
    flat.update(overrides)
    for k, v in flat.items():  # ints travel as JSON integers, lists (inject_nonfinite) as lists
        if isinstance(v, (tuple, set)):
            flat[k] = sorted(v) if isinstance(v, set) else list(v)
    return nest(flat)
