"""The mlcc Python module against the command line and numpy.

Run by ctest (tests/api/python.sh) with PYTHONPATH at the built module and
MLCC_BINARY the mlcc program of the same build.
"""
import json
import os
import re
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import mlcc

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DIGITS = os.path.join(ROOT, "examples", "digits")
MLCC = os.environ.get("MLCC_BINARY", os.path.join(ROOT, "build", "mlcc"))


def digits_test_set():
    """The held-out digits (examples/digits/main.c's format)."""
    raw = open(os.path.join(DIGITS, "test_set.bin"), "rb").read()
    assert raw[:8] == b"MLCCDIGT"
    count, pixels = np.frombuffer(raw[8:16], dtype="<u4")
    records = np.frombuffer(raw[16:], dtype=np.uint8).reshape(count, pixels * 4 + 1)
    images = records[:, : pixels * 4].copy().view("<f4").reshape(count, 1, 8, 8)
    return images, records[:, -1]


def save(model, path):
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return str(path)


def cli(*args):
    return subprocess.run([MLCC, *map(str, args)], capture_output=True, text=True)


def test_digits_classify_in_process():
    lib = mlcc.compile(os.path.join(DIGITS, "digits.onnx"))
    assert lib.runs_here
    images, labels = digits_test_set()
    name = lib.info["inputs"][0]["name"]
    right = 0
    for x, y in zip(images, labels):
        (logits,) = lib.run({name: x[None]}).values()
        assert logits.shape == tuple(lib.info["outputs"][0]["shape"])
        right += int(np.argmax(logits) == y)
    assert right / len(labels) > 0.95, right


def test_four_bit_weights_classify_and_shrink():
    # quantize="int8", weight_bits=4 as --quantize int8 --weight-bits 4:
    # the weights take at most 60% of the int8 library's, the accuracy
    # stays within 2 points of float's.
    model = os.path.join(DIGITS, "digits.onnx")
    calib = {"image": os.path.join(DIGITS, "calibration.npy")}
    images, labels = digits_test_set()
    accuracy, weights = {}, {}
    for bits in (None, 8, 4):
        options = {} if bits is None else {"quantize": "int8", "calibrate": calib,
                                           "weight_bits": bits}
        lib = mlcc.compile(model, **options)
        name = lib.info["inputs"][0]["name"]
        right = sum(int(np.argmax(next(iter(lib.run({name: x[None]}).values()))) == y)
                    for x, y in zip(images, labels))
        accuracy[bits], weights[bits] = right / len(labels), lib.info["weight_bytes"]
    assert weights[4] <= 0.6 * weights[8], weights
    assert accuracy[4] >= accuracy[None] - 0.02, accuracy
    with pytest.raises(mlcc.Error, match="--weight-bits takes 8 or 4"):
        mlcc.compile(model, quantize="int8", calibrate=calib, weight_bits=3)


def test_info_and_report_agree_with_header_and_cli(tmp_path):
    model = os.path.join(DIGITS, "digits.onnx")
    lib = mlcc.compile(model, name="digits")
    (tmp_path / "api").mkdir()
    (tmp_path / "cli").mkdir()
    lib.write(tmp_path / "api" / "libdigits.a")
    header = (tmp_path / "api" / "digits.h").read_text()
    info = lib.info

    def define(name):
        return int(re.search(r"#define DIGITS_%s (\d+)u" % name, header).group(1))

    assert info["arena_bytes"] == define("ARENA_SIZE")
    assert info["arena_align"] == define("ARENA_ALIGN")
    assert info["weight_bytes"] == define("WEIGHTS_SIZE")
    assert info["name"] == "digits"
    assert [t["name"] for t in info["inputs"]] == ["image"]
    # The same library and report as the command line's.
    r = cli(model, "-o", tmp_path / "cli" / "libdigits.a", "--report", tmp_path / "cli" / "r.json")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "cli" / "libdigits.a").read_bytes() == (tmp_path / "api" / "libdigits.a").read_bytes()
    assert (tmp_path / "cli" / "digits.h").read_text() == header
    assert json.loads((tmp_path / "cli" / "r.json").read_text()) == lib.report
    assert info["code_bytes"] == lib.report["code_bytes"] > 0
    # Other kinds from the same compile.
    lib.write(tmp_path / "api" / "digits.c")
    assert "digits_run" in (tmp_path / "api" / "digits.c").read_text()


def test_cross_target_writes_but_does_not_run(tmp_path):
    lib = mlcc.compile(os.path.join(DIGITS, "digits.onnx"), target="cortex-m4", name="digits")
    assert lib.info["target"] == "cortex-m4" and not lib.runs_here
    lib.write(tmp_path / "libdigits.a")
    assert (tmp_path / "digits.h").exists()
    with pytest.raises(mlcc.Error) as e:
        lib.run({"image": np.zeros((1, 1, 8, 8), np.float32)})
    assert e.value.kind == "usage" and e.value.exit_status == 2


