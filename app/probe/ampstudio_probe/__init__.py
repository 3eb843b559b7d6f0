"""ampstudio_probe: record any torch.amp training loop as an AMP Studio run folder.

    import ampstudio_probe
    probe = ampstudio_probe.Probe(model, scaler, out="runs/my-run", optimizer=opt, batch_size=256)
    ...                     # per optimizer step, after scaler.update():
    probe.step(loss)
    probe.close()           # or: with ampstudio_probe.Probe(...) as probe:

Modules: probe (the Probe), skip (seeing skipped steps: the optimizer.step and unscale_
wrappers), gradients (reading gradients and activations where they are defined), histogram
(AMP Studio's exponent binning), records (the JSON of steps, events and the summary), config
(config.json), run_folder (the files on disk), memory (bytes by category), lightning
(ProbeCallback).
"""
from ._version import __version__
from .config import FORMAT_VERSION
from .histogram import exponent_bin
from .probe import Probe


def __getattr__(name):
    # ProbeCallback derives from Lightning's Callback: Lightning is imported only when it is used.
    if name == "ProbeCallback":
        from .lightning import ProbeCallback
        return ProbeCallback
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["Probe", "ProbeCallback", "FORMAT_VERSION", "exponent_bin", "__version__"]
