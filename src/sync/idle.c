/*
 * idle.c - what a wait of librma does each time it sleeps (wait.h rma_backoff): it looks for
 * peers that are gone (peer_fail.c) and gives the MPI library's own progress a turn.
 *
 * MPI's progress rule (MPI-4.0 section 3.7.4): a send that was started completes once the
 * matching receive is posted, whether or not the sender makes a call that completes it. A
 * rank inside an RMA call of librma (a fence, MPI_Win_free's barrier, a PSCW wait, a lock)
 * may wait for a peer that waits in MPI_Recv for that rank's MPI_Isend: a rendezvous moves
 * the data only when the sender's MPI library runs, and MPICH runs inside its own calls
 * only. So a sleeping wait calls MPI_Iprobe, which drives MPICH's progress and takes
 * nothing (what it may match stays queued). A program of MPI sessions alone has no
 * MPI_COMM_WORLD to probe, and a communicator of its own may be freed under the wait: there
 * the wait tests a generalized request of its own, not complete (MPICH runs its progress
 * for that, MPIR_Test_state), then completes and frees it. Not in a thread that calls no
 * MPI (the progress agent: rma_wait_no_mpi), nor outside MPI_Init..MPI_Finalize
 * (rma_wait_mpi_up) when no session is open (rma_wait_sessions).
 */
#include "config.h"

#include "sync/wait.h"

#include <mpi.h>
#include <stdatomic.h>

static _Thread_local int no_mpi;
static _Atomic int mpi_up;
static _Atomic int sessions; /* open MPI sessions */

void rma_wait_no_mpi(void)
{
    no_mpi = 1;
}

void rma_wait_mpi_up(int up)
{
    atomic_store_explicit(&mpi_up, up, memory_order_release);
}

int rma_wait_sessions(int delta)
{
    return atomic_fetch_add_explicit(&sessions, delta, memory_order_acq_rel) + delta;
}

static int greq_query(void *extra, MPI_Status *status)
{
    (void)extra;
    PMPI_Status_set_elements(status, MPI_BYTE, 0);
    PMPI_Status_set_cancelled(status, 0);
    status->MPI_SOURCE = MPI_UNDEFINED;
    status->MPI_TAG = MPI_UNDEFINED;
    return MPI_SUCCESS;
}

static int greq_free(void *extra)
{
    (void)extra;
    return MPI_SUCCESS;
}

static int greq_cancel(void *extra, int complete)
{
    (void)extra;
    (void)complete;
    return MPI_SUCCESS;
}

/* MPICH's progress, reached without a communicator */
static void session_progress(void)
{
    MPI_Request req;
    int flag;

    if (PMPI_Grequest_start(greq_query, greq_free, greq_cancel, NULL, &req) != MPI_SUCCESS)
        return;
    PMPI_Test(&req, &flag, MPI_STATUS_IGNORE);
    PMPI_Grequest_complete(req);
    PMPI_Wait(&req, MPI_STATUS_IGNORE);
}

void rma_wait_idle(void)
{
    int flag;

    if (no_mpi)
        return;
    rma_peer_poll(); /* a peer reported gone ends the job */
    if (atomic_load_explicit(&mpi_up, memory_order_acquire))
        PMPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
    else if (atomic_load_explicit(&sessions, memory_order_acquire) > 0)
        session_progress();
}
