/*
 * wait.h - bounded busy-wait with back-off. Every wait loop in librma goes through here:
 * spin briefly (a peer on another core answers in ~100 ns), then yield the core so that
 * oversubscribed runs (4 ranks on 2 cores) make progress.
 */
#ifndef RMA_WAIT_H
#define RMA_WAIT_H

#include <sched.h>

#include "mpid/rma/env.h"

static inline void rma_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield" ::: "memory");
#else
    __asm__ __volatile__("" ::: "memory");
#endif
}

typedef struct rma_backoff {
    int spins;
} rma_backoff_t;

#define RMA_BACKOFF_INIT                                                                           \
    {                                                                                              \
        0                                                                                          \
    }

/* One step of waiting: a pause while under the spin budget, then sched_yield. */
static inline void rma_backoff(rma_backoff_t *b)
{
    if (b->spins < rma_env.spin_count) {
        b->spins++;
        rma_cpu_relax();
    } else {
        sched_yield();
    }
}

#endif
