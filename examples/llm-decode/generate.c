/* generate.c - greedy text generation with the decode step of a small
 * Llama-style model (make_model.py), compiled once for every past length:
 *
 *   mlcc llama_decode.onnx --dim past=0..255 -o libllm.a --name llm
 *   cc -O2 generate.c libllm.a -lm -o generate
 *   ./generate [STEPS [PROMPT TOKEN...]]
 *
 * Each step runs the model on one token with the key/value cache of the
 * tokens before it: past_key_L / past_value_L [1, 2, past, 32] in, and
 * present_key_L / present_value_L [1, 2, past + 1, 32] out, dense at the
 * run-time extents. The caches live in the caller's buffers, two per cache
 * (the step's input and its output trade places after each step); nothing
 * is allocated by the library. Built with -DKV_CACHE against a library
 * compiled with --kv-cache auto, each cache is one buffer instead, laid out
 * at its largest length ([1, 2, 256, 32]), passed as both the past input
 * and the present output: a step writes only its new row. The prompt's
 * tokens are fed one at a time,
 * then each step's most likely token (the largest logit) is the next
 * input. Prints the generated token ids on one line, then tokens per
 * second of the generation steps.
 */
#define _POSIX_C_SOURCE 200112L /* clock_gettime */
#include "llm.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define CACHES 4 /* past_key_0, past_value_0, past_key_1, past_value_1 */

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int64_t argmax(const float *x, size_t n) {
  size_t best = 0, i;
  for (i = 1; i < n; ++i)
    if (x[i] > x[best]) best = i;
  return (int64_t)best;
}

int main(int argc, char **argv) {
  static const int64_t default_prompt[] = {1, 17, 42, 5};
  int steps = argc > 1 ? atoi(argv[1]) : 32;
  int prompt_len = argc > 2 ? argc - 2 : 4;
  int64_t *prompt = malloc(sizeof *prompt * (size_t)prompt_len);
  float *cache[2][CACHES], logits[LLM_OUTPUT_LOGITS_COUNT];
  void *arena = aligned_alloc(LLM_ARENA_ALIGN, (LLM_ARENA_SIZE + LLM_ARENA_ALIGN - 1) /
                                                   LLM_ARENA_ALIGN * LLM_ARENA_ALIGN);
  int t, c, cur = 0, generated = 0;
  int64_t token;
  double start = 0;
  if (!prompt || !arena || steps < 1 || prompt_len + steps - 1 > LLM_DIM_PAST_MAX + 1) {
    fprintf(stderr, "generate: STEPS >= 1, and the prompt plus STEPS - 1 within %d tokens\n",
            LLM_DIM_PAST_MAX + 1);
    return 2;
  }
  for (t = 0; t < prompt_len; ++t)
    prompt[t] = argc > 2 ? atoll(argv[2 + t]) : default_prompt[t];
  for (c = 0; c < CACHES; ++c) /* room for MAX + 1 positions */
    if (!(cache[0][c] = malloc(sizeof(float) * LLM_OUTPUT_PRESENT_KEY_0_COUNT)) ||
        !(cache[1][c] = malloc(sizeof(float) * LLM_OUTPUT_PRESENT_KEY_0_COUNT)))
      return 2;
  token = prompt[0];
  for (t = 0; generated < steps; ++t) {
#ifdef KV_CACHE /* one buffer per cache: the past is the present's first rows */
    llm_inputs in = {&token, cache[0][0], cache[0][1], cache[0][2], cache[0][3], t};
    llm_outputs out = {logits, cache[0][0], cache[0][1], cache[0][2], cache[0][3]};
#else /* two per cache, trading places */
    llm_inputs in = {&token, cache[cur][0], cache[cur][1], cache[cur][2], cache[cur][3], t};
    llm_outputs out = {logits, cache[!cur][0], cache[!cur][1], cache[!cur][2], cache[!cur][3]};
#endif
    mlcc_status st;
    if (t == prompt_len - 1) start = now(); /* the generation steps */
    st = llm_run(&in, &out, arena, LLM_ARENA_SIZE);
    if (st != MLCC_OK) {
      fprintf(stderr, "generate: step %d: %s\n", t, mlcc_status_string(st));
      return 1;
    }
    cur = !cur; /* this step's present caches are the next step's past */
    if (t + 1 < prompt_len) {
      token = prompt[t + 1];
    } else {
      token = argmax(logits, LLM_OUTPUT_LOGITS_COUNT);
      printf("%s%lld", generated ? " " : "", (long long)token);
      ++generated;
    }
  }
  printf("\n%.1f tokens/s (%d tokens after a prompt of %d)\n", steps / (now() - start), steps,
         prompt_len);
  for (c = 0; c < CACHES; ++c) {
    free(cache[0][c]);
    free(cache[1][c]);
  }
  free(arena);
  free(prompt);
  return 0;
}
