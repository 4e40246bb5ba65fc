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
 * nothing (what it may match stays queued). Not in a thread that calls no MPI (the progress
 * agent: rma_wait_no_mpi), not before MPI_Init or once MPI_Finalize is under way
 * (rma_wait_mpi_up), nor in a program of MPI sessions alone (no MPI_COMM_WORLD to probe).
 */
#include "config.h"

#include "sync/wait.h"

#include <mpi.h>
#include <stdatomic.h>

static _Thread_local int no_mpi;
static _Atomic int mpi_up;

void rma_wait_no_mpi(void)
{
    no_mpi = 1;
}

void rma_wait_mpi_up(int up)
{
    atomic_store_explicit(&mpi_up, up, memory_order_release);
}

void rma_wait_idle(void)
{
    int flag;

    if (no_mpi)
        return;
    rma_peer_poll(); /* a peer reported gone ends the job */
    if (atomic_load_explicit(&mpi_up, memory_order_acquire))
        PMPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
}
