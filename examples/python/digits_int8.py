"""Evaluates the digits model in float32 and int8 on the held-out test set,
in Python, with the code mlcc ships (run in this process before flashing).

    PYTHONPATH=build/python python3 examples/python/digits_int8.py

The int8 model is calibrated on examples/digits/calibration.npy; the script
prints each model's accuracy and its memory figures, and writes the int8
library for Cortex-M4 with its header to build/python-example/.
"""
import os

import numpy as np

import mlcc

here = os.path.dirname(os.path.abspath(__file__))
digits = os.path.join(here, "..", "digits")
model = os.path.join(digits, "digits.onnx")

# The test set: "MLCCDIGT", count, pixels, then float32 pixels and a label each.
raw = open(os.path.join(digits, "test_set.bin"), "rb").read()
count, pixels = np.frombuffer(raw[8:16], dtype="<u4")
records = np.frombuffer(raw[16:], dtype=np.uint8).reshape(count, pixels * 4 + 1)
images = records[:, : pixels * 4].copy().view("<f4").reshape(count, 1, 1, 8, 8)
labels = records[:, -1]

int8 = dict(quantize="int8", calibrate={"image": os.path.join(digits, "calibration.npy")})
for title, options in (("float32", {}), ("int8", int8)):
    lib = mlcc.compile(model, **options)
    right = sum(int(np.argmax(lib.run({"image": x})["logits"]) == y) for x, y in zip(images, labels))
    info = lib.info
    print("%s accuracy %.2f%% (%d of %d); arena %d bytes, weights %d bytes, code %d bytes"
          % (title, 100.0 * right / count, right, count, info["arena_bytes"],
             info["weight_bytes"], info["code_bytes"]))

# The firmware library of the int8 model.
out = os.path.join(here, "..", "..", "build", "python-example")
os.makedirs(out, exist_ok=True)
mlcc.compile(model, target="cortex-m4", **int8).write(os.path.join(out, "libdigits.a"))
print("wrote", os.path.normpath(os.path.join(out, "libdigits.a")), "and digits.h")
