"""Writes tensorboard_writer.tfevents with TensorBoard's own event writer and protos (the
`tensorboard` package from PyPI), the way PyTorch's SummaryWriter and TensorFlow 2 log: a
training loss as simple values ("Loss/train"), GradScaler's scale ("amp/scale"), a validation
accuracy in percent as rank-0 float tensors of the scalars plugin ("val/acc"), a tag AMP Studio
does not chart ("hparams/dropout"), and a gradient histogram ("fc1.weight.grad"). test_tensorboard.cpp
checks what AMP Studio imports from it. Run by hand (the file is committed):
    python3 -m venv /tmp/tb && /tmp/tb/bin/pip install tensorboard
    /tmp/tb/bin/python tests/unit/data/make_tensorboard_log.py
"""
import glob
import os
import shutil
import tempfile

from tensorboard.compat.proto.event_pb2 import Event
from tensorboard.compat.proto.summary_pb2 import HistogramProto, Summary, SummaryMetadata
from tensorboard.compat.proto.tensor_pb2 import TensorProto
from tensorboard.compat.proto import types_pb2
from tensorboard.summary.writer.event_file_writer import EventFileWriter

HERE = os.path.dirname(os.path.abspath(__file__))
SCALES = [65536, 65536, 32768, 32768, 32768, 65536]

tmp = tempfile.mkdtemp()
w = EventFileWriter(tmp)
for step in range(1, 7):
    values = [Summary.Value(tag="Loss/train", simple_value=1.0 / step),
              Summary.Value(tag="amp/scale", simple_value=SCALES[step - 1]),
              Summary.Value(tag="hparams/dropout", simple_value=0.1)]
    if step % 3 == 0:
        meta = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name="scalars"))
        values.append(Summary.Value(tag="val/acc", metadata=meta,
                                    tensor=TensorProto(dtype=types_pb2.DT_FLOAT, float_val=[80.0 + step])))
    if step == 6:
        values.append(Summary.Value(tag="fc1.weight.grad", histo=HistogramProto(
            min=-0.3, max=3e-6, num=13, sum=0, sum_squares=0,
            bucket_limit=[-0.25, 0.0, 2e-6, 3e-6], bucket=[5, 0, 7, 1])))
    w.add_event(Event(wall_time=1000.0 + 0.5 * step, step=step, summary=Summary(value=values)))
w.close()
(path,) = glob.glob(os.path.join(tmp, "*tfevents*"))
shutil.copy(path, os.path.join(HERE, "tensorboard_writer.tfevents"))
shutil.rmtree(tmp)
print("wrote", os.path.join(HERE, "tensorboard_writer.tfevents"))
