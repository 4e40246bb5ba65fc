/*
 * put_get - MPI_Put and MPI_Get of contiguous data for every window flavor x every
 * synchronization mode. Each rank puts a pattern into its right neighbour's window and gets
 * its left neighbour's window; target memory and fetched values are checked exactly, and
 * bytes outside the accessed range must be untouched. The shared flavors are skipped when
 * MPI_COMM_WORLD spans nodes.
 */
#include "rmatest.h"

#include <stdint.h>

#define N 1000 /* ints per window; not a multiple of the page size */

enum { F_CREATE, F_CREATE_SMALL, F_CREATE_ALLOCMEM, F_ALLOCATE, F_SHARED, F_SHARED_NONCONTIG,
       F_DYNAMIC, F_DYNAMIC_ALLOCMEM, NFLAVORS };
static const char *fname[] = {"create", "create-small", "create-allocmem", "allocate", "shared",
                              "shared-noncontig", "dynamic", "dynamic-allocmem"};
enum { S_FENCE, S_PSCW, S_LOCK_EXCL, S_LOCK_SHARED, S_LOCK_ALL, S_FLUSH, S_FLUSH_LOCAL,
       NSYNCS };
static const char *sname[] = {"fence", "pscw", "lock-excl", "lock-shared", "lock_all", "flush",
                              "flush_local"};

static int rank, nprocs;

static int pattern(int origin, int round, int i)
{
    return origin * 1000003 + round * 7919 + i;
}

typedef struct {
    MPI_Win win;
    int *mem;        /* this rank's window memory */
    int nints;       /* ints in it */
    MPI_Aint *addrs; /* dynamic: every rank's region address */
    void *owned;     /* what to free afterwards */
    int owned_kind;  /* 0 none, 1 free(), 2 MPI_Free_mem */
    int small_stack[8];
} win_t;

static void make_window(win_t *w, int flavor)
{
    MPI_Info info = MPI_INFO_NULL;
    MPI_Aint bytes = N * sizeof(int);

    memset(w, 0, sizeof(*w));
    w->nints = N;
    switch (flavor) {
    case F_CREATE:
        w->mem = malloc(bytes);
        w->owned = w->mem;
        w->owned_kind = 1;
        MPI_OK(MPI_Win_create(w->mem, bytes, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &w->win));
        break;
    case F_CREATE_SMALL: /* a few ints in the middle of a page: edge pages, maybe CMA */
        w->mem = w->small_stack;
        w->nints = 8;
        MPI_OK(MPI_Win_create(w->mem, 8 * sizeof(int), sizeof(int), MPI_INFO_NULL,
                              MPI_COMM_WORLD, &w->win));
        break;
    case F_CREATE_ALLOCMEM:
        MPI_OK(MPI_Alloc_mem(bytes, MPI_INFO_NULL, &w->mem));
        w->owned = w->mem;
        w->owned_kind = 2;
        MPI_OK(MPI_Win_create(w->mem, bytes, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &w->win));
        break;
    case F_ALLOCATE:
        MPI_OK(MPI_Win_allocate(bytes, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &w->mem,
                                &w->win));
        break;
    case F_SHARED:
    case F_SHARED_NONCONTIG:
        if (flavor == F_SHARED_NONCONTIG) {
            MPI_Info_create(&info);
            MPI_Info_set(info, "alloc_shared_noncontig", "true");
        }
        MPI_OK(MPI_Win_allocate_shared(bytes, sizeof(int), info, MPI_COMM_WORLD, &w->mem,
                                       &w->win));
        if (info != MPI_INFO_NULL)
            MPI_Info_free(&info);
        break;
    case F_DYNAMIC:
    case F_DYNAMIC_ALLOCMEM:
        if (flavor == F_DYNAMIC) {
            w->mem = malloc(bytes);
            w->owned_kind = 1;
        } else {
            MPI_OK(MPI_Alloc_mem(bytes, MPI_INFO_NULL, &w->mem));
            w->owned_kind = 2;
        }
        w->owned = w->mem;
        MPI_OK(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &w->win));
        MPI_OK(MPI_Win_attach(w->win, w->mem, bytes));
        w->addrs = malloc(nprocs * sizeof(MPI_Aint));
        MPI_Aint mine;
        MPI_Get_address(w->mem, &mine);
        MPI_Allgather(&mine, 1, MPI_AINT, w->addrs, 1, MPI_AINT, MPI_COMM_WORLD);
        break;
    }
}

