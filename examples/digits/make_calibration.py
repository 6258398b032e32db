#!/usr/bin/python3
"""Writes calibration.npy: the images mlcc's --quantize calibrates the digits
model on, taken from the training split only (never the test images).

The split is train.py's (same data, seed and stratification): the first 200
training images, as float32 [200, 1, 1, 8, 8] (pixels in [0, 1]), the
input's shape [1, 1, 8, 8] after the sample axis.

Usage: /usr/bin/python3 examples/digits/make_calibration.py [--out FILE]
"""
import argparse
import os

import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

SEED = 20240607  # train.py's
COUNT = 200


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(here, "calibration.npy"))
    args = ap.parse_args()
    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)
    y = digits.target.astype(np.int64)
    x_train, _, _, _ = train_test_split(x, y, test_size=0.25, stratify=y, random_state=SEED)
    np.save(args.out, np.ascontiguousarray(x_train[:COUNT].reshape(COUNT, 1, 1, 8, 8)))
    print(f"wrote {args.out}: {COUNT} training images")


if __name__ == "__main__":
    main()
