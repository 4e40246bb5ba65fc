/*
 * bench/micro/put_rate.c - message rate of small puts, the fine-grain pattern: rank 0
 * issues W puts of size bytes (default 8 B, W = 64) before one flush, each into its own
 * slot, either all to rank 1 (-t one) or round-robin over every rank, rank 0 itself
 * included (-t all, then MPI_Win_flush_all); puts per second. Verifies every slot of every
 * target.
 */
#include "common.h"

#include <string.h>

static void reset(bench_t *b, size_t size)
{
    size_t bytes = size * (size_t)b->ops_per_sync;
    bench_fill(b->sbuf, bytes, bench_seed(size, b->rank), 0);
    memset(b->win_mem, 0, bytes);
}

static void op(bench_t *b, size_t size, int j, long k)
{
    (void)k;
    int t = bench_target(b, j);
    size_t slot = (size_t)(j / b->ntargets);
    MPI_Put(b->sbuf + (size_t)j * size, (int)size, MPI_BYTE, t, bench_disp(b, t, slot * size),
            (int)size, MPI_BYTE, b->win);
}

static const char *check(bench_t *b, size_t size, long nops)
{
    (void)nops;
    if (!b->is_target)
        return NULL;
    /* This rank is target number ti of rank 0's nt targets: it got ops ti, ti+nt, ... */
    int nt = b->all_targets ? b->nprocs : 1;
    int ti = b->all_targets ? b->rank : 0;
    unsigned seed = bench_seed(size, b->origins[0]);
    for (int j = ti, slot = 0; j < b->ops_per_sync; j += nt, slot++) {
        const char *bad = bench_verify(b->win_mem + (size_t)slot * size, size, seed,
                                       (size_t)j * size);
        if (bad)
            return bad;
    }
    return NULL;
}

static const bench_spec_t spec = {
    .title = "MPI_Put Message Rate Test",
    .metric = BENCH_RATE,
    .syncs = BENCH_SYNC_BIT(BENCH_SYNC_FLUSH) | BENCH_SYNC_BIT(BENCH_SYNC_FLUSH_LOCAL),
    .def_sync = BENCH_SYNC_FLUSH,
    .min_size = 8,
    .max_size = 8,
    .elem_size = 1,
    .ops_per_sync = 64,
    .iters = 1000,
    .iters_large = 100,
    .warmup = 100,
    .warmup_large = 10,
    .fan_out = 1,
    .slotted = 1,
    .reset = reset,
    .op = op,
    .check = check,
};

int main(int argc, char **argv)
{
    return bench_main(&spec, argc, argv);
}
