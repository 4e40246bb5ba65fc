/*
 * bench/micro/common.h - shared harness of librma's OSU-style one-sided micro-benchmarks.
 *
 * Owns what every benchmark program has in common: option parsing (-w -s -m -i -x -W -t -M
 * -L), window creation for the three flavors (create, allocate, dynamic), the synchronization
 * loops (flush, flush_local, lock, lock_all, fence, pscw), warm-up and timing, per-size
 * verification and the OSU column output. A program describes its measure with a
 * bench_spec_t (title, metric, offered syncs, defaults) and three hooks (reset, op, check).
 *
 * The programs are plain MPI programs: they are never linked with librma. The same binary
 * runs on MPICH's own RMA or, with LD_PRELOAD=librma.so, on librma.
 */
#ifndef BENCH_COMMON_H
#define BENCH_COMMON_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

enum bench_flavor { BENCH_WIN_CREATE, BENCH_WIN_ALLOCATE, BENCH_WIN_DYNAMIC, BENCH_NFLAVOR };

enum bench_sync {
    BENCH_SYNC_FLUSH,
    BENCH_SYNC_FLUSH_LOCAL,
    BENCH_SYNC_LOCK,
    BENCH_SYNC_LOCK_ALL,
    BENCH_SYNC_FENCE,
    BENCH_SYNC_PSCW,
    BENCH_NSYNC
};

#define BENCH_SYNC_BIT(s) (1u << (s))
#define BENCH_SYNC_ALL ((1u << BENCH_NSYNC) - 1u)
#define BENCH_SYNC_ACTIVE (BENCH_SYNC_BIT(BENCH_SYNC_FENCE) | BENCH_SYNC_BIT(BENCH_SYNC_PSCW))

/* What the program prints in its second column. */
enum bench_metric {
    BENCH_LATENCY,   /* microseconds per operation */
    BENCH_BANDWIDTH, /* MB/s, MB = 1e6 bytes */
    BENCH_RATE       /* operations per second */
};

/* Sizes above this use the "large" iteration counts (OSU's convention). */
#define BENCH_LARGE_SIZE 8192

typedef struct bench bench_t;

typedef struct bench_spec {
    const char *title;      /* e.g. "MPI_Put Latency Test" */
    enum bench_metric metric;
    unsigned syncs;         /* BENCH_SYNC_BIT mask of the syncs this measure offers */
    enum bench_sync def_sync;
    size_t min_size;        /* default size range in bytes (powers of two) */
    size_t max_size;
    size_t elem_size;       /* sizes smaller than this are skipped (accumulate types) */
    int ops_per_sync;       /* default operations per epoch/flush (1 for latency) */
    int iters, iters_large; /* default timed iterations, small and large sizes */
    int warmup, warmup_large;
    int bidir;              /* ranks 0 and 1 are both origin and target of each other */
    int fan_out;            /* accepts -t one|all: origin 0 targets rank 1 or every rank */
    int slotted;            /* op j of an epoch uses its own slot j of size bytes */
    int distinct;           /* offers -D: slotted when asked (bench_t.slotted) */
    int single_elem;        /* one element of elem_size bytes: -m is ignored */
    int win_scale;          /* window memory is this many times the largest size (0: 1) */

    /* Called on every rank before each size, inside an exclusive lock of its own window:
     * fill the origin buffers and set the rank's window memory. */
    void (*reset)(bench_t *b, size_t size);
    /* Called on origin ranks only: issue operation j (0..ops_per_sync-1) of the current
     * epoch; k counts operations since the start of this size, warm-up included. */
    void (*op)(bench_t *b, size_t size, int j, long k);
    /* Called on every rank after each size, inside an exclusive lock of its own window;
     * nops is the number of operations each origin issued. Returns NULL when the data is
     * right, else a message describing the first mismatch. */
    const char *(*check)(bench_t *b, size_t size, long nops);
} bench_spec_t;

struct bench {
    const bench_spec_t *spec;
    MPI_Comm comm;
    int rank, nprocs;
    enum bench_flavor flavor;
    enum bench_sync sync;
    size_t min_size, max_size;
    int ops_per_sync;
    int iters_opt, warmup_opt; /* -i / -x, or -1 for the defaults */
    int all_targets;           /* -t all */
    int alloc_mem;             /* -M: window memory of create/dynamic from MPI_Alloc_mem */
    int slotted;               /* -D: op j of an epoch moves its own slot j */

    MPI_Win win;
    unsigned char *win_mem; /* this rank's window memory */
    size_t win_bytes;
    MPI_Aint *base_disp;    /* per rank: displacement of its window memory (dynamic: address) */
    unsigned char *sbuf;    /* origin buffer (source of puts/accumulates) */
    unsigned char *rbuf;    /* result buffer (destination of gets/fetches) */
    unsigned char *cbuf;    /* compare buffer (compare_and_swap) */
    size_t buf_bytes;

    int is_origin, is_target;
    int targets[64];        /* targets of this rank as origin */
    int ntargets;
    int origins[64];        /* origins that target this rank */
    int norigins;
    MPI_Group target_group, origin_group;
};

/* Runs the whole benchmark described by spec; returns the process exit status (0 on
 * success, 2 on a usage error). Verification failures and MPI errors abort the job. */
int bench_main(const bench_spec_t *spec, int argc, char **argv);

/* Displacement of byte offset off in the window of rank target. */
static inline MPI_Aint bench_disp(const bench_t *b, int target, size_t off)
{
    return b->base_disp[target] + (MPI_Aint)off;
}

/* Target of operation j of an epoch (round-robin over the origin's targets). */
static inline int bench_target(const bench_t *b, int j)
{
    return b->targets[j % b->ntargets];
}

/* Seed of the data that rank writer produces for size (distinct per size and rank). */
unsigned bench_seed(size_t size, int writer);

/* Fills len bytes with the pattern of seed starting at pattern position off (never 0). */
void bench_fill(unsigned char *p, size_t len, unsigned seed, size_t off);

/* Checks len bytes against the pattern of seed from position off; returns NULL when equal,
 * else a message (static storage) naming the first differing byte. */
const char *bench_verify(const unsigned char *p, size_t len, unsigned seed, size_t off);

/* Parses -m's "[MIN:]MAX" (bytes, K/M suffixes, 1 B to 1 GiB) into *min and *max; a part
 * left out keeps its value. 0, or -1 when malformed. */
int bench_parse_range(const char *arg, size_t *min, size_t *max);

/* Computes (floating point, no memory traffic, no MPI call but clock reads) for the given
 * seconds; returns the seconds it took. */
double bench_compute(double seconds);

/* Checks that n int64 values all equal want; returns NULL or a message (static storage). */
const char *bench_verify_i64(const unsigned char *p, size_t n, int64_t want, const char *what);

#endif /* BENCH_COMMON_H */
