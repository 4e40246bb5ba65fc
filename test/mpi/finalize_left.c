/*
 * finalize_left - MPI_Finalize with windows the program never freed, which MPI allows.
 * Every flavor is left alive after RMA traffic that gave it everything it can hold: an
 * MPI_Win_allocate window, MPI_Win_create windows on malloc'd and on MPI_Alloc_mem memory,
 * an MPI_Win_create_dynamic window with a malloc'd and an MPI_Alloc_mem region attached,
 * and an MPI_Win_allocate_shared window on the node's ranks; an MPI_Alloc_mem block is
 * left too. Each gets a put, an accumulate and a get from every rank to its right
 * neighbour in a lock_all epoch, checked. Then MPI_Finalize must return and every
 * process exit 0 (test/runtests also fails a run whose processes outlive mpiexec), and
 * BLOCKS more MPI_Alloc_mem blocks the program keeps must still hold what it wrote (more
 * than 9 of them from UCX once crashed the program: copies of some, made to survive UCX's
 * end, had landed at the addresses of others). One of them is 8 MiB, every third page
 * written by its owner, the page after by its left neighbour's put, the rest never touched
 * (librma keeps only the pages in memory): all must read as written, or zero. Before
 * librma released such windows at MPI_Finalize, off-node runs died in UCX's ucp_cleanup
 * ("destroying inuse region": the windows' memory was still registered).
 */
#include "rmatest.h"

#define N       512       /* ints in each window */
#define BLOCKS  24        /* MPI_Alloc_mem blocks kept past MPI_Finalize */
#define SPARSE  (8 << 20) /* bytes of the block of pages written here and there */
#define PG_INTS 1024      /* ints in a 4 KiB page */

static int rank, nprocs, right, left;

static int pat(int r, int w, int i)
{
    return r * 100000 + w * 1000 + i;
}

/* Puts, accumulates and gets ints [0, 8) of the right neighbour's memory at target
 * displacement `base` (in ints, from the window base, or an address for dynamic windows);
 * `mem` is this rank's own. */
static void traffic(MPI_Win win, int w, int *mem, MPI_Aint base, int unit, const char *what)
{
    int v[8], got[8];

    for (int i = 0; i < 8; i++) {
        v[i] = pat(rank, w, i);
        mem[i] = 0;
        mem[8 + i] = pat(rank, w, 8 + i);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_OK(MPI_Win_lock_all(0, win));
    MPI_OK(MPI_Put(v, 4, MPI_INT, right, base, 4, MPI_INT, win));
    MPI_OK(MPI_Accumulate(v + 4, 4, MPI_INT, right, base + 4 * (4 / unit), 4, MPI_INT, MPI_SUM,
                          win));
    MPI_OK(MPI_Get(got, 8, MPI_INT, right, base + 8 * (4 / unit), 8, MPI_INT, win));
    MPI_OK(MPI_Win_unlock_all(win));
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < 8; i++) {
        CHECK(mem[i] == pat(left, w, i), "%s: int %d is %d, want %d", what, i, mem[i],
              pat(left, w, i));
        CHECK(got[i] == pat(right, w, 8 + i), "%s: got int %d = %d, want %d", what, i, got[i],
              pat(right, w, 8 + i));
    }
}

