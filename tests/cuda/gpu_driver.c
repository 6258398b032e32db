/*
 * gpu_driver.c - runs one model compiled with --target cuda --name m on a
 * GPU, from raw input files to raw output files (like
 * tools/conformance/driver.c on the CPU).
 *
 *   gpu_driver [--time N] IN0.bin IN1.bin ... -- OUT0.bin OUT1.bin ...
 *
 * Copies the inputs and the weights to the device, runs the model on a
 * stream with a cuBLAS handle, synchronizes, checks for errors and writes
 * the outputs. The arena and the outputs lie between guard bytes in device
 * memory: a kernel writing outside its buffers fails the run. With --time N
 * it then runs the model N more times (after 10 warm-up runs) and prints
 * the mean time per inference, measured with CUDA events.
 */
#include "mlcc.h"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

mlcc_status m_run_ptrs(const void *const *inputs, void *const *outputs, const void *weights,
                       void *arena, size_t arena_size, void *cublas, void *stream);
mlcc_status m_load_weights(void *weights, size_t weights_size, void *stream);
const mlcc_model_info *m_info(void);

#define GUARD 256
#define GUARD_BYTE 0xA5

#define CHECK(call)                                                              \
  do {                                                                           \
    cudaError_t e_ = (call);                                                     \
    if (e_ != cudaSuccess) {                                                     \
      fprintf(stderr, "gpu_driver: %s: %s\n", #call, cudaGetErrorString(e_));    \
      exit(5);                                                                   \
    }                                                                            \
  } while (0)

/* n bytes of device memory between two guards, filled with 0x5A. */
static unsigned char *guarded(size_t n) {
  unsigned char *p;
  CHECK(cudaMalloc((void **)&p, n + 2 * GUARD));
  CHECK(cudaMemset(p, GUARD_BYTE, n + 2 * GUARD));
  CHECK(cudaMemset(p + GUARD, 0x5A, n));
  return p + GUARD;
}

static int intact(const unsigned char *p, size_t n) {
  unsigned char g[2 * GUARD];
  int i;
  CHECK(cudaMemcpy(g, p - GUARD, GUARD, cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(g + GUARD, p + n, GUARD, cudaMemcpyDeviceToHost));
  for (i = 0; i < 2 * GUARD; ++i)
    if (g[i] != GUARD_BYTE)
      return 0;
  return 1;
}

int main(int argc, char **argv) {
  const mlcc_model_info *info = m_info();
  int first = 1, sep, i, timed = 0;
  const void **inputs;
  void **outputs;
  unsigned char *arena, *weights;
  cudaStream_t stream;
  cublasHandle_t cublas;
  mlcc_status st;
  if (argc > 2 && strcmp(argv[1], "--time") == 0) {
    timed = atoi(argv[2]);
    first = 3;
  }
  sep = first;
  while (sep < argc && strcmp(argv[sep], "--") != 0) sep++;
  if (sep - first != info->num_inputs || argc - sep - 1 != info->num_outputs) {
    fprintf(stderr, "gpu_driver: model has %d inputs and %d outputs\n",
            (int)info->num_inputs, (int)info->num_outputs);
    return 2;
  }
  CHECK(cudaStreamCreate(&stream));
  if (cublasCreate(&cublas) != CUBLAS_STATUS_SUCCESS) {
    fprintf(stderr, "gpu_driver: cublasCreate failed\n");
    return 5;
  }
  inputs = calloc((size_t)info->num_inputs + 1, sizeof *inputs);
  outputs = calloc((size_t)info->num_outputs + 1, sizeof *outputs);
  for (i = 0; i < info->num_inputs; ++i) {
    size_t n = info->inputs[i].size_bytes;
    unsigned char *host = malloc(n + 1), *dev = guarded(n);
    FILE *f = fopen(argv[first + i], "rb");
    long len;
    if (!f) { fprintf(stderr, "gpu_driver: cannot open %s\n", argv[first + i]); return 2; }
    fseek(f, 0, SEEK_END);
    len = ftell(f);
    fseek(f, 0, SEEK_SET);
    if ((size_t)len != n || (n && fread(host, 1, n, f) != n)) {
      fprintf(stderr, "gpu_driver: input %d ('%s') needs %zu bytes, file has %ld\n", i,
              info->inputs[i].name, n, len);
      return 2;
    }
    fclose(f);
    CHECK(cudaMemcpy(dev, host, n, cudaMemcpyHostToDevice));
    free(host);
    inputs[i] = dev;
  }
  for (i = 0; i < info->num_outputs; ++i)
    outputs[i] = guarded(info->outputs[i].size_bytes);
  arena = guarded(info->arena_size);
  CHECK(cudaMalloc((void **)&weights, info->weights_size ? info->weights_size : 1));
  st = m_load_weights(weights, info->weights_size, stream);
  if (st == MLCC_OK)
    st = m_run_ptrs(inputs, outputs, weights, arena, info->arena_size, cublas, stream);
  if (st != MLCC_OK) {
    fprintf(stderr, "gpu_driver: %s\n", mlcc_status_string(st));
    return 3;
  }
  CHECK(cudaStreamSynchronize(stream));
  CHECK(cudaGetLastError());
  if (!intact(arena, info->arena_size)) {
    fprintf(stderr, "gpu_driver: the model wrote outside its arena\n");
    return 4;
  }
  for (i = 0; i < info->num_outputs; ++i) {
    size_t n = info->outputs[i].size_bytes;
    unsigned char *host = malloc(n + 1);
    FILE *f;
    if (!intact(outputs[i], n)) {
      fprintf(stderr, "gpu_driver: the model wrote outside output %d\n", i);
      return 4;
    }
    CHECK(cudaMemcpy(host, outputs[i], n, cudaMemcpyDeviceToHost));
    f = fopen(argv[sep + 1 + i], "wb");
    if (!f || (n && fwrite(host, 1, n, f) != n)) {
      fprintf(stderr, "gpu_driver: cannot write %s\n", argv[sep + 1 + i]);
      return 2;
    }
    fclose(f);
    free(host);
  }
  if (timed > 0) {
    cudaEvent_t start, stop;
    float ms = 0;
    CHECK(cudaEventCreate(&start));
    CHECK(cudaEventCreate(&stop));
    for (i = 0; i < 10; ++i)
      m_run_ptrs(inputs, outputs, weights, arena, info->arena_size, cublas, stream);
    CHECK(cudaEventRecord(start, stream));
    for (i = 0; i < timed; ++i)
      m_run_ptrs(inputs, outputs, weights, arena, info->arena_size, cublas, stream);
    CHECK(cudaEventRecord(stop, stream));
    CHECK(cudaEventSynchronize(stop));
    CHECK(cudaEventElapsedTime(&ms, start, stop));
    printf("gpu_ms_per_inference %.4f\n", ms / timed);
  }
  cublasDestroy(cublas);
  return 0;
}
