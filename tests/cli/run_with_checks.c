/* NAME_run_with with runtime-c/mlcc_pthread.c gives the same outputs, bit
   for bit, as NAME_run, for 1 to 3 threads and repeated calls on one pool;
   a NULL options pointer runs serially. Built against a model compiled with
   --name m (tests/cli/library_contract.sh). */
#define _POSIX_C_SOURCE 200809L
#include "m.h"
#include "mlcc_pthread.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned char arena[M_ARENA_SIZE + 1] __attribute__((aligned(64)));

int main(void) {
  const mlcc_model_info *info = m_info();
  size_t in_bytes = info->inputs[0].size_bytes, out_bytes = info->outputs[0].size_bytes;
  float *x = malloc(in_bytes), *ref = malloc(out_bytes), *y = malloc(out_bytes);
  for (size_t i = 0; i < in_bytes / sizeof(float); ++i)
    x[i] = (float)((i * 7919) % 17) / 16.0f;
  const void *ins[1] = {x};
  void *refs[1] = {ref}, *outs[1] = {y};
  if (m_run_ptrs(ins, refs, arena, sizeof arena) != MLCC_OK) {
    fprintf(stderr, "m_run failed\n");
    return 1;
  }
  m_inputs in;
  m_outputs out;
  memcpy(&in, ins, sizeof in);
  memcpy(&out, outs, sizeof out);
  if (m_run_with(&in, &out, arena, sizeof arena, NULL) != MLCC_OK ||
      memcmp(ref, y, out_bytes) != 0) {
    fprintf(stderr, "m_run_with(NULL options) differs from m_run\n");
    return 1;
  }
  for (int threads = 1; threads <= 3; ++threads) {
    mlcc_pthread_pool pool;
    mlcc_run_options opts;
    if (mlcc_pthread_pool_init(&pool, threads) != 0) {
      fprintf(stderr, "cannot start %d threads\n", threads);
      return 1;
    }
    mlcc_pthread_run_options(&pool, &opts);
    for (int rep = 0; rep < 20; ++rep) {
      memset(y, 0, out_bytes);
      if (m_run_with(&in, &out, arena, sizeof arena, &opts) != MLCC_OK ||
          memcmp(ref, y, out_bytes) != 0) {
        fprintf(stderr, "m_run_with on %d threads differs from m_run (call %d)\n", threads, rep);
        return 1;
      }
    }
    mlcc_pthread_pool_destroy(&pool);
  }
  printf("run_with: same outputs as run on 1-3 threads\n");
  free(x);
  free(ref);
  free(y);
  return 0;
}
