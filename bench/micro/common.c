/*
 * bench/micro/common.c - the harness behind every micro-benchmark of bench/micro.
 *
 * Owns option parsing, the window of each flavor, the synchronization loops, warm-up,
 * timing (on rank 0, which is always an origin), per-size verification and the OSU-style
 * output. Programs only describe a measure (bench_spec_t) and issue single operations.
 *
 * Per size: every rank resets its buffers and window under an exclusive lock of its own
 * window; a barrier; the origin opens the passive epoch (flush modes) or everyone fences
 * (fence mode); warm-up iterations; a barrier; the timed iterations; the epochs close; a
 * barrier; every rank checks its window and result buffers under an exclusive self-lock.
 * A mismatch aborts the job with a message: a benchmark that measured nothing fails.
 */
#define _POSIX_C_SOURCE 200809L

#include "common.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const flavor_opt[BENCH_NFLAVOR] = {"create", "allocate", "dynamic"};
static const char *const flavor_name[BENCH_NFLAVOR] = {
    "MPI_Win_create", "MPI_Win_allocate", "MPI_Win_create_dynamic"};
static const char *const sync_opt[BENCH_NSYNC] = {
    "flush", "flush_local", "lock", "lock_all", "fence", "pscw"};
static const char *const sync_name[BENCH_NSYNC] = {
    "MPI_Win_flush", "MPI_Win_flush_local", "MPI_Win_lock/unlock",
    "MPI_Win_lock_all/unlock_all", "MPI_Win_fence", "MPI_Win_post/start/complete/wait"};

#define MAX_PEERS 64

/* ------------------------------------------------------------------ data patterns */

unsigned bench_seed(size_t size, int writer)
{
    unsigned lg = 0;
    while (((size_t)1 << lg) < size)
        lg++;
    return lg * 17u + (unsigned)writer * 101u + 7u;
}

static inline unsigned char pattern_byte(size_t pos, unsigned seed)
{
    return (unsigned char)((pos * 131u + seed * 7u) % 251u + 1u);
}

void bench_fill(unsigned char *p, size_t len, unsigned seed, size_t off)
{
    for (size_t i = 0; i < len; i++)
        p[i] = pattern_byte(off + i, seed);
}

static char verify_msg[256];

const char *bench_verify(const unsigned char *p, size_t len, unsigned seed, size_t off)
{
    for (size_t i = 0; i < len; i++) {
        unsigned char want = pattern_byte(off + i, seed);
        if (p[i] != want) {
            snprintf(verify_msg, sizeof(verify_msg),
                     "byte %zu of %zu is 0x%02x, expected 0x%02x", i, len, p[i], want);
            return verify_msg;
        }
    }
    return NULL;
}

const char *bench_verify_i64(const unsigned char *p, size_t n, int64_t want, const char *what)
{
    for (size_t i = 0; i < n; i++) {
        int64_t v;
        memcpy(&v, p + i * sizeof(v), sizeof(v));
        if (v != want) {
            snprintf(verify_msg, sizeof(verify_msg), "%s element %zu of %zu is %lld, expected %lld",
                     what, i, n, (long long)v, (long long)want);
            return verify_msg;
        }
    }
    return NULL;
}

/* ------------------------------------------------------------------ options */

static void usage(const bench_spec_t *spec, const char *prog)
{
    printf("usage: %s [options]   (%s, librma bench)\n", prog, spec->title);
    printf("  -w create|allocate|dynamic  window flavor (default allocate)\n");
    printf("  -s SYNC      synchronization, one of:");
    for (int s = 0; s < BENCH_NSYNC; s++)
        if (spec->syncs & BENCH_SYNC_BIT(s))
            printf(" %s", sync_opt[s]);
    printf(" (default %s)\n", sync_opt[spec->def_sync]);
    printf("  -m [MIN:]MAX sizes in bytes, powers of two, K/M suffixes (default %zu:%zu)\n",
           spec->min_size, spec->max_size);
    printf("  -i N[:L]     timed iterations for sizes <= %d B [and above] (default %d:%d)\n",
           BENCH_LARGE_SIZE, spec->iters, spec->iters_large);
    printf("  -x N[:L]     warm-up iterations, skipped (default %d:%d)\n", spec->warmup,
           spec->warmup_large);
    printf("  -W N         operations per epoch or flush (default %d; latency measures give\n"
           "               the time per operation)\n",
           spec->ops_per_sync);
    if (spec->fan_out)
        printf("  -t one|all   target rank 1 only, or every rank incl. itself (default one)\n");
    printf("  -M           window memory of create/dynamic from MPI_Alloc_mem (default malloc)\n");
    if (spec->distinct)
        printf("  -D           operation j of an epoch moves its own slot j of the window (default:\n"
               "               every operation the same bytes, as OSU)\n");
    printf("  -B           busy target: while the origin is timed, the target computes without\n"
           "               any MPI call (passive synchronizations only)\n");
    printf("  -L           list the flavors and syncs offered, then exit\n");
}

