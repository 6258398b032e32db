/* mlcc_pthread.c - see mlcc_pthread.h. */
#include "mlcc_pthread.h"

/* Runs worker `worker`'s share of the current loop: a contiguous block of
   the tasks (a static partition, so that the pool's lock is taken once per
   worker and loop, not once per task). Called with the lock held, returns
   with it held. */
static void run_tasks(mlcc_pthread_pool *pool, int32_t worker) {
  int32_t count = pool->count, n = pool->num_threads;
  int32_t begin = (int32_t)((int64_t)count * worker / n);
  int32_t end = (int32_t)((int64_t)count * (worker + 1) / n);
  mlcc_task_fn task = pool->task;
  void *context = pool->context;
  pthread_mutex_unlock(&pool->lock);
  for (int32_t i = begin; i < end; ++i)
    task(context, i, worker);
  pthread_mutex_lock(&pool->lock);
  if (__atomic_add_fetch(&pool->finished, 1, __ATOMIC_ACQ_REL) == n)
    pthread_cond_broadcast(&pool->done);
}

/* Spins (up to about a millisecond) while *value == unchanged; true when it
   changed. Waking a sleeping thread costs a system call and, in a virtual
   machine, much more than a short spin, and a model's kernels start their
   parallel loops in quick succession. */
static void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause(); /* leaves the core's resources to a sibling thread */
#elif defined(__aarch64__) || (defined(__arm__) && __ARM_ARCH >= 7)
  __asm__ __volatile__("yield");
#endif
}

static int spin_while_equal(const void *value, uint64_t unchanged, int is64) {
  for (int spin = 0; spin < 200000; ++spin) {
    uint64_t v = is64 ? __atomic_load_n((const uint64_t *)value, __ATOMIC_ACQUIRE)
                      : (uint64_t)__atomic_load_n((const int32_t *)value, __ATOMIC_ACQUIRE);
    if (v != unchanged)
      return 1;
    cpu_relax();
  }
  return 0;
}

static void *worker_main(void *arg) {
  mlcc_pthread_pool *pool = ((mlcc_pthread_worker *)arg)->pool;
  int32_t index = ((mlcc_pthread_worker *)arg)->index;
  uint64_t seen = 0;
  pthread_mutex_lock(&pool->lock);
  for (;;) {
    if (!pool->shutdown) {
      pthread_mutex_unlock(&pool->lock);
      spin_while_equal(&pool->generation, seen, 1);
      pthread_mutex_lock(&pool->lock);
    }
    while (!pool->shutdown && pool->generation == seen)
      pthread_cond_wait(&pool->work, &pool->lock);
    if (pool->shutdown)
      break;
    seen = pool->generation;
    run_tasks(pool, index);
  }
  pthread_mutex_unlock(&pool->lock);
  return 0;
}

static void parallel_for(void *p, int32_t count, mlcc_task_fn task, void *context) {
  mlcc_pthread_pool *pool = (mlcc_pthread_pool *)p;
  if (count <= 0)
    return;
  if (pool->num_threads <= 1 || count == 1) {
    for (int32_t i = 0; i < count; ++i)
      task(context, i, 0);
    return;
  }
  pthread_mutex_lock(&pool->lock);
  pool->task = task;
  pool->context = context;
  pool->count = count;
  pool->finished = 0;
  __atomic_store_n(&pool->generation, pool->generation + 1, __ATOMIC_RELEASE);
  pthread_cond_broadcast(&pool->work);
  run_tasks(pool, 0);
  if (pool->finished < pool->num_threads) {
    int32_t seen = pool->finished;
    pthread_mutex_unlock(&pool->lock);
    while (seen < pool->num_threads && spin_while_equal(&pool->finished, (uint64_t)seen, 0))
      seen = __atomic_load_n(&pool->finished, __ATOMIC_ACQUIRE);
    pthread_mutex_lock(&pool->lock);
  }
  while (pool->finished < pool->num_threads)
    pthread_cond_wait(&pool->done, &pool->lock);
  pool->count = 0;
  pthread_mutex_unlock(&pool->lock);
}

int mlcc_pthread_pool_init(mlcc_pthread_pool *pool, int32_t num_threads) {
  if (num_threads < 1)
    num_threads = 1;
  if (num_threads > MLCC_PTHREAD_MAX_THREADS)
    num_threads = MLCC_PTHREAD_MAX_THREADS;
  pool->num_threads = 1;
  pool->task = 0;
  pool->context = 0;
  pool->count = pool->finished = 0;
  pool->generation = 0;
  pool->shutdown = 0;
  pthread_mutex_init(&pool->lock, 0);
  pthread_cond_init(&pool->work, 0);
  pthread_cond_init(&pool->done, 0);
  for (int32_t t = 1; t < num_threads; ++t) {
    mlcc_pthread_worker *arg = &pool->workers[t];
    arg->pool = pool;
    arg->index = t;
    int err = pthread_create(&pool->threads[t], 0, worker_main, arg);
    if (err) {
      mlcc_pthread_pool_destroy(pool);
      return err;
    }
    pool->num_threads = t + 1;
  }
  return 0;
}

void mlcc_pthread_run_options(mlcc_pthread_pool *pool, mlcc_run_options *options) {
  options->parallel_for = parallel_for;
  options->pool = pool;
  options->num_workers = pool->num_threads;
  options->on_kernel = 0;
  options->hook_context = 0;
}

void mlcc_pthread_pool_destroy(mlcc_pthread_pool *pool) {
  pthread_mutex_lock(&pool->lock);
  __atomic_store_n(&pool->shutdown, 1, __ATOMIC_RELEASE);
  pthread_cond_broadcast(&pool->work);
  pthread_mutex_unlock(&pool->lock);
  for (int32_t t = 1; t < pool->num_threads; ++t)
    pthread_join(pool->threads[t], 0);
  pool->num_threads = 1;
  pthread_mutex_destroy(&pool->lock);
  pthread_cond_destroy(&pool->work);
  pthread_cond_destroy(&pool->done);
}