int main(int argc, char **argv)
{
    MPI_Win win;
    MPI_Comm node;
    MPI_Aint addr, *addrs;
    int *mem, *heap, *amem, *dheap, *damem, *left_block, *kept[BLOCKS], *sparse, w = 0, rc, bad = 0;

    rt_init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    right = (rank + 1) % nprocs;
    left = (rank + nprocs - 1) % nprocs;
    addrs = malloc(nprocs * sizeof(MPI_Aint));

    MPI_OK(MPI_Win_allocate(N * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &mem,
                            &win));
    traffic(win, w++, mem, 0, 4, "allocate");

    heap = malloc(N * sizeof(int));
    MPI_OK(MPI_Win_create(heap, N * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD,
                          &win));
    traffic(win, w++, heap, 0, 4, "create (malloc)");

    MPI_OK(MPI_Alloc_mem(N * sizeof(int), MPI_INFO_NULL, &amem));
    MPI_OK(MPI_Win_create(amem, N * sizeof(int), 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    traffic(win, w++, amem, 0, 1, "create (MPI_Alloc_mem)");

    MPI_OK(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    dheap = malloc(N * sizeof(int));
    MPI_OK(MPI_Alloc_mem(N * sizeof(int), MPI_INFO_NULL, &damem));
    MPI_OK(MPI_Win_attach(win, dheap, N * sizeof(int)));
    MPI_OK(MPI_Win_attach(win, damem, N * sizeof(int)));
    MPI_Get_address(dheap, &addr);
    MPI_Allgather(&addr, 1, MPI_AINT, addrs, 1, MPI_AINT, MPI_COMM_WORLD);
    traffic(win, w++, dheap, addrs[right], 1, "dynamic (malloc)");
    MPI_Get_address(damem, &addr);
    MPI_Allgather(&addr, 1, MPI_AINT, addrs, 1, MPI_AINT, MPI_COMM_WORLD);
    traffic(win, w++, damem, addrs[right], 1, "dynamic (MPI_Alloc_mem)");

    node = rt_node_comm();
    MPI_OK(MPI_Win_allocate_shared(N * sizeof(int), sizeof(int), MPI_INFO_NULL, node, &mem,
                                   &win));
    MPI_OK(MPI_Win_lock_all(0, win));
    mem[0] = pat(rank, w, 0);
    MPI_OK(MPI_Win_sync(win));
    MPI_Barrier(node);
    MPI_OK(MPI_Win_sync(win));
    MPI_OK(MPI_Win_unlock_all(win));

    MPI_OK(MPI_Alloc_mem(4096, MPI_INFO_NULL, &left_block));
    left_block[0] = 1;
    for (int b = 0; b < BLOCKS; b++) {
        MPI_OK(MPI_Alloc_mem(4096 * (1 + b % 3), MPI_INFO_NULL, &kept[b]));
        for (int i = 0; i < 1024; i++)
            kept[b][i] = pat(rank, b, i);
    }
    /* pages 3k by the owner, 3k+1 by the left neighbour's put, 3k+2 never touched */
    MPI_OK(MPI_Alloc_mem(SPARSE, MPI_INFO_NULL, &sparse));
    MPI_OK(MPI_Win_create(sparse, SPARSE, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    for (int p = 0; p < SPARSE / 4096; p += 3)
        sparse[p * PG_INTS + 5] = pat(rank, 7, p);
    MPI_OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win));
    for (int p = 1; p < SPARSE / 4096; p += 3) {
        int v = pat(rank, 8, p);
        MPI_OK(MPI_Put(&v, 1, MPI_INT, right, (MPI_Aint)p * PG_INTS + 9, 1, MPI_INT, win));
    }
    MPI_OK(MPI_Win_unlock(right, win));
    MPI_OK(MPI_Win_free(&win));
    MPI_Barrier(MPI_COMM_WORLD);
    free(addrs);
    if (rank == 0)
        printf("finalize_left: 6 windows and %d MPI_Alloc_mem blocks left for MPI_Finalize\n",
               BLOCKS + 2);
    rc = rt_finish("finalize_left");
    /* the blocks stay the program's memory */
    for (int b = 0; b < BLOCKS; b++)
        for (int i = 0; i < 1024; i++)
            bad += kept[b][i] != pat(rank, b, i);
    for (int p = 0; p < SPARSE / 4096; p++)
        for (int i = 0; i < PG_INTS; i++) {
            int want = p % 3 == 0 && i == 5   ? pat(rank, 7, p)
                       : p % 3 == 1 && i == 9 ? pat(left, 8, p)
                                              : 0;
            bad += sparse[p * PG_INTS + i] != want;
        }
    left_block[1] = 2;
    if (bad > 0)
        fprintf(stderr, "[%d] FAIL: %d ints of the kept blocks changed after MPI_Finalize\n", rank,
                bad);
    return rc != 0 || bad > 0;
}
