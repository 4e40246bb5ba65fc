/*
 * errors - every error class the RMA chapter names, with MPI_ERRORS_RETURN on the window
 * (and on MPI_COMM_WORLD for errors that have no window): access outside an epoch, target
 * ranges (the target window and the bytes just past it stay unchanged), epoch misuse of
 * every synchronization mode, bad rank/count/datatype/handle/lock type/assert, Win_free in
 * an epoch (the window stays usable), flushes outside a passive epoch, Free_mem of foreign
 * memory, bad creation arguments. After each error the window must still work.
 */
#include <rma_ext.h>

#include "rmatest.h"

#include <limits.h>

#define NW 64    /* ints in each window */
#define GUARD 16 /* ints just past the window that nobody may write */

static int rank, nprocs, right, left;
static int *buf; /* NW window ints + GUARD guard ints */
static MPI_Win win;

static int pat(int r, int i) { return r * 100000 + i; }

static void reset_own(void)
{
    for (int i = 0; i < NW + GUARD; i++)
        buf[i] = pat(rank, i);
}

/* Own window and guard untouched since reset_own (after a barrier). */
static void check_own(const char *what)
{
    int bad = 0;

    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < NW + GUARD; i++)
        if (buf[i] != pat(rank, i) && bad++ < 3)
            CHECK(0, "%s: %s[%d] = %d, want %d", what, i < NW ? "window" : "guard", i, buf[i],
                  pat(rank, i));
    CHECK(bad == 0, "%s: %d ints of the target changed", what, bad);
    MPI_Barrier(MPI_COMM_WORLD);
}

/* A correct lock/put/get/unlock round trip to `right`: the window works. */
static void still_works(const char *after)
{
    int v = 4242 + rank, got = -1;

    MPI_OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win));
    MPI_OK(MPI_Put(&v, 1, MPI_INT, right, NW - 1, 1, MPI_INT, win));
    MPI_OK(MPI_Win_flush(right, win));
    MPI_OK(MPI_Get(&got, 1, MPI_INT, right, NW - 1, 1, MPI_INT, win));
    MPI_OK(MPI_Win_unlock(right, win));
    CHECK(got == v, "window after %s: got %d, want %d", after, got, v);
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(buf[NW - 1] == 4242 + left, "window after %s: own last int %d", after, buf[NW - 1]);
    buf[NW - 1] = pat(rank, NW - 1);
    MPI_Barrier(MPI_COMM_WORLD);
}

