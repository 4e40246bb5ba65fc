/*
 * barrier.c - MPI_Barrier serves this process's off-node peers while it waits.
 *
 * A rank waiting in a barrier is where MPICH's own RMA makes its passive-target progress.
 * librma's progress agent does that job without any MPI call; but on a node whose cores all
 * run ranks that spin (MPICH's barrier spins), the agent may wait milliseconds for a core
 * while the origins wait for it. So a barrier is the transport's (netmod.h
 * rma_netmod_t.barrier): a barrier of nonblocking messages whose waits drive the target
 * worker itself whenever the transport runs and the agent is not driving it right now, and
 * yield the core between turns. It is that barrier on every rank, whether or not this process has
 * started the transport: MPI does not match a blocking barrier with a nonblocking one, and
 * a rank outside every off-node window would otherwise hang the others
 * (test/mpi/subset_windows). Built without a transport, it is PMPI_Barrier. Before it
 * waits, what the transports hold back for any target is sent (netmod.h).
 */
#include "binding/binding.h"
#include "netmod/netmod.h"

int MPI_Barrier(MPI_Comm comm)
{
    rma_nm_release_held(NULL); /* what transports hold back goes before this rank waits */
    return rma_net != NULL ? rma_net->barrier(comm) : PMPI_Barrier(comm);
}
