/*
 * lock_epochs.c - shared-lock epochs of every shape against exclusive writers. Rank 0 is
 * the target; it updates a pair of ints in two steps under its own exclusive lock, over
 * and over (and computes as long between updates), while every other rank runs shared-lock epochs on it of these shapes: empty;
 * puts alone; gets alone; puts and gets; a flush inside; a large put (larger than any
 * aggregated request); an accumulate; a fetch_and_op. Every epoch with a get reads the pair
 * and must never see it half-updated. Over tcp alone a shared lock is taken by rank 0's
 * agent with the epoch's operations when they are one request, and by the origin otherwise
 * (sync/lock.c): both must exclude the writer. At the end each origin's slot holds its last
 * put, the large area its last pattern, and the counter every accumulate and fetch_and_op.
 * ITER (environment, default 30) epochs of each shape per origin. FLAVOR=create makes the
 * window with MPI_Win_create on ordinary memory, which UCX reaches only by emulating RDMA
 * through rank 0's worker: there too the shared lock rides on the epoch's request.
 * FLAVOR=dynamic-am attaches an MPI_Alloc_mem block to a dynamic window: for a rank 0 alone
 * on its node UCX's memory, which off-node origins load and store where UCX maps it, while
 * the shared lock was left for the epoch's request: it must be taken before the first.
 */
#include "rmatest.h"

#include <stdlib.h>
#include <string.h>

#define O_PAIR  0      /* int[2], written by rank 0 in two steps */
#define O_CNT   16     /* long: accumulate and fetch_and_op counter */
#define O_SLOT  64     /* int[np]: each origin's put */
#define O_LARGE 4096   /* each origin's large area */
#define LARGE   150000 /* bytes of one large put: over 64 KiB, one aggregated request */

enum { S_EMPTY, S_PUT, S_GET, S_PUT_GET, S_FLUSH, S_LARGE, S_ACC, S_FOP, S_N };
static const char *shape_name[] = {"empty", "puts",  "gets",       "put+get",
                                   "flush", "large", "accumulate", "fetch_and_op"};

static int me, np;
static MPI_Win win;
static char *mem;
static char *large;
static char *created;  /* FLAVOR=create: the window's memory on rank 0 */
static char *attached; /* FLAVOR=dynamic-am: the MPI_Alloc_mem block rank 0 attached */
static MPI_Aint d0;    /* rank 0's displacement of its window's first byte */

static MPI_Aint large_off(int r)
{
    return O_LARGE + (MPI_Aint)(r - 1) * LARGE;
}

