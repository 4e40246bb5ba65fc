/*
 * peer_fail.c - what librma does when a peer process is gone. The transport reports it
 * (UCX's endpoint error handler, nm_ucx.c); requests to that peer then complete with an
 * error, which the calling MPI function reports through the window's error handler. Every
 * other wait (a lock word, a fence or PSCW counter, an answer the dead peer will never
 * send) would wait forever: every wait that backs off to sleeping (wait.h) drives the
 * transport's watch (rma_peer_watch_set), and the first after a report prints which peer
 * is gone and why, and ends the job as MPI_Abort does. Reports that come once
 * MPI_Finalize has begun (peers closing their endpoints) are ignored.
 */
#include "config.h"

#include "sync/wait.h"

#include <mpi.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

_Atomic int rma_peer_gone;
static _Atomic int finalizing;
static const char *_Atomic gone_why;
static void (*_Atomic watch)(void);

void rma_peer_watch_set(void (*fn)(void))
{
    atomic_store(&watch, fn);
}

void rma_peer_poll(void)
{
    void (*fn)(void) = atomic_load_explicit(&watch, memory_order_acquire);

    if (fn != NULL)
        fn();
    if (atomic_load_explicit(&rma_peer_gone, memory_order_relaxed) != 0)
        rma_peer_gone_end();
}

void rma_peer_failed(int world_rank, const char *why)
{
    int none = 0;

    if (!atomic_load(&finalizing) &&
        atomic_compare_exchange_strong(&rma_peer_gone, &none, world_rank + 1))
        atomic_store(&gone_why, why); /* the first report wins */
}

void rma_peer_fail_ignore(void)
{
    atomic_store(&finalizing, 1);
    atomic_store(&rma_peer_gone, 0);
}

void rma_peer_gone_end(void)
{
    int me = -1, w = atomic_load(&rma_peer_gone) - 1;
    const char *why = atomic_load(&gone_why);

    if (atomic_load(&finalizing) || w < 0)
        return;
    PMPI_Comm_rank(MPI_COMM_WORLD, &me);
    fprintf(stderr,
            "librma: rank %d (pid %d): peer world rank %d is gone (%s); its operations and "
            "synchronizations can never complete: ending the job\n",
            me, (int)getpid(), w, why != NULL ? why : "transport error");
    fflush(stderr);
    PMPI_Abort(MPI_COMM_WORLD, 1);
    _exit(1); /* MPI_Abort does not return; this is in case the process manager is gone */
}
