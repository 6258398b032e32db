/*
 * The digits example as firmware: the held-out test set is linked into flash
 * (test_set.S), the arena is a static buffer, and the result is reported
 * through semihosting (integer printf only: no heap is needed). Exit status 0 when every run succeeds and the
 * accuracy is at least 85%.
 *
 * With MLCC_SYSTICK_HZ defined (Cortex-M, QEMU run with -icount shift=0, so
 * that one instruction takes 1 ns of virtual time), the SysTick timer at
 * that processor clock counts the time of each inference, and the firmware
 * prints the instructions per inference it stands for: a speed proxy on a
 * microcontroller. On the nRF51 (QEMU's micro:bit, a Cortex-M0 without
 * SysTick) MLCC_NRF51_TIMER does the same with TIMER0, a 32-bit counter at
 * 16 MHz (one tick per 62.5 instructions; the figure is the total over all
 * runs divided by their number).
 *
 * A model quantized with --quantize-io takes and gives uint8 (the header
 * then defines DIGITS_INPUT_IMAGE_SCALE and _ZERO_POINT): the firmware
 * quantizes each pixel with them and takes the largest uint8 logit.
 */
#include "digits.h"

#include <stdio.h>
#include <string.h>

extern const unsigned char digits_test_set[];

static unsigned char arena[DIGITS_ARENA_SIZE + 1] __attribute__((aligned(64)));

#if defined(MLCC_SYSTICK_HZ) && defined(MLCC_NRF51_TIMER)
#error "MLCC_SYSTICK_HZ and MLCC_NRF51_TIMER: one timer at a time"
#endif
#ifdef MLCC_NRF51_TIMER
#define MLCC_TIMER_HZ 16000000u
#define TIMER0_START (*(volatile uint32_t *)0x40008000u)
#define TIMER0_CAPTURE0 (*(volatile uint32_t *)0x40008040u)
#define TIMER0_MODE (*(volatile uint32_t *)0x40008504u)
#define TIMER0_BITMODE (*(volatile uint32_t *)0x40008508u)
#define TIMER0_PRESCALER (*(volatile uint32_t *)0x40008510u)
#define TIMER0_CC0 (*(volatile uint32_t *)0x40008540u)
static void timer_start(void) {
  TIMER0_MODE = 0;      /* timer */
  TIMER0_BITMODE = 3;   /* 32 bits */
  TIMER0_PRESCALER = 0; /* 16 MHz */
  TIMER0_START = 1;
}
static uint32_t timer_now(void) {
  TIMER0_CAPTURE0 = 1;
  return TIMER0_CC0;
}
/* Ticks since `start` (an up counter). */
static uint32_t timer_since(uint32_t start) { return timer_now() - start; }
#endif

#ifdef MLCC_SYSTICK_HZ
#define MLCC_TIMER_HZ MLCC_SYSTICK_HZ
#define SYST_CSR (*(volatile uint32_t *)0xE000E010u)
#define SYST_RVR (*(volatile uint32_t *)0xE000E014u)
#define SYST_CVR (*(volatile uint32_t *)0xE000E018u)
static void timer_start(void) {
  SYST_RVR = 0xFFFFFFu;
  SYST_CVR = 0;
  SYST_CSR = 5u; /* enabled, processor clock, no interrupt */
}
/* Ticks since `start` (a 24-bit down counter; one inference is far shorter
   than a wrap). */
static uint32_t timer_now(void) { return SYST_CVR; }
static uint32_t timer_since(uint32_t start) { return (start - SYST_CVR) & 0xFFFFFFu; }
#endif

static uint32_t read_u32(const unsigned char *p) {
  return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
         ((uint32_t)p[3] << 24);
}

int main(void) {
  const unsigned char *set = digits_test_set;
  uint32_t count, i, correct = 0, hash = 2166136261u, outhash = 2166136261u;
#ifdef DIGITS_INPUT_IMAGE_SCALE
  uint8_t image[64], logits[10];
#else
  float image[64], logits[10];
#endif
  digits_inputs in;
  digits_outputs out;
  if (memcmp(set, "MLCCDIGT", 8) != 0 || read_u32(set + 12) != 64) {
    printf("bad test set\n");
    return 2;
  }
  count = read_u32(set + 8);
  in.image = image;
  out.logits = logits;
#ifdef MLCC_TIMER_HZ
  uint64_t ticks = 0;
  timer_start();
#endif
  for (i = 0; i < count; ++i) {
    const unsigned char *rec = set + 16 + (size_t)i * 257;
    int best = 0, k;
    mlcc_status st;
#ifdef DIGITS_INPUT_IMAGE_SCALE
    for (k = 0; k < 64; ++k) {
      float px;
      int q;
      memcpy(&px, rec + 4 * k, sizeof px);
      q = (int)(px / DIGITS_INPUT_IMAGE_SCALE + 0.5f) + DIGITS_INPUT_IMAGE_ZERO_POINT;
      image[k] = (uint8_t)(q < 0 ? 0 : q > 255 ? 255 : q);
    }
#else
    memcpy(image, rec, sizeof image);
#endif
#ifdef MLCC_TIMER_HZ
    uint32_t start = timer_now();
    st = digits_run(&in, &out, arena, sizeof arena);
    ticks += timer_since(start);
#else
    st = digits_run(&in, &out, arena, sizeof arena);
#endif
    if (st != MLCC_OK) {
      printf("run %u failed: %s\n", (unsigned)i, mlcc_status_string(st));
      return 3;
    }
    for (k = 1; k < 10; ++k)
      if (logits[k] > logits[best])
        best = k;
    if (best == rec[256])
      correct++;
    hash = (hash ^ (uint32_t)best) * 16777619u; /* FNV-1a over the predictions */
    for (k = 0; k < (int)sizeof logits; ++k) /* ... and over the outputs' bytes */
      outhash = (outhash ^ ((const unsigned char *)logits)[k]) * 16777619u;
    if (i < 8)
      printf("image %u: predicted %d, label %d\n", (unsigned)i, best, rec[256]);
  }
  /* Integer arithmetic only: float printf needs a heap in newlib. */
  printf("predictions (FNV-1a of all %u): %08x\n", (unsigned)count, (unsigned)hash);
  printf("outputs (FNV-1a of their bytes): %08x\n", (unsigned)outhash);
  printf("digits on %s: %u of %u correct (%u.%u%%), arena %u bytes\n",
         digits_info()->name, (unsigned)correct, (unsigned)count,
         (unsigned)(correct * 1000u / count / 10u), (unsigned)(correct * 1000u / count % 10u),
         (unsigned)DIGITS_ARENA_SIZE);
#ifdef MLCC_TIMER_HZ
  /* 1 instruction = 1 ns of virtual time; one tick = 1e9 / HZ ns. */
  printf("instructions per inference (%s at %u Hz, -icount shift=0): %u\n",
#ifdef MLCC_NRF51_TIMER
         "TIMER0",
#else
         "SysTick",
#endif
         (unsigned)MLCC_TIMER_HZ,
         (unsigned)(ticks * 1000000000u / MLCC_TIMER_HZ / count));
#endif
  return correct * 100 >= count * 85 ? 0 : 1;
}
