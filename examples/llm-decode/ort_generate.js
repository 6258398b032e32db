// ort_generate.js - the same greedy generation as generate.c with ONNX
// Runtime (onnxruntime-node, one thread): the decode step run token by token,
// each step's present caches fed back as the next step's past.
//
//   NODE_PATH=... node ort_generate.js llama_decode.onnx [STEPS [PROMPT TOKEN...]]
//
// Prints the generated token ids on one line, then tokens per second.
'use strict';
const ort = require('onnxruntime-node');

async function main() {
  const [model, stepsText, ...promptText] = process.argv.slice(2);
  const steps = Number.parseInt(stepsText || '32', 10);
  const prompt = promptText.length ? promptText.map(BigInt) : [1n, 17n, 42n, 5n];
  const session = await ort.InferenceSession.create(model, {
    intraOpNumThreads: 1, interOpNumThreads: 1, graphOptimizationLevel: 'all'});
  const caches = session.inputNames.slice(1);
  const heads = 2, size = 32; // make_model.py: KV_HEADS, DH
  let past = Object.fromEntries(caches.map((n) => [n, new ort.Tensor('float32', new Float32Array(0), [1, heads, 0, size])]));
  let token = prompt[0];
  const out = [];
  let start = 0;
  for (let t = 0; out.length < steps; ++t) {
    if (t === prompt.length - 1) start = process.hrtime.bigint();
    const feeds = {input_ids: new ort.Tensor('int64', BigInt64Array.from([token]), [1, 1]), ...past};
    const r = await session.run(feeds);
    past = Object.fromEntries(caches.map((n) => [n, r[n.replace('past', 'present')]]));
    if (t + 1 < prompt.length) {
      token = prompt[t + 1];
    } else {
      const logits = r.logits.data;
      let best = 0;
      for (let i = 1; i < logits.length; ++i) if (logits[i] > logits[best]) best = i;
      token = BigInt(best);
      out.push(best);
    }
  }
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  console.log(out.join(' '));
  console.log(`${(steps / seconds).toFixed(1)} tokens/s (${steps} tokens after a prompt of ${prompt.length})`);
}
main().catch((e) => { console.error(e.message || e); process.exit(1); });
