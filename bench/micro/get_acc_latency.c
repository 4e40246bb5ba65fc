/*
 * bench/micro/get_acc_latency.c - MPI_Get_accumulate latency: rank 0 adds size bytes of
 * int64 (MPI_SUM) into rank 1's window, fetching the old values, and synchronizes after
 * every operation; microseconds per operation+sync. Verifies the target sums and that the
 * last fetch returned the value before the last addition.
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
    memset(b->rbuf, 0, size);
    memset(b->win_mem, 0, size);
}

static void op(bench_t *b, size_t size, int j, long k)
{
    (void)k;
    int t = bench_target(b, j);
    int n = (int)(size / sizeof(int64_t));
    MPI_Get_accumulate(b->sbuf, n, MPI_INT64_T, b->rbuf, n, MPI_INT64_T, t, bench_disp(b, t, 0),
                       n, MPI_INT64_T, MPI_SUM, b->win);
}

static const char *check(bench_t *b, size_t size, long nops)
{
    size_t n = size / sizeof(int64_t);
    if (b->is_target)
        return bench_verify_i64(b->win_mem, n, nops * addend(size, b->origins[0]), "target");
    if (b->is_origin)
        return bench_verify_i64(b->rbuf, n, (nops - 1) * addend(size, b->rank), "fetched");
    return NULL;
}

static const bench_spec_t spec = {
    .title = "MPI_Get_accumulate Latency Test",
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
