/*
 * bench/micro/acc_latency.c - MPI_Accumulate latency: rank 0 adds size bytes of int64
 * (MPI_SUM) into rank 1's window and synchronizes after every accumulate; microseconds per
 * accumulate+sync. Verifies that every target element is the sum of all contributions.
 *
 * Built a second time with ACC_CHAR as acc_latency_char: size elements of MPI_CHAR, as the
 * OSU benchmark's osu_acc_latency does (no network atomic has that size); sums wrap at 256.
 */
#include "common.h"

#include <stdio.h>
#include <string.h>

#ifdef ACC_CHAR
typedef signed char elem_t;
#define ELEM_TYPE MPI_CHAR
#define ELEM_NAME "MPI_CHAR"
#else
typedef int64_t elem_t;
#define ELEM_TYPE MPI_INT64_T
#define ELEM_NAME "int64"
#endif

static elem_t addend(size_t size, int rank)
{
    return (elem_t)((bench_seed(size, rank) % 100u) + 1);
}

static void reset(bench_t *b, size_t size)
{
    elem_t v = addend(size, b->rank);
    for (size_t i = 0; i < size / sizeof(v); i++)
        memcpy(b->sbuf + i * sizeof(v), &v, sizeof(v));
    memset(b->win_mem, 0, size);
}

static void op(bench_t *b, size_t size, int j, long k)
{
    (void)k;
    int t = bench_target(b, j);
    int n = (int)(size / sizeof(elem_t));
    MPI_Accumulate(b->sbuf, n, ELEM_TYPE, t, bench_disp(b, t, 0), n, ELEM_TYPE, MPI_SUM, b->win);
}

static const char *check(bench_t *b, size_t size, long nops)
{
    if (!b->is_target)
        return NULL;
#ifdef ACC_CHAR
    static char why[96];
    unsigned char want =
        (unsigned char)((unsigned long)nops * (unsigned char)addend(size, b->origins[0]));
    for (size_t i = 0; i < size; i++)
        if (b->win_mem[i] != want) {
            snprintf(why, sizeof(why), "target byte %zu is %u, expected %u", i, b->win_mem[i],
                     want);
            return why;
        }
    return NULL;
#else
    int64_t want = nops * addend(size, b->origins[0]);
    return bench_verify_i64(b->win_mem, size / sizeof(int64_t), want, "target");
#endif
}

static const bench_spec_t spec = {
    .title = "MPI_Accumulate Latency Test (" ELEM_NAME ")",
    .metric = BENCH_LATENCY,
    .syncs = BENCH_SYNC_ALL,
    .def_sync = BENCH_SYNC_FLUSH,
    .min_size = sizeof(elem_t),
    .max_size = 4 << 20,
    .elem_size = sizeof(elem_t),
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
