/*
 * peer_fail.c - what librma does when a peer process is gone. The transport finds it (UCX's
 * error handler on a watch endpoint, nm_ucx.c) while its watch function runs and reports
 * it here. Nothing to that peer can complete any more: a lock word, a fence or PSCW counter,
 * a flush, an answer it was to send. So every wait that backs off to sleeping (wait.h), in
 * an application thread, drives the watch (rma_peer_poll), and the first after a report
 * prints which peer is gone and why and ends the job as MPI_Abort does. The progress agent
 * never does (it calls no MPI): rma_peer_poll_off. Reports that come once MPI_Finalize has
 * begun (peers closing their endpoints) are ignored.
 */
#include "config.h"

#include "sync/wait.h"

#include <mpi.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static _Atomic int gone; /* world rank + 1 of the first peer reported gone; 0: none */
static _Atomic int finalizing;
static const char *_Atomic gone_why;
static void (*_Atomic watch)(void);
static _Thread_local int poll_off; /* this thread never polls (the agent) */

void rma_peer_watch_set(void (*fn)(void))
{
    atomic_store(&watch, fn);
}

void rma_peer_poll_off(void)
{
    poll_off = 1;
}

void rma_peer_failed(int world_rank, const char *why)
{
    int none = 0;

    if (!atomic_load(&finalizing) && atomic_compare_exchange_strong(&gone, &none, world_rank + 1))
        atomic_store(&gone_why, why); /* the first report wins */
}

void rma_peer_fail_ignore(void)
{
    atomic_store(&finalizing, 1); /* rma_peer_poll then ends nothing */
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

void rma_peer_poll(void)
{
    void (*fn)(void) = atomic_load_explicit(&watch, memory_order_acquire);
    int w;

    if (poll_off)
        return;
    if (fn != NULL)
        fn();
    if ((w = atomic_load_explicit(&gone, memory_order_acquire)) != 0 && !atomic_load(&finalizing))
        gone_end(w - 1);
}
