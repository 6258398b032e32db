/*
 * The run function's contract (runtime-c/mlcc.h), checked on the digits
 * library: every bad argument gives its status code and leaves the outputs
 * untouched; a good call succeeds with an arena of exactly the declared size,
 * and twice in a row gives identical results (no hidden state).
 * Built with -std=c99 -Wall -Wextra -Werror -pedantic, linked with -lm only.
 */
#include "digits.h"

#include <stdio.h>
#include <string.h>

static unsigned char arena[DIGITS_ARENA_SIZE + 64] __attribute__((aligned(64)));

static int failures = 0;

static void expect(const char *what, mlcc_status got, mlcc_status want) {
  if (got != want) {
    printf("FAIL %s: status %d (%s), want %d\n", what, (int)got, mlcc_status_string(got),
           (int)want);
    failures++;
  } else {
    printf("ok   %s: %s\n", what, mlcc_status_string(got));
  }
}

int main(void) {
  float image[64], logits[10], again[10];
  digits_inputs in;
  digits_outputs out;
  const void *inputs[1];
  void *outputs[1];
  const mlcc_model_info *info = digits_info();
  int i;
  for (i = 0; i < 64; ++i)
    image[i] = (float)(i % 7) / 7.0f;
  in.image = image;
  out.logits = logits;
  memset(logits, 0x7f, sizeof logits);

  expect("in == NULL", digits_run(NULL, &out, arena, DIGITS_ARENA_SIZE), MLCC_ERR_NULL_ARGUMENT);
  expect("out == NULL", digits_run(&in, NULL, arena, DIGITS_ARENA_SIZE), MLCC_ERR_NULL_ARGUMENT);
  in.image = NULL;
  expect("input pointer NULL", digits_run(&in, &out, arena, DIGITS_ARENA_SIZE), MLCC_ERR_NULL_ARGUMENT);
  in.image = image;
  out.logits = NULL;
  expect("output pointer NULL", digits_run(&in, &out, arena, DIGITS_ARENA_SIZE), MLCC_ERR_NULL_ARGUMENT);
  out.logits = logits;
  expect("arena NULL", digits_run(&in, &out, NULL, DIGITS_ARENA_SIZE), MLCC_ERR_ARENA_NULL);
  expect("arena too small", digits_run(&in, &out, arena, DIGITS_ARENA_SIZE - 1), MLCC_ERR_ARENA_TOO_SMALL);
  expect("arena misaligned", digits_run(&in, &out, arena + 4, DIGITS_ARENA_SIZE), MLCC_ERR_ARENA_MISALIGNED);
  for (i = 0; i < 10; ++i)
    if (logits[i] != logits[0] || logits[0] == 0.0f) {
      printf("FAIL a rejected call wrote the outputs\n");
      failures++;
      break;
    }
  expect("valid call", digits_run(&in, &out, arena, DIGITS_ARENA_SIZE), MLCC_OK);
  out.logits = again;
  memset(arena, 0xA5, sizeof arena); /* the arena needs no initialization */
  expect("second call", digits_run(&in, &out, arena, DIGITS_ARENA_SIZE), MLCC_OK);
  if (memcmp(logits, again, sizeof logits) != 0) {
    printf("FAIL two calls gave different results\n");
    failures++;
  }
  inputs[0] = image;
  outputs[0] = again;
  expect("run_ptrs", digits_run_ptrs(inputs, outputs, arena, DIGITS_ARENA_SIZE), MLCC_OK);
  expect("run_ptrs NULL", digits_run_ptrs(NULL, outputs, arena, DIGITS_ARENA_SIZE), MLCC_ERR_NULL_ARGUMENT);
  if (info->num_inputs != 1 || info->num_outputs != 1 || info->arena_size != DIGITS_ARENA_SIZE ||
      info->arena_align != DIGITS_ARENA_ALIGN || info->weights_size != DIGITS_WEIGHTS_SIZE ||
      strcmp(info->inputs[0].name, "image") != 0 || info->inputs[0].dtype != MLCC_FLOAT32 ||
      info->inputs[0].rank != 4 || info->inputs[0].shape[3] != 8 ||
      info->outputs[0].size_bytes != sizeof logits) {
    printf("FAIL digits_info() does not describe the model\n");
    failures++;
  } else {
    printf("ok   digits_info(): %s, arena %u bytes, weights %u bytes\n", info->name,
           (unsigned)info->arena_size, (unsigned)info->weights_size);
  }
  return failures ? 1 : 0;
}
