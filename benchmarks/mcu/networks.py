#!/usr/bin/python3
"""The four MLPerf Tiny reference networks at their published shapes, built in
PyTorch with random weights (seed 0) and exported to ONNX for benchmarks/mcu:

  resnet8     image classification, CIFAR-10: 1x3x32x32, three residual
              stacks of 16, 32 and 64 channels, 10 classes
  ds_cnn_s    keyword spotting: 1x1x49x10 MFCC, a 10x4 stride-2 convolution
              to 64 channels, four depthwise-separable blocks, 12 classes
  mobilenet   visual wake words: MobileNetV1 with width 0.25 on 1x3x96x96,
              2 classes
  autoencoder anomaly detection (ToyADMOS): a 640-128-128-128-128-8-128-128-
              128-128-640 fully connected autoencoder

BatchNorm running statistics are randomized (as trained ones are), so that
activations keep a realistic range. Each network goes to OUT/NAME/model.onnx
with OUT/NAME/calibration.npy (16 samples of the input, uniform in [-1, 1]).

usage: /usr/bin/python3 benchmarks/mcu/networks.py OUT
"""
import os
import sys

import numpy as np
import torch
import torch.nn as nn


def conv_bn(cin, cout, k, stride=1, groups=1, pad=None, relu=True):
    if pad is None:
        pad = (k[0] // 2, k[1] // 2) if isinstance(k, tuple) else k // 2
    layers = [nn.Conv2d(cin, cout, k, stride, pad, groups=groups, bias=False), nn.BatchNorm2d(cout)]
    if relu:
        layers.append(nn.ReLU())
    return nn.Sequential(*layers)


class ResidualStack(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.a = conv_bn(cin, cout, 3, stride)
        self.b = conv_bn(cout, cout, 3, 1, relu=False)
        self.skip = conv_bn(cin, cout, 1, stride, relu=False) if stride != 1 or cin != cout else None

    def forward(self, x):
        y = self.b(self.a(x))
        return torch.relu(y + (self.skip(x) if self.skip is not None else x))


class ResNet8(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = conv_bn(3, 16, 3)
        self.stacks = nn.Sequential(ResidualStack(16, 16, 1), ResidualStack(16, 32, 2),
                                    ResidualStack(32, 64, 2))
        self.fc = nn.Linear(64, 10)

    def forward(self, x):
        x = self.stacks(self.stem(x))
        return self.fc(torch.flatten(nn.functional.avg_pool2d(x, 8), 1))


class DsCnnS(nn.Module):
    def __init__(self):
        super().__init__()
        layers = [conv_bn(1, 64, (10, 4), 2, pad=(5, 1))]
        for _ in range(4):
            layers += [conv_bn(64, 64, 3, 1, groups=64), conv_bn(64, 64, 1)]
        self.body = nn.Sequential(*layers)
        self.fc = nn.Linear(64, 12)

    def forward(self, x):
        x = self.body(x)
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))


class MobileNetV1(nn.Module):
    def __init__(self, alpha=0.25, classes=2):
        super().__init__()
        c = lambda n: int(n * alpha)
        cfg = [(64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2)] + [(512, 1)] * 5 + \
              [(1024, 2), (1024, 1)]
        layers = [conv_bn(3, c(32), 3, 2)]
        cin = c(32)
        for cout, stride in cfg:
            layers += [conv_bn(cin, cin, 3, stride, groups=cin), conv_bn(cin, c(cout), 1)]
            cin = c(cout)
        self.body = nn.Sequential(*layers)
        self.fc = nn.Linear(cin, classes)

    def forward(self, x):
        x = self.body(x)
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))


class AutoEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        sizes = [640, 128, 128, 128, 128, 8, 128, 128, 128, 128]
        layers = []
        for a, b in zip(sizes, sizes[1:]):
            layers += [nn.Linear(a, b), nn.BatchNorm1d(b), nn.ReLU()]
        layers.append(nn.Linear(128, 640))
        self.body = nn.Sequential(*layers)

    def forward(self, x):
        return self.body(x)


NETWORKS = {
    "resnet8": (ResNet8, [1, 3, 32, 32]),
    "ds_cnn_s": (DsCnnS, [1, 1, 49, 10]),
    "mobilenet": (MobileNetV1, [1, 3, 96, 96]),
    "autoencoder": (AutoEncoder, [1, 640]),
}


def main(out):
    for name, (cls, shape) in NETWORKS.items():
        torch.manual_seed(0)
        net = cls()
        for m in net.modules():
            if isinstance(m, (nn.BatchNorm1d, nn.BatchNorm2d)):
                m.running_mean.uniform_(-0.2, 0.2)
                m.running_var.uniform_(0.5, 1.5)
                m.weight.data.uniform_(0.5, 1.5)
                m.bias.data.uniform_(-0.2, 0.2)
        net.eval()
        d = os.path.join(out, name)
        os.makedirs(d, exist_ok=True)
        x = torch.rand(shape) * 2 - 1
        torch.onnx.export(net, x, os.path.join(d, "model.onnx"), opset_version=13,
                          input_names=["input"], output_names=["output"])
        rng = np.random.default_rng(0)
        np.save(os.path.join(d, "calibration.npy"),
                rng.uniform(-1, 1, size=[16] + shape).astype(np.float32))


if __name__ == "__main__":
    main(sys.argv[1])