static void epochs(void)
{
    int v[4] = {1, 2, 3, 4};
    MPI_Group world, grp, gpost;

    /* access outside any epoch */
    MPI_ERRCLASS(MPI_Put(v, 1, MPI_INT, right, 0, 1, MPI_INT, win), MPI_ERR_RMA_SYNC);
    MPI_ERRCLASS(MPI_Get(v, 1, MPI_INT, right, 0, 1, MPI_INT, win), MPI_ERR_RMA_SYNC);
    MPI_ERRCLASS(MPI_Put_c(v, 1, MPI_INT, right, 0, 1, MPI_INT, win), MPI_ERR_RMA_SYNC);
    /* lock one target, access another */
    if (nprocs > 2) {
        MPI_OK(MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win));
        MPI_ERRCLASS(MPI_Put(v, 1, MPI_INT, left, 0, 1, MPI_INT, win), MPI_ERR_RMA_SYNC);
        MPI_OK(MPI_Win_unlock(right, win));
    }
    /* after unlock the epoch is closed again */
    MPI_OK(MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win));
    MPI_OK(MPI_Win_unlock(right, win));
    MPI_ERRCLASS(MPI_Put(v, 1, MPI_INT, right, 0, 1, MPI_INT, win), MPI_ERR_RMA_SYNC);
    /* lock twice, unlock without lock */
    MPI_OK(MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win));
    MPI_ERRCLASS(MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win), MPI_ERR_RMA_SYNC);
    MPI_ERRCLASS(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win), MPI_ERR_RMA_SYNC);
    /* fence and lock_all inside a lock epoch */
    MPI_ERRCLASS(MPI_Win_fence(0, win), MPI_ERR_RMA_SYNC);
    MPI_ERRCLASS(MPI_Win_lock_all(0, win), MPI_ERR_RMA_SYNC);
    MPI_ERRCLASS(MPI_Win_unlock_all(win), MPI_ERR_RMA_SYNC);
    MPI_OK(MPI_Win_unlock(right, win));
    MPI_ERRCLASS(MPI_Win_unlock(right, win), MPI_ERR_RMA_SYNC);
    MPI_ERRCLASS(MPI_Win_unlock(left, win), MPI_ERR_RMA_SYNC);
    MPI_ERRCLASS(MPI_Win_unlock_all(win), MPI_ERR_RMA_SYNC);
    /* lock_all twice; lock inside lock_all */
    MPI_OK(MPI_Win_lock_all(0, win));
    MPI_ERRCLASS(MPI_Win_lock_all(0, win), MPI_ERR_RMA_SYNC);
    MPI_ERRCLASS(MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win), MPI_ERR_RMA_SYNC);
    MPI_ERRCLASS(MPI_Win_unlock(right, win), MPI_ERR_RMA_SYNC);
    MPI_ERRCLASS(MPI_Win_fence(0, win), MPI_ERR_RMA_SYNC);
    MPI_OK(MPI_Win_unlock_all(win));

    /* flushes outside a passive target epoch */
    MPI_ERRCLASS(MPI_Win_flush(right, win), MPI_ERR_RMA_SYNC);
    MPI_ERRCLASS(MPI_Win_flush_local(right, win), MPI_ERR_RMA_SYNC);
    MPI_ERRCLASS(MPI_Win_flush_all(win), MPI_ERR_RMA_SYNC);
    MPI_ERRCLASS(MPI_Win_flush_local_all(win), MPI_ERR_RMA_SYNC);
    /* flush of a target that is not locked while another is */
    if (nprocs > 2) {
        MPI_OK(MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win));
        MPI_ERRCLASS(MPI_Win_flush(left, win), MPI_ERR_RMA_SYNC);
        MPI_OK(MPI_Win_flush(right, win));
        MPI_OK(MPI_Win_unlock(right, win));
    }

    /* PSCW misuse */
    MPI_ERRCLASS(MPI_Win_complete(win), MPI_ERR_RMA_SYNC);
    MPI_ERRCLASS(MPI_Win_wait(win), MPI_ERR_RMA_SYNC);
    {
        int flag = 7;
        MPI_ERRCLASS(MPI_Win_test(win, &flag), MPI_ERR_RMA_SYNC);
    }
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Group_incl(world, 1, &left, &gpost);
    MPI_Group_incl(world, 1, &right, &grp);
    MPI_OK(MPI_Win_post(gpost, 0, win));
    MPI_ERRCLASS(MPI_Win_post(gpost, 0, win), MPI_ERR_RMA_SYNC);
    MPI_OK(MPI_Win_start(grp, 0, win));
    MPI_ERRCLASS(MPI_Win_start(grp, 0, win), MPI_ERR_RMA_SYNC);
    MPI_ERRCLASS(MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win), MPI_ERR_RMA_SYNC);
    MPI_ERRCLASS(MPI_Win_lock_all(0, win), MPI_ERR_RMA_SYNC);
    MPI_ERRCLASS(MPI_Win_fence(0, win), MPI_ERR_RMA_SYNC);
    MPI_ERRCLASS(MPI_Win_free(&win), MPI_ERR_RMA_SYNC);
    CHECK(win != MPI_WIN_NULL, "a failed Win_free must leave the handle");
    MPI_OK(MPI_Put(v, 1, MPI_INT, right, 2, 1, MPI_INT, win));
    if (nprocs > 2) /* left did not post to us... we did not start it */
        MPI_ERRCLASS(MPI_Put(v, 1, MPI_INT, left, 2, 1, MPI_INT, win), MPI_ERR_RMA_SYNC);
    MPI_OK(MPI_Win_complete(win));
    MPI_ERRCLASS(MPI_Win_complete(win), MPI_ERR_RMA_SYNC);
    MPI_ERRCLASS(MPI_Put(v, 1, MPI_INT, right, 2, 1, MPI_INT, win), MPI_ERR_RMA_SYNC);
    /* exposure epoch still open until wait */
    MPI_ERRCLASS(MPI_Win_free(&win), MPI_ERR_RMA_SYNC);
    MPI_OK(MPI_Win_wait(win));
    MPI_ERRCLASS(MPI_Win_wait(win), MPI_ERR_RMA_SYNC);
    CHECK(buf[2] == 1, "pscw put after refused calls: %d", buf[2]);
    buf[2] = pat(rank, 2);
    MPI_Group_free(&gpost);
    MPI_Group_free(&grp);
    MPI_Group_free(&world);
    MPI_Barrier(MPI_COMM_WORLD);

    /* a fence epoch with an operation in it must be closed by a fence */
    MPI_OK(MPI_Win_fence(0, win));
    MPI_OK(MPI_Get(v, 1, MPI_INT, right, 3, 1, MPI_INT, win));
    MPI_ERRCLASS(MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win), MPI_ERR_RMA_SYNC);
    MPI_ERRCLASS(MPI_Win_lock_all(0, win), MPI_ERR_RMA_SYNC);
    MPI_ERRCLASS(MPI_Win_free(&win), MPI_ERR_RMA_SYNC);
    CHECK(win != MPI_WIN_NULL, "a failed Win_free must leave the handle");
    MPI_OK(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
    CHECK(v[0] == pat(right, 3), "fence get after refused calls: %d", v[0]);
    /* a start or post refused for its group leaves an open fence epoch as it was */
    MPI_OK(MPI_Win_fence(0, win));
    MPI_ERRCLASS(MPI_Win_start(MPI_GROUP_NULL, 0, win), MPI_ERR_GROUP);
    MPI_ERRCLASS(MPI_Win_post(MPI_GROUP_NULL, 0, win), MPI_ERR_GROUP);
    v[0] = -1;
    MPI_OK(MPI_Get(v, 1, MPI_INT, right, 3, 1, MPI_INT, win));
    MPI_OK(MPI_Win_fence(0, win));
    CHECK(v[0] == pat(right, 3), "fence get after a refused start and post: %d", v[0]);
    /* an empty fence epoch may be followed by a lock */
    MPI_OK(MPI_Win_fence(0, win));
    MPI_OK(MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win));
    MPI_OK(MPI_Win_unlock(right, win));
    MPI_Barrier(MPI_COMM_WORLD);

    /* Win_free inside lock and lock_all epochs: refused, window still usable */
    MPI_OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win));
    MPI_ERRCLASS(MPI_Win_free(&win), MPI_ERR_RMA_SYNC);
    CHECK(win != MPI_WIN_NULL, "a failed Win_free must leave the handle");
    MPI_OK(MPI_Win_unlock(right, win));
    MPI_OK(MPI_Win_lock_all(0, win));
    MPI_ERRCLASS(MPI_Win_free(&win), MPI_ERR_RMA_SYNC);
    MPI_OK(MPI_Win_unlock_all(win));
    still_works("Win_free refused in an epoch");
    if (rank == 0)
        printf("epoch errors (lock, lock_all, fence, pscw, flush, free) checked\n");
}