static void list_offered(const bench_spec_t *spec)
{
    printf("flavors:");
    for (int f = 0; f < BENCH_NFLAVOR; f++)
        printf(" %s", flavor_opt[f]);
    printf("\nsyncs:");
    for (int s = 0; s < BENCH_NSYNC; s++)
        if (spec->syncs & BENCH_SYNC_BIT(s))
            printf(" %s", sync_opt[s]);
    printf("\ntargets: %s\n", spec->fan_out ? "one all" : "one");
}

static int parse_size(const char *s, size_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s)
        return -1;
    if (*end == 'k' || *end == 'K')
        v <<= 10, end++;
    else if (*end == 'm' || *end == 'M')
        v <<= 20, end++;
    if (*end != '\0' || v == 0 || v > ((size_t)1 << 30))
        return -1;
    *out = (size_t)v;
    return 0;
}

int bench_parse_range(const char *arg, size_t *min, size_t *max)
{
    char buf[64];
    if (strlen(arg) >= sizeof(buf))
        return -1;
    strcpy(buf, arg);
    char *colon = strchr(buf, ':');
    if (!colon)
        return parse_size(buf, max);
    *colon = '\0';
    if (buf[0] && parse_size(buf, min))
        return -1;
    if (colon[1] && parse_size(colon + 1, max))
        return -1;
    return 0;
}

/* Parses "N" or "N:L" into small and large counts (L < 0 when absent). */
static int parse_counts(const char *arg, int minval, int *small, int *large)
{
    char *end;
    long n = strtol(arg, &end, 10);
    long l = -1;
    if (end == arg || n < minval || n > 100000000)
        return -1;
    if (*end == ':') {
        const char *p = end + 1;
        l = strtol(p, &end, 10);
        if (end == p || l < minval || l > 100000000)
            return -1;
    }
    if (*end != '\0')
        return -1;
    *small = (int)n;
    *large = (int)l;
    return 0;
}

static int lookup(const char *arg, const char *const *names, int n)
{
    for (int i = 0; i < n; i++)
        if (strcmp(arg, names[i]) == 0)
            return i;
    return -1;
}

typedef struct opts {
    int iters, iters_large, warmup, warmup_large; /* -1: default */
    int list, help;
    int busy; /* -B */
    const char *error;
} opts_t;

