/*
 * acc_order - accumulate ordering from one origin to one location without any flush in
 * between: a mixed sequence of MPI_REPLACE, MPI_SUM, MPI_PROD and fetching MPI_NO_OP reads
 * must behave exactly like the sequential program (default accumulate_ordering
 * rar,raw,war,waw), for an atomic type, a misaligned element and a stripe-locked long double,
 * in every flavor. A window created with accumulate_ordering=none and
 * accumulate_ops=same_op_no_op must report both keys in MPI_Win_get_info and still give
 * exact results once flushed. The shared flavor is skipped when MPI_COMM_WORLD spans nodes.
 */
#include "rmatest.h"

#include <stdint.h>

#define NSEQ 2000

enum { F_CREATE, F_ALLOCATE, F_SHARED, F_DYNAMIC, F_RELAXED, NFLAVORS };
static const char *fname[] = {"create", "allocate", "shared", "dynamic", "allocate+ordering=none"};

static int rank, nprocs;

static void run(int flavor)
{
    MPI_Win win;
    MPI_Info info = MPI_INFO_NULL;
    char *mem = NULL;
    MPI_Aint base = 0, *addrs = NULL;
    int right = (rank + 1) % nprocs, bad = 0, rbad = 0;
    int64_t want = 0, v, r;
    long double lwant = 0, lv, lr;
    int64_t mwant = 0;

    if (flavor == F_RELAXED) {
        MPI_Info_create(&info);
        MPI_Info_set(info, "accumulate_ordering", "none");
        MPI_Info_set(info, "accumulate_ops", "same_op_no_op");
    }
    switch (flavor) {
    case F_CREATE:
        mem = calloc(1, 4096);
        MPI_OK(MPI_Win_create(mem, 4096, 1, info, MPI_COMM_WORLD, &win));
        break;
    case F_ALLOCATE:
    case F_RELAXED:
        MPI_OK(MPI_Win_allocate(4096, 1, info, MPI_COMM_WORLD, &mem, &win));
        memset(mem, 0, 4096);
        break;
    case F_SHARED:
        MPI_OK(MPI_Win_allocate_shared(4096, 1, info, MPI_COMM_WORLD, &mem, &win));
        memset(mem, 0, 4096);
        break;
    case F_DYNAMIC:
        mem = calloc(1, 4096);
        MPI_OK(MPI_Win_create_dynamic(info, MPI_COMM_WORLD, &win));
        MPI_OK(MPI_Win_attach(win, mem, 4096));
        break;
    }
    if (flavor == F_RELAXED) {
        MPI_Info got;
        char val[64];
        int flag = 0;
        MPI_OK(MPI_Win_get_info(win, &got));
        MPI_Info_get(got, "accumulate_ordering", sizeof(val) - 1, val, &flag);
        CHECK(flag && strcmp(val, "none") == 0, "accumulate_ordering reported as %s",
              flag ? val : "(unset)");
        flag = 0;
        MPI_Info_get(got, "accumulate_ops", sizeof(val) - 1, val, &flag);
        CHECK(flag && strcmp(val, "same_op_no_op") == 0, "accumulate_ops reported as %s",
              flag ? val : "(unset)");
        MPI_Info_free(&got);
        MPI_Info_free(&info);
    }
    addrs = calloc(nprocs, sizeof(MPI_Aint));
    MPI_Get_address(mem, &base);
    MPI_Allgather(&base, 1, MPI_AINT, addrs, 1, MPI_AINT, MPI_COMM_WORLD);
    base = flavor == F_DYNAMIC ? addrs[right] : 0;

    MPI_OK(MPI_Win_lock_all(0, win));
    for (int i = 0; i < NSEQ; i++) {
        MPI_Op op = i % 5 == 0 ? MPI_REPLACE : i % 5 == 1 ? MPI_SUM : i % 5 == 2 ? MPI_PROD
                    : i % 5 == 3 ? MPI_NO_OP : MPI_SUM;
        v = i % 5 == 2 ? -1 : i + rank;
        lv = (long double)v;
        if (op == MPI_NO_OP || i % 7 == 0) { /* fetching forms */
            MPI_OK(MPI_Fetch_and_op(&v, &r, MPI_INT64_T, right, base + 0, op, win));
            bad += r != want;
            MPI_OK(MPI_Get_accumulate(&lv, 1, MPI_LONG_DOUBLE, &lr, 1, MPI_LONG_DOUBLE, right,
                                      base + 16, 1, MPI_LONG_DOUBLE, op, win));
            bad += lr != lwant;
            MPI_OK(MPI_Get_accumulate(&v, 1, MPI_INT64_T, &r, 1, MPI_INT64_T, right, base + 37,
                                      1, MPI_INT64_T, op, win));
            bad += r != mwant;
        } else {
            MPI_OK(MPI_Accumulate(&v, 1, MPI_INT64_T, right, base + 0, 1, MPI_INT64_T, op, win));
            MPI_OK(MPI_Accumulate(&lv, 1, MPI_LONG_DOUBLE, right, base + 16, 1, MPI_LONG_DOUBLE,
                                  op, win));
            MPI_OK(MPI_Accumulate(&v, 1, MPI_INT64_T, right, base + 37, 1, MPI_INT64_T, op,
                                  win));
        }
        if (op == MPI_REPLACE)
            want = v, lwant = lv, mwant = v;
        else if (op == MPI_SUM)
            want += v, lwant += lv, mwant += v;
        else if (op == MPI_PROD)
            want *= v, lwant *= lv, mwant *= v;
        /* a plain MPI_Get of the same location after the accumulates, after a flush */
        if (i % 500 == 499) {
            MPI_OK(MPI_Win_flush(right, win));
            MPI_OK(MPI_Get(&r, 1, MPI_INT64_T, right, base + 0, 1, MPI_INT64_T, win));
            MPI_OK(MPI_Win_flush(right, win));
            rbad += r != want;
        }
    }
    MPI_OK(MPI_Win_unlock_all(win));
    CHECK(bad == 0, "%s: %d fetched values differ from the sequential program", fname[flavor],
          bad);
    CHECK(rbad == 0, "%s: %d flushed gets differ from the sequential program", fname[flavor],
          rbad);
    MPI_Barrier(MPI_COMM_WORLD);
    {
        /* my memory holds my left neighbour's sequence, whose values depend on its rank */
        int left = (rank + nprocs - 1) % nprocs;
        int64_t w = 0, m, x;
        long double lw = 0, l;
        for (int i = 0; i < NSEQ; i++) {
            int k = i % 5;
            x = k == 2 ? -1 : i + left;
            if (k == 0)
                w = x, lw = x;
            else if (k == 1 || k == 4)
                w += x, lw += x;
            else if (k == 2)
                w *= x, lw *= x;
        }
        memcpy(&m, mem + 0, 8);
        CHECK(m == w, "%s: final int64 %ld, want %ld", fname[flavor], (long)m, (long)w);
        memcpy(&l, mem + 16, sizeof(l));
        CHECK(l == lw, "%s: final long double %Lg, want %Lg", fname[flavor], l, lw);
        memcpy(&m, mem + 37, 8);
        CHECK(m == w, "%s: final misaligned int64 %ld, want %ld", fname[flavor], (long)m,
              (long)w);
    }
    if (flavor == F_DYNAMIC)
        MPI_OK(MPI_Win_detach(win, mem));
    MPI_OK(MPI_Win_free(&win));
    if (flavor == F_CREATE || flavor == F_DYNAMIC)
        free(mem);
    free(addrs);
}

int main(int argc, char **argv)
{
    rt_init(&argc, &argv);
    rank = rt_rank;
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    for (int f = 0; f < NFLAVORS; f++) {
        /* shared windows need ranks that share memory: not across nodes */
        if (f == F_SHARED && rt_world_spans_nodes()) {
            if (rank == 0)
                printf("shared flavor skipped: MPI_COMM_WORLD spans nodes\n");
            continue;
        }
        run(f);
    }
    return rt_finish("acc_order");
}