static void ranges(void)
{
    int v[NW + GUARD], got[NW + GUARD];
    MPI_Datatype vec;

    for (int i = 0; i < NW + GUARD; i++)
        v[i] = -7 - i;
    reset_own();
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_OK(MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win));
    /* one int past the end, one straddling the end, the whole window + 1 */
    MPI_ERRCLASS(MPI_Put(v, 1, MPI_INT, right, NW, 1, MPI_INT, win), MPI_ERR_RMA_RANGE);
    MPI_ERRCLASS(MPI_Put(v, 2, MPI_INT, right, NW - 1, 2, MPI_INT, win), MPI_ERR_RMA_RANGE);
    MPI_ERRCLASS(MPI_Put(v, NW + 1, MPI_INT, right, 0, NW + 1, MPI_INT, win),
                 MPI_ERR_RMA_RANGE);
    MPI_ERRCLASS(MPI_Get(got, 2, MPI_INT, right, NW - 1, 2, MPI_INT, win), MPI_ERR_RMA_RANGE);
    /* negative displacement; displacements that overflow when scaled */
    MPI_ERRCLASS(MPI_Put(v, 1, MPI_INT, right, -1, 1, MPI_INT, win), MPI_ERR_RMA_RANGE);
    MPI_ERRCLASS(MPI_Get(got, 1, MPI_INT, right, -1, 1, MPI_INT, win), MPI_ERR_RMA_RANGE);
    MPI_ERRCLASS(MPI_Put(v, 1, MPI_INT, right, LONG_MAX / 2, 1, MPI_INT, win),
                 MPI_ERR_RMA_RANGE);
    MPI_ERRCLASS(MPI_Put(v, 1, MPI_INT, right, LONG_MAX, 1, MPI_INT, win), MPI_ERR_RMA_RANGE);
    MPI_ERRCLASS(MPI_Put(v, 1, MPI_INT, right, LONG_MIN, 1, MPI_INT, win), MPI_ERR_RMA_RANGE);
    /* a target datatype whose extent ends past the window although its size fits */
    MPI_Type_vector(2, 1, NW, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    MPI_ERRCLASS(MPI_Put(v, 2, MPI_INT, right, 0, 1, vec, win), MPI_ERR_RMA_RANGE);
    MPI_ERRCLASS(MPI_Get(got, 2, MPI_INT, right, 0, 1, vec, win), MPI_ERR_RMA_RANGE);
    MPI_Type_free(&vec);
    /* a resized type with a negative lower bound: its first byte lies before the window */
    {
        MPI_Datatype h;
        int bl = 1;
        MPI_Aint dp = -4;
        MPI_Type_create_hindexed(1, &bl, &dp, MPI_INT, &h);
        MPI_Type_commit(&h);
        MPI_ERRCLASS(MPI_Put(v, 1, MPI_INT, right, 0, 1, h, win), MPI_ERR_RMA_RANGE);
        MPI_OK(MPI_Put(v, 1, MPI_INT, right, 1, 1, h, win)); /* writes int 0 */
        MPI_OK(MPI_Win_flush(right, win));
        MPI_OK(MPI_Get(got, 1, MPI_INT, right, 0, 1, MPI_INT, win));
        MPI_OK(MPI_Win_flush(right, win));
        CHECK(got[0] == v[0], "put with negative lower bound: got %d, want %d", got[0], v[0]);
        got[1] = pat(right, 0);
        MPI_OK(MPI_Put(&got[1], 1, MPI_INT, right, 0, 1, MPI_INT, win));
        MPI_OK(MPI_Win_flush(right, win));
        MPI_Type_free(&h);
    }
    /* spans past the address space, which wrapped would land inside the window: a type
     * whose extent is 2^62 (5 elements wrap to 0) is MPI_ERR_TYPE; 2^14 elements of one of
     * extent 2^50 are MPI_ERR_RMA_RANGE at the target and MPI_ERR_COUNT at the origin (or as
     * a get_accumulate's result), and nothing is read or written */
    {
        MPI_Datatype huge, wide;
        int n = 1 << 14;
        MPI_Type_create_resized(MPI_INT, 0, (MPI_Aint)1 << 62, &huge);
        MPI_Type_commit(&huge);
        MPI_Type_create_resized(MPI_INT, 0, (MPI_Aint)1 << 50, &wide);
        MPI_Type_commit(&wide);
        MPI_ERRCLASS(MPI_Put(v, 5, MPI_INT, right, 0, 5, huge, win), MPI_ERR_TYPE);
        MPI_ERRCLASS(MPI_Get(got, 5, MPI_INT, right, 0, 5, huge, win), MPI_ERR_TYPE);
        MPI_ERRCLASS(MPI_Accumulate(v, 5, MPI_INT, right, 0, 5, huge, MPI_SUM, win),
                     MPI_ERR_TYPE);
        MPI_ERRCLASS(MPI_Put(v, n, MPI_INT, right, 0, n, wide, win), MPI_ERR_RMA_RANGE);
        MPI_ERRCLASS(MPI_Accumulate(v, n, MPI_INT, right, 0, n, wide, MPI_REPLACE, win),
                     MPI_ERR_RMA_RANGE);
        MPI_ERRCLASS(MPI_Get(got, n, wide, right, 0, n, MPI_INT, win), MPI_ERR_COUNT);
        MPI_ERRCLASS(MPI_Put(v, n, wide, right, 0, n, MPI_INT, win), MPI_ERR_COUNT);
        MPI_ERRCLASS(MPI_Get_accumulate(v, 1, MPI_INT, got, n, wide, right, 0, 1, MPI_INT,
                                        MPI_SUM, win),
                     MPI_ERR_COUNT);
        MPI_Type_free(&huge);
        MPI_Type_free(&wide);
    }
    /* the last int exactly: fine */
    MPI_OK(MPI_Get(got, 1, MPI_INT, right, NW - 1, 1, MPI_INT, win));
    MPI_OK(MPI_Win_unlock(right, win));
    CHECK(got[0] == pat(right, NW - 1), "last int of the window: %d, want %d", got[0],
          pat(right, NW - 1));
    check_own("out-of-range puts");
    /* the same under fence */
    MPI_OK(MPI_Win_fence(0, win));
    MPI_ERRCLASS(MPI_Put(v, 3, MPI_INT, right, NW - 2, 3, MPI_INT, win), MPI_ERR_RMA_RANGE);
    MPI_OK(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
    check_own("out-of-range put under fence");
    still_works("range errors");
    if (rank == 0)
        printf("range errors checked, target window and guard unchanged\n");
}

static void arguments(void)
{
    int v[8] = {0}, got[8];
    MPI_Datatype uncommitted;

    MPI_OK(MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win));
    /* ranks */
    MPI_ERRCLASS(MPI_Put(v, 1, MPI_INT, nprocs, 0, 1, MPI_INT, win), MPI_ERR_RANK);
    MPI_ERRCLASS(MPI_Get(v, 1, MPI_INT, -5, 0, 1, MPI_INT, win), MPI_ERR_RANK);
    MPI_OK(MPI_Put(v, 1, MPI_INT, MPI_PROC_NULL, 0, 1, MPI_INT, win));
    MPI_OK(MPI_Put(v, 1, MPI_INT, MPI_PROC_NULL, -100, 1, MPI_INT, win));
    /* counts */
    MPI_ERRCLASS(MPI_Put(v, -1, MPI_INT, right, 0, -1, MPI_INT, win), MPI_ERR_COUNT);
    MPI_ERRCLASS(MPI_Put(v, 1, MPI_INT, right, 0, -1, MPI_INT, win), MPI_ERR_COUNT);
    MPI_ERRCLASS(MPI_Get_c(v, -3, MPI_INT, right, 0, 1, MPI_INT, win), MPI_ERR_COUNT);
    /* datatypes */
    MPI_ERRCLASS(MPI_Put(v, 1, MPI_DATATYPE_NULL, right, 0, 1, MPI_INT, win), MPI_ERR_TYPE);
    MPI_ERRCLASS(MPI_Put(v, 1, MPI_INT, right, 0, 1, MPI_DATATYPE_NULL, win), MPI_ERR_TYPE);
    MPI_ERRCLASS(MPI_Get(v, 1, MPI_DATATYPE_NULL, right, 0, 1, MPI_DATATYPE_NULL, win),
                 MPI_ERR_TYPE);
    MPI_Type_contiguous(2, MPI_INT, &uncommitted);
    MPI_ERRCLASS(MPI_Put(v, 1, uncommitted, right, 0, 2, MPI_INT, win), MPI_ERR_TYPE);
    MPI_ERRCLASS(MPI_Get(v, 2, MPI_INT, right, 0, 1, uncommitted, win), MPI_ERR_TYPE);
    MPI_Type_free(&uncommitted);
    /* mismatched sizes */
    MPI_ERRCLASS(MPI_Put(v, 2, MPI_INT, right, 0, 1, MPI_INT, win), MPI_ERR_TYPE);
    MPI_ERRCLASS(MPI_Get(got, 1, MPI_DOUBLE, right, 0, 1, MPI_INT, win), MPI_ERR_TYPE);
    MPI_OK(MPI_Win_unlock(right, win));
    /* lock types and asserts */
    MPI_ERRCLASS(MPI_Win_lock(12345, right, 0, win), MPI_ERR_LOCKTYPE);
    MPI_ERRCLASS(MPI_Win_lock(MPI_LOCK_SHARED, right, MPI_MODE_NOPRECEDE, win), MPI_ERR_ASSERT);
    MPI_ERRCLASS(MPI_Win_lock(MPI_LOCK_SHARED, nprocs + 1, 0, win), MPI_ERR_RANK);
    MPI_ERRCLASS(MPI_Win_lock_all(MPI_MODE_NOSTORE, win), MPI_ERR_ASSERT);
    MPI_ERRCLASS(MPI_Win_fence(1 << 28, win), MPI_ERR_ASSERT);
    {
        MPI_Group world;
        MPI_Comm_group(MPI_COMM_WORLD, &world);
        MPI_ERRCLASS(MPI_Win_post(world, MPI_MODE_NOPRECEDE, win), MPI_ERR_ASSERT);
        MPI_ERRCLASS(MPI_Win_start(world, MPI_MODE_NOPUT, win), MPI_ERR_ASSERT);
        MPI_Group_free(&world);
    }
    MPI_ERRCLASS(MPI_Win_flush(nprocs, win), MPI_ERR_RANK);
    /* librma's extensions check theirs too (RMAX_Memory_moves through MPI_COMM_WORLD's
     * handler, which returns) */
    {
        int path = -1;
        MPI_ERRCLASS(RMAX_Win_path(win, nprocs, 0, 1, &path), MPI_ERR_ARG);
        MPI_ERRCLASS(RMAX_Win_path(win, right, 0, -1, &path), MPI_ERR_ARG);
        MPI_ERRCLASS(RMAX_Win_path(win, right, 0, 1, NULL), MPI_ERR_ARG);
        /* outside the target's window, on every path (off node too) */
        MPI_ERRCLASS(RMAX_Win_path(win, right, NW, 1, &path), MPI_ERR_RMA_RANGE);
        MPI_ERRCLASS(RMAX_Win_path(win, right, -2, 1, &path), MPI_ERR_RMA_RANGE);
        MPI_ERRCLASS(RMAX_Memory_moves(NULL, NULL), MPI_ERR_ARG);
        CHECK(path == -1, "RMAX_Win_path wrote %d on a bad call", path);
    }
    /* the window is still in no epoch: these must all work */
    still_works("argument errors");
    if (rank == 0)
        printf("rank, count, datatype, lock type and assert errors checked\n");
}

