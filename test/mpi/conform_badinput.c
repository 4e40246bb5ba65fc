/*
 * conform_badinput - bad buffers and datatypes in RMA calls (issue 11, conformance).
 * First of all, before any MPI_Type_commit happens in this process, an uncommitted
 * MPI_Type_vector as the origin or target datatype of MPI_Put is MPI_ERR_TYPE (a datatype must
 * be committed before it is used in communication). Then, on MPI_Win_allocate and
 * MPI_Win_create windows, in fence and lock epochs: MPI_Put and MPI_Get with a NULL origin
 * buffer and a count of 4 MPI_INT fail with MPI_ERR_BUFFER, the window stays usable (a correct
 * put and get in the same epoch move the right data), a NULL origin with count 0 is fine, and
 * MPI_Rput / MPI_Rget with a NULL origin fail with MPI_ERR_BUFFER and give MPI_REQUEST_NULL.
 * (MPI_BOTTOM is NULL in MPICH: with a predefined type it means absolute address 0, which
 * is no valid buffer; MPICH itself raises MPI_ERR_BUFFER for these calls.)
 *
 * On MPICH 4.0.2's own RMA everything passes except that MPI_Rput / MPI_Rget leave the output
 * request untouched on MPI_ERR_BUFFER; CONFORM_MPICH=1 skips that check.
 */
#include "rmatest.h"

#define N    16
#define JUNK ((MPI_Request)0x1234)

static int rank, nprocs, right, left, mpich_gaps;

static int pat(int r, int i)
{
    return r * 1000 + i;
}

/* The very first datatype action: an uncommitted vector in MPI_Put. */
static void uncommitted(void)
{
    MPI_Datatype vec;
    MPI_Win w;
    int *mem, src[8] = {1, 2, 3, 4, 5, 6, 7, 8};

    MPI_OK(MPI_Win_allocate(N * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &w));
    MPI_OK(MPI_Win_set_errhandler(w, MPI_ERRORS_RETURN));
    for (int i = 0; i < N; i++)
        mem[i] = pat(rank, i);
    MPI_OK(MPI_Type_vector(2, 1, 2, MPI_INT, &vec)); /* not committed */
    MPI_OK(MPI_Win_fence(0, w));
    MPI_ERRCLASS(MPI_Put(src, 1, vec, right, 0, 1, vec, w), MPI_ERR_TYPE);
    MPI_ERRCLASS(MPI_Put(src, 1, vec, right, 0, 2, MPI_INT, w), MPI_ERR_TYPE);
    MPI_ERRCLASS(MPI_Put(src, 2, MPI_INT, right, 0, 1, vec, w), MPI_ERR_TYPE);
    MPI_ERRCLASS(MPI_Get(src, 1, vec, right, 0, 2, MPI_INT, w), MPI_ERR_TYPE);
    MPI_OK(MPI_Win_fence(0, w));
    MPI_OK(MPI_Win_lock(MPI_LOCK_SHARED, right, 0, w));
    MPI_ERRCLASS(MPI_Put(src, 1, vec, right, 0, 1, vec, w), MPI_ERR_TYPE);
    MPI_OK(MPI_Win_unlock(right, w));
    MPI_Barrier(MPI_COMM_WORLD);
    {
        int bad = 0;
        for (int i = 0; i < N; i++)
            bad += mem[i] != pat(rank, i);
        CHECK(bad == 0, "uncommitted type: %d ints of the target changed", bad);
    }
    /* committed, the same type works */
    for (int i = 0; i < N; i++)
        mem[i] = pat(rank, i);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_OK(MPI_Type_commit(&vec));
    MPI_OK(MPI_Win_fence(0, w));
    MPI_OK(MPI_Put(src, 1, vec, right, 0, 1, vec, w));
    MPI_OK(MPI_Win_fence(0, w));
    CHECK(mem[0] == 1 && mem[1] == pat(rank, 1) && mem[2] == 3,
          "committed vector put: %d %d %d, want 1 %d 3", mem[0], mem[1], mem[2], pat(rank, 1));
    MPI_Type_free(&vec);
    MPI_OK(MPI_Win_free(&w));
}

static void reset_own(int *mem)
{
    for (int i = 0; i < N; i++)
        mem[i] = pat(rank, i);
    MPI_Barrier(MPI_COMM_WORLD);
}

