/*
 * time.c - times a library of one input and one output compiled with
 * `mlcc ... --name m`, with or without a run-time dimension `seq`
 * (benchmarks/bounded/run).
 *
 *   cc -O2 -I DIR_OF_m.h time.c libm.a -lm
 *   time SEQ IN.bin OUT.bin ITERS
 *
 * Reads SEQ steps of input (raw float32, dense), runs m_run once and writes
 * the output (dense at SEQ), warms up for 0.2 s, then prints the mean time
 * of ITERS runs: "ms X". A library of fixed shapes must have been compiled
 * for SEQ.
 */
#define _POSIX_C_SOURCE 200809L
#include "m.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  if (argc != 5)
    return 2;
  long seq = atol(argv[1]);
  int iters = atoi(argv[4]);
  size_t in = M_INPUT_X_COUNT, out = M_OUTPUT_Y_COUNT;
#ifdef M_DIM_SEQ_MAX
  in = in / M_DIM_SEQ_MAX * (size_t)seq;
  out = out / M_DIM_SEQ_MAX * (size_t)seq;
#endif
  float *x = malloc(M_INPUT_X_COUNT * sizeof(float)), *y = malloc(M_OUTPUT_Y_COUNT * sizeof(float));
  void *arena = aligned_alloc(M_ARENA_ALIGN, (M_ARENA_SIZE + M_ARENA_ALIGN) / M_ARENA_ALIGN * M_ARENA_ALIGN);
  FILE *f = fopen(argv[2], "rb");
  if (!x || !y || !arena || !f || fread(x, sizeof(float), in, f) != in)
    return 3;
  fclose(f);
  m_inputs mi = {0};
  mi.x = x;
#ifdef M_DIM_SEQ_MAX
  mi.seq = seq;
#endif
  m_outputs mo = {y};
  if (m_run(&mi, &mo, arena, M_ARENA_SIZE) != MLCC_OK)
    return 4;
  f = fopen(argv[3], "wb");
  if (!f || fwrite(y, sizeof(float), out, f) != out)
    return 3;
  fclose(f);
  for (double t0 = now(); now() - t0 < 0.2;)
    m_run(&mi, &mo, arena, M_ARENA_SIZE);
  double t0 = now();
  for (int i = 0; i < iters; ++i)
    m_run(&mi, &mo, arena, M_ARENA_SIZE);
  printf("ms %.4f\n", (now() - t0) * 1e3 / iters);
  return 0;
}