static void handles(void)
{
    MPI_Win bogus = (MPI_Win)0x12345678, freed, nul = MPI_WIN_NULL;
    int v = 0, flag;
    void *p;
    char name[MPI_MAX_OBJECT_NAME];
    int len;
    MPI_Aint sz;
    int du;

    /* these report through MPI_COMM_WORLD's handler, set to MPI_ERRORS_RETURN */
    MPI_ERRCLASS(MPI_Put(&v, 1, MPI_INT, right, 0, 1, MPI_INT, MPI_WIN_NULL), MPI_ERR_WIN);
    MPI_ERRCLASS(MPI_Get(&v, 1, MPI_INT, right, 0, 1, MPI_INT, bogus), MPI_ERR_WIN);
    MPI_ERRCLASS(MPI_Win_fence(0, MPI_WIN_NULL), MPI_ERR_WIN);
    MPI_ERRCLASS(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, bogus), MPI_ERR_WIN);
    MPI_ERRCLASS(MPI_Win_unlock(0, MPI_WIN_NULL), MPI_ERR_WIN);
    MPI_ERRCLASS(MPI_Win_flush_all(bogus), MPI_ERR_WIN);
    MPI_ERRCLASS(MPI_Win_sync(MPI_WIN_NULL), MPI_ERR_WIN);
    MPI_ERRCLASS(MPI_Win_free(&nul), MPI_ERR_WIN);
    MPI_ERRCLASS(MPI_Win_get_attr(MPI_WIN_NULL, MPI_WIN_BASE, &p, &flag), MPI_ERR_WIN);
    MPI_ERRCLASS(MPI_Win_get_name(bogus, name, &len), MPI_ERR_WIN);
    MPI_ERRCLASS(MPI_Win_shared_query(MPI_WIN_NULL, 0, &sz, &du, &p), MPI_ERR_WIN);
    MPI_ERRCLASS(MPI_Win_attach(MPI_WIN_NULL, &v, 4), MPI_ERR_WIN);
    /* a handle after MPI_Win_free */
    MPI_OK(MPI_Win_allocate(64, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &p, &freed));
    {
        MPI_Win copy = freed;
        MPI_OK(MPI_Win_free(&freed));
        CHECK(freed == MPI_WIN_NULL, "Win_free sets MPI_WIN_NULL");
        MPI_ERRCLASS(MPI_Win_fence(0, copy), MPI_ERR_WIN);
        MPI_ERRCLASS(MPI_Win_free(&copy), MPI_ERR_WIN);
    }
    /* creation arguments */
    MPI_ERRCLASS(MPI_Win_create(&v, -4, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &freed),
                 MPI_ERR_SIZE);
    MPI_ERRCLASS(MPI_Win_create(&v, 4, 0, MPI_INFO_NULL, MPI_COMM_WORLD, &freed),
                 MPI_ERR_DISP);
    MPI_ERRCLASS(MPI_Win_allocate(-1, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &p, &freed),
                 MPI_ERR_SIZE);
    MPI_ERRCLASS(MPI_Win_allocate(8, -2, MPI_INFO_NULL, MPI_COMM_WORLD, &p, &freed),
                 MPI_ERR_DISP);
    MPI_ERRCLASS(MPI_Win_create(&v, 4, 1, MPI_INFO_NULL, MPI_COMM_NULL, &freed), MPI_ERR_COMM);
    /* an intercommunicator holds no window: every flavor says so, and nobody waits in a
     * collective for the other group (MPICH 4.0.2's own RMA dies with SIGSEGV here) */
    if (nprocs >= 2) {
        MPI_Comm half, inter;
        MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
        MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, rank % 2 ? 0 : 1, 7, &inter);
        MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN);
        freed = MPI_WIN_NULL;
        MPI_ERRCLASS(MPI_Win_create(&v, 4, 1, MPI_INFO_NULL, inter, &freed), MPI_ERR_COMM);
        MPI_ERRCLASS(MPI_Win_allocate(8, 1, MPI_INFO_NULL, inter, &p, &freed), MPI_ERR_COMM);
        MPI_ERRCLASS(MPI_Win_allocate_shared(8, 1, MPI_INFO_NULL, inter, &p, &freed),
                     MPI_ERR_COMM);
        MPI_ERRCLASS(MPI_Win_create_dynamic(MPI_INFO_NULL, inter, &freed), MPI_ERR_COMM);
        CHECK(freed == MPI_WIN_NULL, "no window made on an intercommunicator");
        MPI_Comm_free(&inter);
        MPI_Comm_free(&half);
    }
    /* Free_mem of memory that MPI_Alloc_mem did not return */
    {
        int onstack[4];
        void *heap = malloc(64);
        MPI_ERRCLASS(MPI_Free_mem(onstack), MPI_ERR_BASE);
        MPI_ERRCLASS(MPI_Free_mem(heap), MPI_ERR_BASE);
        free(heap);
        MPI_OK(MPI_Alloc_mem(100, MPI_INFO_NULL, &p));
        MPI_ERRCLASS(MPI_Free_mem((char *)p + 8), MPI_ERR_BASE);
        MPI_OK(MPI_Free_mem(p));
        MPI_ERRCLASS(MPI_Free_mem(p), MPI_ERR_BASE); /* twice */
    }
    MPI_Barrier(MPI_COMM_WORLD);
    still_works("handle errors");
    if (rank == 0)
        printf("handle, creation and Free_mem errors checked\n");
}

