/*
 * shared - MPI_Win_allocate_shared: contiguous layout (the base of rank i is the base of
 * rank 0 plus the sizes of ranks 0..i-1, in every process's view), alloc_shared_noncontig,
 * MPI_Win_shared_query (incl. MPI_PROC_NULL, ranks of size 0, bad ranks, the _c form),
 * direct load/store between ranks ordered by MPI_Win_sync + barrier; MPI-4.1's shared_query
 * on MPI_Win_allocate and MPI_Win_create windows (loads and stores through what it gives),
 * and MPI_ERR_RMA_FLAVOR for dynamic windows.
 * The shared windows are made on the ranks of this node (MPI_COMM_TYPE_SHARED), as the
 * standard asks, so the test runs in every topology; the other flavors span MPI_COMM_WORLD.
 */
#include "rmatest.h"

#include <stdint.h>

static int rank, nprocs; /* in MPI_COMM_WORLD */
static int nrank, nnp;   /* in the node's communicator, where the shared windows are */
static MPI_Comm node;

/* bytes node rank r contributes; rank 0 contributes nothing when there are 3 or more ranks */
static MPI_Aint size_of(int r)
{
    return (nnp > 2 && r == 0) ? 0 : 24 * (r + 1) + 8;
}

static void layout(int noncontig)
{
    const char *what = noncontig ? "noncontig" : "contiguous";
    MPI_Info info = MPI_INFO_NULL;
    MPI_Win win;
    char *mine, **base = malloc(nnp * sizeof(char *));
    MPI_Aint sz, off = 0;
    int du, lo0 = size_of(0) > 0 ? 0 : 1;

    if (noncontig) {
        MPI_Info_create(&info);
        MPI_Info_set(info, "alloc_shared_noncontig", "true");
    }
    MPI_OK(MPI_Win_allocate_shared(size_of(nrank), nrank + 1, info, node, &mine, &win));
    if (info != MPI_INFO_NULL)
        MPI_Info_free(&info);
    MPI_OK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    for (int r = 0; r < nnp; r++) {
        base[r] = NULL;
        sz = -1;
        du = -1;
        MPI_OK(MPI_Win_shared_query(win, r, &sz, &du, &base[r]));
        CHECK(sz == size_of(r) && du == r + 1, "%s: query(%d): size %ld disp_unit %d, want "
              "%ld %d", what, r, (long)sz, du, (long)size_of(r), r + 1);
        if (r == nrank && sz > 0)
            CHECK(base[r] == mine, "%s: query(self) %p, own base %p", what, (void *)base[r],
                  (void *)mine);
        if (!noncontig && sz > 0) /* the first rank with memory starts at offset 0 */
            CHECK(base[r] == base[lo0] + off, "%s: base of rank %d is rank %d's + %ld, want "
                  "+ %ld", what, r, lo0, (long)(base[r] - base[lo0]), (long)off);
        off += size_of(r);
    }
    /* _c form */
    {
        MPI_Aint du_c = -1;
        char *b = NULL;
        MPI_OK(MPI_Win_shared_query_c(win, nnp - 1, &sz, &du_c, &b));
        CHECK(sz == size_of(nnp - 1) && du_c == nnp && b == base[nnp - 1],
              "%s: shared_query_c: %ld %ld", what, (long)sz, (long)du_c);
    }
    /* MPI_PROC_NULL: the lowest rank with memory */
    {
        char *b = NULL;
        int lo = size_of(0) > 0 ? 0 : 1;
        MPI_OK(MPI_Win_shared_query(win, MPI_PROC_NULL, &sz, &du, &b));
        CHECK(sz == size_of(lo) && b == base[lo] && du == lo + 1,
              "%s: query(MPI_PROC_NULL): size %ld, base ok %d", what, (long)sz, b == base[lo]);
        MPI_ERRCLASS(MPI_Win_shared_query(win, nnp, &sz, &du, &b), MPI_ERR_RANK);
        MPI_ERRCLASS(MPI_Win_shared_query(win, -7, &sz, &du, &b), MPI_ERR_RANK);
    }
    /* direct load/store: each rank fills the next rank's memory, then reads the previous */
    {
        int right = (nrank + 1) % nnp, left = (nrank + nnp - 1) % nnp, bad = 0;
        MPI_OK(MPI_Win_lock_all(MPI_MODE_NOCHECK, win));
        for (MPI_Aint i = 0; i < size_of(right); i++)
            base[right][i] = (char)(nrank * 31 + i);
        MPI_OK(MPI_Win_sync(win));
        MPI_Barrier(node);
        MPI_OK(MPI_Win_sync(win));
        for (MPI_Aint i = 0; i < size_of(nrank); i++)
            if (mine[i] != (char)(left * 31 + i) && bad++ < 3)
                CHECK(0, "%s: store from rank %d: byte %ld = %d", what, left, (long)i,
                      mine[i]);
        CHECK(bad == 0, "%s: %d bytes wrong after direct stores", what, bad);
        /* and RMA on the same memory sees the stores */
        if (size_of(right) >= 4) {
            char got[4];
            MPI_OK(MPI_Get(got, 4, MPI_CHAR, right, 0, 4, MPI_CHAR, win));
            MPI_OK(MPI_Win_flush(right, win));
            CHECK(got[0] == (char)(nrank * 31) && got[3] == (char)(nrank * 31 + 3),
                  "%s: Get after direct stores: %d %d", what, got[0], got[3]);
        }
        MPI_Barrier(node);
        MPI_OK(MPI_Win_unlock_all(win));
    }
    MPI_OK(MPI_Win_free(&win));
    free(base);
    if (rank == 0)
        printf("allocate_shared %s: layout, shared_query, load/store checked (%d ranks per "
               "node)\n",
               what, nnp);
}

