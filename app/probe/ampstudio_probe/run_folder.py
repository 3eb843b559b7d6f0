"""The run folder on disk, written the way AMP Studio's RunOutputWriter writes it.

* config.json and summary.json are replaced atomically (a temporary file in the same folder,
  fsync, os.replace): a reader sees the old file or the new one, never half of one.
* metrics.jsonl, histograms.jsonl and events.log are append-only. Each step's lines go out in
  one os.write on an O_APPEND descriptor (no Python buffer in between), so a killed script
  leaves whole lines but perhaps the last: the kernel stops a buffered write between two pages
  when SIGKILL arrives, so a line crossing a page can be cut (seen with histogram lines under
  load); the reader drops such a last line, saying so, as it does for a run killed mid-write.
  fsync every `sync_every` steps and at close bounds what a power cut takes.
* The periodic fsync runs on a background thread: it took 2-3 ms on a cloud disk, a third of a
  small model's step, and the training loop need not wait for it (a kill loses nothing it
  would have kept: the lines are in the page cache once os.write returns). Serialising and
  writing on that thread too was tried and measured slower: on a 2-vCPU machine the thread
  competed with the training loop for the GIL and the core, costing more than the ~50 us of
  JSON and write it took off the loop.
* A folder that already holds a run is refused unless overwrite=True (the CLI's --overwrite);
  the earlier run is replaced only at the first write (RunFolder.start), and the folder is claimed with the CLI's lock (flock on DIR/.ampstudio.lock) so a probe and
  `ampstudio-cli run --out DIR` never write one folder at once.
"""
from __future__ import annotations

import json
import os
import re
import tempfile
import threading
from typing import Iterable, List, Optional

CONFIG, METRICS, HISTOGRAMS, EVENTS, SUMMARY = (
    "config.json", "metrics.jsonl", "histograms.jsonl", "events.log", "summary.json")
RUN_FILES = (CONFIG, METRICS, HISTOGRAMS, EVENTS, SUMMARY)
LOCK = ".ampstudio.lock"

try:
    import fcntl
except ImportError:  # Windows: no advisory lock, the folder is still checked
    fcntl = None


def dumps_line(obj) -> bytes:
    """One compact JSON line. allow_nan=False: a stray nan would make the line invalid JSON."""
    return (json.dumps(obj, separators=(",", ":"), allow_nan=False, ensure_ascii=False) + "\n").encode()


def _file_mode() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


_FILE_MODE = _file_mode()  # what open() would give; mkstemp's files are 0600


def write_atomically(path: str, data: bytes) -> None:
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp", dir=d)
    try:
        if hasattr(os, "fchmod"):
            os.fchmod(fd, _FILE_MODE)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def write_json(path: str, obj) -> None:
    write_atomically(path, (json.dumps(obj, indent=4, allow_nan=False, ensure_ascii=False) + "\n").encode())


class _AppendFile:
    def __init__(self, path: str) -> None:
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_TRUNC, 0o644)

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:  # a regular file takes it in one call; loop for the rare short write
            n = os.write(self.fd, view)
            view = view[n:]

    def sync(self) -> None:
        os.fsync(self.fd)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def existing_run_outputs(folder: str) -> list:
    return [n for n in RUN_FILES if os.path.exists(os.path.join(folder, n))] + (
        ["checkpoints/"] if os.path.isdir(os.path.join(folder, "checkpoints")) else [])