static void parse_options(bench_t *b, opts_t *o, int argc, char **argv)
{
    const bench_spec_t *spec = b->spec;
    int c;
    opterr = 0;
    while ((c = getopt(argc, argv, "w:s:m:i:x:W:t:MDBLh")) != -1) {
        switch (c) {
        case 'w': {
            int f = lookup(optarg, flavor_opt, BENCH_NFLAVOR);
            if (f < 0)
                o->error = "-w takes create, allocate or dynamic";
            else
                b->flavor = (enum bench_flavor)f;
            break;
        }
        case 's': {
            int s = lookup(optarg, sync_opt, BENCH_NSYNC);
            if (s < 0 || !(spec->syncs & BENCH_SYNC_BIT(s)))
                o->error = "-s names a synchronization this measure does not offer (see -h)";
            else
                b->sync = (enum bench_sync)s;
            break;
        }
        case 'm':
            if (bench_parse_range(optarg, &b->min_size, &b->max_size))
                o->error = "-m takes [MIN:]MAX in bytes (1 B .. 1 GiB)";
            break;
        case 'i':
            if (parse_counts(optarg, 1, &o->iters, &o->iters_large))
                o->error = "-i takes N or N:L, each at least 1";
            break;
        case 'x':
            if (parse_counts(optarg, 0, &o->warmup, &o->warmup_large))
                o->error = "-x takes N or N:L, each at least 0";
            break;
        case 'W': {
            int w, unused;
            if (parse_counts(optarg, 1, &w, &unused) || unused >= 0)
                o->error = "-W takes one count";
            else
                b->ops_per_sync = w;
            break;
        }
        case 't':
            if (!spec->fan_out || (strcmp(optarg, "one") && strcmp(optarg, "all")))
                o->error = "-t takes one or all, and only for put_rate";
            else
                b->all_targets = strcmp(optarg, "all") == 0;
            break;
        case 'M':
            b->alloc_mem = 1;
            break;
        case 'D':
            if (!spec->distinct)
                o->error = "-D is offered only by put_bw and get_bw";
            b->slotted = 1;
            break;
        case 'B':
            o->busy = 1;
            break;
        case 'L':
            o->list = 1;
            break;
        case 'h':
            o->help = 1;
            break;
        default:
            o->error = "unknown option or missing argument (see -h)";
            break;
        }
    }
    if (optind < argc)
        o->error = "unexpected argument (see -h)";
    if (!o->error && b->min_size > b->max_size)
        o->error = "-m: MIN is larger than MAX";
    if (!o->error && o->busy && (b->sync == BENCH_SYNC_FENCE || b->sync == BENCH_SYNC_PSCW))
        o->error = "-B needs a passive synchronization (flush, flush_local, lock, lock_all)";
}

/* ------------------------------------------------------------------ window */

static void *alloc_mem(const bench_t *b, size_t bytes)
{
    void *p = NULL;
    if (b->alloc_mem) {
        MPI_Alloc_mem((MPI_Aint)bytes, MPI_INFO_NULL, &p);
    } else if (posix_memalign(&p, 4096, bytes)) {
        p = NULL;
    }
    if (!p) {
        fprintf(stderr, "[%d] cannot allocate %zu bytes\n", b->rank, bytes);
        MPI_Abort(b->comm, 1);
    }
    return p;
}

static void free_mem(const bench_t *b, void *p)
{
    if (b->alloc_mem)
        MPI_Free_mem(p);
    else
        free(p);
}

static void window_create(bench_t *b)
{
    size_t bytes = b->win_bytes;
    for (int r = 0; r < b->nprocs; r++)
        b->base_disp[r] = 0;
    switch (b->flavor) {
    case BENCH_WIN_CREATE:
        b->win_mem = alloc_mem(b, bytes);
        MPI_Win_create(b->win_mem, (MPI_Aint)bytes, 1, MPI_INFO_NULL, b->comm, &b->win);
        break;
    case BENCH_WIN_ALLOCATE:
        MPI_Win_allocate((MPI_Aint)bytes, 1, MPI_INFO_NULL, b->comm, &b->win_mem, &b->win);
        break;
    case BENCH_WIN_DYNAMIC: {
        MPI_Aint addr;
        b->win_mem = alloc_mem(b, bytes);
        MPI_Win_create_dynamic(MPI_INFO_NULL, b->comm, &b->win);
        MPI_Win_attach(b->win, b->win_mem, (MPI_Aint)bytes);
        MPI_Get_address(b->win_mem, &addr);
        MPI_Allgather(&addr, 1, MPI_AINT, b->base_disp, 1, MPI_AINT, b->comm);
        break;
    }
    default:
        break;
    }
}

static void window_free(bench_t *b)
{
    if (b->flavor == BENCH_WIN_DYNAMIC)
        MPI_Win_detach(b->win, b->win_mem);
    MPI_Win_free(&b->win);
    if (b->flavor != BENCH_WIN_ALLOCATE)
        free_mem(b, b->win_mem);
}

/* ------------------------------------------------------------------ roles */

