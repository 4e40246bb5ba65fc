/*
 * bench/micro/put_bw.c - MPI_Put bandwidth: rank 0 puts size bytes to rank 1, W times per
 * epoch or flush (OSU window, default 64), to the same bytes or (-D) each to its own; MB/s
 * with MB = 1e6 B. Verifies that rank 1's window holds rank 0's data after each size.
 */
#include "common.h"

#include <string.h>

static size_t slots(const bench_t *b)
{
    return b->slotted ? (size_t)b->ops_per_sync : 1;
}

static void reset(bench_t *b, size_t size)
{
    bench_fill(b->sbuf, size, bench_seed(size, b->rank), 0);
    memset(b->win_mem, 0, size * slots(b));
}

static void op(bench_t *b, size_t size, int j, long k)
{
    (void)k;
    int t = bench_target(b, j);
    size_t off = b->slotted ? (size_t)j * size : 0;
    MPI_Put(b->sbuf, (int)size, MPI_BYTE, t, bench_disp(b, t, off), (int)size, MPI_BYTE, b->win);
}

static const char *check(bench_t *b, size_t size, long nops)
{
    const char *bad = NULL;
    (void)nops;
    for (size_t s = 0; b->is_target && bad == NULL && s < slots(b); s++)
        bad = bench_verify(b->win_mem + s * size, size, bench_seed(size, b->origins[0]), 0);
    return bad;
}

static const bench_spec_t spec = {
    .title = "MPI_Put Bandwidth Test",
    .metric = BENCH_BANDWIDTH,
    .syncs = BENCH_SYNC_ALL,
    .def_sync = BENCH_SYNC_FLUSH,
    .min_size = 1,
    .max_size = 4 << 20,
    .elem_size = 1,
    .ops_per_sync = 64,
    .iters = 100,
    .iters_large = 10,
    .warmup = 10,
    .warmup_large = 2,
    .reset = reset,
    .op = op,
    .check = check,
    .distinct = 1,
};

int main(int argc, char **argv)
{
    return bench_main(&spec, argc, argv);
}
