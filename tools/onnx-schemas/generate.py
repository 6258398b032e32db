#!/usr/bin/env python3
"""Turns the ONNX operator documentation into mlcc's schema table.

    tools/onnx-schemas/generate.py [ONNX_SPEC_DIR] > compiler/ops/OnnxSchemas.inc

Reads Changelog.md (every version of every operator of ai.onnx,
ai.onnx.preview and ai.onnx.preview.training) and Operators-ml.md (the
current ai.onnx.ml operators) from ../shared/onnx-spec by default, and writes
one line per (domain, operator, version): input and output arity, each formal
parameter with its option (single, optional, variadic) and type, every
attribute with its type and whether it is required, and each type
constraint's allowed tensor element types as ONNX data type codes. The output
is committed, so building mlcc does not need the documentation; run this
again when the specification is updated. compiler/ops/OnnxSchema.cpp parses
the table and checks every node against it.

Line format (fields separated by '|'):
  domain|op|version|minIn|maxIn|inputs|minOut|maxOut|outputs|attrs|types
  inputs/outputs: name:option:type,...  option s (single), o (optional), v
                  (variadic), h (variadic, heterogeneous); type a constraint name
                  or '=' followed by ';'-separated dtype codes
  attrs:          name:kind:r|d,...    kind as in AttrKind (f i s t g fs is ss
                  ts gs sp tp); r required, d has a default / optional
  types:          NAME=code;code,...   only tensor element types; '*' when the
                  constraint allows no tensor type mlcc could hold
maxIn/maxOut -1: unbounded (variadic). A deprecated version has arity '-'.
"""
import html
import os
import re
import sys

DTYPE_CODES = {
    "float": 1, "uint8": 2, "int8": 3, "uint16": 4, "int16": 5, "int32": 6,
    "int64": 7, "string": 8, "bool": 9, "float16": 10, "double": 11,
    "uint32": 12, "uint64": 13, "complex64": 14, "complex128": 15,
    "bfloat16": 16, "float8e4m3fn": 17, "float8e4m3fnuz": 18,
    "float8e5m2": 19, "float8e5m2fnuz": 20, "uint4": 21, "int4": 22,
    "float4e2m1": 23, "float8e8m0": 24, "uint2": 25, "int2": 26,
}

ATTR_KINDS = {
    "float": "f", "int": "i", "string": "s", "tensor": "t", "graph": "g",
    "list of floats": "fs", "list of ints": "is", "list of strings": "ss",
    "list of tensors": "ts", "list of graphs": "gs", "sparse_tensor": "sp",
    "sparse tensor": "sp", "type_proto": "tp", "list of type_protos": "tp",
}

HEADING = re.compile(r'^### <a name="([^"]+)"></a>')


def tensor_codes(type_list):
    """'tensor(float16), tensor(float), seq(tensor(int8))' -> [10, 1]."""
    codes = []
    for m in re.finditer(r'(?<![a-z(])tensor\(([a-z0-9]+)\)', type_list):
        # only top-level tensor(...) entries: skip those inside seq( / optional(
        start = m.start()
        prefix = type_list[:start].rstrip()
        if prefix.endswith("(") or prefix.endswith("seq(") or prefix.endswith("optional("):
            continue
        name = m.group(1)
        if name in DTYPE_CODES:
            codes.append(DTYPE_CODES[name])
    return codes