/* A window created with no_locks=true refuses locks. */
static void no_locks(void)
{
    MPI_Info info;
    MPI_Win w;
    int *mem;

    MPI_Info_create(&info);
    MPI_Info_set(info, "no_locks", "true");
    MPI_OK(MPI_Win_allocate(16, 4, info, MPI_COMM_WORLD, &mem, &w));
    MPI_Info_free(&info);
    MPI_OK(MPI_Win_set_errhandler(w, MPI_ERRORS_RETURN));
    MPI_ERRCLASS(MPI_Win_lock(MPI_LOCK_SHARED, right, 0, w), MPI_ERR_RMA_SYNC);
    MPI_ERRCLASS(MPI_Win_lock_all(0, w), MPI_ERR_RMA_SYNC);
    MPI_OK(MPI_Win_fence(0, w));
    MPI_OK(MPI_Put(&rank, 1, MPI_INT, right, 1, 1, MPI_INT, w));
    MPI_OK(MPI_Win_fence(0, w));
    CHECK(mem[1] == left, "no_locks window: fence put gave %d, want %d", mem[1], left);
    MPI_OK(MPI_Win_free(&w));
    if (rank == 0)
        printf("no_locks checked\n");
}

static int comm_errh_calls, comm_errh_class;

static void comm_errh(MPI_Comm *comm, int *code, ...)
{
    comm_errh_calls++;
    MPI_Error_class(*code, &comm_errh_class);
}

