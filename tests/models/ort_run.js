// ort_run.js - runs an ONNX model with ONNX Runtime (onnxruntime-node) on
// raw float32 inputs and writes its raw float32 outputs.
//
//   node ort_run.js MODEL.onnx ITERS IN0.bin:D0,D1,... [...] -- OUT0.bin [...]
//
// Inputs are matched to the model's inputs in order; outputs likewise. The
// session uses one intra-op thread. After a warm-up run the model is run
// ITERS more times and the mean time is printed as "ort_ms_per_inference X".
// onnxruntime-node is found through NODE_PATH (compare_ort.sh sets it).
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
    const dims = spec.slice(colon + 1).split(',').map((d) => Number.parseInt(d, 10));
    const count = dims.reduce((a, b) => a * b, 1);
    const bytes = fs.readFileSync(file);
    if (bytes.length !== count * 4) {
      throw new Error(`${file}: ${bytes.length} bytes, shape [${dims}] needs ${count * 4}`);
    }
    // Copy into a fresh, aligned buffer (Buffer slices may be unaligned).
    const data = new Float32Array(count);
    new Uint8Array(data.buffer).set(bytes);
    feeds[session.inputNames[i]] = new ort.Tensor('float32', data, dims);
  });

  let results = await session.run(feeds);  // warm-up, and the reference result
  outPaths.forEach((file, i) => {
    const t = results[session.outputNames[i]];
    if (t.type !== 'float32') throw new Error(`output ${i} is ${t.type}, not float32`);
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