def test_kernel_cache_and_jobs_keep_the_library(tmp_path):
    model = os.path.join(DIGITS, "digits.onnx")
    libs = []
    for i, options in enumerate([{}, {"jobs": 1}, {"cache_dir": str(tmp_path / "cache")},
                                 {"cache_dir": str(tmp_path / "cache"), "jobs": 2}]):
        (tmp_path / f"{i}").mkdir()
        mlcc.compile(model, name="digits", **options).write(tmp_path / f"{i}" / "libdigits.a")
        libs.append((tmp_path / f"{i}" / "libdigits.a").read_bytes())
    assert all(lib == libs[0] for lib in libs)
    assert any(f.suffix == ".o" for f in (tmp_path / "cache").rglob("*"))
    with pytest.raises(mlcc.Error) as e:
        mlcc.compile(model, jobs=-1)
    assert e.value.kind == "usage" and "--jobs" in str(e.value)


def test_bad_model_raises_the_cli_message(tmp_path):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])
    graph = helper.make_graph([helper.make_node("Div", ["x"], ["y"], name="div1")], "g", [x], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    path = str(tmp_path / "bad.onnx")
    onnx.save(model, path)  # invalid on purpose: not checked
    with pytest.raises(mlcc.Error) as e:
        mlcc.compile(path)
    r = cli(path, "-o", tmp_path / "libbad.a")
    assert r.returncode == e.value.exit_status == 1
    assert r.stderr.strip() == "mlcc: error: " + str(e.value)
    assert "node 'div1' (Div)" in str(e.value) and e.value.kind == "invalid"
    assert not (tmp_path / "libbad.a").exists()
    with pytest.raises(mlcc.Error) as e:
        mlcc.compile(tmp_path / "missing.onnx")
    assert e.value.exit_status == 1
    with pytest.raises(mlcc.Error) as e:
        mlcc.compile(os.path.join(DIGITS, "digits.onnx"), target="no-such-target")
    r = cli(os.path.join(DIGITS, "digits.onnx"), "--target", "no-such-target", "-o", tmp_path / "x.a")
    assert r.stderr.strip() == "mlcc: error: " + str(e.value)
    assert r.returncode == e.value.exit_status
    with pytest.raises(TypeError):
        mlcc.compile(os.path.join(DIGITS, "digits.onnx"), no_such_option=1)


def test_bounded_dimension_from_array_shapes(tmp_path):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, "seq", 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, "seq", 4])
    w = helper.make_tensor("w", TensorProto.FLOAT, [4, 4], np.arange(16, dtype=np.float32) / 8)
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"]), helper.make_node("Relu", ["m"], ["y"])]
    graph = helper.make_graph(nodes, "g", [x], [y], [w])
    path = save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]),
                tmp_path / "seq.onnx")
    lib = mlcc.compile(path, dims={"seq": (1, 8)})
    assert lib.info["dims"] == [{"name": "seq", "min": 1, "max": 8}]
    assert lib.info["inputs"][0]["extents"] == ("", "seq", "")
    weights = np.arange(16, dtype=np.float32).reshape(4, 4) / 8
    rng = np.random.default_rng(1)
    for n in (1, 3, 8):
        a = rng.standard_normal((1, n, 4)).astype(np.float32)
        got = lib.run({"x": a})["y"]
        assert got.shape == (1, n, 4)
        np.testing.assert_allclose(got, np.maximum(a @ weights, 0), rtol=1e-6, atol=1e-6)
    with pytest.raises(mlcc.Error) as e:
        lib.run({"x": np.zeros((1, 9, 4), np.float32)})
    assert "seq" in str(e.value) and e.value.kind == "usage"
    # mlcc check on the bounded library, at two values of seq.
    r = mlcc.check(path, dims={"seq": (1, 8)}, assign={"seq": [3, 8]})
    assert r["within_tolerance"] and len(r["reports"]) == 2
    assert all(rep["compared"] > 0 and rep["out_of_tolerance"] == 0 for rep in r["reports"])
    assert "at seq=3" in r["text"] and "at seq=8" in r["text"]
    with pytest.raises(mlcc.Error) as e:
        mlcc.check(path, dims={"seq": (1, 8)})
    assert "--assign seq=VALUE" in str(e.value)


def test_check_returns_the_table():
    r = mlcc.check(os.path.join(DIGITS, "digits.onnx"))
    assert r["within_tolerance"] and r["out_of_tolerance"] == 0
    assert r["compared"] > 0 and len(r["rows"]) >= r["compared"]
    assert "outputs compared: all within tolerance" in r["text"]
    assert all(row["within_tolerance"] for row in r["rows"] if row["compared"])


def test_int8_accuracy_example():
    out = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "python", "digits_int8.py")],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    acc = {m.group(1): float(m.group(2)) for m in re.finditer(r"^(float32|int8) accuracy ([\d.]+)%", out.stdout, re.M)}
    assert acc["float32"] > 95 and acc["int8"] > 95, out.stdout
