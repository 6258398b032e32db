/*
 * mlcc_pthread.h - an optional thread pool for NAME_run_with (POSIX threads).
 *
 *   mlcc_pthread_pool pool;
 *   mlcc_run_options opts;
 *   if (mlcc_pthread_pool_init(&pool, 2) != 0) ...;   (2 threads: the caller
 *                                                       and one worker)
 *   mlcc_pthread_run_options(&pool, &opts);
 *   NAME_run_with(&in, &out, arena, sizeof arena, &opts);
 *   mlcc_pthread_pool_destroy(&pool);
 *
 * Compile mlcc_pthread.c with the application and link with -pthread. One
 * pool serves one NAME_run_with call at a time.
 */
#ifndef MLCC_PTHREAD_H
#define MLCC_PTHREAD_H

#include <pthread.h>
#include <stdint.h>

#ifndef MLCC_RUNTIME_H /* a generated header embeds it */
#include "mlcc.h"
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define MLCC_PTHREAD_MAX_THREADS 64

struct mlcc_pthread_pool;
typedef struct mlcc_pthread_worker {
  struct mlcc_pthread_pool *pool;
  int32_t index;
} mlcc_pthread_worker;

typedef struct mlcc_pthread_pool {
  pthread_t threads[MLCC_PTHREAD_MAX_THREADS];
  mlcc_pthread_worker workers[MLCC_PTHREAD_MAX_THREADS];
  int32_t num_threads;    /* the caller included */
  pthread_mutex_t lock;
  pthread_cond_t work;    /* a new loop, or shutdown */
  pthread_cond_t done;    /* the last task of a loop finished */
  /* The current loop. */
  mlcc_task_fn task;
  void *context;
  int32_t count, finished; /* tasks of the loop; workers done with it */
  uint64_t generation;    /* counts loops, so that workers see each once */
  int shutdown;
} mlcc_pthread_pool;

/* Starts num_threads - 1 worker threads (num_threads >= 1). Returns 0, or
   an errno value when a thread cannot be created. */
int mlcc_pthread_pool_init(mlcc_pthread_pool *pool, int32_t num_threads);
/* Fills `options` so that NAME_run_with uses the pool. */
void mlcc_pthread_run_options(mlcc_pthread_pool *pool, mlcc_run_options *options);
/* Stops and joins the workers. */
void mlcc_pthread_pool_destroy(mlcc_pthread_pool *pool);

#ifdef __cplusplus
}
#endif

#endif /* MLCC_PTHREAD_H */
