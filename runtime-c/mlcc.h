/*
 * mlcc.h - the mlcc runtime interface (C99, no dependencies).
 *
 * Every header that mlcc generates embeds this block, so a generated header
 * is self-contained; several generated headers can be included together.
 *
 * Conventions of a generated library for a model named NAME:
 *  - NAME_run(in, out, arena, arena_size) computes the model. The caller owns
 *    every buffer: inputs (read only), outputs and the arena, which must hold
 *    NAME_ARENA_SIZE bytes aligned to NAME_ARENA_ALIGN. Buffers must not
 *    overlap. The library keeps no pointer after it returns, allocates
 *    nothing and has no mutable global state: calls with separate arenas may
 *    run concurrently.
 *  - Tensors are dense, row-major arrays. Element types: float16 and
 *    bfloat16 are passed as their uint16_t bit patterns, the float8 types as
 *    their uint8_t bit patterns, bool as uint8_t 0/1.
 *  - NAME_run_with(in, out, arena, arena_size, options) is NAME_run with
 *    optional multi-threading: the parallel loops of the model's kernels
 *    call options->parallel_for (see mlcc_run_options); NAME_run and a NULL
 *    options run everything on the calling thread and need nothing.
 *    mlcc_pthread.c (optional, Linux) provides a thread pool for it.
 *  - NAME_info() describes the inputs and outputs (names, types, shapes).
 *  - Functions return an mlcc_status: 0 on success, a small positive code
 *    otherwise. Define MLCC_NO_STATUS_STRING to compile out the messages.
 */
#ifndef MLCC_RUNTIME_H
#define MLCC_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef int32_t mlcc_status;
#define MLCC_OK 0
#define MLCC_ERR_NULL_ARGUMENT 1   /* in, out or an input/output pointer is NULL */
#define MLCC_ERR_ARENA_NULL 2      /* the model needs an arena but got NULL */
#define MLCC_ERR_ARENA_TOO_SMALL 3 /* arena_size < NAME_ARENA_SIZE */
#define MLCC_ERR_ARENA_MISALIGNED 4 /* arena not aligned to NAME_ARENA_ALIGN */
#define MLCC_ERR_DEVICE 5          /* the CUDA target: a CUDA or cuBLAS call failed */
#define MLCC_ERR_WEIGHTS_TOO_SMALL 6 /* the CUDA target: weights_size < NAME_WEIGHTS_SIZE */
#define MLCC_ERR_DIM_RANGE 7       /* a run-time dimension outside its NAME_DIM_X_MIN..MAX,
                                      or an input outside its NAME_INPUT_X_MIN..MAX */
#define MLCC_ERR_CACHE_BUFFER 8    /* a --kv-cache input and its output are not one buffer */

/* Element types: the ONNX TensorProto.DataType codes. */
typedef int32_t mlcc_dtype;
#define MLCC_FLOAT32 1
#define MLCC_UINT8 2
#define MLCC_INT8 3
#define MLCC_UINT16 4
#define MLCC_INT16 5
#define MLCC_INT32 6
#define MLCC_INT64 7
#define MLCC_BOOL 9
#define MLCC_FLOAT16 10
#define MLCC_FLOAT64 11
#define MLCC_UINT32 12
#define MLCC_UINT64 13
#define MLCC_BFLOAT16 16
/* 8-bit floats, passed as uint8_t bit patterns. */
#define MLCC_FLOAT8E4M3FN 17
#define MLCC_FLOAT8E4M3FNUZ 18
#define MLCC_FLOAT8E5M2 19
#define MLCC_FLOAT8E5M2FNUZ 20
#define MLCC_FLOAT8E8M0 24

/*
 * How NAME_run_with runs a parallel loop: parallel_for(pool, count, task,
 * context) must call task(context, i, worker) once for every i in
 * [0, count), on any of num_workers threads, and return when all calls have
 * returned; `worker` (0 <= worker < num_workers) tells the calling thread
 * apart. Tasks of one loop are independent; each keeps its temporaries on
 * its own thread's stack, so the arena size does not depend on the number
 * of workers. A NULL parallel_for runs the loops serially.
 */
