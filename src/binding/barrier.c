/*
 * barrier.c - MPI_Barrier serves this process's off-node peers while it waits.
 *
 * A rank waiting in a barrier is where MPICH's own RMA makes its passive-target progress.
 * librma's progress agent does that job without any MPI call; but on a node whose cores all
 * run ranks that spin (MPICH's barrier spins), the agent may wait milliseconds for a core
 * while the origins wait for it. So once UCX runs, a barrier is MPI_Ibarrier and a loop
 * that tests it and drives the target worker itself whenever the agent is not driving it
 * right now, yielding the core while nothing moves. Without off-node peers it is
 * PMPI_Barrier.
 */
#include "binding/binding.h"
#include "netmod/ucx/nm_ucx.h"
#include "sync/wait.h"

int MPI_Barrier(MPI_Comm comm)
{
    MPI_Request req;
    int done = 0, spins = 0, rc;

    if (!rma_ucx_started())
        return PMPI_Barrier(comm);
    rc = PMPI_Ibarrier(comm, &req);
    while (rc == MPI_SUCCESS && (rc = PMPI_Test(&req, &done, MPI_STATUS_IGNORE)) == MPI_SUCCESS &&
           !done) {
        if (rma_ucx_serve())
            spins = 0;
        else if (spins++ < rma_env.spin_count)
            rma_cpu_relax();
        else
            sched_yield(); /* never sleeps: a barrier's latency is not to suffer */
    }
    return rc;
}
