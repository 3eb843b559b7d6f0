"""A PyTorch Lightning callback that records a Trainer's run with a Probe.

Lightning is not a dependency: this class only has the callback methods Lightning calls, so
it works as a duck-typed callback. With Lightning 2.x, derive if your version insists on a
Callback subclass:

    import lightning.pytorch as pl
    from ampstudio_probe import ProbeCallback

    class AmpStudio(ProbeCallback, pl.Callback):
        pass

    trainer = pl.Trainer(precision="16-mixed", callbacks=[AmpStudio(out="runs/lit", batch_size=256)])

What it reads from the Trainer (each with getattr, as the attribute names moved between
versions): the GradScaler of a mixed-precision plugin (trainer.precision_plugin.scaler or
trainer.strategy.precision_plugin.scaler), the first optimizer (trainer.optimizers[0]),
accumulate_grad_batches, current_epoch. The loss is outputs["loss"] (or outputs itself).
Lightning calls on_train_batch_end once per batch; with gradient accumulation the probe steps
only on the batch that ends an accumulation window, once per optimizer step.
"""
from __future__ import annotations

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


class ProbeCallback:
    """on_train_start makes the Probe (unless one is given), on_train_batch_end steps it,
    on_train_end / on_exception close it."""

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
