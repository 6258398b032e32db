/*
 * The digits example as firmware: the held-out test set is linked into flash
 * (test_set.S), the arena is a static buffer, and the result is reported
 * through semihosting (integer printf only: no heap is needed). Exit status 0 when every run succeeds and the
 * accuracy is at least 85%.
 */
#include "digits.h"

#include <stdio.h>
#include <string.h>

extern const unsigned char digits_test_set[];

static unsigned char arena[DIGITS_ARENA_SIZE + 1] __attribute__((aligned(64)));

static uint32_t read_u32(const unsigned char *p) {
  return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
         ((uint32_t)p[3] << 24);
}

int main(void) {
  const unsigned char *set = digits_test_set;
  uint32_t count, i, correct = 0;
  float image[64], logits[10];
  digits_inputs in;
  digits_outputs out;
  if (memcmp(set, "MLCCDIGT", 8) != 0 || read_u32(set + 12) != 64) {
    printf("bad test set\n");
    return 2;
  }
  count = read_u32(set + 8);
  in.image = image;
  out.logits = logits;
  for (i = 0; i < count; ++i) {
    const unsigned char *rec = set + 16 + (size_t)i * 257;
    int best = 0, k;
    mlcc_status st;
    memcpy(image, rec, sizeof image);
    st = digits_run(&in, &out, arena, sizeof arena);
    if (st != MLCC_OK) {
      printf("run %u failed: %s\n", (unsigned)i, mlcc_status_string(st));
      return 3;
    }
    for (k = 1; k < 10; ++k)
      if (logits[k] > logits[best])
        best = k;
    if (best == rec[256])
      correct++;
    if (i < 8)
      printf("image %u: predicted %d, label %d\n", (unsigned)i, best, rec[256]);
  }
  /* Integer arithmetic only: float printf needs a heap in newlib. */
  printf("digits on %s: %u of %u correct (%u.%u%%), arena %u bytes\n",
         digits_info()->name, (unsigned)correct, (unsigned)count,
         (unsigned)(correct * 1000u / count / 10u), (unsigned)(correct * 1000u / count % 10u),
         (unsigned)DIGITS_ARENA_SIZE);
  return correct * 100 >= count * 85 ? 0 : 1;
}
