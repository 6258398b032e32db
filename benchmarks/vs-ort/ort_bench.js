// ort_bench.js - times a model with ONNX Runtime (onnxruntime-node) for
// benchmarks/vs-ort; the counterpart of harness.c, same protocol.
//
//   node ort_bench.js MODEL.onnx THREADS IN0.bin:D0,D1,... [...] -- OUT0.bin [...]
//
// The session uses THREADS intra-op threads, one inter-op thread, all graph
// optimizations and sequential execution. It runs the model once, writes
// the outputs (raw float32) to OUT*.bin, warms up (at least 2 more runs or
// 0.3 s), prints "ready MS" (warm-up time per inference), then serves
// requests on stdin, one per line:
//
//   time N   runs the model N times and prints "times T1 ... TN" (ms per
//            inference, process.hrtime around each awaited session.run)
//   quit     (or end of input) exits
//
// onnxruntime-node is found through NODE_PATH (the run script sets it).
'use strict';
const fs = require('fs');
const readline = require('readline');
const ort = require('onnxruntime-node');

function usage() {
  console.error('usage: node ort_bench.js MODEL.onnx THREADS IN.bin:D0,D1,.. ... -- OUT.bin ...');
  process.exit(2);
}

function nowMs() {
  return Number(process.hrtime.bigint()) / 1e6;
}

async function main() {
  const args = process.argv.slice(2);
  const sep = args.indexOf('--');
  if (args.length < 2 || sep < 2) usage();
  const [modelPath, threadsText] = args;
  const threads = Number.parseInt(threadsText, 10);
  if (!(threads >= 1)) usage();
  const inSpecs = args.slice(2, sep);
  const outPaths = args.slice(sep + 1);

  const session = await ort.InferenceSession.create(modelPath, {
    intraOpNumThreads: threads,
    interOpNumThreads: 1,
    graphOptimizationLevel: 'all',
    executionMode: 'sequential',
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
    const data = new Float32Array(count);  // aligned copy
    new Uint8Array(data.buffer).set(bytes);
    feeds[session.inputNames[i]] = new ort.Tensor('float32', data, dims);
  });

  const results = await session.run(feeds);
  outPaths.forEach((file, i) => {
    const t = results[session.outputNames[i]];
    if (t.type !== 'float32') throw new Error(`output ${i} is ${t.type}, not float32`);
    fs.writeFileSync(file, Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength));
  });
  const t0 = nowMs();
  let n = 0;
  do {
    await session.run(feeds);
    ++n;
  } while (n < 2 || nowMs() - t0 < 300);
  process.stdout.write(`ready ${((nowMs() - t0) / n).toFixed(4)}\n`);

  const rl = readline.createInterface({ input: process.stdin, terminal: false });
  for await (const line of rl) {
    const m = /^time (\d+)\s*$/.exec(line);
    if (m) {
      const count = Number.parseInt(m[1], 10);
      const times = new Array(count);
      for (let i = 0; i < count; ++i) {
        const t = nowMs();
        await session.run(feeds);
        times[i] = (nowMs() - t).toFixed(4);
      }
      process.stdout.write(`times ${times.join(' ')}\n`);
    } else if (line.startsWith('quit')) {
      break;
    } else {
      throw new Error(`bad request: ${line}`);
    }
  }
  rl.close();
  if (typeof session.release === 'function') await session.release();
}

main().then(() => process.exit(0)).catch((e) => {
  console.error(`ort_bench.js: ${e && e.message ? e.message : e}`);
  process.exit(1);
});
