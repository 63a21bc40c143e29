/* fork(): the fork generation and mutexes a child gets free (fork.h). */
#include "core/fork.h"

static atomic_uint g_generation;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static bool g_tracked;
/* Serialises renewals in a child whose threads reach one stale mutex at
 * once; itself made free in each child by the handler. */
static pthread_mutex_t g_renew_lock = PTHREAD_MUTEX_INITIALIZER;

/* In the child, on the thread that called fork(), before fork() returns:
 * only async-signal-safe work (the JIT's reaper is such a child). */
static void after_fork_in_child(void) {
  pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
  g_renew_lock = fresh;
  atomic_fetch_add_explicit(&g_generation, 1, memory_order_relaxed);
}

static void register_handler(void) { g_tracked = pthread_atfork(NULL, NULL, after_fork_in_child) == 0; }

unsigned sk__fork_generation(void) {
  (void)pthread_once(&g_once, register_handler);
  /* Relaxed: the child's handler runs before anything else in the child
   * can look at it. */
  return atomic_load_explicit(&g_generation, memory_order_relaxed);
}

bool sk__fork_tracked(void) {
  (void)pthread_once(&g_once, register_handler);
  return g_tracked;
}

void sk__fork_mutex_init(sk__fork_mutex *m) {
  pthread_mutex_init(&m->mutex, NULL); /* default attributes: cannot fail on Linux */
  atomic_init(&m->generation, sk__fork_generation());
}

void sk__fork_mutex_destroy(sk__fork_mutex *m) { pthread_mutex_destroy(&m->mutex); }

/* A fresh mutex in place of one made in an earlier generation (copied held
 * or not: no thread of this process holds it). */
static void renew(sk__fork_mutex *m, unsigned generation) {
  pthread_mutex_lock(&g_renew_lock);
  if (atomic_load_explicit(&m->generation, memory_order_relaxed) != generation) {
    pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
    m->mutex = fresh;
    atomic_store_explicit(&m->generation, generation, memory_order_release);
  }
  pthread_mutex_unlock(&g_renew_lock);
}

void sk__fork_mutex_lock(sk__fork_mutex *m) {
  unsigned generation = sk__fork_generation();
  if (atomic_load_explicit(&m->generation, memory_order_acquire) != generation) renew(m, generation);
  pthread_mutex_lock(&m->mutex);
}

void sk__fork_mutex_unlock(sk__fork_mutex *m) { pthread_mutex_unlock(&m->mutex); }
