/*
 * bench/micro/fop_latency.c - MPI_Fetch_and_op latency: rank 0 adds 1 (int64, MPI_SUM) to
 * rank 1's window and synchronizes after every operation; microseconds per operation+sync.
 * Verifies the target counter and the last fetched value.
 */
#include "common.h"

#include <string.h>

static void reset(bench_t *b, size_t size)
{
    int64_t one = 1, zero = 0;
    (void)size;
    memcpy(b->sbuf, &one, sizeof(one));
    memcpy(b->rbuf, &zero, sizeof(zero));
    memcpy(b->win_mem, &zero, sizeof(zero));
}

static void op(bench_t *b, size_t size, int j, long k)
{
    (void)size;
    (void)k;
    int t = bench_target(b, j);
    MPI_Fetch_and_op(b->sbuf, b->rbuf, MPI_INT64_T, t, bench_disp(b, t, 0), MPI_SUM, b->win);
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
    .title = "MPI_Fetch_and_op Latency Test",
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
