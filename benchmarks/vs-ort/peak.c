/*
 * peak.c - this machine's fp32 FMA peak, measured (benchmarks/vs-ort).
 *
 *   cc -O2 -march=native -pthread peak.c -o peak && ./peak [THREADS] [SECONDS]
 *
 * Every thread (default 1) runs ACC independent chains acc = acc * m + a
 * on the widest vectors the compiler targets (AVX-512, else AVX2+FMA, else
 * 4-lane GCC vectors) for SECONDS (default 0.3) and the program prints
 *
 *   peak_gflops G threads T isa ISA lanes L accumulators A
 *
 * counting 2 flops per FMA lane. The chains are independent so that the
 * FMA latency is hidden (latency x FMA units <= ACC on current x86 cores;
 * as many as the vector registers allow, less the two constants).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#if defined(__AVX512F__)
#include <immintrin.h>
typedef __m512 vec;
#define ISA "avx512"
#define LANES 16
#define ACC 24 /* 32 zmm registers; 16 chains reach only ~85% on Zen 5 */
#define SPLAT(x) _mm512_set1_ps(x)
#define FMA(a, b, c) _mm512_fmadd_ps(a, b, c)
static float first(vec v) { return _mm512_cvtss_f32(v); }
#elif defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
typedef __m256 vec;
#define ISA "avx2+fma"
#define LANES 8
#define ACC 14 /* 16 ymm registers: 14 accumulators and 2 constants */
#define SPLAT(x) _mm256_set1_ps(x)
#define FMA(a, b, c) _mm256_fmadd_ps(a, b, c)
static float first(vec v) { return _mm256_cvtss_f32(v); }
#else
typedef float vec __attribute__((vector_size(16)));
#define ISA "generic-4"
#define LANES 4
#define ACC 14
#define SPLAT(x) ((vec){x, x, x, x})
#define FMA(a, b, c) ((a) * (b) + (c)) /* fused where -ffp-contract allows */
static float first(vec v) { return v[0]; }
#endif

#define INNER 4096 /* FMA rounds between two clock reads */

static double seconds = 0.3;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

typedef struct {
  double flops;
  float sink;
} result;

/* ACC independent chains, spelled out so that they stay in registers. */
#define STEP(k) v##k = FMA(v##k, m, a)
#define ALL14(X) X(0); X(1); X(2); X(3); X(4); X(5); X(6); X(7); X(8); X(9); X(10); \
                 X(11); X(12); X(13)
#if ACC == 24
#define ALL(X) ALL14(X); X(14); X(15); X(16); X(17); X(18); X(19); X(20); X(21); X(22); X(23)
#else
#define ALL(X) ALL14(X)
#endif
#define DECL(k) vec v##k = SPLAT(1.0f + (k) * 1e-3f)
#define SUM(k) r->sink += first(v##k)

static void *chains(void *arg) {
  result *r = arg;
  /* m < 1 and a > 0 keep every chain bounded (it converges to a/(1-m)). */
  vec m = SPLAT(0.999999f), a = SPLAT(1e-6f);
  double t0 = now(), rounds = 0;
  int j;
  ALL(DECL);
  do {
    for (j = 0; j < INNER; ++j) {
      ALL(STEP);
    }
    rounds += INNER;
  } while (now() - t0 < seconds);
  r->flops = rounds * ACC * LANES * 2.0;
  r->sink = 0;
  ALL(SUM);
  return NULL;
}

int main(int argc, char **argv) {
  int threads = argc > 1 ? atoi(argv[1]) : 1, i;
  pthread_t tid[64];
  result res[64];
  double t0, t1, flops = 0, sink = 0;
  if (argc > 2) seconds = atof(argv[2]);
  if (threads < 1 || threads > 64 || !(seconds > 0)) {
    fprintf(stderr, "usage: peak [THREADS (1-64)] [SECONDS]\n");
    return 2;
  }
  t0 = now();
  for (i = 0; i < threads; ++i)
    if (pthread_create(&tid[i], NULL, chains, &res[i]) != 0) {
      fprintf(stderr, "peak: pthread_create failed\n");
      return 1;
    }
  for (i = 0; i < threads; ++i) {
    pthread_join(tid[i], NULL);
    flops += res[i].flops;
    sink += res[i].sink;
  }
  t1 = now();
  printf("peak_gflops %.1f threads %d isa %s lanes %d accumulators %d%s\n",
         flops / (t1 - t0) * 1e-9, threads, ISA, LANES, ACC, sink == 12345.678 ? " " : "");
  return 0;
}