static void check_after(int *mem, const int *got, const char *what)
{
    for (int i = 0; i < 4; i++)
        CHECK(got[i] == pat(right, 10 + i),
              "%s: get after the refused calls: got[%d] = %d, "
              "want %d",
              what, i, got[i], pat(right, 10 + i));
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < N; i++) {
        int want = (i >= 4 && i < 8) ? 11 + i - 4 : pat(rank, i);
        CHECK(mem[i] == want, "%s: target int %d = %d, want %d", what, i, mem[i], want);
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

static void run(int create)
{
    const char *fl = create ? "create" : "allocate";
    char what[64];
    int *mem, src[4] = {11, 12, 13, 14}, got[4];
    MPI_Win w;
    MPI_Request req;

    if (create) {
        mem = malloc(N * sizeof(int));
        MPI_OK(
            MPI_Win_create(mem, N * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &w));
    } else {
        MPI_OK(MPI_Win_allocate(N * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &mem,
                                &w));
    }
    MPI_OK(MPI_Win_set_errhandler(w, MPI_ERRORS_RETURN));

    /* fence */
    snprintf(what, sizeof(what), "%s, fence", fl);
    reset_own(mem);
    for (int i = 0; i < 4; i++)
        got[i] = -1;
    MPI_OK(MPI_Win_fence(0, w));
    MPI_ERRCLASS(MPI_Put(NULL, 4, MPI_INT, right, 0, 4, MPI_INT, w), MPI_ERR_BUFFER);
    MPI_ERRCLASS(MPI_Get(NULL, 4, MPI_INT, right, 0, 4, MPI_INT, w), MPI_ERR_BUFFER);
    MPI_OK(MPI_Put(NULL, 0, MPI_INT, right, 0, 0, MPI_INT, w));
    MPI_OK(MPI_Get(NULL, 0, MPI_INT, right, 0, 0, MPI_INT, w));
    /* other predefined handles as datatypes, the same on both sides */
    MPI_ERRCLASS(
        MPI_Put(src, 1, (MPI_Datatype)MPI_COMM_WORLD, right, 0, 1, (MPI_Datatype)MPI_COMM_WORLD, w),
        MPI_ERR_TYPE);
    MPI_ERRCLASS(MPI_Get(got, 1, (MPI_Datatype)MPI_SUM, right, 0, 1, (MPI_Datatype)MPI_SUM, w),
                 MPI_ERR_TYPE);
    MPI_OK(MPI_Put(src, 4, MPI_INT, right, 4, 4, MPI_INT, w));
    MPI_OK(MPI_Get(got, 4, MPI_INT, right, 10, 4, MPI_INT, w));
    MPI_OK(MPI_Win_fence(0, w));
    check_after(mem, got, what);

    /* lock, with the request-based forms */
    snprintf(what, sizeof(what), "%s, lock", fl);
    reset_own(mem);
    for (int i = 0; i < 4; i++)
        got[i] = -1;
    MPI_OK(MPI_Win_lock(MPI_LOCK_SHARED, right, 0, w));
    MPI_ERRCLASS(MPI_Put(NULL, 4, MPI_INT, right, 0, 4, MPI_INT, w), MPI_ERR_BUFFER);
    MPI_ERRCLASS(MPI_Get(NULL, 4, MPI_INT, right, 0, 4, MPI_INT, w), MPI_ERR_BUFFER);
    req = JUNK;
    MPI_ERRCLASS(MPI_Rput(NULL, 4, MPI_INT, right, 0, 4, MPI_INT, w, &req), MPI_ERR_BUFFER);
    if (!mpich_gaps)
        CHECK(req == MPI_REQUEST_NULL,
              "%s: MPI_Rput with a NULL origin left the request at "
              "%#lx",
              what, (unsigned long)req);
    req = JUNK;
    MPI_ERRCLASS(MPI_Rget(NULL, 4, MPI_INT, right, 0, 4, MPI_INT, w, &req), MPI_ERR_BUFFER);
    if (!mpich_gaps)
        CHECK(req == MPI_REQUEST_NULL,
              "%s: MPI_Rget with a NULL origin left the request at "
              "%#lx",
              what, (unsigned long)req);
    MPI_OK(MPI_Put(NULL, 0, MPI_INT, right, 0, 0, MPI_INT, w));
    MPI_OK(MPI_Get(NULL, 0, MPI_INT, right, 0, 0, MPI_INT, w));
    req = JUNK;
    MPI_OK(MPI_Rput(NULL, 0, MPI_INT, right, 0, 0, MPI_INT, w, &req));
    CHECK(req != JUNK, "%s: MPI_Rput with count 0 gave no request", what);
    if (req != JUNK)
        MPI_OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
    MPI_OK(MPI_Put(src, 4, MPI_INT, right, 4, 4, MPI_INT, w));
    MPI_OK(MPI_Get(got, 4, MPI_INT, right, 10, 4, MPI_INT, w));
    MPI_OK(MPI_Win_unlock(right, w));
    check_after(mem, got, what);

    MPI_OK(MPI_Win_free(&w));
    if (create)
        free(mem);
    (void)left;
}

int main(int argc, char **argv)
{
    rt_init(&argc, &argv);
    rank = rt_rank;
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    right = (rank + 1) % nprocs;
    left = (rank + nprocs - 1) % nprocs;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    mpich_gaps = rt_env_int("CONFORM_MPICH", 0) != 0;
    uncommitted(); /* first: no datatype has been committed by this process yet */
    run(0);
    run(1);
    return rt_finish("conform_badinput");
}