static void setup_roles(bench_t *b)
{
    int r = b->rank;
    b->ntargets = b->norigins = 0;
    if (b->spec->bidir) {
        if (r < 2) {
            b->is_origin = b->is_target = 1;
            b->targets[b->ntargets++] = 1 - r;
            b->origins[b->norigins++] = 1 - r;
        }
    } else {
        /* -t all: rank 0 targets every rank, itself included (fine-grain codes put to
         * their own rank too); otherwise rank 1 only. */
        if (r == 0) {
            b->is_origin = 1;
            if (b->all_targets)
                for (int t = 0; t < b->nprocs; t++)
                    b->targets[b->ntargets++] = t;
            else
                b->targets[b->ntargets++] = 1;
        }
        if (r == 1 || b->all_targets) {
            b->is_target = 1;
            b->origins[b->norigins++] = 0;
        }
    }

    MPI_Group world;
    MPI_Comm_group(b->comm, &world);
    MPI_Group_incl(world, b->ntargets, b->targets, &b->target_group);
    MPI_Group_incl(world, b->norigins, b->origins, &b->origin_group);
    MPI_Group_free(&world);
}

/* ------------------------------------------------------------------ epochs */

static void do_ops(bench_t *b, size_t size, long *k)
{
    for (int j = 0; j < b->ops_per_sync; j++)
        b->spec->op(b, size, j, (*k)++);
}

static void run_epochs(bench_t *b, size_t size, int n, long *k)
{
    MPI_Win win = b->win;
    int nt = b->ntargets;
    for (int i = 0; i < n; i++) {
        switch (b->sync) {
        case BENCH_SYNC_FLUSH:
            if (b->is_origin) {
                do_ops(b, size, k);
                if (nt > 1)
                    MPI_Win_flush_all(win);
                else
                    MPI_Win_flush(b->targets[0], win);
            }
            break;
        case BENCH_SYNC_FLUSH_LOCAL:
            if (b->is_origin) {
                do_ops(b, size, k);
                if (nt > 1)
                    MPI_Win_flush_local_all(win);
                else
                    MPI_Win_flush_local(b->targets[0], win);
            }
            break;
        case BENCH_SYNC_LOCK:
            if (b->is_origin) {
                for (int t = 0; t < nt; t++)
                    MPI_Win_lock(MPI_LOCK_SHARED, b->targets[t], 0, win);
                do_ops(b, size, k);
                for (int t = 0; t < nt; t++)
                    MPI_Win_unlock(b->targets[t], win);
            }
            break;
        case BENCH_SYNC_LOCK_ALL:
            if (b->is_origin) {
                MPI_Win_lock_all(0, win);
                do_ops(b, size, k);
                MPI_Win_unlock_all(win);
            }
            break;
        case BENCH_SYNC_FENCE:
            if (b->is_origin)
                do_ops(b, size, k);
            MPI_Win_fence(0, win);
            break;
        case BENCH_SYNC_PSCW:
            if (b->is_target)
                MPI_Win_post(b->origin_group, 0, win);
            if (b->is_origin) {
                MPI_Win_start(b->target_group, 0, win);
                do_ops(b, size, k);
                MPI_Win_complete(win);
            }
            if (b->is_target)
                MPI_Win_wait(win);
            break;
        default:
            break;
        }
    }
}

/* Opens what stays open across all iterations of a size (passive lock, first fence). */
static void open_size(bench_t *b)
{
    int flushing = b->sync == BENCH_SYNC_FLUSH || b->sync == BENCH_SYNC_FLUSH_LOCAL;
    if (flushing && b->is_origin) {
        if (b->ntargets > 1)
            MPI_Win_lock_all(0, b->win);
        else
            MPI_Win_lock(MPI_LOCK_SHARED, b->targets[0], 0, b->win);
    } else if (b->sync == BENCH_SYNC_FENCE) {
        MPI_Win_fence(MPI_MODE_NOPRECEDE, b->win);
    }
}