/* MPI-4.1 12.2.3 on a window that is not a shared-memory window: the caller's own segment
 * is its base and size; a peer's is either size 0 and NULL, or a pointer through which the
 * owner's stores are loaded and our stores reach the owner (a lock_all epoch, MPI_Win_sync
 * and barriers, as for shared windows). `must_map`: a same-node peer must be mapped. */
static void query_peers(MPI_Win win, int *mem, MPI_Aint bytes, int du_want, int must_map,
                        const char *what)
{
    int right = (rank + 1) % nprocs, left = (rank + nprocs - 1) % nprocs, du = -1;
    MPI_Aint sz = -1;
    int *b = (int *)&sz; /* anything but NULL */

    for (int i = 0; i < bytes / (int)sizeof(int); i++)
        mem[i] = rank * 100 + i;
    MPI_OK(MPI_Win_lock_all(0, win));
    MPI_OK(MPI_Win_sync(win));
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_OK(MPI_Win_shared_query(win, rank, &sz, &du, &b));
    CHECK(sz == bytes && du == du_want && b == mem, "%s: query(self) gave %ld %d %p, want %ld %d %p",
          what, (long)sz, du, (void *)b, (long)bytes, du_want, (void *)mem);
    MPI_OK(MPI_Win_shared_query(win, right, &sz, &du, &b));
    int mapped = rt_same_node(right) && !rt_netmod_only();
    CHECK(du == du_want, "%s: query(%d) disp_unit %d", what, right, du);
    CHECK((sz == 0 && b == NULL) || (mapped && sz == bytes && b != NULL),
          "%s: query(%d) gave %ld %p (%s)", what, right, (long)sz, (void *)b,
          mapped ? "same node" : "not reachable by load/store");
    CHECK(!(must_map && mapped) || b != NULL, "%s: same-node rank %d's memory is not mapped",
          what, right);
    if (b != NULL) {
        CHECK(b[5] == right * 100 + 5, "%s: load through the queried pointer: %d", what, b[5]);
        b[6] = -rank - 1; /* into the right neighbour's memory */
    }
    int stored = b != NULL, left_stored;
    MPI_OK(MPI_Win_sync(win));
    MPI_Sendrecv(&stored, 1, MPI_INT, right, 0, &left_stored, 1, MPI_INT, left, 0, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    MPI_OK(MPI_Win_sync(win));
    CHECK(mem[6] == (left_stored ? -left - 1 : rank * 100 + 6),
          "%s: slot 6 = %d after rank %d's %s", what, mem[6], left,
          left_stored ? "store through its queried pointer" : "query that mapped nothing");
    MPI_OK(MPI_Win_unlock_all(win));
    /* MPI_PROC_NULL: the lowest rank with memory, rank 0, as it can be reached here */
    MPI_OK(MPI_Win_shared_query(win, MPI_PROC_NULL, &sz, &du, &b));
    CHECK((sz == 0 && b == NULL) || (sz == bytes && b != NULL &&
                                     (rank == 0 ? b == mem : b[5] == 5)),
          "%s: query(MPI_PROC_NULL) gave %ld %p", what, (long)sz, (void *)b);
    CHECK(rank != 0 || b == mem, "%s: query(MPI_PROC_NULL) at rank 0 is not its own memory", what);
    MPI_ERRCLASS(MPI_Win_shared_query(win, nprocs, &sz, &du, &b), MPI_ERR_RANK);
    MPI_Barrier(MPI_COMM_WORLD);
}

static void other_flavors(void)
{
    MPI_Win win;
    MPI_Aint sz;
    int du, buf[16], *mem;
    void *b;

    /* MPI_Win_allocate: every same-node peer is mapped (the memory lives in the node's
     * control segment), an off-node one is not */
    MPI_OK(MPI_Win_allocate(64, 4, MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win));
    MPI_OK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    query_peers(win, mem, 64, 4, 1, "allocate");
    MPI_OK(MPI_Win_free(&win));
    /* MPI_Win_create on MPI_Alloc_mem memory: shared already, so mapped by same-node peers */
    MPI_OK(MPI_Alloc_mem(64, MPI_INFO_NULL, &mem));
    MPI_OK(MPI_Win_create(mem, 64, 2, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    MPI_OK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    query_peers(win, mem, 64, 2, 1, "create (MPI_Alloc_mem)");
    MPI_OK(MPI_Win_free(&win));
    MPI_OK(MPI_Free_mem(mem));
    /* MPI_Win_create on the stack: reached with CMA until its owner moves it */
    MPI_OK(MPI_Win_create(buf, sizeof(buf), 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    MPI_OK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    query_peers(win, buf, sizeof(buf), 1, 0, "create (stack)");
    MPI_OK(MPI_Win_free(&win));
    /* dynamic: no segment to query */
    MPI_OK(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    MPI_OK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    MPI_ERRCLASS(MPI_Win_shared_query(win, 0, &sz, &du, &b), MPI_ERR_RMA_FLAVOR);
    MPI_ERRCLASS(MPI_Win_shared_query(win, MPI_PROC_NULL, &sz, &du, &b), MPI_ERR_RMA_FLAVOR);
    MPI_OK(MPI_Win_free(&win));
    /* large-count allocation form */
    {
        char *m;
        MPI_OK(MPI_Win_allocate_shared_c(1000, 8, MPI_INFO_NULL, node, &m, &win));
        MPI_Aint du_c;
        MPI_OK(MPI_Win_shared_query_c(win, 0, &sz, &du_c, &b));
        CHECK(sz == 1000 && du_c == 8, "allocate_shared_c: %ld %ld", (long)sz, (long)du_c);
        MPI_OK(MPI_Win_free(&win));
    }
    if (rank == 0)
        printf("shared_query on allocate, create (Alloc_mem and stack), dynamic checked\n");
}

int main(int argc, char **argv)
{
    rt_init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    node = rt_node_comm();
    MPI_Comm_rank(node, &nrank);
    MPI_Comm_size(node, &nnp);
    layout(0);
    layout(1);
    other_flavors();
    return rt_finish("shared");
}
