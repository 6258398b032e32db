#!/usr/bin/python3
"""Trains the small CNN of the digits example and exports it.

Reproduces the two committed files next to this script:

  digits.onnx   the trained model, ONNX opset 13, input "image" float32
                [1,1,8,8] (pixels in [0,1]), output "logits" float32 [1,10]
  test_set.bin  the held-out test images and labels (format below)

The data is the real UCI optical digits set that ships with scikit-learn
(`sklearn.datasets.load_digits()`: 1797 labelled 8x8 images, pixel values
0..16, divided by 16 here). 25% of it, stratified and seeded, is held out as
the test set; the network never sees it during training.

test_set.bin (all integers and floats little-endian):

  offset 0   char[8]   magic "MLCCDIGT"
  offset 8   uint32    count: number of records
  offset 12  uint32    pixels per image: 64 (8x8, row-major)
  offset 16  count records of 257 bytes each:
               float32[64]  pixels in [0,1], row-major
               uint8        label 0..9

Everything is seeded and runs on one CPU thread, so a rerun with the same
PyTorch and scikit-learn versions reproduces the files. The demo itself
(scripts/demo) needs neither PyTorch nor scikit-learn.

Usage: /usr/bin/python3 examples/digits/train.py [--out-dir DIR]
"""
import argparse
import os
import struct
import sys

import numpy as np
import torch
import torch.nn as nn
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

SEED = 20240607
EPOCHS = 60
BATCH = 32
LR = 3e-3
MAGIC = b"MLCCDIGT"


class DigitsNet(nn.Module):
    """conv-relu-pool-conv-relu-flatten-linear: 3,818 parameters."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, kernel_size=3, padding=1)    # 8x8x8
        self.pool = nn.MaxPool2d(2)                               # 8x4x4
        self.conv2 = nn.Conv2d(8, 16, kernel_size=3, padding=1)   # 16x4x4
        self.fc = nn.Linear(16 * 4 * 4, 10)

    def forward(self, x):
        x = self.pool(torch.relu(self.conv1(x)))
        x = torch.relu(self.conv2(x))
        return self.fc(torch.flatten(x, 1))


def write_test_set(path, images, labels):
    assert images.shape[1:] == (64,) and images.dtype == np.float32
    with open(path, "wb") as f:
        f.write(MAGIC + struct.pack("<II", len(labels), 64))
        for img, label in zip(images, labels):
            f.write(img.astype("<f4").tobytes())
            f.write(struct.pack("<B", int(label)))


def accuracy(model, x, y):
    with torch.no_grad():
        return (model(x).argmax(1) == y).float().mean().item()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out-dir", default=os.path.dirname(os.path.abspath(__file__)),
                    help="where digits.onnx and test_set.bin are written "
                         "(default: next to this script)")
    args = ap.parse_args()

    torch.manual_seed(SEED)
    np.random.seed(SEED)
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)

    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)          # [1797, 64] in [0,1]
    y = digits.target.astype(np.int64)
    x_train, x_test, y_train, y_test = train_test_split(
        x, y, test_size=0.25, stratify=y, random_state=SEED)

    xt = torch.from_numpy(x_train).reshape(-1, 1, 8, 8)
    yt = torch.from_numpy(y_train)
    xv = torch.from_numpy(x_test).reshape(-1, 1, 8, 8)
    yv = torch.from_numpy(y_test)

    model = DigitsNet()
    n_params = sum(p.numel() for p in model.parameters())
    opt = torch.optim.Adam(model.parameters(), lr=LR)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=EPOCHS)
    loss_fn = nn.CrossEntropyLoss()
    gen = torch.Generator().manual_seed(SEED)

    print(f"train {len(yt)} images, test {len(yv)} images, {n_params} parameters")
    for epoch in range(EPOCHS):
        model.train()
        perm = torch.randperm(len(yt), generator=gen)
        total = 0.0
        for i in range(0, len(yt), BATCH):
            idx = perm[i:i + BATCH]
            opt.zero_grad()
            loss = loss_fn(model(xt[idx]), yt[idx])
            loss.backward()
            opt.step()
            total += loss.item() * len(idx)
        sched.step()
        if (epoch + 1) % 10 == 0:
            model.eval()
            print(f"epoch {epoch + 1:3d}  loss {total / len(yt):.4f}  "
                  f"train acc {accuracy(model, xt, yt):.4f}  "
                  f"test acc {accuracy(model, xv, yv):.4f}")

    model.eval()
    test_acc = accuracy(model, xv, yv)

    os.makedirs(args.out_dir, exist_ok=True)
    onnx_path = os.path.join(args.out_dir, "digits.onnx")
    bin_path = os.path.join(args.out_dir, "test_set.bin")
    torch.onnx.export(model, torch.zeros(1, 1, 8, 8), onnx_path,
                      input_names=["image"], output_names=["logits"],
                      opset_version=13, do_constant_folding=True)
    write_test_set(bin_path, x_test, y_test)

    try:  # optional sanity check of the exported file
        import onnx
        onnx.checker.check_model(onnx.load(onnx_path))
    except ImportError:
        pass

    print(f"wrote {onnx_path} ({os.path.getsize(onnx_path)} bytes)")
    print(f"wrote {bin_path} ({os.path.getsize(bin_path)} bytes, {len(y_test)} images)")
    print(f"torch test accuracy: {test_acc * 100:.2f}% "
          f"({round(test_acc * len(y_test))}/{len(y_test)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