typedef void (*mlcc_task_fn)(void *context, int32_t index, int32_t worker);
/*
 * Profiling, optional: when on_kernel is not NULL, NAME_run_with calls it
 * before (phase 0) and after (phase 1) every kernel call, with the call's
 * index in the model's sequence (the `calls:` list of `mlcc --emit kernels`
 * names the ONNX nodes of each) and its kernel's name ("k3_conv_add_relu").
 * The library reads no clock itself: the caller times.
 * Zero-initialize the options and set what you use.
 */
typedef void (*mlcc_kernel_hook)(void *context, int32_t call, const char *name, int32_t phase);
typedef struct mlcc_run_options {
  void (*parallel_for)(void *pool, int32_t count, mlcc_task_fn task, void *context);
  void *pool;          /* passed to parallel_for */
  int32_t num_workers; /* threads parallel_for may use, the caller's included */
  mlcc_kernel_hook on_kernel; /* NULL: no profiling */
  void *hook_context;         /* passed to on_kernel */
} mlcc_run_options;

typedef struct mlcc_tensor_info {
  const char *name;      /* the ONNX tensor name */
  mlcc_dtype dtype;
  int32_t rank;
  const int64_t *shape;  /* rank extents; -1 for an axis that follows
                            run-time dimensions (mlcc_model_info.dims) */
  size_t size_bytes;     /* bytes of the dense buffer (every run-time
                            dimension at its max) */
  float scale;           /* quantized (8-bit) data: real value = scale * */
  int32_t zero_point;    /* (q - zero_point); scale 0 when not quantized */
} mlcc_tensor_info;

/* A dimension known only when the model runs (mlcc --dim NAME=MIN..MAX): a
   member of NAME_inputs. */
typedef struct mlcc_dim_info {
  const char *name;      /* as the model names it */
  int64_t min, max;      /* the values NAME_run accepts */
} mlcc_dim_info;

typedef struct mlcc_model_info {
  const char *name;              /* the model prefix */
  const char *mlcc_version;      /* the compiler that generated the library */
  int32_t num_inputs;
  const mlcc_tensor_info *inputs;
  int32_t num_outputs;
  const mlcc_tensor_info *outputs;
  size_t arena_size;             /* == NAME_ARENA_SIZE */
  size_t arena_align;            /* == NAME_ARENA_ALIGN */
  size_t weights_size;           /* bytes of constant data in the library */
  int32_t num_dims;              /* run-time dimensions (0: fixed shapes) */
  const mlcc_dim_info *dims;
} mlcc_model_info;

#ifndef MLCC_NO_STATUS_STRING
/* A short English description of a status code. */
static inline const char *mlcc_status_string(mlcc_status status) {
  switch (status) {
  case MLCC_OK: return "ok";
  case MLCC_ERR_NULL_ARGUMENT: return "a required pointer argument is NULL";
  case MLCC_ERR_ARENA_NULL: return "the arena is NULL";
  case MLCC_ERR_ARENA_TOO_SMALL: return "the arena is smaller than the model needs";
  case MLCC_ERR_ARENA_MISALIGNED: return "the arena is not aligned as the model needs";
  case MLCC_ERR_DEVICE: return "a CUDA or cuBLAS call failed";
  case MLCC_ERR_WEIGHTS_TOO_SMALL: return "the weights buffer is smaller than the model needs";
  case MLCC_ERR_DIM_RANGE: return "a run-time dimension or input value is outside the range the model was compiled for";
  case MLCC_ERR_CACHE_BUFFER: return "a key/value cache input and its output (--kv-cache) are not the same buffer";
  default: return "unknown status";
  }
}
#endif

#ifdef __cplusplus
}
#endif

#endif /* MLCC_RUNTIME_H */
