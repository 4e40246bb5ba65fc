/*
 * bench/micro/acc_latency.c - MPI_Accumulate latency: rank 0 adds size bytes of int64
 * (MPI_SUM) into rank 1's window and synchronizes after every accumulate; microseconds per
 * accumulate+sync. Verifies that every target element is the sum of all contributions.
 */
#include "common.h"

#include <string.h>

static int64_t addend(size_t size, int rank)
{
    return (int64_t)(bench_seed(size, rank) % 1000u) + 1;
}

static void reset(bench_t *b, size_t size)
{
    int64_t v = addend(size, b->rank);
    for (size_t i = 0; i < size / sizeof(v); i++)
        memcpy(b->sbuf + i * sizeof(v), &v, sizeof(v));
    memset(b->win_mem, 0, size);
}

static void op(bench_t *b, size_t size, int j, long k)
{
    (void)k;
    int t = bench_target(b, j);
    int n = (int)(size / sizeof(int64_t));
    MPI_Accumulate(b->sbuf, n, MPI_INT64_T, t, bench_disp(b, t, 0), n, MPI_INT64_T, MPI_SUM,
                   b->win);
}

static const char *check(bench_t *b, size_t size, long nops)
{
    if (!b->is_target)
        return NULL;
    int64_t want = nops * addend(size, b->origins[0]);
    return bench_verify_i64(b->win_mem, size / sizeof(int64_t), want, "target");
}

static const bench_spec_t spec = {
    .title = "MPI_Accumulate Latency Test",
    .metric = BENCH_LATENCY,
    .syncs = BENCH_SYNC_ALL,
    .def_sync = BENCH_SYNC_FLUSH,
    .min_size = 8,
    .max_size = 4 << 20,
    .elem_size = 8,
    .ops_per_sync = 1,
    .iters = 10000,
    .iters_large = 1000,
    .warmup = 100,
    .warmup_large = 10,
    .reset = reset,
    .op = op,
    .check = check,
};

int main(int argc, char **argv)
{
    return bench_main(&spec, argc, argv);
}
