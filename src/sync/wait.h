/*
 * wait.h - bounded busy-wait with back-off. Every wait loop in librma goes through here:
 * spin briefly (a peer on another core answers in ~100 ns), then yield the core, then sleep,
 * so that oversubscribed runs (4 ranks on 2 cores) make progress.
 */
#ifndef RMA_WAIT_H
#define RMA_WAIT_H

#include <sched.h>
#include <stdint.h>
#include <time.h>

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

/* The monotonic clock in nanoseconds: deadlines, and what a wait or a transfer took. */
static inline uint64_t rma_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Peer failure (peer_fail.c). The transport registers a watch function (NULL removes it)
 * that calls rma_peer_failed(world rank, reason) when it finds a peer gone. rma_peer_poll,
 * called by every wait that sleeps (rma_wait_idle) and by the transport's waits for MPI
 * requests, runs the watch function and, after a report, prints the peer and the reason
 * and ends the job (MPI_Abort). rma_peer_fail_ignore: MPI_Finalize has begun (peers close
 * their endpoints and leave): reports are ignored from now on, those of every peer when of
 * is NULL, else those of world ranks w < n with of[w] set (this process's MPI session
 * outlives MPI_Finalize, with the peers whose sessions do too). */
void rma_peer_watch_set(void (*fn)(void));
void rma_peer_failed(int world_rank, const char *why);
void rma_peer_poll(void);
void rma_peer_fail_ignore(const unsigned char *of, int n);

/* A sleeping wait's turn at what lies outside librma (idle.c): rma_peer_poll, and the MPI
 * library's own progress (MPI's progress rule: a peer may wait in MPI_Recv for this rank's
 * send). Nothing in a thread that called rma_wait_no_mpi (the progress agent), nor while
 * rma_wait_mpi_up says MPI's world is not up and no session is open (rma_wait_sessions:
 * +1 at MPI_Session_init, -1 at MPI_Session_finalize; returns how many are open). */
void rma_wait_idle(void);
void rma_wait_no_mpi(void);
void rma_wait_mpi_up(int up);
int rma_wait_sessions(int delta);
/* A live window's same-node peer process (world rank), watched until as many unwatches */
void rma_peer_watch_pid(int pid, int world_rank);
void rma_peer_unwatch_pid(int pid);
void rma_peer_unwatch_all(void); /* MPI_Finalize has begun */

typedef struct rma_backoff {
    int spins;          /* pauses so far */
    unsigned sleep_us;  /* the last sleep, once yielding did not help */
    struct timespec t0; /* when the waiter started to yield */
    int quiet;          /* 1: its sleeps take no turn outside librma (rma_wait_idle): a wait
                           made with librma's locks held, which must call no MPI */
} rma_backoff_t;

#define RMA_BACKOFF_INIT                                                                           \
    {                                                                                              \
        0, 0, {0, 0}, 0                                                                            \
    }

#define RMA_BACKOFF_YIELD_NS 1000000L /* yield ~1 ms (coarse clock) before sleeping */
#define RMA_BACKOFF_SLEEP_US 256      /* longest sleep: the most a wake-up can be late by */

/* One step of waiting: a pause while under the spin budget, then sched_yield for 1 ms, then
 * sleeps that double up to RMA_BACKOFF_SLEEP_US. sched_yield alone does not give the core
 * away when more ranks than cores run (the scheduler may pick the yielding rank again at
 * once, and never picks a rank queued on the other core), so a rank that keeps seeing no
 * progress sleeps and lets the rank it waits for run; only after a millisecond, because a
 * sleep ends ~60 us late at the least and ordinary waits are shorter. */
static inline void rma_backoff(rma_backoff_t *b)
{
    struct timespec now;

    if (b->spins < rma_env.spin_count) {
        b->spins++;
        rma_cpu_relax();
        return;
    }
    clock_gettime(CLOCK_MONOTONIC_COARSE, &now);
    if (b->spins == rma_env.spin_count) {
        b->spins++;
        b->t0 = now;
    }
    if ((now.tv_sec - b->t0.tv_sec) * 1000000000L + (now.tv_nsec - b->t0.tv_nsec) <
        RMA_BACKOFF_YIELD_NS) {
        sched_yield();
    } else {
        struct timespec ts = {0, 0};
        if (!b->quiet)
            rma_wait_idle(); /* out of line: peers gone, the MPI library's progress */
        b->sleep_us = b->sleep_us ? 2 * b->sleep_us : 1;
        if (b->sleep_us > RMA_BACKOFF_SLEEP_US)
            b->sleep_us = RMA_BACKOFF_SLEEP_US;
        ts.tv_nsec = (long)b->sleep_us * 1000;
        nanosleep(&ts, NULL);
    }
}

/* One step of a wait that polls something: after a poll that moved data it starts over
 * at spinning, else it backs off (rma_backoff). A backoff measures how long nothing has
 * happened, not how long the wait has lasted: a flush of 500 64 KiB gets that takes 3 ms is
 * busy all along, and a waiter that slept between its turns at the network left the
 * target's sends queued (twice to five times as slow, by run). */
static inline void rma_backoff_after(rma_backoff_t *b, int moved)
{
    if (moved) {
        b->spins = 0;
        b->sleep_us = 0;
    } else {
        rma_backoff(b);
    }
}

#endif
