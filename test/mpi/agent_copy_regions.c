/*
 * agent_copy_regions - an MPI_Rput the progress agent copies (RMA_AGENT_COPY) into one of
 * two adjacent regions of a dynamic window, followed by a put, or a get, of 16 bytes
 * across the regions' border: its first 8 bytes are the last 8 of the copy's, so the put
 * must land after the copy and the get must read the copy's bytes (conflicting accesses
 * in one epoch have no defined outcome, but librma keeps the program's order). The regions
 * are halves of one MPI_Alloc_mem block, which UCX maps at the origin where the target is
 * alone on its node (two simulated nodes, one rank each; every rank on UCX): the copy is
 * handed over without waiting for memory to move. Rank 0 is the origin, rank 1 the target;
 * the copies handed over are counted, and must be some where the agent has a core.
 */
#include <rma_ext.h>

#include "rmatest.h"

#define HALF  (256 << 10)
#define ROUND 10

int main(int argc, char **argv)
{
    int rank, np;
    unsigned char *mem = NULL, *src = malloc(HALF);
    long long by_agent = 0, by_caller = 0;
    MPI_Aint base = 0;
    MPI_Win win;

    rt_init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    MPI_OK(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    if (rank == 1) {
        MPI_OK(MPI_Alloc_mem(2 * HALF, MPI_INFO_NULL, &mem));
        MPI_OK(MPI_Win_attach(win, mem, HALF));
        MPI_OK(MPI_Win_attach(win, mem + HALF, HALF));
        MPI_Get_address(mem, &base);
    }
    MPI_OK(MPI_Bcast(&base, 1, MPI_AINT, 1, MPI_COMM_WORLD));
    for (int get = 0; get < 2; get++)
        for (int it = 0; it < ROUND; it++) {
            unsigned char v = (unsigned char)(0x11 + it), got[16], mark[16];
            if (rank == 1)
                memset(mem, 0, 2 * HALF);
            MPI_Barrier(MPI_COMM_WORLD);
            if (rank == 0) {
                MPI_Request r;
                memset(src, v, HALF);
                memset(mark, 0xa5, sizeof(mark));
                memset(got, 0, sizeof(got));
                MPI_OK(MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, win));
                MPI_OK(MPI_Rput(src, HALF, MPI_BYTE, 1, base, HALF, MPI_BYTE, win, &r));
                if (get)
                    MPI_OK(MPI_Get(got, 16, MPI_BYTE, 1, base + HALF - 8, 16, MPI_BYTE, win));
                else
                    MPI_OK(MPI_Put(mark, 16, MPI_BYTE, 1, base + HALF - 8, 16, MPI_BYTE, win));
                MPI_OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
                MPI_OK(MPI_Win_unlock(1, win));
                for (int i = 0; get && i < 16; i++)
                    CHECK(got[i] == (i < 8 ? v : 0),
                          "round %d: the get across the border read byte %d as 0x%02x", it, i,
                          got[i]);
            }
            MPI_Barrier(MPI_COMM_WORLD);
            for (int i = 0; rank == 1 && i < 16; i++) {
                unsigned char want = get ? (i < 8 ? v : 0) : 0xa5;
                CHECK(mem[HALF - 8 + i] == want,
                      "round %d, %s: byte %d across the border is 0x%02x", it, get ? "get" : "put",
                      i, mem[HALF - 8 + i]);
            }
        }
    MPI_OK(RMAX_Agent_copies(&by_agent, &by_caller));
    if (rank == 0 && np == 2 && getenv("RMA_AGENT_CPU") != NULL)
        CHECK(by_agent + by_caller == 2 * ROUND, "%lld + %lld copies handed over, of %d", by_agent,
              by_caller, 2 * ROUND);
    if (rank == 1) {
        MPI_OK(MPI_Win_detach(win, mem));
        MPI_OK(MPI_Win_detach(win, mem + HALF));
    }
    MPI_OK(MPI_Win_free(&win));
    if (rank == 1)
        MPI_OK(MPI_Free_mem(mem));
    free(src);
    return rt_finish("agent_copy_regions");
}