static void close_size(bench_t *b)
{
    int flushing = b->sync == BENCH_SYNC_FLUSH || b->sync == BENCH_SYNC_FLUSH_LOCAL;
    if (flushing && b->is_origin) {
        if (b->ntargets > 1)
            MPI_Win_unlock_all(b->win);
        else
            MPI_Win_unlock(b->targets[0], b->win);
    } else if (b->sync == BENCH_SYNC_FENCE) {
        MPI_Win_fence(MPI_MODE_NOSUCCEED, b->win);
    }
}

static int pick(int opt, int def)
{
    return opt >= 0 ? opt : def;
}

static void run_size(bench_t *b, const opts_t *o, size_t size)
{
    const bench_spec_t *spec = b->spec;
    int large = size > BENCH_LARGE_SIZE;
    int iters, warmup;
    if (!large) {
        iters = pick(o->iters, spec->iters);
        warmup = pick(o->warmup, spec->warmup);
    } else {
        /* -i N alone caps the large count at N; -i N:L sets it. */
        int di = o->iters >= 0 && o->iters < spec->iters_large ? o->iters : spec->iters_large;
        int dw = o->warmup >= 0 && o->warmup < spec->warmup_large ? o->warmup
                                                                  : spec->warmup_large;
        iters = pick(o->iters_large, di);
        warmup = pick(o->warmup_large, dw);
    }

    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, b->rank, 0, b->win);
    spec->reset(b, size);
    MPI_Win_unlock(b->rank, b->win);
    MPI_Barrier(b->comm);

    long k = 0;
    open_size(b);
    double tw = MPI_Wtime();
    run_epochs(b, size, warmup, &k);
    if (o->busy) {
        /* the origin's estimate of the timed part, from the warm-up; the target computes
         * for twice that (and 50 ms at least) without entering MPI */
        double est = warmup > 0 ? (MPI_Wtime() - tw) * iters / warmup : 1.0;
        MPI_Bcast(&est, 1, MPI_DOUBLE, 0, b->comm);
        if (b->is_target && !b->is_origin)
            bench_compute(2 * est + 0.05);
    } else {
        MPI_Barrier(b->comm);
    }
    double t0 = MPI_Wtime();
    run_epochs(b, size, iters, &k);
    double t1 = MPI_Wtime();
    close_size(b);
    MPI_Barrier(b->comm);

    long nops = (long)(warmup + iters) * b->ops_per_sync;
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, b->rank, 0, b->win);
    const char *bad = spec->check(b, size, nops);
    MPI_Win_unlock(b->rank, b->win);
    int failed = bad != NULL, any_failed = 0;
    if (bad) {
        fprintf(stderr, "VERIFY FAILED: %s, rank %d, size %zu, %s, %s: %s\n", spec->title,
                b->rank, size, flavor_opt[b->flavor], sync_opt[b->sync], bad);
        fflush(stderr);
    }
    /* Nobody prints a number for a size whose data did not arrive. */
    MPI_Allreduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, b->comm);
    if (any_failed)
        MPI_Abort(b->comm, 3);

    if (b->rank == 0) {
        double t = t1 - t0;
        double ops = (double)iters * b->ops_per_sync;
        if (t <= 0)
            t = 1e-9;
        switch (spec->metric) {
        case BENCH_LATENCY:
            printf("%-10zu%20.3f\n", size, t * 1e6 / ops);
            break;
        case BENCH_BANDWIDTH:
            printf("%-10zu%20.2f\n", size, (double)size * ops * (spec->bidir ? 2 : 1) / t / 1e6);
            break;
        case BENCH_RATE:
            printf("%-10zu%20.0f\n", size, ops / t);
            break;
        }
        fflush(stdout);
    }
}

/* ------------------------------------------------------------------ computation */

double bench_compute(double seconds)
{
    volatile double x = 1.0;
    double t0 = MPI_Wtime(); /* MPI_Wtime is a clock read, not communication */

    while (MPI_Wtime() - t0 < seconds)
        for (int i = 0; i < 1000; i++)
            x = x * 1.0000001 + 1e-9;
    return MPI_Wtime() - t0;
}

/* ------------------------------------------------------------------ main */