/* A window's creation raises its errors on its communicator's handler, not on
 * MPI_COMM_WORLD's: MPI_ERRORS_RETURN on the communicator returns the class while the world
 * is fatal, and a user handler on it is called once. */
static void creation_handler(void)
{
    MPI_Comm c;
    MPI_Errhandler eh;
    MPI_Win w = MPI_WIN_NULL;
    void *p;
    int v[4];

    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL); /* a failure aborts */
    MPI_ERRCLASS(MPI_Win_create(v, 16, 0, MPI_INFO_NULL, c, &w), MPI_ERR_DISP);
    MPI_ERRCLASS(MPI_Win_allocate(-5, 1, MPI_INFO_NULL, c, &p, &w), MPI_ERR_SIZE);
    MPI_ERRCLASS(MPI_Win_allocate_shared(8, 1, MPI_INFO_NULL, c, NULL, &w), MPI_ERR_ARG);
    MPI_ERRCLASS(MPI_Win_create_dynamic(MPI_INFO_NULL, c, NULL), MPI_ERR_ARG);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_create_errhandler(comm_errh, &eh);
    MPI_Comm_set_errhandler(c, eh);
    MPI_Errhandler_free(&eh);
    MPI_Win_create(v, 16, -1, MPI_INFO_NULL, c, &w);
    CHECK(comm_errh_calls == 1 && comm_errh_class == MPI_ERR_DISP,
          "the communicator's handler: %d calls, class %d", comm_errh_calls, comm_errh_class);
    CHECK(w == MPI_WIN_NULL, "no window made");
    MPI_Comm_free(&c);
    if (rank == 0)
        printf("creation errors on the communicator's handler checked\n");
}

int main(int argc, char **argv)
{
    rt_init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    right = (rank + 1) % nprocs;
    left = (rank + nprocs - 1) % nprocs;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    buf = malloc((NW + GUARD) * sizeof(int));
    reset_own();
    MPI_OK(MPI_Win_create(buf, NW * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD,
                          &win));
    MPI_OK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    epochs();
    ranges();
    arguments();
    handles();
    no_locks();
    creation_handler();
    check_own("the whole test");
    MPI_OK(MPI_Win_free(&win));
    free(buf);
    return rt_finish("errors");
}
