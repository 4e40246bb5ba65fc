/*
 * peer_fail.c - what librma does when a peer process is gone. The transport finds it (UCX's
 * error handler on a watch endpoint, nm_ucx.c) while its watch function runs and reports
 * it here. Nothing to that peer can complete any more: a lock word, a fence or PSCW counter,
 * a flush, an answer it was to send. So every wait that backs off to sleeping (wait.h), in
 * an application thread, drives the watch (rma_peer_poll, from idle.c), and the first after
 * a report prints which peer is gone and why and ends the job as MPI_Abort does. The
 * progress agent never does (it calls no MPI: rma_wait_no_mpi). Reports that come once
 * MPI_Finalize has begun (peers closing their endpoints) are ignored; a process whose MPI
 * session outlives MPI_Finalize ignores only those of the peers that left.
 *
 * Peers of this node are no transport's: UCX need not even run. Each window watches its
 * same-node peers' processes while it lives (rma_peer_watch_pid: the one pidfd segment.c
 * keeps per peer process, counted by every window on that peer), and the same waits poll
 * those pidfds, at most every 10 ms: a peer of a live window never ends normally before
 * MPI_Finalize (MPI_Win_free is collective), and from MPI_Finalize on (where a peer may
 * leave before this process has passed the steps all ranks take) none is watched. Without
 * pidfd_open (Linux before 5.3) the process manager is what ends the job.
 */
#include "config.h"

#include "sync/wait.h"

#include <mpi.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mpid/rma/grow.h"
#include "windows/segment.h"

static _Atomic int gone; /* world rank + 1 of the first peer reported gone; 0: none */
static _Atomic int finalizing;
static const unsigned char *_Atomic left; /* left[w]: world rank w has left ... */
static int nleft;                         /* ... for w < nleft (rma_peer_fail_ignore) */
static const char *_Atomic gone_why;
static void (*_Atomic watch)(void);

void rma_peer_watch_set(void (*fn)(void))
{
    atomic_store(&watch, fn);
}

static int has_left(int world_rank)
{
    const unsigned char *l = atomic_load_explicit(&left, memory_order_acquire);

    return l != NULL && world_rank >= 0 && world_rank < nleft && l[world_rank];
}

void rma_peer_failed(int world_rank, const char *why)
{
    int none = 0;

    if (!atomic_load(&finalizing) && !has_left(world_rank) &&
        atomic_compare_exchange_strong(&gone, &none, world_rank + 1))
        atomic_store(&gone_why, why); /* the first report wins */
}

void rma_peer_fail_ignore(const unsigned char *of, int n)
{
    unsigned char *copy;

    if (of == NULL || atomic_load(&left) != NULL || (copy = malloc((size_t)n)) == NULL) {
        atomic_store(&finalizing, 1); /* rma_peer_poll then ends nothing */
        return;
    }
    memcpy(copy, of, (size_t)n);
    nleft = n;
    atomic_store_explicit(&left, copy, memory_order_release); /* kept to the process's end */
}

/* Prints the peer that is gone and ends the job. */
static void gone_end(int w)
{
    const char *why = atomic_load(&gone_why);
    int me = -1;

    PMPI_Comm_rank(MPI_COMM_WORLD, &me);
    fprintf(stderr,
            "librma: rank %d (pid %d): peer world rank %d is gone (%s); its operations and "
            "synchronizations can never complete: ending the job%s\n",
            me, (int)getpid(), w, why != NULL ? why : "transport error",
            /* UCX's keepalive cannot tell a dead peer from one that never drives its worker */
            why != NULL && strstr(why, "timeout") != NULL
                ? " (a live peer looks the same when it runs with RMA_AGENT=off and makes no "
                  "MPI call for longer than UCX's keepalive allows)"
                : "");
    fflush(stderr);
    PMPI_Abort(MPI_COMM_WORLD, 1);
    _exit(1); /* MPI_Abort does not return; this is in case the process manager is gone */
}

/* Same-node peer processes watched, each with its pidfd (locals_fd[i], segment.c's, which
 * it closes at MPI_Finalize) and the number of live windows that watch it */
typedef struct local_peer {
    int pid, world, refs;
} local_peer_t;

static pthread_mutex_t locals_lock = PTHREAD_MUTEX_INITIALIZER;
static local_peer_t *locals;
static struct pollfd *locals_fd;
static int nlocals, locals_cap;
static _Atomic int locals_any;

void rma_peer_watch_pid(int pid, int world_rank)
{
    int i, fd;

    if (pid <= 0 || pid == (int)getpid())
        return;
    pthread_mutex_lock(&locals_lock);
    for (i = 0; i < nlocals && locals[i].pid != pid; i++)
        ;
    if (i < nlocals) {
        locals[i].refs++;
    } else {
        int lcap = locals_cap, fcap = locals_cap; /* one capacity: set once both have grown */

        fd = rma_seg_pidfd(pid); /* -1 (no pidfd_open): kept, not polled */
        if (rma_grow(&locals, &lcap, nlocals, sizeof(*locals), 16) == 0 &&
            rma_grow(&locals_fd, &fcap, nlocals, sizeof(*locals_fd), 16) == 0) {
            locals_cap = fcap;
            locals[nlocals] = (local_peer_t){pid, world_rank, 1};
            locals_fd[nlocals++] = (struct pollfd){fd, POLLIN, 0};
            atomic_store_explicit(&locals_any, 1, memory_order_release);
        } /* else no memory: this peer is not watched */
    }
    pthread_mutex_unlock(&locals_lock);
}

void rma_peer_unwatch_pid(int pid)
{
    pthread_mutex_lock(&locals_lock);
    for (int i = 0; i < nlocals; i++) {
        if (locals[i].pid != pid || --locals[i].refs > 0)
            continue;
        locals[i] = locals[--nlocals];
        locals_fd[i] = locals_fd[nlocals];
        atomic_store_explicit(&locals_any, nlocals > 0, memory_order_release);
        break;
    }
    pthread_mutex_unlock(&locals_lock);
}

/* MPI_Finalize has begun: peers may leave it, and end, before this process has passed its
 * own collective steps. Their processes are not watched from here on. */
void rma_peer_unwatch_all(void)
{
    pthread_mutex_lock(&locals_lock);
    nlocals = 0;
    atomic_store_explicit(&locals_any, 0, memory_order_release);
    pthread_mutex_unlock(&locals_lock);
}

/* Reports a watched peer process that has ended; at most every 10 ms per thread. */
static void locals_check(void)
{
    static _Thread_local uint64_t last;
    struct timespec ts;
    uint64_t now;

    if (!atomic_load_explicit(&locals_any, memory_order_acquire))
        return;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    now = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    if (now - last < 10000000u || pthread_mutex_trylock(&locals_lock) != 0)
        return;
    last = now;
    if (poll(locals_fd, (nfds_t)nlocals, 0) > 0)
        for (int i = 0; i < nlocals; i++)
            if (locals_fd[i].revents & (POLLIN | POLLHUP | POLLERR))
                rma_peer_failed(locals[i].world, "its process ended");
    pthread_mutex_unlock(&locals_lock);
}

void rma_peer_poll(void)
{
    void (*fn)(void) = atomic_load_explicit(&watch, memory_order_acquire);
    int w;

    if (fn != NULL)
        fn();
    locals_check();
    if ((w = atomic_load_explicit(&gone, memory_order_acquire)) != 0 && !atomic_load(&finalizing))
        gone_end(w - 1);
}
