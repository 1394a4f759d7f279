"""Write tests/data/onnx_torch/: small torch.nn models exported to ONNX by PyTorch, with torch's numbers.

Run it with a Python that has torch, onnx and numpy (PyTorch is not a dependency of the
library nor of its test suite: keep it out of the project's venv)::

    python3 -m venv /work/torchvenv
    /work/torchvenv/bin/pip install torch==2.13.0 onnx numpy onnxscript   # onnxscript: the dynamo exporter
    /work/torchvenv/bin/python scripts/make_torch_onnx_corpus.py [--out tests/data/onnx_torch]

Each model is exported twice where the exporter can: by the TorchScript exporter
(``dynamo=False``, opset 17: what most files in the wild come from) as ``<model>-ts17``
and by the dynamo exporter (opset 18) as ``<model>-dynamo18``. For each export it writes

* ``<name>.onnx``: the model, weights as initializers (one file, no external data);
* ``<name>.npz`` (read with ``allow_pickle=False``): ``input/<i>`` (the inputs, in the
  order of the graph's inputs), ``output/<i>`` (torch's outputs), ``weight/<i>`` (a fixed
  random array per output), ``grad_input/<i>`` (torch's gradient of the loss
  ``sum_i sum(output_i * weight_i)`` w.r.t. floating-point input ``i``) and
  ``grad_param/<initializer name>`` (the same gradient w.r.t. each parameter that the model
  stores unchanged as an initializer of that name; an exporter that fuses or re-lays
  a parameter, as BatchNorm into Conv or LSTM's gates, leaves no entry for it).

Everything is seeded (torch and numpy generators per model), so a run writes the same numbers;
the models are small so the folder stays well under 2 MB. The test reading it is
tests/test_onnx_torch_exports.py (it needs no torch).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import tempfile
import warnings

import numpy as np
import onnx
import torch
from torch import nn

TS_OPSET, DYNAMO_OPSET = 17, 18


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 4), nn.Softmax(dim=-1))

    def forward(self, x):
        return self.net(x)


class ConvBnPool(nn.Module):
    """Plain convolution, BatchNorm in eval mode, max pooling and adaptive average pooling to 1x1."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.pool = nn.MaxPool2d(2)
        self.gap = nn.AdaptiveAvgPool2d(1)

    def forward(self, x):
        return torch.flatten(self.gap(self.pool(torch.relu(self.bn(self.conv(x))))), 1)


class ConvGroupedDilated(nn.Module):
    """Depthwise (groups = channels), grouped and dilated convolutions."""

    def __init__(self):
        super().__init__()
        self.depthwise = nn.Conv2d(4, 4, 3, padding=1, groups=4)
        self.grouped = nn.Conv2d(4, 6, 3, padding=1, groups=2)
        self.dilated = nn.Conv2d(6, 3, 3, padding=2, dilation=2)

    def forward(self, x):
        return self.dilated(torch.tanh(self.grouped(self.depthwise(x))))


class AvgPool(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 3, 3, padding=1)
        self.pool = nn.AvgPool2d(2)

    def forward(self, x):
        return self.pool(self.conv(x))


