/*
 * bench/micro/get_bw.c - MPI_Get bandwidth: rank 0 gets size bytes from rank 1, W times per
 * epoch or flush (OSU window, default 64), from the same bytes into the same buffer or (-D)
 * each from its own into its own; MB/s with MB = 1e6 B. Verifies that rank 0's buffer holds
 * rank 1's window data after each size.
 */
#include "common.h"

#include <string.h>

static size_t slots(const bench_t *b)
{
    return b->slotted ? (size_t)b->ops_per_sync : 1;
}

static void reset(bench_t *b, size_t size)
{
    for (size_t s = 0; s < slots(b); s++)
        bench_fill(b->win_mem + s * size, size, bench_seed(size, b->rank), 0);
    memset(b->rbuf, 0, size * slots(b));
}

static void op(bench_t *b, size_t size, int j, long k)
{
    (void)k;
    int t = bench_target(b, j);
    size_t off = b->slotted ? (size_t)j * size : 0;
    MPI_Get(b->rbuf + off, (int)size, MPI_BYTE, t, bench_disp(b, t, off), (int)size, MPI_BYTE,
            b->win);
}

static const char *check(bench_t *b, size_t size, long nops)
{
    const char *bad = NULL;
    (void)nops;
    for (size_t s = 0; b->is_origin && bad == NULL && s < slots(b); s++)
        bad = bench_verify(b->rbuf + s * size, size, bench_seed(size, b->targets[0]), 0);
    return bad;
}

static const bench_spec_t spec = {
    .title = "MPI_Get Bandwidth Test",
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
