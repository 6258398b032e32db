/* run_bounded.c - runs a library of one input and one output, compiled with
 * --name m, at one value of its run-time dimension (tests/cli/bounded_dims.sh).
 * Without a dimension (a library of fixed shapes, the reference) the value
 * must be the one it was compiled for.
 *
 *   run_bounded write SEQ IN.bin OUT.bin      runs m_run, writes the output
 *   run_bounded compare SEQ IN.bin REF.bin TOL
 *       runs m_run and m_run_ptrs; each output within TOL * max|REF| of REF,
 *       and nothing written past the run-time extent
 *   run_bounded range SEQ                     SEQ is out of range: m_run and
 *       m_run_ptrs return MLCC_ERR_DIM_RANGE and leave the output untouched
 *   run_bounded calls SEQ IN.bin              runs m_run_with and prints how
 *       many kernel calls ran (counted through the profiling hook: a call a
 *       run skips, a loop's iteration beyond the run's length, is not)
 *   run_bounded info 0                        m_info() names the dimension
 *       `seq` with its bounds and gives -1 for the axes that follow it
 *   run_bounded relu SEQ BATCH                a Relu over x[batch, seq, 4]
 *       (dimensions batch and seq): y = max(x, 0), dense at the run-time
 *       extents, nothing written past them
 *
 * IN.bin and the outputs hold float32 data dense at the run-time extent
 * (SEQ times the elements of the other axes). Exit status 0 on success. */
#include "m.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SENTINEL 12345.0f

/* Elements of a tensor of m_info() at the run-time value `seq` (its -1
   extents, the axes that follow seq, at that value). */
static size_t countAt(const mlcc_tensor_info *t, long seq) {
  size_t n = 1;
  for (int32_t d = 0; d < t->rank; ++d)
    n *= (size_t)(t->shape[d] < 0 ? seq : t->shape[d]);
  return n;
}

static int callsRun;

static void countCall(void *context, int32_t call, const char *name, int32_t phase) {
  (void)context, (void)call, (void)name;
  callsRun += phase == 0;
}

static int readFloats(const char *path, float *to, size_t n) {
  FILE *f = fopen(path, "rb");
  if (!f || fread(to, sizeof(float), n, f) != n) {
    fprintf(stderr, "cannot read %zu floats from %s\n", n, path);
    return 0;
  }
  fclose(f);
  return 1;
}

