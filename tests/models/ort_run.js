// ort_run.js - runs an ONNX model with ONNX Runtime (onnxruntime-node) on
// raw inputs and writes its raw outputs (float32, bool or int64).
//
//   node ort_run.js MODEL.onnx ITERS IN0.bin:D0,D1,...[@TYPE] [...] -- OUT0.bin [...]
//
// TYPE is float32 (the default), bool, int32 or int64; "IN.bin:" (no extents) is
// a scalar.
// Inputs are matched to the model's inputs in order; outputs likewise. The
// session uses one intra-op thread. After a warm-up run the model is run
// ITERS more times and the mean time is printed as "ort_ms_per_inference X".
// onnxruntime-node is found through NODE_PATH (compare_ort.sh sets it).
// ORT_GRAPH_OPTIMIZATION (disabled, basic, extended or all; default all)
// sets the session's graph optimization level: "disabled" runs a QDQ model
// as written (DequantizeLinear, float op, QuantizeLinear) instead of ORT's
// fused integer kernels.
'use strict';
const fs = require('fs');
const ort = require('onnxruntime-node');

function usage() {
  console.error('usage: node ort_run.js MODEL.onnx ITERS IN.bin:D0,D1,.. ... -- OUT.bin ...');
  process.exit(2);
}

async function main() {
  const args = process.argv.slice(2);
  const sep = args.indexOf('--');
  if (args.length < 2 || sep < 2) usage();
  const [modelPath, itersText] = args;
  const iters = Number.parseInt(itersText, 10);
  if (!(iters >= 0)) usage();
  const inSpecs = args.slice(2, sep);
  const outPaths = args.slice(sep + 1);

  const session = await ort.InferenceSession.create(modelPath, {
    intraOpNumThreads: 1,
    interOpNumThreads: 1,
    graphOptimizationLevel: process.env.ORT_GRAPH_OPTIMIZATION || 'all',
  });
  if (inSpecs.length !== session.inputNames.length ||
      outPaths.length !== session.outputNames.length) {
    throw new Error(`model has ${session.inputNames.length} inputs and ` +
                    `${session.outputNames.length} outputs`);
  }

  const feeds = {};
  inSpecs.forEach((spec, i) => {
    const colon = spec.lastIndexOf(':');
    if (colon < 0) usage();
    const file = spec.slice(0, colon);
    let shape = spec.slice(colon + 1), type = 'float32';
    const at = shape.indexOf('@');
    if (at >= 0) [shape, type] = [shape.slice(0, at), shape.slice(at + 1)];
    const arrays = {float32: Float32Array, bool: Uint8Array, int32: Int32Array, int64: BigInt64Array};
    if (!arrays[type]) usage();
    const dims = shape === '' ? [] : shape.split(',').map((d) => Number.parseInt(d, 10));
    const count = dims.reduce((a, b) => a * b, 1);
    const size = arrays[type].BYTES_PER_ELEMENT;
    const bytes = fs.readFileSync(file);
    if (bytes.length !== count * size) {
      throw new Error(`${file}: ${bytes.length} bytes, shape [${dims}] needs ${count * size}`);
    }
    // Copy into a fresh, aligned buffer (Buffer slices may be unaligned).
    const data = new arrays[type](count);
    new Uint8Array(data.buffer).set(bytes);
    feeds[session.inputNames[i]] = new ort.Tensor(type, data, dims);
  });

  let results = await session.run(feeds);  // warm-up, and the reference result
  outPaths.forEach((file, i) => {
    const t = results[session.outputNames[i]];
    if (!['float32', 'bool', 'int64'].includes(t.type)) {
      throw new Error(`output ${i} is ${t.type}, not float32, bool or int64`);
    }
    fs.writeFileSync(file, Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength));
  });

  if (iters > 0) {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < iters; ++i) results = await session.run(feeds);
    const ms = Number(process.hrtime.bigint() - t0) / 1e6 / iters;
    console.log(`ort_ms_per_inference ${ms.toFixed(3)}`);
  }
}

main().catch((e) => {
  console.error(`ort_run.js: ${e && e.message ? e.message : e}`);
  process.exit(1);
});
