/*
 * bench/micro/strided_bw.c - 2-D strided MPI_Put or MPI_Get bandwidth (the host-assisted
 * paper's measure): rank 0 moves size bytes between a contiguous buffer and rank 1's
 * window, where they lie as size/PIECE rows of PIECE bytes, 2*PIECE apart (an
 * MPI_Type_vector), W times per epoch or flush. STRIDED_OP=put|get (default put),
 * STRIDED_PIECE=bytes (default 1024; sizes below one piece are skipped). MB/s with
 * MB = 1e6 B; verifies the rows after each size.
 */
#include "common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static size_t piece = 1024;
static int get;

static MPI_Datatype rows(size_t size)
{
    MPI_Datatype t;

    MPI_Type_vector((int)(size / piece), (int)piece, (int)(2 * piece), MPI_BYTE, &t);
    MPI_Type_commit(&t);
    return t;
}

static void reset(bench_t *b, size_t size)
{
    bench_fill(b->sbuf, size, bench_seed(size, b->rank), 0);
    memset(b->rbuf, 0, size);
    memset(b->win_mem, 0, 2 * size);
    if (get) /* the rows hold rank's pattern, the gaps zeros */
        for (size_t r = 0; r < size / piece; r++)
            bench_fill(b->win_mem + 2 * r * piece, piece, bench_seed(size, b->rank), r * piece);
}

/* The target layout of the current size: made by its first operation, freed by check,
 * which runs once that size is over. */
static MPI_Datatype t = MPI_DATATYPE_NULL;

static void op(bench_t *b, size_t size, int j, long k)
{
    int tgt = bench_target(b, j);

    (void)k;
    if (t == MPI_DATATYPE_NULL)
        t = rows(size);
    if (get)
        MPI_Get(b->rbuf, (int)size, MPI_BYTE, tgt, bench_disp(b, tgt, 0), 1, t, b->win);
    else
        MPI_Put(b->sbuf, (int)size, MPI_BYTE, tgt, bench_disp(b, tgt, 0), 1, t, b->win);
}

static const char *check(bench_t *b, size_t size, long nops)
{
    (void)nops;
    if (t != MPI_DATATYPE_NULL)
        MPI_Type_free(&t);
    if (get && b->is_origin)
        return bench_verify(b->rbuf, size, bench_seed(size, b->targets[0]), 0);
    if (get || !b->is_target)
        return NULL;
    for (size_t r = 0; r < size / piece; r++) {
        const char *bad = bench_verify(b->win_mem + 2 * r * piece, piece,
                                       bench_seed(size, b->origins[0]), r * piece);
        if (bad != NULL)
            return bad;
    }
    return NULL;
}

static bench_spec_t spec = {
    .title = "MPI_Put 2-D Strided Bandwidth Test",
    .metric = BENCH_BANDWIDTH,
    .syncs = BENCH_SYNC_ALL,
    .def_sync = BENCH_SYNC_FLUSH,
    .min_size = 1024,
    .max_size = 4 << 20,
    .elem_size = 1,
    .ops_per_sync = 16,
    .iters = 50,
    .iters_large = 10,
    .warmup = 5,
    .warmup_large = 2,
    .win_scale = 2,
    .reset = reset,
    .op = op,
    .check = check,
};

int main(int argc, char **argv)
{
    const char *p = getenv("STRIDED_PIECE"), *o = getenv("STRIDED_OP");

    if (p != NULL && atol(p) > 0)
        piece = (size_t)atol(p);
    get = o != NULL && strcmp(o, "get") == 0;
    if (get)
        spec.title = "MPI_Get 2-D Strided Bandwidth Test";
    spec.elem_size = piece;
    spec.min_size = piece > spec.min_size ? piece : spec.min_size;
    return bench_main(&spec, argc, argv);
}