/* One shared-lock epoch of shape s on rank 0; returns 1 when the pair read was torn. */
static int epoch(int s, int i)
{
    int pair[2] = {-1, -2}, v = me * 100000 + i, gets = 0;
    long one = 1, old = -1;

    MPI_OK(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
    switch (s) {
    case S_PUT:
        MPI_OK(MPI_Put(&v, 1, MPI_INT, 0, d0 + O_SLOT + me * (int)sizeof(int), 1, MPI_INT, win));
        MPI_OK(MPI_Put(&v, 1, MPI_INT, 0, d0 + O_SLOT + me * (int)sizeof(int), 1, MPI_INT, win));
        break;
    case S_GET: gets = 1; break;
    case S_PUT_GET:
        MPI_OK(MPI_Put(&v, 1, MPI_INT, 0, d0 + O_SLOT + me * (int)sizeof(int), 1, MPI_INT, win));
        gets = 1;
        break;
    case S_FLUSH:
        MPI_OK(MPI_Put(&v, 1, MPI_INT, 0, d0 + O_SLOT + me * (int)sizeof(int), 1, MPI_INT, win));
        MPI_OK(MPI_Win_flush(0, win));
        gets = 1;
        break;
    case S_LARGE:
        memset(large, (char)(i + me), LARGE);
        MPI_OK(MPI_Put(large, LARGE, MPI_BYTE, 0, d0 + large_off(me), LARGE, MPI_BYTE, win));
        gets = 1;
        break;
    case S_ACC:
        MPI_OK(MPI_Accumulate(&one, 1, MPI_LONG, 0, d0 + O_CNT, 1, MPI_LONG, MPI_SUM, win));
        gets = 1;
        break;
    case S_FOP:
        MPI_OK(MPI_Fetch_and_op(&one, &old, MPI_LONG, 0, d0 + O_CNT, MPI_SUM, win));
        gets = 1;
        break;
    default: break;
    }
    if (gets)
        MPI_OK(MPI_Get(pair, 2, MPI_INT, 0, d0 + O_PAIR, 2, MPI_INT, win));
    MPI_OK(MPI_Win_unlock(0, win));
    if (s == S_FOP)
        CHECK(old >= 0, "fetch_and_op fetched %ld", old);
    return gets && pair[0] != pair[1];
}

int main(int argc, char **argv)
{
    const char *e = getenv("ITER");
    int iter = e != NULL ? atoi(e) : 30, torn[S_N] = {0};
    MPI_Aint bytes;

    rt_init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    bytes = large_off(np);
    if (getenv("FLAVOR") != NULL && strcmp(getenv("FLAVOR"), "create") == 0) {
        created = me == 0 ? malloc((size_t)bytes) : NULL;
        MPI_OK(MPI_Win_create(created, me == 0 ? bytes : 0, 1, MPI_INFO_NULL, MPI_COMM_WORLD,
                              &win));
        mem = created;
    } else if (getenv("FLAVOR") != NULL && strcmp(getenv("FLAVOR"), "dynamic-am") == 0) {
        MPI_OK(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
        if (me == 0) {
            MPI_OK(MPI_Alloc_mem(bytes, MPI_INFO_NULL, &attached));
            MPI_OK(MPI_Win_attach(win, attached, bytes));
            MPI_Get_address(attached, &d0);
        }
        MPI_Bcast(&d0, 1, MPI_AINT, 0, MPI_COMM_WORLD);
        mem = attached;
    } else {
        MPI_OK(
            MPI_Win_allocate(me == 0 ? bytes : 0, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win));
    }
    large = malloc(LARGE);
    if (me == 0)
        memset(mem, 0, (size_t)bytes);
    MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
    if (me == 0) {
        /* the writer: until every origin is done (counted at O_SLOT + 0 by accumulates) */
        int k = 0, done = 0;
        while (done < np - 1) {
            k++;
            MPI_OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win));
            MPI_OK(MPI_Put(&k, 1, MPI_INT, 0, d0 + O_PAIR, 1, MPI_INT, win));
            MPI_OK(MPI_Win_flush(0, win));
            for (volatile int spin = 0; spin < 20000; spin++)
                ;
            MPI_OK(MPI_Put(&k, 1, MPI_INT, 0, d0 + O_PAIR + (int)sizeof(int), 1, MPI_INT, win));
            MPI_OK(MPI_Fetch_and_op(NULL, &done, MPI_INT, 0, d0 + O_SLOT, MPI_NO_OP, win));
            MPI_OK(MPI_Win_unlock(0, win));
            for (volatile int spin = 0; spin < 20000; spin++) /* room for the shared lockers */
                ;
        }
    } else {
        for (int i = 0; i < iter; i++)
            for (int s = 0; s < S_N; s++)
                torn[s] += epoch(s, i);
        for (int s = 0; s < S_N; s++)
            CHECK(torn[s] == 0, "%s: %d of %d shared reads saw a half-done exclusive update",
                  shape_name[s], torn[s], iter);
        int one = 1;
        MPI_OK(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
        MPI_OK(MPI_Accumulate(&one, 1, MPI_INT, 0, d0 + O_SLOT, 1, MPI_INT, MPI_SUM, win));
        MPI_OK(MPI_Win_unlock(0, win));
    }
    MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
    if (me == 0) {
        long want = 2L * iter * (np - 1);
        MPI_OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win));
        CHECK(*(long *)(mem + O_CNT) == want, "counter %ld, want %ld", *(long *)(mem + O_CNT),
              want);
        for (int r = 1; r < np; r++) {
            int slot = *(int *)(mem + O_SLOT + r * (int)sizeof(int));
            const char *l = mem + large_off(r);
            int same = 1;
            CHECK(slot == r * 100000 + iter - 1, "rank %d's slot %d, want %d", r, slot,
                  r * 100000 + iter - 1);
            for (int b = 0; b < LARGE; b++)
                same &= l[b] == (char)(iter - 1 + r);
            CHECK(same, "rank %d's large area is not its last pattern", r);
        }
        MPI_OK(MPI_Win_unlock(0, win));
    }
    free(large);
    if (attached != NULL)
        MPI_OK(MPI_Win_detach(win, attached));
    MPI_OK(MPI_Win_free(&win));
    free(created);
    if (attached != NULL)
        MPI_OK(MPI_Free_mem(attached));
    return rt_finish("lock_epochs");
}
