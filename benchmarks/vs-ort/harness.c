/*
 * harness.c - times a model compiled with `mlcc ... --name m` (benchmarks/vs-ort).
 *
 *   cc -O2 -I DIR_OF_m.h harness.c libm.a -lm [-DBENCH_RUN_WITH mlcc_pthread.o -pthread]
 *   harness THREADS IN0.bin ... -- OUT0.bin ...
 *
 * Reads the inputs (raw little-endian tensors, sizes from m_info()), runs the
 * model once, writes the outputs to OUT*.bin, warms up (at least 2 more runs
 * or 0.3 s), prints "ready MS" (the warm-up time per inference) and then
 * serves requests on stdin, one per line, so that bench.py can interleave it
 * with ONNX Runtime without reloading either:
 *
 *   time N   runs the model N times and prints "times T1 ... TN" (ms per
 *            inference, CLOCK_MONOTONIC around each call)
 *   quit     (or end of input) exits
 *
 * THREADS 1 calls m_run. THREADS > 1 needs a library with m_run_with (the
 * parallel-for hook) and is built with -DBENCH_RUN_WITH, linking
 * runtime-c/mlcc_pthread.c; threads_init() below is the only code that
 * knows the API of that file. Without it, THREADS > 1 is refused (exit 4).
 */
#define _POSIX_C_SOURCE 200809L
#include "m.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef BENCH_RUN_WITH
#include "mlcc_pthread.h"
/* Fills *opts so that m_run_with runs parallel loops on `workers` threads.
 * Returns 0 on success. */
static int threads_init(mlcc_run_options *opts, int workers) {
  static mlcc_pthread_pool pool;
  if (mlcc_pthread_pool_init(&pool, workers) != 0) return -1;
  mlcc_pthread_run_options(&pool, opts);
  return 0;
}
#endif

/* The generated structs hold one pointer per tensor, in order. */
typedef char inputs_are_pointers[sizeof(m_inputs) == M_NUM_INPUTS * sizeof(void *) ? 1 : -1];
typedef char outputs_are_pointers[sizeof(m_outputs) == M_NUM_OUTPUTS * sizeof(void *) ? 1 : -1];

static void *aligned(size_t n, size_t align) {
  unsigned char *p = calloc(n + align, 1);
  if (!p) {
    fprintf(stderr, "harness: out of memory\n");
    exit(2);
  }
  return p + (align - (size_t)p % align) % align; /* never freed */
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static m_inputs in;
static m_outputs out;
static void *arena;
static int threads;
#ifdef BENCH_RUN_WITH
static mlcc_run_options opts;
#endif

#ifdef BENCH_RUN_WITH
/* profile N: the time of every kernel call through the on_kernel hook. */
#define MAX_CALLS 4096
static double call_ms[MAX_CALLS], call_start;
static const char *call_name[MAX_CALLS];
static void on_kernel(void *context, int32_t call, const char *name, int32_t phase) {
  (void)context;
  if (call < 0 || call >= MAX_CALLS) return;
  if (phase == 0) {
    call_start = now_ms();
    return;
  }
  call_ms[call] += now_ms() - call_start;
  call_name[call] = name;
}
#endif

static mlcc_status run(void) {
#ifdef BENCH_RUN_WITH
  if (threads > 1) return m_run_with(&in, &out, arena, M_ARENA_SIZE, &opts);
#endif
  return m_run(&in, &out, arena, M_ARENA_SIZE);
}

static void check(mlcc_status st) {
  if (st != MLCC_OK) {
    fprintf(stderr, "harness: run failed: %s\n", mlcc_status_string(st));
    exit(3);
  }
}

int main(int argc, char **argv) {
  const mlcc_model_info *info = m_info();
  const void *inputs[M_NUM_INPUTS + 1];
  void *outputs[M_NUM_OUTPUTS + 1];
  char line[256];
  double *times = NULL, t0;
  long cap = 0, n, i;
  int k;
  if (argc != 3 + info->num_inputs + info->num_outputs ||
      strcmp(argv[2 + info->num_inputs], "--") != 0 || (threads = atoi(argv[1])) < 1) {
    fprintf(stderr, "usage: harness THREADS IN0.bin ... -- OUT0.bin ... (%d inputs, %d outputs)\n",
            (int)info->num_inputs, (int)info->num_outputs);
    return 2;
  }
  if (threads > 1) {
#ifdef BENCH_RUN_WITH
    if (threads_init(&opts, threads) != 0) {
      fprintf(stderr, "harness: cannot start %d threads\n", threads);
      return 4;
    }
#else
    fprintf(stderr, "harness: built without m_run_with; only THREADS 1\n");
    return 4;
#endif
  }
  for (k = 0; k < info->num_inputs; ++k) {
    size_t sz = info->inputs[k].size_bytes;
    void *buf = aligned(sz, 64);
    FILE *f = fopen(argv[2 + k], "rb");
    if (!f || (sz && fread(buf, 1, sz, f) != sz)) {
      fprintf(stderr, "harness: cannot read %zu bytes from %s\n", sz, argv[2 + k]);
      return 2;
    }
    fclose(f);
    inputs[k] = buf;
  }
  for (k = 0; k < info->num_outputs; ++k) outputs[k] = aligned(info->outputs[k].size_bytes, 64);
  memcpy(&in, inputs, sizeof in);
  memcpy(&out, outputs, sizeof out);
  arena = M_ARENA_SIZE ? aligned(M_ARENA_SIZE, M_ARENA_ALIGN) : NULL;

  check(run());
  for (k = 0; k < info->num_outputs; ++k) {
    const char *path = argv[3 + info->num_inputs + k];
    size_t sz = info->outputs[k].size_bytes;
    FILE *f = fopen(path, "wb");
    if (!f || (sz && fwrite(outputs[k], 1, sz, f) != sz) || fclose(f) != 0) {
      fprintf(stderr, "harness: cannot write %s\n", path);
      return 2;
    }
  }
  t0 = now_ms();
  n = 0;
  do {
    check(run());
    ++n;
  } while (n < 2 || now_ms() - t0 < 300);
  printf("ready %.4f\n", (now_ms() - t0) / n);
  fflush(stdout);

  while (fgets(line, sizeof line, stdin)) {
    if (sscanf(line, "time %ld", &n) == 1 && n > 0) {
      if (n > cap) {
        cap = n;
        times = realloc(times, (size_t)cap * sizeof *times);
        if (!times) return 2;
      }
      for (i = 0; i < n; ++i) {
        double t = now_ms();
        check(run());
        times[i] = now_ms() - t;
      }
      fputs("times", stdout);
      for (i = 0; i < n; ++i) printf(" %.4f", times[i]);
      putchar('\n');
      fflush(stdout);
#ifdef BENCH_RUN_WITH
    } else if (sscanf(line, "profile %ld", &n) == 1 && n > 0) {
      /* One line per kernel call: "call INDEX MS NAME" (mean ms per run). */
      mlcc_run_options popts = {0};
      if (threads > 1) popts = opts;
      popts.on_kernel = on_kernel;
      memset(call_ms, 0, sizeof call_ms);
      for (i = 0; i < n; ++i) check(m_run_with(&in, &out, arena, M_ARENA_SIZE, &popts));
      for (i = 0; i < MAX_CALLS && call_name[i]; ++i)
        printf("call %ld %.4f %s\n", i, call_ms[i] / n, call_name[i]);
      puts("end");
      fflush(stdout);
#endif
    } else if (strncmp(line, "quit", 4) == 0) {
      break;
    } else {
      fprintf(stderr, "harness: bad request: %s", line);
      return 2;
    }
  }
  return 0;
}
