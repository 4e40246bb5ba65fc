/*
 * bench/micro/put_bibw.c - MPI_Put bi-directional bandwidth: ranks 0 and 1 put size bytes
 * into each other's window, W times per epoch (active target only, as OSU); MB/s of both
 * directions together. Verifies both windows after each size.
 */
#include "common.h"

#include <string.h>

static void reset(bench_t *b, size_t size)
{
    bench_fill(b->sbuf, size, bench_seed(size, b->rank), 0);
    memset(b->win_mem, 0, size);
}

static void op(bench_t *b, size_t size, int j, long k)
{
    (void)k;
    int t = bench_target(b, j);
    MPI_Put(b->sbuf, (int)size, MPI_BYTE, t, bench_disp(b, t, 0), (int)size, MPI_BYTE, b->win);
}

static const char *check(bench_t *b, size_t size, long nops)
{
    (void)nops;
    if (!b->is_target)
        return NULL;
    return bench_verify(b->win_mem, size, bench_seed(size, b->origins[0]), 0);
}

static const bench_spec_t spec = {
    .title = "MPI_Put Bi-directional Bandwidth Test",
    .metric = BENCH_BANDWIDTH,
    .syncs = BENCH_SYNC_ACTIVE,
    .def_sync = BENCH_SYNC_PSCW,
    .min_size = 1,
    .max_size = 4 << 20,
    .elem_size = 1,
    .ops_per_sync = 64,
    .iters = 100,
    .iters_large = 10,
    .warmup = 10,
    .warmup_large = 2,
    .bidir = 1,
    .reset = reset,
    .op = op,
    .check = check,
};

int main(int argc, char **argv)
{
    return bench_main(&spec, argc, argv);
}