int main(int argc, char **argv) {
  if (argc < 3)
    return 2;
  const char *mode = argv[1];
  long seq = atol(argv[2]);
  static float x[M_INPUT_X_COUNT], y[M_OUTPUT_Y_COUNT], ref[M_OUTPUT_Y_COUNT];
  static unsigned char arena[M_ARENA_SIZE + M_ARENA_ALIGN];
  void *a = (void *)(((size_t)arena + M_ARENA_ALIGN - 1) / M_ARENA_ALIGN * M_ARENA_ALIGN);
  size_t inCount = countAt(&m_info()->inputs[0], seq);
  size_t outCount = countAt(&m_info()->outputs[0], seq);
  m_inputs in;
  memset(&in, 0, sizeof in);
  in.x = x;
#ifdef M_DIM_SEQ_MAX
  in.seq = seq;
  int64_t seqValue = seq;
  const void *ptrsIn[2] = {x, &seqValue};
#else
  const void *ptrsIn[1] = {x};
#endif
  m_outputs out = {y};
  void *ptrsOut[1] = {y};
  for (size_t i = 0; i < M_OUTPUT_Y_COUNT; ++i)
    y[i] = SENTINEL;

#ifdef M_DIM_BATCH_MAX
  if (!strcmp(mode, "relu") && argc == 4) {
    long batch = atol(argv[3]);
    size_t n = (size_t)(batch * seq * 4);
    for (size_t i = 0; i < n; ++i)
      x[i] = (float)((long)(i * 37 % 23) - 11);
    in.batch = batch;
    int s = m_run(&in, &out, a, M_ARENA_SIZE);
    for (size_t i = 0; i < M_OUTPUT_Y_COUNT; ++i)
      if (y[i] != (i < n ? (x[i] > 0 ? x[i] : 0.0f) : SENTINEL) || s) {
        fprintf(stderr, "batch %ld seq %ld: status %d, element %zu is %g\n", batch, seq, s, i,
                (double)y[i]);
        return 1;
      }
    return 0;
  }
#endif
  if (!strcmp(mode, "info")) {
    const mlcc_model_info *mi = m_info();
#ifdef M_DIM_SEQ_MAX
    if (mi->num_dims != 1 || strcmp(mi->dims[0].name, "seq") || mi->dims[0].min != M_DIM_SEQ_MIN ||
        mi->dims[0].max != M_DIM_SEQ_MAX || mi->inputs[0].shape[1] != -1 ||
        mi->outputs[0].shape[1] != -1 || mi->inputs[0].size_bytes != M_INPUT_X_COUNT * 4u) {
      fprintf(stderr, "info: %d dims, shape[1] %ld\n", (int)mi->num_dims, (long)mi->inputs[0].shape[1]);
      return 1;
    }
#else
    if (mi->num_dims != 0 || mi->dims != NULL)
      return 1;
#endif
    return 0;
  }
  if (!strcmp(mode, "range")) {
    int s1 = m_run(&in, &out, a, M_ARENA_SIZE);
    int s2 = m_run_ptrs(ptrsIn, ptrsOut, a, M_ARENA_SIZE);
    for (size_t i = 0; i < M_OUTPUT_Y_COUNT; ++i)
      if (y[i] != SENTINEL) {
        fprintf(stderr, "seq %ld: output element %zu written\n", seq, i);
        return 1;
      }
    if (s1 != MLCC_ERR_DIM_RANGE || s2 != MLCC_ERR_DIM_RANGE) {
      fprintf(stderr, "seq %ld: status %d and %d, want %d\n", seq, s1, s2, MLCC_ERR_DIM_RANGE);
      return 1;
    }
    return 0;
  }
  if (argc < 4 || !readFloats(argv[3], x, inCount))
    return 2;
  if (!strcmp(mode, "calls")) {
    mlcc_run_options options;
    memset(&options, 0, sizeof options);
    options.on_kernel = countCall;
    int s = m_run_with(&in, &out, a, M_ARENA_SIZE, &options);
    printf("%d\n", callsRun);
    return s != 0;
  }
  if (!strcmp(mode, "write")) {
    if (argc < 5)
      return 2;
    int s = m_run(&in, &out, a, M_ARENA_SIZE);
    FILE *f = fopen(argv[4], "wb");
    if (s || !f || fwrite(y, sizeof(float), outCount, f) != outCount) {
      fprintf(stderr, "seq %ld: status %d\n", seq, s);
      return 1;
    }
    fclose(f);
    return 0;
  }
  if (strcmp(mode, "compare") || argc < 6 || !readFloats(argv[4], ref, outCount))
    return 2;
  double tol = atof(argv[5]), scale = 0;
  for (size_t i = 0; i < outCount; ++i)
    scale = fmax(scale, fabs(ref[i]));
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t i = 0; i < M_OUTPUT_Y_COUNT; ++i)
      y[i] = SENTINEL;
    int s = pass ? m_run_ptrs(ptrsIn, ptrsOut, a, M_ARENA_SIZE) : m_run(&in, &out, a, M_ARENA_SIZE);
    if (s) {
      fprintf(stderr, "seq %ld: %s returned %d\n", seq, pass ? "m_run_ptrs" : "m_run", s);
      return 1;
    }
    double worst = 0;
    for (size_t i = 0; i < outCount; ++i)
      worst = fmax(worst, fabs((double)y[i] - ref[i]));
    for (size_t i = outCount; i < M_OUTPUT_Y_COUNT; ++i)
      if (y[i] != SENTINEL) {
        fprintf(stderr, "seq %ld: element %zu past the extent written\n", seq, i);
        return 1;
      }
    if (!(worst <= tol * scale)) {
      fprintf(stderr, "seq %ld: max |difference| %g > %g * %g\n", seq, worst, tol, scale);
      return 1;
    }
    if (!pass)
      printf("seq %ld: max |difference| %.3g (of max |ref| %.3g)\n", seq, worst, scale);
  }
  return 0;
}
