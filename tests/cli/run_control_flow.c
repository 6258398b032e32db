/*
 * run_control_flow.c - runs a library compiled with --name m (a model of
 * fixed shapes) on raw input files and compares its outputs with raw
 * reference files: float32 within a relative tolerance, other types
 * exactly. Prints the largest difference and how many kernel calls ran
 * (counted through the profiling hook, which a call skipped at run time,
 * an If's branch not taken or a Loop's iteration after it ended, does not
 * reach).
 *
 *   run TOL IN0.bin ... -- REF0.bin ...
 *   run status=N IN0.bin ... -- REF0.bin ...
 *
 * The second form expects status N (an input outside its --input-range:
 * MLCC_ERR_DIM_RANGE) and every output untouched; the references are not
 * read.
 *
 * Exit status: 0 when every output matches, 1 when one does not, 2 on a
 * usage, file or status error.
 */
#include "mlcc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* m_inputs and m_outputs hold one pointer per tensor (no run-time
   dimensions), so arrays of pointers stand for them. */
mlcc_status m_run_with(const void *in, void *out, void *arena, size_t arena_size,
                       const mlcc_run_options *options);
const mlcc_model_info *m_info(void);

static int calls_run;

static void count(void *context, int32_t call, const char *name, int32_t phase) {
  (void)context, (void)call, (void)name;
  calls_run += phase == 0;
}

static void *read_file(const char *path, size_t want) {
  FILE *f = fopen(path, "rb");
  void *data = malloc(want ? want : 1);
  size_t got;
  if (!f || !data) {
    fprintf(stderr, "run: cannot read %s\n", path);
    exit(2);
  }
  got = fread(data, 1, want, f);
  if (got != want || fgetc(f) != EOF) {
    fprintf(stderr, "run: %s does not hold %zu bytes\n", path, want);
    exit(2);
  }
  fclose(f);
  return data;
}

int main(int argc, char **argv) {
  const mlcc_model_info *info = m_info();
  int sep = 2, i, bad = 0;
  double tol, worst = 0;
  const void *ins[16];
  void *outs[16];
  void *arena;
  mlcc_run_options options;
  mlcc_status status;
  while (sep < argc && strcmp(argv[sep], "--") != 0) sep++;
  if (argc < 3 || sep - 2 != info->num_inputs || argc - sep - 1 != info->num_outputs ||
      info->num_inputs > 16 || info->num_outputs > 16) {
    fprintf(stderr, "usage: run TOL IN.bin... -- REF.bin... (%d inputs, %d outputs)\n",
            (int)info->num_inputs, (int)info->num_outputs);
    return 2;
  }
  tol = strncmp(argv[1], "status=", 7) == 0 ? -1 : atof(argv[1]);
  for (i = 0; i < info->num_inputs; ++i) ins[i] = read_file(argv[2 + i], info->inputs[i].size_bytes);
  for (i = 0; i < info->num_outputs; ++i) {
    outs[i] = malloc(info->outputs[i].size_bytes + 1);
    memset(outs[i], 0xA5, info->outputs[i].size_bytes + 1);
  }
  arena = aligned_alloc(info->arena_align, (info->arena_size + info->arena_align) /
                                               info->arena_align * info->arena_align);
  memset(&options, 0, sizeof options);
  options.on_kernel = count;
  status = m_run_with(ins, outs, arena, info->arena_size, &options);
  if (tol < 0) { /* status=N */
    long want = strtol(argv[1] + 7, NULL, 10);
    for (i = 0; i < info->num_outputs; ++i) {
      size_t k;
      for (k = 0; k <= info->outputs[i].size_bytes; ++k)
        if (((unsigned char *)outs[i])[k] != 0xA5) {
          printf("output %s: byte %zu written\n", info->outputs[i].name, k);
          return 1;
        }
    }
    printf("status %d (want %ld), outputs untouched, %d kernel calls ran\n", (int)status, want,
           calls_run);
    return status == want ? 0 : 1;
  }
  if (status != MLCC_OK) {
    fprintf(stderr, "run: status %d\n", (int)status);
    return 2;
  }
  for (i = 0; i < info->num_outputs; ++i) {
    const mlcc_tensor_info *t = &info->outputs[i];
    unsigned char *ref = read_file(argv[sep + 1 + i], t->size_bytes);
    if (t->dtype == MLCC_FLOAT32) {
      const float *g = outs[i], *w = (const float *)ref;
      size_t k, n = t->size_bytes / 4;
      double diff = 0, peak = 0;
      for (k = 0; k < n; ++k) {
        double d = fabs((double)g[k] - (double)w[k]);
        diff = d > diff || d != d ? d : diff;
        peak = fabs((double)w[k]) > peak ? fabs((double)w[k]) : peak;
      }
      worst = diff > worst ? diff : worst;
      if (!(diff <= tol * (peak > 1 ? peak : 1))) {
        printf("output %s: max |diff| %g over %g\n", t->name, diff, tol * (peak > 1 ? peak : 1));
        bad = 1;
      }
    } else if (memcmp(outs[i], ref, t->size_bytes) != 0) {
      printf("output %s differs\n", t->name);
      bad = 1;
    }
    free(ref);
  }
  printf("max |diff| %.3g, %d kernel calls ran\n", worst, calls_run);
  return bad;
}
