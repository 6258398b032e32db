/*
 * driver.c - runs one compiled model on raw input files.
 *
 *   driver [-d VALUE]... IN0.bin IN1.bin ... -- OUT0.bin OUT1.bin ...
 *
 * Links against a library compiled with --name m. Reads each input as the
 * raw bytes of a dense tensor (sizes checked against m_info()), runs the
 * model with a fresh arena, and writes each output's raw bytes. A library
 * with run-time dimensions (mlcc --dim NAME=MIN..MAX) takes one -d VALUE
 * per dimension, in m_info()'s order; its inputs are then dense at those
 * values (no larger than at MAX), and each output file holds the whole
 * buffer, the output dense at those values in its leading bytes. The arena
 * and the outputs are surrounded by guard bytes: a kernel writing outside its
 * buffers is reported as a failure instead of passing silently.
 */
#include "mlcc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

mlcc_status m_run_ptrs(const void *const *inputs, void *const *outputs,
                       void *arena, size_t arena_size);
const mlcc_model_info *m_info(void);

#define GUARD 64
#define GUARD_BYTE 0xA5

/* Every block guarded_alloc returned, freed by free_all() before a
   successful exit (LeakSanitizer: the aligned pointers are interior ones). */
static void **allocations;
static size_t num_allocations;

static void free_all(void) {
  size_t i;
  for (i = 0; i < num_allocations; ++i) free(allocations[i]);
  free(allocations);
  allocations = NULL;
  num_allocations = 0;
}

static unsigned char *guarded_alloc(size_t n, size_t align) {
  size_t total = GUARD + n + GUARD + align;
  unsigned char *raw = malloc(total);
  unsigned char *p;
  void **grown = realloc(allocations, (num_allocations + 1) * sizeof *allocations);
  if (!raw || !grown) { free(raw); return NULL; }
  allocations = grown;
  allocations[num_allocations++] = raw;
  memset(raw, GUARD_BYTE, total);
  p = raw + GUARD;
  p += (align - ((size_t)p % align)) % align;
  /* Mark the usable region with a different pattern. */
  memset(p, 0x5A, n);
  return p;
}

static int guards_intact(const unsigned char *p, size_t n) {
  size_t i;
  for (i = 1; i <= GUARD / 2; ++i)
    if (p[-(long)i] != GUARD_BYTE) return 0;
  for (i = 0; i < GUARD / 2; ++i)
    if (p[n + i] != GUARD_BYTE) return 0;
  return 1;
}

int main(int argc, char **argv) {
  const mlcc_model_info *info = m_info();
  int sep, first = 1, i;
  int64_t dims[8];
  int num_dims = 0;
  const void **inputs;
  void **outputs;
  unsigned char *arena;
  mlcc_status st;
  while (first + 1 < argc && strcmp(argv[first], "-d") == 0 && num_dims < 8) {
    dims[num_dims++] = strtoll(argv[first + 1], NULL, 10);
    first += 2;
  }
  sep = first;
  while (sep < argc && strcmp(argv[sep], "--") != 0) sep++;
  if (sep - first != info->num_inputs || argc - sep - 1 != info->num_outputs ||
      num_dims != info->num_dims) {
    fprintf(stderr, "driver: model has %d inputs, %d outputs and %d run-time dimensions\n",
            (int)info->num_inputs, (int)info->num_outputs, (int)info->num_dims);
    return 2;
  }
  /* The run-time dimensions follow the inputs, each as a pointer to its value. */
  inputs = calloc((size_t)info->num_inputs + (size_t)num_dims + 1, sizeof *inputs);
  for (i = 0; i < num_dims; ++i) inputs[info->num_inputs + i] = &dims[i];
  outputs = calloc((size_t)info->num_outputs + 1, sizeof *outputs);
  for (i = 0; i < info->num_inputs; ++i) {
    size_t n = info->inputs[i].size_bytes;
    unsigned char *buf = guarded_alloc(n, 64);
    FILE *f = fopen(argv[first + i], "rb");
    long len;
    if (!f) { fprintf(stderr, "driver: cannot open %s\n", argv[first + i]); return 2; }
    fseek(f, 0, SEEK_END);
    len = ftell(f);
    fseek(f, 0, SEEK_SET);
    if (len < 0 || (num_dims ? (size_t)len > n : (size_t)len != n) ||
        (len && fread(buf, 1, (size_t)len, f) != (size_t)len)) {
      fprintf(stderr, "driver: input %d ('%s') needs %zu bytes, file has %ld\n",
              i, info->inputs[i].name, n, len);
      return 2;
    }
    fclose(f);
    inputs[i] = buf;
  }
  for (i = 0; i < info->num_outputs; ++i)
    outputs[i] = guarded_alloc(info->outputs[i].size_bytes, 64);
  arena = guarded_alloc(info->arena_size, info->arena_align);
  st = m_run_ptrs(inputs, outputs, info->arena_size ? arena : NULL, info->arena_size);
  if (st != MLCC_OK) {
    fprintf(stderr, "driver: run failed: %s\n", mlcc_status_string(st));
    return 3;
  }
  if (!guards_intact(arena, info->arena_size)) {
    fprintf(stderr, "driver: the model wrote outside its arena\n");
    return 4;
  }
  for (i = 0; i < info->num_outputs; ++i) {
    size_t n = info->outputs[i].size_bytes;
    FILE *f;
    if (!guards_intact(outputs[i], n)) {
      fprintf(stderr, "driver: the model wrote outside output %d\n", i);
      return 4;
    }
    f = fopen(argv[sep + 1 + i], "wb");
    if (!f || (n && fwrite(outputs[i], 1, n, f) != n)) {
      fprintf(stderr, "driver: cannot write %s\n", argv[sep + 1 + i]);
      return 2;
    }
    fclose(f);
  }
  free_all();
  free(inputs);
  free(outputs);
  return 0;
}