static void free_window(win_t *w, int flavor)
{
    if (flavor == F_DYNAMIC || flavor == F_DYNAMIC_ALLOCMEM)
        MPI_OK(MPI_Win_detach(w->win, w->mem));
    MPI_OK(MPI_Win_free(&w->win));
    CHECK(w->win == MPI_WIN_NULL, "MPI_Win_free must set MPI_WIN_NULL");
    if (w->owned_kind == 1)
        free(w->owned);
    else if (w->owned_kind == 2)
        MPI_OK(MPI_Free_mem(w->owned));
    free(w->addrs);
}

static MPI_Aint disp_of(win_t *w, int target, int index)
{
    return w->addrs ? w->addrs[target] + (MPI_Aint)index * (MPI_Aint)sizeof(int) : index;
}

static void run(int flavor, int sync, int round)
{
    win_t w;
    int right = (rank + 1) % nprocs, left = (rank + nprocs - 1) % nprocs;
    int n, off, *src, *dst;
    MPI_Group world, gr, gl;

    make_window(&w, flavor);
    n = w.nints > 16 ? w.nints - 16 : w.nints / 2; /* leave a margin that must stay intact */
    off = w.nints > 16 ? 7 : 1;
    src = malloc(w.nints * sizeof(int));
    dst = malloc(w.nints * sizeof(int));
    for (int i = 0; i < w.nints; i++) {
        w.mem[i] = -1;
        src[i] = pattern(rank, round, i);
        dst[i] = -2;
    }
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    int ranks2[2] = {right, left};
    MPI_Group_incl(world, 1, &ranks2[0], &gr);
    MPI_Group_incl(world, 1, &ranks2[1], &gl);
    MPI_Barrier(MPI_COMM_WORLD);

    /* phase 1: put to the right neighbour */
    switch (sync) {
    case S_FENCE:
        MPI_OK(MPI_Win_fence(0, w.win));
        MPI_OK(MPI_Put(src, n, MPI_INT, right, disp_of(&w, right, off), n, MPI_INT, w.win));
        MPI_OK(MPI_Win_fence(0, w.win));
        break;
    case S_PSCW:
        MPI_OK(MPI_Win_post(gl, 0, w.win));
        MPI_OK(MPI_Win_start(gr, 0, w.win));
        MPI_OK(MPI_Put(src, n, MPI_INT, right, disp_of(&w, right, off), n, MPI_INT, w.win));
        MPI_OK(MPI_Win_complete(w.win));
        MPI_OK(MPI_Win_wait(w.win));
        break;
    case S_LOCK_EXCL:
    case S_LOCK_SHARED:
        MPI_OK(MPI_Win_lock(sync == S_LOCK_EXCL ? MPI_LOCK_EXCLUSIVE : MPI_LOCK_SHARED, right, 0,
                            w.win));
        MPI_OK(MPI_Put(src, n, MPI_INT, right, disp_of(&w, right, off), n, MPI_INT, w.win));
        MPI_OK(MPI_Win_unlock(right, w.win));
        break;
    case S_LOCK_ALL:
    case S_FLUSH:
    case S_FLUSH_LOCAL:
        MPI_OK(MPI_Win_lock_all(0, w.win));
        MPI_OK(MPI_Put(src, n, MPI_INT, right, disp_of(&w, right, off), n, MPI_INT, w.win));
        if (sync == S_FLUSH)
            MPI_OK(MPI_Win_flush(right, w.win));
        else if (sync == S_FLUSH_LOCAL)
            MPI_OK(MPI_Win_flush_local(right, w.win));
        MPI_OK(MPI_Win_unlock_all(w.win));
        break;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_OK(MPI_Win_sync(w.win));
    int bad = 0;
    for (int i = 0; i < w.nints; i++) {
        int want = (i >= off && i < off + n) ? pattern(left, round, i - off) : -1;
        if (w.mem[i] != want && bad++ < 3)
            CHECK(0, "%s/%s: target mem[%d] = %d, want %d", fname[flavor], sname[sync], i,
                  w.mem[i], want);
    }
    CHECK(bad == 0, "%s/%s: %d wrong ints after put", fname[flavor], sname[sync], bad);

    /* phase 2: get from the left neighbour (which holds its left neighbour's pattern) */
    MPI_Barrier(MPI_COMM_WORLD);
    switch (sync) {
    case S_FENCE:
        MPI_OK(MPI_Win_fence(MPI_MODE_NOPRECEDE, w.win));
        MPI_OK(MPI_Get(dst, n, MPI_INT, left, disp_of(&w, left, off), n, MPI_INT, w.win));
        MPI_OK(MPI_Win_fence(MPI_MODE_NOSUCCEED, w.win));
        break;
    case S_PSCW:
        MPI_OK(MPI_Win_post(gr, MPI_MODE_NOPUT, w.win));
        MPI_OK(MPI_Win_start(gl, 0, w.win));
        MPI_OK(MPI_Get(dst, n, MPI_INT, left, disp_of(&w, left, off), n, MPI_INT, w.win));
        MPI_OK(MPI_Win_complete(w.win));
        {
            int flag = 0;
            while (!flag)
                MPI_OK(MPI_Win_test(w.win, &flag));
        }
        break;
    case S_LOCK_EXCL:
    case S_LOCK_SHARED:
        MPI_OK(MPI_Win_lock(sync == S_LOCK_EXCL ? MPI_LOCK_EXCLUSIVE : MPI_LOCK_SHARED, left, 0,
                            w.win));
        MPI_OK(MPI_Get(dst, n, MPI_INT, left, disp_of(&w, left, off), n, MPI_INT, w.win));
        MPI_OK(MPI_Win_unlock(left, w.win));
        break;
    case S_LOCK_ALL:
    case S_FLUSH:
    case S_FLUSH_LOCAL:
        MPI_OK(MPI_Win_lock_all(0, w.win));
        MPI_OK(MPI_Get(dst, n, MPI_INT, left, disp_of(&w, left, off), n, MPI_INT, w.win));
        if (sync == S_FLUSH)
            MPI_OK(MPI_Win_flush_all(w.win));
        else if (sync == S_FLUSH_LOCAL)
            MPI_OK(MPI_Win_flush_local_all(w.win));
        MPI_OK(MPI_Win_unlock_all(w.win));
        break;
    }
    int leftleft = (left + nprocs - 1) % nprocs;
    bad = 0;
    for (int i = 0; i < w.nints; i++) {
        int want = i < n ? pattern(leftleft, round, i) : -2;
        if (dst[i] != want && bad++ < 3)
            CHECK(0, "%s/%s: fetched[%d] = %d, want %d", fname[flavor], sname[sync], i, dst[i],
                  want);
    }
    CHECK(bad == 0, "%s/%s: %d wrong ints after get", fname[flavor], sname[sync], bad);

    MPI_Group_free(&gr);
    MPI_Group_free(&gl);
    MPI_Group_free(&world);
    free(src);
    free(dst);
    MPI_Barrier(MPI_COMM_WORLD);
    free_window(&w, flavor);
}

int main(int argc, char **argv)
{
    int round = 0;

    rt_init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    for (int f = 0; f < NFLAVORS; f++)
        for (int s = 0; s < NSYNCS; s++) {
            int before = rt_fails;
            /* shared windows need ranks that share memory: not across nodes */
            if ((f == F_SHARED || f == F_SHARED_NONCONTIG) && rt_world_spans_nodes()) {
                if (rank == 0 && s == 0)
                    printf("%-17s skipped: MPI_COMM_WORLD spans nodes\n", fname[f]);
                continue;
            }
            run(f, s, round++);
            if (rank == 0)
                printf("%-17s %-12s %s\n", fname[f], sname[s], rt_fails == before ? "ok" : "FAIL");
        }
    return rt_finish("put_get");
}
