"""A PyTorch Lightning callback that records a Trainer's run with a Probe.

    import lightning.pytorch as pl
    from ampstudio_probe import ProbeCallback

    trainer = pl.Trainer(precision="bf16-mixed", callbacks=[ProbeCallback(out="runs/lit", batch_size=256)])

Lightning 2.x accepts only subclasses of its Callback: ProbeCallback derives from
lightning.pytorch.Callback and pytorch_lightning.Callback, whichever of the two packages is
installed (both when both are: they are different classes), and from nothing else when neither
is (a duck-typed callback for older Lightning). `ampstudio_probe.ProbeCallback` imports this
module, and with it Lightning, only when first used.

Where the gradients are read: Lightning runs forward and backward inside optimizer.step(closure),
and calls on_before_optimizer_step after backward (and after GradScaler's unscale_ in 16-bit
mixed precision) but before it clips: the callback reads them there, so grad_norm is before
clipping in every precision, as in a plain loop with GradScaler.

What it reads from the Trainer (each with getattr, as the attribute names moved between
versions): the GradScaler of a mixed-precision plugin (trainer.precision_plugin.scaler or
trainer.strategy.precision_plugin.scaler), the first optimizer (trainer.optimizers[0]),
accumulate_grad_batches, current_epoch. The loss is outputs["loss"] (or outputs itself).
Lightning calls on_train_batch_end once per batch; with gradient accumulation the probe steps
only on the batch that ends an accumulation window, once per optimizer step.
"""
from __future__ import annotations

import importlib
from typing import Optional

from .probe import Probe


def _find_scaler(trainer):
    for path in (("precision_plugin", "scaler"), ("strategy", "precision_plugin", "scaler"),
                 ("strategy", "precision", "scaler")):
        obj = trainer
        for attr in path:
            obj = getattr(obj, attr, None)
            if obj is None:
                break
        if obj is not None:
            return obj
    return None


def _lightning_bases() -> tuple:
    bases = []
    for module in ("lightning.pytorch", "pytorch_lightning"):
        try:
            bases.append(importlib.import_module(module).Callback)
        except Exception:  # noqa: BLE001 -- not installed, or broken: then not a base
            continue
    return tuple(bases) or (object,)


class ProbeCallback(*_lightning_bases()):
    """on_train_start makes the Probe (unless one is given), on_before_optimizer_step reads the
    gradients, on_train_batch_end steps it, on_train_end / on_exception close it."""

    def __init__(self, probe: Optional[Probe] = None, out: Optional[str] = None, **probe_kwargs) -> None:
        if probe is None and out is None:
            raise ValueError("ProbeCallback needs a Probe or out=FOLDER")
        self.probe = probe
        self.out = out
        self.probe_kwargs = probe_kwargs

    def on_train_start(self, trainer, pl_module) -> None:
        if self.probe is None:
            optimizers = getattr(trainer, "optimizers", None) or [None]
            self.probe = Probe(pl_module, _find_scaler(trainer), self.out, optimizer=optimizers[0],
                               **self.probe_kwargs)

    def on_before_optimizer_step(self, trainer, pl_module, optimizer, *args) -> None:
        if self.probe is None:
            self.on_train_start(trainer, pl_module)
        # Lightning passes its own optimizer here; the probe knows the torch one it wraps.
        self.probe.read_gradients(getattr(optimizer, "optimizer", optimizer))

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, *args) -> None:
        if self.probe is None:
            self.on_train_start(trainer, pl_module)
        accumulate = int(getattr(trainer, "accumulate_grad_batches", 1) or 1)
        if (batch_idx + 1) % accumulate:
            return  # mid-window: no optimizer step yet
        loss = outputs.get("loss") if isinstance(outputs, dict) else outputs
        self.probe.step(loss, epoch=int(getattr(trainer, "current_epoch", 0) or 0))

    def on_train_end(self, trainer, pl_module) -> None:
        if self.probe is not None:
            self.probe.close("finished")

    def on_exception(self, trainer, pl_module, exception) -> None:
        if self.probe is not None:
            self.probe.close("stopped" if isinstance(exception, KeyboardInterrupt) else "failed")
