/*
 * time_any.c - times a library compiled with `mlcc ... --name m`, of any
 * inputs and outputs, with or without run-time dimensions
 * (benchmarks/bounded/run and models.sh).
 *
 *   cc -O2 -I DIR_OF_m.h time_any.c libm.a -lm
 *   time_any [-d VALUE]... ITERS IN0.bin ... -- OUT0.bin ...
 *
 * One -d per run-time dimension, in m_info()'s order. Each input file holds
 * the input dense at those values (no more than its buffer at MAX); each
 * output file gets the whole output buffer, the output dense at those
 * values in its leading bytes. Runs m_run_ptrs once and
 * writes the outputs, warms up for 0.2 s, then prints the mean time of
 * ITERS runs: "ms X".
 */
#define _POSIX_C_SOURCE 200809L
#include "m.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  const mlcc_model_info *info = m_info();
  int64_t dims[8];
  int num_dims = 0, first = 1, sep, i, iters;
  while (first + 1 < argc && strcmp(argv[first], "-d") == 0 && num_dims < 8) {
    dims[num_dims++] = strtoll(argv[first + 1], NULL, 10);
    first += 2;
  }
  if (first >= argc)
    return 2;
  iters = atoi(argv[first++]);
  for (sep = first; sep < argc && strcmp(argv[sep], "--") != 0;)
    ++sep;
  if (sep - first != info->num_inputs || argc - sep - 1 != info->num_outputs ||
      num_dims != info->num_dims) {
    fprintf(stderr, "time_any: the model has %d inputs, %d outputs and %d run-time dimensions\n",
            (int)info->num_inputs, (int)info->num_outputs, (int)info->num_dims);
    return 2;
  }
  const void **in = calloc((size_t)info->num_inputs + (size_t)num_dims + 1, sizeof *in);
  void **out = calloc((size_t)info->num_outputs + 1, sizeof *out);
  for (i = 0; i < num_dims; ++i)
    in[info->num_inputs + i] = &dims[i];
  for (i = 0; i < info->num_inputs; ++i) {
    size_t n = info->inputs[i].size_bytes;
    unsigned char *buf = calloc(n + 1, 1);
    FILE *f = fopen(argv[first + i], "rb");
    if (!buf || !f || fread(buf, 1, n + 1, f) > n) {
      fprintf(stderr, "time_any: %s is missing or larger than %zu bytes\n", argv[first + i], n);
      return 3;
    }
    fclose(f);
    in[i] = buf;
  }
  for (i = 0; i < info->num_outputs; ++i)
    out[i] = malloc(info->outputs[i].size_bytes + 1);
  size_t align = info->arena_align ? info->arena_align : 16;
  void *arena = aligned_alloc(align, (info->arena_size + align) / align * align);
  mlcc_status st = m_run_ptrs(in, out, arena, info->arena_size);
  if (st != MLCC_OK) {
    fprintf(stderr, "time_any: %s\n", mlcc_status_string(st));
    return 4;
  }
  for (i = 0; i < info->num_outputs; ++i) {
    FILE *f = fopen(argv[sep + 1 + i], "wb");
    size_t n = info->outputs[i].size_bytes;
    if (!f || (n && fwrite(out[i], 1, n, f) != n))
      return 3;
    fclose(f);
  }
  for (double t0 = now(); now() - t0 < 0.2;)
    m_run_ptrs(in, out, arena, info->arena_size);
  double t0 = now();
  for (i = 0; i < iters; ++i)
    m_run_ptrs(in, out, arena, info->arena_size);
  printf("ms %.4f\n", (now() - t0) * 1e3 / iters);
  return 0;
}
