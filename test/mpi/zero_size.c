/*
 * zero_size - windows where some ranks (rank 0) or all ranks contribute 0 bytes, for every
 * flavor: creation, attributes, 0-count Put/Get/accumulates to every rank (fine, whatever
 * the op and type), any byte at a 0-size rank (MPI_ERR_RMA_RANGE), fence/lock/PSCW epochs
 * on such windows, shared_query of 0-size ranks, and data still moving between the ranks
 * that do have memory. The shared flavor is skipped when MPI_COMM_WORLD spans nodes.
 */
#include "rmatest.h"

static int rank, nprocs;

enum { F_CREATE, F_ALLOCATE, F_SHARED, F_DYNAMIC, NFLAVORS };
static const char *fname[] = {"create", "allocate", "shared", "dynamic"};

static void run(int f, int all_zero)
{
    MPI_Aint size = (all_zero || rank == 0) ? 0 : 64, *psize;
    int *mem = NULL, *own = NULL, flag, v[4] = {1, 2, 3, 4}, got[4] = {0};
    MPI_Aint *addr = malloc(nprocs * sizeof(MPI_Aint)), a = 0;
    MPI_Win win;
    const char *what = all_zero ? "all zero" : "rank 0 zero";

    switch (f) {
    case F_CREATE:
        if (size > 0)
            own = mem = calloc(1, size);
        MPI_OK(MPI_Win_create(mem, size, 4, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
        break;
    case F_ALLOCATE:
        MPI_OK(MPI_Win_allocate(size, 4, MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win));
        break;
    case F_SHARED:
        MPI_OK(MPI_Win_allocate_shared(size, 4, MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win));
        break;
    case F_DYNAMIC:
        MPI_OK(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
        if (size > 0) {
            own = mem = calloc(1, size);
            MPI_OK(MPI_Win_attach(win, mem, size));
        }
        break;
    }
    if (mem != NULL && size > 0)
        memset(mem, 0, size);
    if (mem != NULL)
        MPI_Get_address(mem, &a);
    MPI_Allgather(&a, 1, MPI_AINT, addr, 1, MPI_AINT, MPI_COMM_WORLD);
    MPI_OK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    MPI_OK(MPI_Win_get_attr(win, MPI_WIN_SIZE, &psize, &flag));
    CHECK(flag && *psize == (f == F_DYNAMIC ? 0 : size), "%s %s: MPI_WIN_SIZE %ld", fname[f],
          what, flag ? (long)*psize : -1L);
    if (f == F_SHARED) {
        MPI_Aint sz = -1;
        int du;
        void *b = (void *)1;
        MPI_OK(MPI_Win_shared_query(win, 0, &sz, &du, &b));
        CHECK(sz == 0, "%s %s: shared_query(0) size %ld", fname[f], what, (long)sz);
        MPI_OK(MPI_Win_shared_query(win, MPI_PROC_NULL, &sz, &du, &b));
        if (all_zero)
            CHECK(sz == 0 && b == NULL, "all zero: query(MPI_PROC_NULL) %ld %p", (long)sz, b);
        else
            CHECK(sz == 64, "rank 0 zero: query(MPI_PROC_NULL) size %ld, want rank 1's",
                  (long)sz);
    }
    /* fence epoch: 0-count ops to everybody, real ops only to ranks with memory */
    MPI_OK(MPI_Win_fence(0, win));
    for (int t = 0; t < nprocs; t++) {
        MPI_Aint d = f == F_DYNAMIC ? addr[t] : 0;
        MPI_OK(MPI_Put(v, 0, MPI_INT, t, d, 0, MPI_INT, win));
        MPI_OK(MPI_Get(got, 0, MPI_INT, t, d, 0, MPI_INT, win));
        /* a call of no element applies no op: any (op, type) pair is accepted, as MPICH and
         * Open MPI do (mpi4py's tests send MPI_SUM on zero MPI_BYTEs) */
        MPI_OK(MPI_Accumulate(v, 0, MPI_BYTE, t, d, 0, MPI_BYTE, MPI_SUM, win));
        MPI_OK(MPI_Get_accumulate(v, 0, MPI_BYTE, got, 0, MPI_BYTE, t, d, 0, MPI_BYTE, MPI_SUM,
                                  win));
        MPI_OK(MPI_Accumulate(v, 0, MPI_DOUBLE, t, d, 0, MPI_DOUBLE, MPI_BXOR, win));
        MPI_ERRCLASS(MPI_Accumulate(v, 0, MPI_INT, t, d, 0, MPI_INT, MPI_OP_NULL, win),
                     MPI_ERR_OP);
        /* no byte moves: no displacement is outside the window (MPICH checks none) */
        for (MPI_Aint past = 1; past <= 1000; past *= 10) {
            MPI_OK(MPI_Put(v, 0, MPI_INT, t, d + 16 + past, 0, MPI_INT, win));
            MPI_OK(MPI_Get(got, 0, MPI_INT, t, d + 16 + past, 0, MPI_INT, win));
            MPI_OK(MPI_Accumulate(v, 0, MPI_INT, t, d + 16 + past, 0, MPI_INT, MPI_SUM, win));
            MPI_OK(MPI_Get_accumulate(v, 0, MPI_INT, got, 0, MPI_INT, t, d + 16 + past, 0, MPI_INT,
                                      MPI_SUM, win));
            MPI_ERRCLASS(MPI_Put(v, 4, MPI_INT, t, d + 16 + past, 0, MPI_INT, win), MPI_ERR_TYPE);
        }
        if (all_zero || t == 0) {
            MPI_ERRCLASS(MPI_Put(v, 1, MPI_INT, t, d, 1, MPI_INT, win), MPI_ERR_RMA_RANGE);
            MPI_ERRCLASS(MPI_Get(got, 1, MPI_INT, t, d, 1, MPI_INT, win), MPI_ERR_RMA_RANGE);
        }
    }
    if (!all_zero && rank == 0) {
        for (int t = 1; t < nprocs; t++) {
            MPI_Aint d = f == F_DYNAMIC ? addr[t] : 0;
            int w[4] = {t, t + 1, t + 2, t + 3};
            MPI_OK(MPI_Put(w, 4, MPI_INT, t, d + (f == F_DYNAMIC ? 8 : 2), 4, MPI_INT, win));
        }
    }
    MPI_OK(MPI_Win_fence(0, win));
    if (!all_zero && rank != 0)
        CHECK(mem[2] == rank && mem[5] == rank + 3 && mem[1] == 0 && mem[6] == 0,
              "%s %s: put from rank 0 gave %d..%d", fname[f], what, mem[2], mem[5]);
    /* lock epoch to the zero-size rank 0 */
    MPI_OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win));
    MPI_OK(MPI_Put(v, 0, MPI_INT, 0, f == F_DYNAMIC ? addr[0] : 0, 0, MPI_INT, win));
    {
        MPI_Request rq = MPI_REQUEST_NULL;
        MPI_OK(MPI_Rget(got, 0, MPI_INT, 0, (f == F_DYNAMIC ? addr[0] : 0) + 99, 0, MPI_INT, win,
                        &rq));
        MPI_OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    }
    MPI_ERRCLASS(MPI_Put(v, 1, MPI_INT, 0, f == F_DYNAMIC ? addr[0] : 0, 1, MPI_INT, win),
                 MPI_ERR_RMA_RANGE);
    MPI_OK(MPI_Win_unlock(0, win));
    /* rank 1 gets from the last rank (it has memory unless all are zero) */
    if (!all_zero && rank == 1 && nprocs > 1) {
        int t = nprocs - 1;
        MPI_OK(MPI_Win_lock(MPI_LOCK_SHARED, t, 0, win));
        MPI_OK(MPI_Get(got, 4, MPI_INT, t, f == F_DYNAMIC ? addr[t] + 8 : 2, 4, MPI_INT, win));
        MPI_OK(MPI_Win_unlock(t, win));
        CHECK(got[0] == t && got[3] == t + 3, "%s: lock get from rank %d: %d %d", fname[f], t,
              got[0], got[3]);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (f == F_DYNAMIC && own != NULL)
        MPI_OK(MPI_Win_detach(win, own));
    MPI_OK(MPI_Win_free(&win));
    free(own);
    free(addr);
}

int main(int argc, char **argv)
{
    rt_init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    for (int f = 0; f < NFLAVORS; f++)
        for (int z = 0; z < 2; z++) {
            int before = rt_fails;
            /* shared windows need ranks that share memory: not across nodes */
            if (f == F_SHARED && rt_world_spans_nodes()) {
                if (rank == 0 && z == 0)
                    printf("%-9s skipped: MPI_COMM_WORLD spans nodes\n", fname[f]);
                continue;
            }
            run(f, z);
            if (rank == 0)
                printf("%-9s %-12s %s\n", fname[f], z ? "all zero" : "rank 0 zero",
                       rt_fails == before ? "ok" : "FAIL");
        }
    return rt_finish("zero_size");
}
