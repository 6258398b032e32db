"""mlcc: compile ONNX models into static libraries, from Python.

    import mlcc
    lib = mlcc.compile("model.onnx", target="cortex-m4", quantize="int8",
                       calibrate={"input": "samples.npy"})
    lib.write("build/libmodel.a")        # and build/model.h
    lib.info["arena_bytes"], lib.report["fused_kernels"]

    host = mlcc.compile("model.onnx")    # the host: runs in this process
    outputs = host.run({"input": x})     # {"output": ndarray}

The keyword arguments are the command line's options by name (mlcc --help):
``dims={"batch": 1, "seq": (1, 256)}``, ``shapes={"audio": (1, 16000)}``,
``freeze={"shape": "shape.pb"}``, ``input_ranges={"n": (0, 8)}``,
``precision="float16"``, ``quantize="int8"``, ``calibrate={"input": "samples.npy"}``,
``calibration_method``, ``quantize_io``, ``reduce_range``, ``weight_bits``, ``keep_float``,
``target``, ``cpu``, ``features``, ``backend``, ``opt_level``, ``size_opt``,
``max_arena``/``max_weights``/``max_code``/``max_tensor`` (bytes or "64k"),
``tune``, ``tune_db``, ``tune_budget``, ``cache_dir``, ``cache_max``, ``jobs``,
``cycles``, ``clock_mhz``, ``wait_states``, ``name``, ``emit``, ``verbose``.
Every problem raises mlcc.Error with the compiler's one-line message, its
``kind`` ("invalid", "unsupported", "usage", ...) and the command line's
``exit_status``.
"""

import json as _json
import os as _os
import tempfile as _tempfile

from ._mlcc import Error, __version__
from . import _mlcc

__all__ = ["compile", "check", "Library", "Error", "targets", "ops", "__version__"]


def _assignments(value, fmt):
    """A dict {name: value} as the command line's NAME=... strings; a list
    or a string is taken as already spelled."""
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return ["%s=%s" % (k, fmt(v)) for k, v in value.items()]
    return [str(v) for v in value]


def _dim(v):
    if isinstance(v, (tuple, list)):
        lo, hi = v
        return "%d..%d" % (lo, hi)
    return str(v)


def _shape(v):
    if isinstance(v, str):
        return v
    return "x".join(str(int(d)) for d in v)


def _options(model, kwargs):
    o = {"model": _os.fspath(model)}
    for key, value in kwargs.items():
        if value is None:
            continue
        if key == "dims":
            o[key] = _assignments(value, _dim)
        elif key == "shapes":
            o[key] = _assignments(value, _shape)
        elif key == "input_ranges":
            o[key] = _assignments(value, _dim)
        elif key in ("freeze", "calibrate"):
            o[key] = _assignments(value, _os.fspath)
        elif key == "keep_float":
            o[key] = [value] if isinstance(value, str) else list(value)
        elif key in ("max_arena", "max_weights", "max_code", "max_tensor"):
            o[key] = str(value)
        else:
            o[key] = value
    return o


class Library:
    """A compiled model (mlcc.compile). Its library and header are made
    when written; on the host it runs in this process."""

    def __init__(self, lib):
        self._lib = lib

    @property
    def info(self):
        """Inputs and outputs (name, dtype, shape, run-time extents), the
        run-time dimensions, arena/weight/code bytes: what the header says."""
        return self._lib.info

    @property
    def report(self):
        """The --report JSON as a dict."""
        return _json.loads(self._lib.report_json)

    @property
    def report_text(self):
        """The -v summary and per-kernel table."""
        return self._lib.report_text

    @property
    def runs_here(self):
        """Whether run() can run it in this process (host targets)."""
        return self._lib.runs_here

    def write(self, path):
        """Writes the library as the extension says (.a, .o, .c, .h, .ll,
        .s) and the header beside it."""
        self._lib.write(_os.fspath(path))

    def run(self, inputs, dims=None):
        """Runs the code that ships on numpy arrays: `inputs` a dict by
        input name (or a list in order); run-time dimensions come from the
        arrays' shapes (or `dims`). Returns {output name: ndarray}."""
        return self._lib.run(inputs, dims)


def compile(model, target="host", **options):
    """Compiles `model` (an ONNX file) for `target`; see the module's help
    for the options. Returns a Library."""
    options["target"] = target
    return Library(_mlcc.compile(_options(model, options)))


_CHECK_KEYS = ("tolerance", "min_snr", "seed", "cc", "run", "assign")


def check(model, inputs=None, references=None, **options):
    """mlcc check: compiles as compile() would, runs the code that ships
    and compares every kernel call's outputs with the model before
    optimization in float64 (or `references`: {tensor: ndarray or .npy}).
    `inputs`: {input: ndarray or .npy path} (default: random, seeded).
    Also tolerance, min_snr, seed, cc, run, and assign (a library with
    run-time dimensions: {"seq": 7} or {"seq": [7, 256]}, the values it is
    checked at; with several, "reports" holds a table per value). Returns the table as a dict
    (mlcc check --json: "criterion", "compared", "out_of_tolerance",
    "rows", ...) with "within_tolerance" and "text", the printed table."""
    checks = {k: options.pop(k) for k in _CHECK_KEYS if k in options}
    if isinstance(checks.get("assign"), dict):
        checks["assign"] = ["%s=%d" % (name, v) for name, vs in checks["assign"].items()
                            for v in (vs if isinstance(vs, (list, tuple)) else [vs])]
    options.setdefault("target", "host")
    with _tempfile.TemporaryDirectory(prefix="mlcc-check-") as tmp:
        def files(values, what):
            out = []
            for i, (name, value) in enumerate((values or {}).items()):
                if isinstance(value, (str, _os.PathLike)):
                    out.append("%s=%s" % (name, _os.fspath(value)))
                    continue
                import numpy
                path = _os.path.join(tmp, "%s%d.npy" % (what, i))
                numpy.save(path, numpy.asarray(value))
                out.append("%s=%s" % (name, path))
            return out
        checks["inputs"] = files(inputs, "input")
        checks["references"] = files(references, "reference")
        ok, text, table = _mlcc.check(_options(model, options), checks)
    result = _json.loads(table)
    if isinstance(result, list):  # several values of the dimensions
        result = {"reports": result}
    result["within_tolerance"] = ok
    result["text"] = text
    return result


def targets():
    """The target presets (mlcc --list-targets) as text."""
    return _mlcc.target_list()


def ops():
    """The supported operators (mlcc --list-ops) as text."""
    return _mlcc.op_list()
