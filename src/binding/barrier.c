/*
 * barrier.c - MPI_Barrier serves this process's off-node peers while it waits.
 *
 * A rank waiting in a barrier is where MPICH's own RMA makes its passive-target progress.
 * librma's progress agent does that job without any MPI call; but on a node whose cores all
 * run ranks that spin (MPICH's barrier spins), the agent may wait milliseconds for a core
 * while the origins wait for it. So once the off-node transport runs, a barrier is that
 * transport's barrier (netmod.h rma_netmod_t.barrier): it drives the target worker itself
 * whenever the agent is not driving it right now. Without off-node peers it is PMPI_Barrier.
 */
#include "binding/binding.h"
#include "netmod/netmod.h"

int MPI_Barrier(MPI_Comm comm)
{
    return rma_net_started() ? rma_net->barrier(comm) : PMPI_Barrier(comm);
}