static void print_header(const bench_t *b, int busy)
{
    static const char *const column[] = {"Latency (us)", "Bandwidth (MB/s)", "Messages/s"};
    printf("# OSU %s (librma bench)\n", b->spec->title);
    printf("# Window creation: %s%s\n", flavor_name[b->flavor],
           b->alloc_mem && b->flavor != BENCH_WIN_ALLOCATE ? " on MPI_Alloc_mem memory" : "");
    printf("# Synchronization: %s\n", sync_name[b->sync]);
    if (b->ops_per_sync > 1)
        printf("# Operations per epoch: %d\n", b->ops_per_sync);
    if (b->spec->fan_out)
        printf("# Targets: %s (%d)\n", b->all_targets ? "all" : "one", b->ntargets);
    if (busy)
        printf("# Target: busy (computes without MPI calls while the origin is timed)\n");
    if (b->slotted)
        printf("# Each operation of an epoch to bytes of its own\n");
    printf("%-10s%20s\n", "# Size", column[b->spec->metric]);
    fflush(stdout);
}

int bench_main(const bench_spec_t *spec, int argc, char **argv)
{
    bench_t b;
    opts_t o = {.iters = -1, .iters_large = -1, .warmup = -1, .warmup_large = -1};
    memset(&b, 0, sizeof(b));
    b.spec = spec;
    b.flavor = BENCH_WIN_ALLOCATE;
    b.sync = spec->def_sync;
    b.min_size = spec->min_size;
    b.max_size = spec->max_size;
    b.ops_per_sync = spec->ops_per_sync > 0 ? spec->ops_per_sync : 1;

    parse_options(&b, &o, argc, argv);
    if (spec->single_elem)
        b.min_size = b.max_size = spec->elem_size;
    if (o.help || o.list) {
        if (o.help)
            usage(spec, argv[0]);
        else
            list_offered(spec);
        return 0;
    }

    MPI_Init(&argc, &argv);
    b.comm = MPI_COMM_WORLD;
    MPI_Comm_rank(b.comm, &b.rank);
    MPI_Comm_size(b.comm, &b.nprocs);
    if (!o.error && b.nprocs < 2)
        o.error = "needs at least 2 ranks";
    if (!o.error && b.nprocs > MAX_PEERS)
        o.error = "supports at most 64 ranks";
    if (!o.error && b.max_size < spec->elem_size)
        o.error = "-m: MAX is smaller than one element of this measure";
    if (o.error) {
        if (b.rank == 0)
            fprintf(stderr, "%s: %s\n", argv[0], o.error);
        MPI_Finalize();
        return 2;
    }

    setup_roles(&b);
    size_t slots = spec->slotted || b.slotted ? (size_t)b.ops_per_sync : 1;
    b.buf_bytes = b.max_size * slots * (size_t)(spec->win_scale > 1 ? spec->win_scale : 1);
    /* Whole pages: MPICH 4.0.2 ch4 MPI_Win_allocate misplaces the target of windows whose
     * size is not a multiple of 16 bytes (seen with 1, 8 and 63 B: a get reads the origin's
     * own window), which verification catches; page-sized windows avoid that. */
    b.win_bytes = (b.buf_bytes + 4095) & ~(size_t)4095;
    b.base_disp = malloc(sizeof(MPI_Aint) * (size_t)b.nprocs);
    if (posix_memalign((void **)&b.sbuf, 4096, b.buf_bytes) ||
        posix_memalign((void **)&b.rbuf, 4096, b.buf_bytes) ||
        posix_memalign((void **)&b.cbuf, 4096, b.buf_bytes) || !b.base_disp) {
        fprintf(stderr, "[%d] cannot allocate buffers of %zu bytes\n", b.rank, b.buf_bytes);
        MPI_Abort(b.comm, 1);
    }
    window_create(&b);

    if (b.rank == 0)
        print_header(&b, o.busy);
    for (size_t size = b.min_size; size <= b.max_size; size *= 2)
        if (size >= spec->elem_size)
            run_size(&b, &o, size);

    window_free(&b);
    MPI_Group_free(&b.target_group);
    MPI_Group_free(&b.origin_group);
    free(b.sbuf);
    free(b.rbuf);
    free(b.cbuf);
    free(b.base_disp);
    MPI_Finalize();
    return 0;
}