class LayerNormGelu(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln = nn.LayerNorm(8)
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        return nn.functional.gelu(self.fc(self.ln(x)))


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(d_model=8, nhead=2, dim_feedforward=16, dropout=0.0,
                                                batch_first=True)

    def forward(self, x):
        return self.layer(x)


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.mha = nn.MultiheadAttention(8, 2, batch_first=True)

    def forward(self, query, key, value):
        out, weights = self.mha(query, key, value, need_weights=True)
        return out, weights


class Lstm(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTM(4, 5, batch_first=True)

    def forward(self, x):
        out, (h, c) = self.rnn(x)
        return out, h, c


class Gru(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.GRU(4, 5, batch_first=True)

    def forward(self, x):
        out, h = self.rnn(x)
        return out, h


class Embedding(nn.Module):
    """Token ids -> vectors -> a linear layer: its gradients are the parameters' only."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(10, 4)
        self.fc = nn.Linear(4, 3)

    def forward(self, tokens):
        return self.fc(self.emb(tokens))


class UpsampleNearest(nn.Module):
    def __init__(self):
        super().__init__()
        self.up = nn.Upsample(scale_factor=2, mode="nearest")

    def forward(self, x):
        return self.up(x)


class UpsampleBilinear(nn.Module):
    def __init__(self):
        super().__init__()
        self.up = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False)

    def forward(self, x):
        return self.up(x)


class LeNet(nn.Module):
    """LeNet-5's layout, narrowed (4 and 8 channels) so its weights stay a few kB."""

    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(1, 4, 5), nn.ReLU(), nn.MaxPool2d(2),
                                      nn.Conv2d(4, 8, 5), nn.ReLU(), nn.MaxPool2d(2))
        self.classifier = nn.Sequential(nn.Flatten(), nn.Linear(8 * 4 * 4, 32), nn.ReLU(),
                                        nn.Linear(32, 10), nn.LogSoftmax(dim=-1))

    def forward(self, x):
        return self.classifier(self.features(x))


def _normal(*shape):
    return lambda g: torch.randn(*shape, generator=g)


# name -> (module class, input makers (a torch.Generator -> a tensor), input names)
MODELS = {
    "mlp": (Mlp, [_normal(3, 6)], ["x"]),
    "conv_bn_pool": (ConvBnPool, [_normal(2, 3, 8, 8)], ["x"]),
    "conv_grouped_dilated": (ConvGroupedDilated, [_normal(1, 4, 6, 6)], ["x"]),
    "avg_pool": (AvgPool, [_normal(1, 2, 6, 6)], ["x"]),
    "layer_norm_gelu": (LayerNormGelu, [_normal(2, 3, 8)], ["x"]),
    "transformer_encoder": (Encoder, [_normal(2, 3, 8)], ["x"]),
    "multihead_attention": (Attention, [_normal(2, 3, 8), _normal(2, 4, 8), _normal(2, 4, 8)],
                            ["query", "key", "value"]),
    "lstm": (Lstm, [_normal(2, 3, 4)], ["x"]),
    "gru": (Gru, [_normal(2, 3, 4)], ["x"]),
    "embedding": (Embedding, [lambda g: torch.randint(0, 10, (2, 5), generator=g)], ["tokens"]),
    "upsample_nearest": (UpsampleNearest, [_normal(1, 2, 3, 3)], ["x"]),
    "upsample_bilinear": (UpsampleBilinear, [_normal(1, 2, 3, 3)], ["x"]),
    "lenet": (LeNet, [_normal(2, 1, 28, 28)], ["x"]),
}


def _randomise(module: nn.Module, g: torch.Generator) -> None:
    """Make every parameter distinct and BatchNorm's statistics non-trivial.

    Fresh biases and norms' affine parameters are zeros and ones: the TorchScript exporter
    stores equal initializers once (MultiheadAttention's zero q/k/v biases became
    ``mha.out_proj.bias``), so a parameter's gradient would be the sum over several
    uses; and BatchNorm at its initial state is an identity, which tests nothing.
    """
    with torch.no_grad():
        for p in module.parameters():
            p.add_(torch.randn(p.shape, generator=g) * 0.1)
    for m in module.modules():
        if isinstance(m, nn.BatchNorm2d):
            with torch.no_grad():
                m.running_mean.copy_(torch.randn(m.num_features, generator=g) * 0.5)
                m.running_var.copy_(torch.rand(m.num_features, generator=g) + 0.5)
                m.weight.copy_(torch.rand(m.num_features, generator=g) + 0.5)
                m.bias.copy_(torch.randn(m.num_features, generator=g) * 0.5)


def _export(model, args, names, path, dynamo: bool) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the TorchScript exporter's deprecation notice
        if dynamo:
            torch.onnx.export(model, args, path, dynamo=True, opset_version=DYNAMO_OPSET, external_data=False,
                              input_names=names, verbose=False, report=False)
        else:
            torch.onnx.export(model, args, path, dynamo=False, opset_version=TS_OPSET, input_names=names)


def _torch_numbers(model, args, model_proto, seed: int) -> dict:
    """Inputs, outputs and gradients of the loss sum_i sum(out_i * w_i), as float32/int64 arrays."""
    params = dict(model.named_parameters())
    stored = {}
    # Only parameters the file holds unchanged under their own name, once: the test lifts those to inputs.
    values = [onnx.numpy_helper.to_array(init) for init in model_proto.graph.initializer]
    for init, value in zip(model_proto.graph.initializer, values):
        p = params.get(init.name)
        if p is not None and np.array_equal(value, p.detach().numpy()) \
                and sum(v.shape == value.shape and np.array_equal(v, value) for v in values) == 1:
            stored[init.name] = p
    leaves = [a.detach().clone().requires_grad_(a.is_floating_point()) for a in args]
    outs = model(*leaves)
    outs = outs if isinstance(outs, tuple) else (outs,)
    rng = np.random.default_rng(seed)
    weights = [rng.standard_normal(tuple(o.shape)).astype(np.float32) for o in outs]
    loss = sum((o * torch.from_numpy(w)).sum() for o, w in zip(outs, weights))
    wrt = [a for a in leaves if a.requires_grad] + list(stored.values())
    grads = torch.autograd.grad(loss, wrt, allow_unused=True)
    data = {}
    for i, a in enumerate(args):
        data[f"input/{i}"] = a.numpy()
    for i, (o, w) in enumerate(zip(outs, weights)):
        data[f"output/{i}"] = o.detach().numpy()
        data[f"weight/{i}"] = w
    float_positions = [i for i, a in enumerate(leaves) if a.requires_grad]
    for i, gr in zip(float_positions, grads):
        data[f"grad_input/{i}"] = np.zeros(args[i].shape, np.float32) if gr is None else gr.numpy()
    for name, gr in zip(stored, grads[len(float_positions):]):
        data[f"grad_param/{name}"] = np.zeros(stored[name].shape, np.float32) if gr is None else gr.numpy()
    return data


def _drop_stack_traces(proto) -> None:
    """Remove the dynamo exporter's per-node Python stack traces (this script's path and line numbers).

    They would make the files depend on where and from which version of this script they
    were made; the rest of its metadata (module scopes, FX nodes) is kept, as users' files have it.
    """
    for node in proto.graph.node:
        kept = [p for p in node.metadata_props if p.key != "pkg.torch.onnx.stack_trace"]
        del node.metadata_props[:]
        node.metadata_props.extend(kept)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "tests", "data", "onnx_torch"))
    parser.add_argument("--only", nargs="*", help="model names (default: all)")
    opts = parser.parse_args(argv)
    out_dir = os.path.abspath(opts.out)
    os.makedirs(out_dir, exist_ok=True)
    torch.set_num_threads(1)  # one thread: the same summation order on every run
    logging.getLogger("torch.onnx").setLevel(logging.ERROR)  # "torchvision is not installed", per export
    failures = []
    for seed, (name, (cls, makers, names)) in enumerate(MODELS.items()):
        if opts.only and name not in opts.only:
            continue
        torch.manual_seed(seed)
        model = cls()
        _randomise(model, torch.Generator().manual_seed(1000 + seed))
        model.eval()
        g = torch.Generator().manual_seed(2000 + seed)
        args = tuple(make(g) for make in makers)
        for dynamo, tag in ((False, f"ts{TS_OPSET}"), (True, f"dynamo{DYNAMO_OPSET}")):
            full = f"{name}-{tag}"
            with tempfile.TemporaryDirectory() as tmp:
                tmp_path = os.path.join(tmp, "model.onnx")
                try:
                    _export(model, args, names, tmp_path, dynamo)
                    proto = onnx.load(tmp_path)
                    onnx.checker.check_model(proto)
                except Exception as exc:  # an exporter that cannot take the module: say so, go on
                    failures.append(f"{full}: {type(exc).__name__}: {str(exc).splitlines()[0][:300]}")
                    continue
            _drop_stack_traces(proto)
            onnx.save(proto, os.path.join(out_dir, f"{full}.onnx"))
            data = _torch_numbers(model, args, proto, seed)
            assert sum(k.startswith("output/") for k in data) == len(proto.graph.output), full
            np.savez_compressed(os.path.join(out_dir, f"{full}.npz"), **data)
            ops = sorted({n.op_type for n in proto.graph.node})
            print(f"{full}: {len(proto.graph.node)} nodes, {', '.join(ops)}")
    for f in failures:
        print("not exported:", f, file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