def parse_section(lines):
    """One operator version's lines -> dict, or None when it is deprecated."""
    text = "\n".join(lines)
    if "has been deprecated since" in text:
        return {"deprecated": True}
    out = {"deprecated": False, "inputs": [], "outputs": [], "attrs": [],
           "types": [], "in_range": None, "out_range": None}
    section = None
    for line in lines:
        m = re.match(r'^#### (Attributes|Inputs|Outputs|Type Constraints)(?: \((\d+) - (\d+|&#8734;)\))?', line)
        if m:
            section = m.group(1)
            if m.group(2) is not None:
                hi = -1 if m.group(3) == "&#8734;" else int(m.group(3))
                rng = (int(m.group(2)), hi)
                if section == "Inputs":
                    out["in_range"] = rng
                elif section == "Outputs":
                    out["out_range"] = rng
            continue
        if line.startswith("#### "):
            section = None
            continue
        if not line.startswith("<dt>") or section is None:
            continue
        dt = html.unescape(re.sub(r'</?(dt|tt|b|i)>', '', line)).strip()
        if section == "Attributes":
            m = re.match(r'^(\S+) : ([a-z_ ]+?)\s*(\((required|default is.*)\))?$', dt)
            if not m:
                raise SystemExit("cannot read attribute line: " + line)
            kind = ATTR_KINDS.get(m.group(2).strip())
            if kind is None:
                raise SystemExit("unknown attribute type: " + line)
            req = "r" if m.group(4) == "required" else "d"
            out["attrs"].append((m.group(1), kind, req))
        elif section in ("Inputs", "Outputs"):
            m = re.match(r'^(\S+)(?: \(([^)]*)\))? : (.+)$', dt)
            if not m:
                raise SystemExit("cannot read formal parameter: " + line)
            flags = m.group(2) or ""
            option = ("h" if "heterogeneous" in flags else "v") if "variadic" in flags \
                else "o" if "optional" in flags else "s"
            typ = m.group(3).strip()
            if re.fullmatch(r'[A-Za-z][A-Za-z0-9_]*', typ):
                t = typ
            else:
                t = "=" + ";".join(str(c) for c in tensor_codes(typ))
            out["inputs" if section == "Inputs" else "outputs"].append((m.group(1), option, t))
        elif section == "Type Constraints":
            m = re.match(r'^(\S+) : (.*)$', dt)
            if not m:
                raise SystemExit("cannot read type constraint: " + line)
            codes = tensor_codes(m.group(2))
            out["types"].append((m.group(1), ";".join(str(c) for c in codes) or "*"))
    return out


def arity(formals, rng):
    if rng is not None:
        return rng
    lo = sum(1 for f in formals if f[1] == "s")
    # without a range in the heading, optional formals are trailing
    variadic = any(f[1] in "vh" for f in formals)
    hi = -1 if variadic else len(formals)
    if variadic:
        lo = max(lo, 1)
    return (lo, hi)


def emit(domain, op, version, s):
    if s["deprecated"]:
        return f"{domain}|{op}|{version}|-"
    imin, imax = arity(s["inputs"], s["in_range"])
    omin, omax = arity(s["outputs"], s["out_range"])
    fmt = lambda fs: ",".join(":".join(f) for f in fs)
    types = ",".join(f"{n}={c}" for n, c in s["types"])
    return (f"{domain}|{op}|{version}|{imin}|{imax}|{fmt(s['inputs'])}|{omin}|{omax}|"
            f"{fmt(s['outputs'])}|{fmt(s['attrs'])}|{types}")


def sections(path):
    """Yields (anchor, lines) for every '### <a name=...>' operator section."""
    anchor, lines = None, []
    with open(path, encoding="utf-8") as f:
        for raw in f:
            line = raw.rstrip("\n")
            m = HEADING.match(line)
            if m or line.startswith("## ") or line.startswith("# "):
                if anchor:
                    yield anchor, lines
                anchor, lines = (m.group(1) if m else None), []
                continue
            if anchor:
                lines.append(line)
    if anchor:
        yield anchor, lines


def main():
    spec = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(__file__), "..", "..", "..", "shared", "onnx-spec")
    rows = []
    for anchor, lines in sections(os.path.join(spec, "Changelog.md")):
        m = re.match(r'^((?:ai\.onnx\.preview\.training|ai\.onnx\.preview)\.)?([A-Za-z0-9_]+)-(\d+)$', anchor)
        if not m:
            raise SystemExit("unexpected changelog heading: " + anchor)
        domain = (m.group(1) or "").rstrip(".")
        rows.append(emit(domain, m.group(2), int(m.group(3)), parse_section(lines)))
    for anchor, lines in sections(os.path.join(spec, "Operators-ml.md")):
        m = re.match(r'^ai\.onnx\.ml\.([A-Za-z0-9_]+)$', anchor)
        if not m:
            continue
        body = "\n".join(lines)
        v = re.search(r"(?:available|deprecated) since version (\d+) of the 'ai\.onnx\.ml'", body)
        if not v:
            raise SystemExit("no version for " + anchor)
        rows.append(emit("ai.onnx.ml", m.group(1), int(v.group(1)), parse_section(lines)))
    print("// Generated by tools/onnx-schemas/generate.py from the ONNX operator")
    print("// documentation (Changelog.md, Operators-ml.md); do not edit. The format is")
    print("// described in that script.")
    print('R"mlcc_schemas(')
    for r in rows:
        print(r)
    print(')mlcc_schemas"')


if __name__ == "__main__":
    main()