class RunFolder:
    """The folder of one recording. The constructor only checks and claims: it refuses what the
    run could not write (a FIFO or a folder named metrics.jsonl would hang or fail later) and a
    folder holding a run unless overwrite=True, and takes the lock. Nothing there changes until
    the first write (the probe's first step): only then is an earlier run replaced, as the CLI
    replaces one once the new run has started, so a probe refused for its arguments, or a script
    that dies before its first step, leaves the old run whole."""

    def __init__(self, folder: str, overwrite: bool = False, sync_every: int = 50) -> None:
        self.folder = folder
        if os.path.exists(folder) and not os.path.isdir(folder):
            raise NotADirectoryError(f"{folder}: exists and is not a folder")
        os.makedirs(folder, exist_ok=True)
        self._lock_fd = -1
        self._claim()
        try:
            for n in RUN_FILES:
                path = os.path.join(folder, n)
                if os.path.lexists(path) and not os.path.isfile(path):
                    raise ValueError(f"{path}: exists and is not a file, so the run could not write it")
            self.earlier = existing_run_outputs(folder)
            if self.earlier and not overwrite:
                raise FileExistsError(
                    f"{folder} already holds a run ({', '.join(self.earlier)}); pass overwrite=True to replace it")
        except BaseException:
            self._release()
            raise
        self.started = False
        self.sync_every = max(1, int(sync_every))
        self.closed = False
        self._unsynced = 0
        self._lock = threading.Lock()  # fsync and close never overlap (a closed fd number is reused)
        self._wake = threading.Event()
        self._error: Optional[BaseException] = None
        self._syncer = None

    def start(self) -> None:
        """Replaces the earlier run (when overwrite=True) and opens the files: at the first write."""
        if self.started:
            return
        # As the CLI's replaceEarlierRun(): our file names and checkpoints/step-N.zip only (a
        # stale checkpoint would pass for this run's); other files the user keeps there stay.
        for n in (SUMMARY, CONFIG):
            if os.path.exists(os.path.join(self.folder, n)):
                os.unlink(os.path.join(self.folder, n))
        ckpt = os.path.join(self.folder, "checkpoints")
        if os.path.isdir(ckpt):
            for n in os.listdir(ckpt):
                if re.fullmatch(r"step-\d+\.zip", n):
                    os.unlink(os.path.join(ckpt, n))
        self.metrics = _AppendFile(os.path.join(self.folder, METRICS))
        self.histograms = _AppendFile(os.path.join(self.folder, HISTOGRAMS))
        self.events = _AppendFile(os.path.join(self.folder, EVENTS))
        self.started = True
        self._syncer = threading.Thread(target=self._sync_loop, name="ampstudio-probe-fsync", daemon=True)
        self._syncer.start()

    def _sync_loop(self) -> None:
        while True:
            self._wake.wait()
            self._wake.clear()
            with self._lock:
                if self.closed:
                    return
                try:
                    self._fsync_all()
                except OSError as err:  # raised by the caller's next sync()
                    self._error = err

    def _claim(self) -> None:
        if fcntl is None:
            return
        path = os.path.join(self.folder, LOCK)
        # Lock, then check that the file locked is still the one at the path, as the CLI's
        # FolderClaim does: a run that ends just then unlinks its lock file (while holding it),
        # and a lock on the unlinked file would claim nothing (the next run would lock a new one).
        for _ in range(20):
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                raise RuntimeError(f"{self.folder}: another process is writing a run there") from None
            except OSError as err:
                os.close(fd)
                raise RuntimeError(f"{path}: cannot lock it: {err.strerror or err}") from None
            held = os.fstat(fd)
            try:
                now = os.stat(path)
                same = (held.st_dev, held.st_ino) == (now.st_dev, now.st_ino)
            except FileNotFoundError:
                same = False
            if same:
                self._lock_fd = fd
                return
            os.close(fd)
        raise RuntimeError(f"{path}: could not be claimed (it keeps changing)")

    def _release(self) -> None:
        if self._lock_fd >= 0:
            try:
                os.unlink(os.path.join(self.folder, LOCK))
            except OSError:
                pass
            os.close(self._lock_fd)
            self._lock_fd = -1

    def write_config(self, config: dict) -> None:
        self.start()
        write_json(os.path.join(self.folder, CONFIG), config)

    def write_step(self, metrics: bytes, histograms: List[dict], events: List[str]) -> None:
        """One step: its metrics line (already JSON text), histogram objects and events."""
        self.start()
        h = b"".join(dumps_line(o) for o in histograms)
        if h:
            self.histograms.write(h)
        self.write_events(events)
        # The metrics line last: a step is in the run once its metrics are.
        self.metrics.write(metrics)
        self._unsynced += 1
        if self._unsynced >= self.sync_every:
            self._unsynced = 0
            self._wake.set()

    def write_events(self, events: Iterable[str]) -> None:
        e = "".join(s + "\n" for s in events)
        if e:
            self.start()
            self.events.write(e.encode())

    def flush(self) -> None:
        """Nothing is buffered: a step's lines are in the files once write_step returns."""

    def _fsync_all(self) -> None:
        for f in (self.histograms, self.events, self.metrics):
            f.sync()

    def sync(self) -> None:
        """fsync now, on the caller's thread."""
        if self._error is not None:
            err, self._error = self._error, None
            raise OSError(f"{self.folder}: writing the run failed: {err}") from err
        if self.started:
            with self._lock:
                self._fsync_all()
        self._unsynced = 0

    def write_summary(self, summary: dict) -> None:
        # The lines it summarises reach the disk first (run_output.cpp does the same).
        self.start()
        self.sync()
        write_json(os.path.join(self.folder, SUMMARY), summary)

    def close(self) -> None:
        if self.closed:
            return
        with self._lock:
            self.closed = True
            if self.started:
                for f in (self.histograms, self.events, self.metrics):
                    f.close()
        self._wake.set()  # the syncer sees `closed` and ends
        if self._syncer is not None:
            self._syncer.join()
        self._release()
