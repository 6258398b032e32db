/*
 * The Cortex-M firmware of benchmarks/mcu: runs one mlcc library (built
 * with --name net) RUNS times on a deterministic pseudo-random input and
 * prints the instructions per inference, the memory the library needs and
 * the outputs' bytes.
 *
 * Under QEMU with -icount shift=0 one instruction takes 1 ns of virtual
 * time, and the SysTick counter runs at the processor clock, SYSTICK_HZ:
 * the MPS2 boards' 25 MHz (one tick is 40 instructions; the 24 bits wrap
 * after 671 M instructions, more than any of these networks takes, so each
 * inference is timed whole), the MPS3 AN547's 32 MHz (31.25 instructions a
 * tick; a wrap after 524 M).
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "net.h"

#ifndef RUNS
#define RUNS 3
#endif

#define SYST_CSR (*(volatile uint32_t *)0xE000E010u)
#define SYST_RVR (*(volatile uint32_t *)0xE000E014u)
#define SYST_CVR (*(volatile uint32_t *)0xE000E018u)

static unsigned char arena[NET_ARENA_SIZE + 1] __attribute__((aligned(64)));
/* Every input and output buffer, carved in order. */
#ifndef POOL_BYTES
#define POOL_BYTES (512 * 1024)
#endif
static unsigned char pool[POOL_BYTES] __attribute__((aligned(64)));

#ifndef SYSTICK_HZ
#define SYSTICK_HZ 25000000u
#endif
/* Instructions in `t` ticks: 1e9 ns per second / SYSTICK_HZ each. */
#define TICKS_TO_INSTRUCTIONS(t) ((uint64_t)(t) * 1000000000u / SYSTICK_HZ)

#ifdef PROFILE
/* Per kernel call (PROFILE): instructions of each call in the runs, through
   net_run_with's on_kernel hook (one SysTick tick of granularity). */
#define MAX_CALLS 512
static uint32_t call_start;
static uint64_t call_ticks[MAX_CALLS];
static const char *call_names[MAX_CALLS];
static void on_kernel(void *context, int32_t call, const char *name, int32_t phase) {
  (void)context;
  if (call < 0 || call >= MAX_CALLS)
    return;
  if (phase == 0) {
    call_start = SYST_CVR;
    return;
  }
  call_ticks[call] += (call_start - SYST_CVR) & 0xFFFFFFu;
  call_names[call] = name;
}
#endif

/* A deterministic input: uniform in [-1, 1) for floats, any byte otherwise. */
static void fill(unsigned char *p, const mlcc_tensor_info *t, uint32_t *seed) {
  size_t n = t->size_bytes;
  if (t->dtype == MLCC_FLOAT32) {
    float *f = (float *)p;
    for (size_t i = 0; i < n / 4; ++i) {
      *seed = *seed * 1664525u + 1013904223u;
      f[i] = (float)(*seed >> 8) / 8388608.0f - 1.0f;
    }
    return;
  }
  for (size_t i = 0; i < n; ++i) {
    *seed = *seed * 1664525u + 1013904223u;
    p[i] = (unsigned char)(*seed >> 24);
  }
}

int main(void) {
  const mlcc_model_info *info = net_info();
  const void *ins[16];
  void *outs[16];
  size_t used = 0;
  uint32_t seed = 12345u;
  if (info->num_inputs > 16 || info->num_outputs > 16) {
    printf("too many inputs or outputs\n");
    return 1;
  }
  for (int32_t i = 0; i < info->num_inputs + info->num_outputs; ++i) {
    const mlcc_tensor_info *t =
        i < info->num_inputs ? &info->inputs[i] : &info->outputs[i - info->num_inputs];
    if (used + t->size_bytes + 64 > sizeof pool) {
      printf("the inputs and outputs need more than %u bytes\n", (unsigned)sizeof pool);
      return 1;
    }
    if (i < info->num_inputs) {
      fill(pool + used, t, &seed);
      ins[i] = pool + used;
    } else {
      outs[i - info->num_inputs] = pool + used;
    }
    used = (used + t->size_bytes + 63) / 64 * 64;
  }
  /* net_inputs and net_outputs hold one pointer per tensor, in the info
     tables' order. */
  net_inputs in;
  net_outputs out;
  memcpy(&in, ins, sizeof in);
  memcpy(&out, outs, sizeof out);
  SYST_RVR = 0xFFFFFFu;
  SYST_CVR = 0;
  SYST_CSR = 5u; /* enabled, processor clock, no interrupt */
  mlcc_status s = net_run(&in, &out, arena, sizeof arena - 1); /* warm-up */
  uint64_t ticks = 0;
  for (int r = 0; r < RUNS && s == MLCC_OK; ++r) {
    uint32_t start = SYST_CVR;
    s = net_run(&in, &out, arena, sizeof arena - 1);
    ticks += (start - SYST_CVR) & 0xFFFFFFu;
  }
  if (s != MLCC_OK) {
    printf("net_run: %s\n", mlcc_status_string(s));
    return 1;
  }
#ifdef PROFILE
  mlcc_run_options options;
  memset(&options, 0, sizeof options);
  options.on_kernel = on_kernel;
  for (int r = 0; r < RUNS; ++r)
    net_run_with(&in, &out, arena, sizeof arena - 1, &options);
  for (int c = 0; c < MAX_CALLS; ++c)
    if (call_names[c])
      printf("call %3d %-32s %10lu\n", c, call_names[c],
             (unsigned long)(TICKS_TO_INSTRUCTIONS(call_ticks[c]) / RUNS));
#endif
  printf("instructions per inference: %lu\n",
         (unsigned long)(TICKS_TO_INSTRUCTIONS(ticks) / RUNS));
  printf("arena bytes: %lu\n", (unsigned long)NET_ARENA_SIZE);
  printf("io bytes: %lu\n", (unsigned long)used);
  printf("weights bytes: %lu\n", (unsigned long)info->weights_size);
  /* The outputs' bytes in hex, one line each (benchmarks/mcu/compare.py
     compares them with ONNX Runtime's on the same input). */
  for (int32_t o = 0; o < info->num_outputs; ++o) {
    const unsigned char *p = (const unsigned char *)outs[o];
    printf("output %ld:", (long)o);
    for (size_t i = 0; i < info->outputs[o].size_bytes; ++i)
      printf("%02x", p[i]);
    printf("\n");
  }
  return 0;
}
