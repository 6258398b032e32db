/*
 * bench.c - times a model compiled with --name m (information only).
 *
 *   bench ITERS IN0.bin IN1.bin ...
 *
 * Reads the inputs like tools/conformance/driver.c, runs the model once to
 * warm up, then ITERS times, and prints "mlcc_ms_per_inference X" (wall
 * clock, CLOCK_MONOTONIC). Correctness is checked with driver.c, not here.
 */
#define _POSIX_C_SOURCE 199309L
#include "mlcc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

mlcc_status m_run_ptrs(const void *const *inputs, void *const *outputs,
                       void *arena, size_t arena_size);
const mlcc_model_info *m_info(void);

static void *aligned(size_t n, size_t align) {
  unsigned char *p = calloc(n + align, 1);
  if (!p) {
    fprintf(stderr, "bench: out of memory\n");
    exit(2);
  }
  return p + (align - (size_t)p % align) % align; /* never freed */
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(int argc, char **argv) {
  const mlcc_model_info *info = m_info();
  const void **inputs;
  void **outputs;
  void *arena;
  int iters, i;
  double t0;
  mlcc_status st;
  if (argc != 2 + info->num_inputs || (iters = atoi(argv[1])) < 1) {
    fprintf(stderr, "usage: bench ITERS IN0.bin ... (%d inputs)\n", (int)info->num_inputs);
    return 2;
  }
  inputs = calloc((size_t)info->num_inputs + 1, sizeof *inputs);
  outputs = calloc((size_t)info->num_outputs + 1, sizeof *outputs);
  for (i = 0; i < info->num_inputs; ++i) {
    size_t n = info->inputs[i].size_bytes;
    void *buf = aligned(n, 64);
    FILE *f = fopen(argv[2 + i], "rb");
    if (!f || (n && fread(buf, 1, n, f) != n)) {
      fprintf(stderr, "bench: cannot read %zu bytes from %s\n", n, argv[2 + i]);
      return 2;
    }
    fclose(f);
    inputs[i] = buf;
  }
  for (i = 0; i < info->num_outputs; ++i)
    outputs[i] = aligned(info->outputs[i].size_bytes, 64);
  arena = info->arena_size ? aligned(info->arena_size, info->arena_align) : NULL;

  st = m_run_ptrs(inputs, (void *const *)outputs, arena, info->arena_size);
  t0 = now_ms();
  for (i = 0; st == MLCC_OK && i < iters; ++i)
    st = m_run_ptrs(inputs, (void *const *)outputs, arena, info->arena_size);
  if (st != MLCC_OK) {
    fprintf(stderr, "bench: run failed: %s\n", mlcc_status_string(st));
    return 3;
  }
  printf("mlcc_ms_per_inference %.3f\n", (now_ms() - t0) / iters);
  return 0;
}
