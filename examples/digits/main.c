/*
 * main.c - classifies the held-out UCI digits with a model compiled by mlcc.
 *
 *   mlcc examples/digits/digits.onnx -o build/demo/libdigits.a
 *   cc -std=c99 -I build/demo examples/digits/main.c build/demo/libdigits.a -lm
 *   ./a.out examples/digits/test_set.bin
 *
 * test_set.bin (written by train.py, little-endian): the 8 bytes "MLCCDIGT",
 * uint32 count, uint32 pixels per image (64), then count records of
 * float32[64] pixels in [0,1] followed by a uint8 label.
 *
 * The program uses only the generated digits.h: no allocation is needed for
 * the model, whose scratch memory is a static buffer of DIGITS_ARENA_SIZE
 * bytes aligned to DIGITS_ARENA_ALIGN. Exit status: 0 if every run succeeds
 * and the accuracy is at least MIN_ACCURACY, 1 otherwise, 2 on bad input.
 */
#include "digits.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MIN_ACCURACY 0.85
#define NUM_PIXELS 64
#define NUM_CLASSES 10
#define RECORD_BYTES (NUM_PIXELS * 4 + 1)
#define SHOW_FIRST 10

#if DIGITS_INPUT_IMAGE_COUNT != NUM_PIXELS || DIGITS_OUTPUT_LOGITS_COUNT != NUM_CLASSES
#error "digits.h does not describe a [1,1,8,8] -> [1,10] model"
#endif

/* The arena: DIGITS_ARENA_ALIGN spare bytes let us align it in portable C99. */
static unsigned char arena_storage[DIGITS_ARENA_SIZE + DIGITS_ARENA_ALIGN];

static uint32_t read_u32le(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
         (uint32_t)p[3] << 24;
}

static float read_f32le(const unsigned char *p) {
  uint32_t bits = read_u32le(p);
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

static int argmax(const float *v, int n) {
  int i, best = 0;
  for (i = 1; i < n; ++i)
    if (v[i] > v[best]) best = i;
  return best;
}

static void print_dims(const mlcc_tensor_info *t) {
  int32_t d;
  printf("  %-8s float32 [", t->name);
  for (d = 0; d < t->rank; ++d)
    printf("%s%lld", d ? "," : "", (long long)t->shape[d]);
  printf("] (%zu bytes)\n", t->size_bytes);
}

static void print_info(void) {
  const mlcc_model_info *info = digits_info();
  int32_t i;
  printf("model '%s', compiled by mlcc %s\n", info->name, info->mlcc_version);
  for (i = 0; i < info->num_inputs; ++i) {
    printf(" input ");
    print_dims(&info->inputs[i]);
  }
  for (i = 0; i < info->num_outputs; ++i) {
    printf(" output");
    print_dims(&info->outputs[i]);
  }
  printf("arena: %zu bytes aligned to %zu (DIGITS_ARENA_SIZE %zu)\n",
         info->arena_size, info->arena_align, (size_t)DIGITS_ARENA_SIZE);
  printf("weights in the library: %zu bytes\n", info->weights_size);
}

static void print_image(const float *px) {
  static const char shades[] = " .:-=+*#%@";
  int r, c;
  for (r = 0; r < 8; ++r) {
    printf("    ");
    for (c = 0; c < 8; ++c) {
      int s = (int)(px[r * 8 + c] * 9.0f + 0.5f);
      s = s < 0 ? 0 : s > 9 ? 9 : s;
      putchar(shades[s]);
      putchar(shades[s]);
    }
    putchar('\n');
  }
}

int main(int argc, char **argv) {
  const char *path = argc > 1 ? argv[1] : "test_set.bin";
  unsigned char header[16], record[RECORD_BYTES];
  unsigned char *arena = arena_storage;
  uint32_t count, n, correct = 0;
  float image[NUM_PIXELS], logits[NUM_CLASSES];
  digits_inputs in;
  digits_outputs out;
  double accuracy, seconds = 0.0;
  FILE *f;

  if (argc > 2) {
    fprintf(stderr, "usage: %s [test_set.bin]\n", argv[0]);
    return 2;
  }
  arena += (DIGITS_ARENA_ALIGN - (uintptr_t)arena % DIGITS_ARENA_ALIGN) % DIGITS_ARENA_ALIGN;
  print_info();

  f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "cannot open %s\n", path);
    return 2;
  }
  if (fread(header, 1, sizeof header, f) != sizeof header ||
      memcmp(header, "MLCCDIGT", 8) != 0 || read_u32le(header + 12) != NUM_PIXELS) {
    fprintf(stderr, "%s is not a digits test set (see train.py)\n", path);
    fclose(f);
    return 2;
  }
  count = read_u32le(header + 8);
  if (count == 0) {
    fprintf(stderr, "%s holds no images\n", path);
    fclose(f);
    return 2;
  }
  printf("\n%u test images from %s\n", (unsigned)count, path);

  in.image = image;
  out.logits = logits;
  for (n = 0; n < count; ++n) {
    mlcc_status st;
    clock_t t0;
    int i, pred, label;
    if (fread(record, 1, sizeof record, f) != sizeof record) {
      fprintf(stderr, "%s: truncated at image %u\n", path, (unsigned)n);
      fclose(f);
      return 2;
    }
    for (i = 0; i < NUM_PIXELS; ++i) image[i] = read_f32le(record + 4 * i);
    label = record[NUM_PIXELS * 4];

    t0 = clock();
    st = digits_run(&in, &out, arena, DIGITS_ARENA_SIZE);
    seconds += (double)(clock() - t0) / CLOCKS_PER_SEC;
    if (st != MLCC_OK) {
      fprintf(stderr, "digits_run failed on image %u: status %d (%s)\n",
              (unsigned)n, (int)st, mlcc_status_string(st));
      fclose(f);
      return 1;
    }
    pred = argmax(logits, NUM_CLASSES);
    correct += pred == label;
    if (n == 0) {
      printf("image 0:\n");
      print_image(image);
    }
    if (n < SHOW_FIRST)
      printf("  image %3u: predicted %d, label %d  %s\n", (unsigned)n, pred,
             label, pred == label ? "ok" : "WRONG");
  }
  fclose(f);

  accuracy = (double)correct / count;
  printf("\naccuracy: %u/%u = %.2f%% (floor %.0f%%)\n", (unsigned)correct,
         (unsigned)count, accuracy * 100.0, MIN_ACCURACY * 100.0);
  printf("time: %.2f us per image (CPU time, one thread)\n", seconds * 1e6 / count);
  if (accuracy < MIN_ACCURACY) {
    fprintf(stderr, "FAIL: accuracy below %.0f%%\n", MIN_ACCURACY * 100.0);
    return 1;
  }
  return 0;
}
