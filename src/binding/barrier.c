/*
 * barrier.c - MPI_Barrier serves this process's off-node peers while it waits.
 *
 * A rank waiting in a barrier is where MPICH's own RMA makes its passive-target progress.
 * librma's progress agent does that job without any MPI call; but on a node whose cores all
 * run ranks that spin (MPICH's barrier spins), the agent may wait milliseconds for a core
 * while the origins wait for it. So a barrier is made of nonblocking MPI calls whose waits
 * are the transport's (netmod.h rma_netmod_t.wait_all): they drive the target worker
 * whenever the transport runs and the agent is not driving it right now, and yield the core
 * between turns. It is the same barrier on every rank, whether or not this process has
 * started the transport: MPI does not match a blocking barrier with a nonblocking one, and
 * a rank outside every off-node window would otherwise hang the others
 * (test/mpi/subset_windows). Built without a transport, it is PMPI_Barrier. Before it
 * waits, what the transports hold back for any target is sent (netmod.h).
 *
 * On MPI_COMM_WORLD the barrier is a dissemination barrier of zero-byte messages (round k:
 * tell the rank 2^k after, wait for the one 2^k before) on a duplicate made at MPI_Init, so
 * that its messages never meet the program's. MPICH's MPI_Ibarrier, which every other
 * communicator's barrier waits for, costs twice its MPI_Barrier: two simulated nodes of one
 * rank, idle, 0.59-0.68 us against MPICH's 0.25-0.34; the dissemination barrier 0.30-0.39
 * (doc/results.md). A duplicate per communicator would hold a context id of each, of which
 * MPICH has a few thousand, and run other libraries' attribute copy functions.
 */
#include "binding/binding.h"
#include "binding/next.h"
#include "netmod/netmod.h"

static MPI_Comm world_dup = MPI_COMM_NULL;

void rma_barrier_init(void)
{
    if (rma_net != NULL && PMPI_Comm_dup(MPI_COMM_WORLD, &world_dup) != MPI_SUCCESS)
        world_dup = MPI_COMM_NULL; /* every rank fails alike, or the job ends */
}

void rma_barrier_finalize(void)
{
    if (world_dup != MPI_COMM_NULL)
        PMPI_Comm_free(&world_dup);
}

static int dissemination(MPI_Comm comm)
{
    MPI_Request req[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    int rank, size, rc = MPI_SUCCESS;

    PMPI_Comm_rank(comm, &rank);
    PMPI_Comm_size(comm, &size);
    for (int d = 1, k = 0; d < size && rc == MPI_SUCCESS; d <<= 1, k++) {
        if ((rc = PMPI_Irecv(NULL, 0, MPI_BYTE, (rank - d + size) % size, k, comm, &req[0])) !=
            MPI_SUCCESS)
            break;
        rc = rma_net->wait_all(PMPI_Isend(NULL, 0, MPI_BYTE, (rank + d) % size, k, comm, &req[1]),
                               2, req);
        if (rc != MPI_SUCCESS) { /* nothing of this barrier may match the next one's */
            for (int i = 0; i < 2; i++)
                if (req[i] != MPI_REQUEST_NULL) {
                    PMPI_Cancel(&req[i]);
                    PMPI_Request_free(&req[i]);
                }
        }
    }
    return rc;
}

int MPI_Barrier(MPI_Comm comm)
{
    MPI_Request req;
    int rc;

    rma_nm_release_held(NULL); /* what transports hold back goes before this rank waits */
    if (rma_net == NULL)
        return rma_mpi.Barrier(comm);
    if (comm == MPI_COMM_WORLD && world_dup != MPI_COMM_NULL)
        rc = dissemination(world_dup);
    else
        rc = rma_net->wait_all(PMPI_Ibarrier(comm, &req), 1, &req);
    rma_win_dyn_barrier(); /* what peers attached before it is looked for after it */
    return rc;
}
RMA_PMPI(Barrier);
