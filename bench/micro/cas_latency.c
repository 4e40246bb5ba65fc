/*
 * bench/micro/cas_latency.c - MPI_Compare_and_swap latency: rank 0's k-th operation swaps
 * k+1 for k (int64) in rank 1's window, synchronizing after each; microseconds per
 * operation+sync. Every swap must succeed: verifies the final counter and the last fetch.
 */
#include "common.h"

#include <string.h>

static void reset(bench_t *b, size_t size)
{
    int64_t zero = 0;
    (void)size;
    memcpy(b->rbuf, &zero, sizeof(zero));
    memcpy(b->win_mem, &zero, sizeof(zero));
}

static void op(bench_t *b, size_t size, int j, long k)
{
    (void)size;
    int t = bench_target(b, j);
    int64_t cmp = k, swap = k + 1;
    memcpy(b->cbuf, &cmp, sizeof(cmp));
    memcpy(b->sbuf, &swap, sizeof(swap));
    MPI_Compare_and_swap(b->sbuf, b->cbuf, b->rbuf, MPI_INT64_T, t, bench_disp(b, t, 0), b->win);
}

static const char *check(bench_t *b, size_t size, long nops)
{
    (void)size;
    if (b->is_target)
        return bench_verify_i64(b->win_mem, 1, nops, "target");
    if (b->is_origin)
        return bench_verify_i64(b->rbuf, 1, nops - 1, "fetched");
    return NULL;
}

static const bench_spec_t spec = {
    .title = "MPI_Compare_and_swap Latency Test",
    .metric = BENCH_LATENCY,
    .syncs = BENCH_SYNC_ALL,
    .def_sync = BENCH_SYNC_FLUSH,
    .min_size = 8,
    .max_size = 8,
    .elem_size = 8,
    .single_elem = 1,
    .ops_per_sync = 1,
    .iters = 10000,
    .iters_large = 10000,
    .warmup = 100,
    .warmup_large = 100,
    .reset = reset,
    .op = op,
    .check = check,
};

int main(int argc, char **argv)
{
    return bench_main(&spec, argc, argv);
}
