/*
 * rmatest.h - tiny check harness for the MPI tests: every CHECK prints what it checked on
 * failure (and counts it); rt_finish() prints the rank's tally and returns the exit code.
 */
#ifndef RMATEST_H
#define RMATEST_H

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static _Atomic int rt_checks, rt_fails; /* threads of a test check too */
static int rt_rank = -1;

#define CHECK(cond, ...)                                                                      \
    do {                                                                                      \
        rt_checks++;                                                                          \
        if (!(cond)) {                                                                        \
            rt_fails++;                                                                       \
            fprintf(stderr, "[%d] FAIL %s:%d: %s: ", rt_rank, __FILE__, __LINE__, #cond);     \
            fprintf(stderr, __VA_ARGS__);                                                     \
            fprintf(stderr, "\n");                                                            \
        }                                                                                     \
    } while (0)

/* An MPI call that must succeed. */
#define MPI_OK(call)                                                                          \
    do {                                                                                      \
        int rt_rc_ = (call);                                                                  \
        CHECK(rt_rc_ == MPI_SUCCESS, "%s returned %d", #call, rt_rc_);                        \
    } while (0)

/* An MPI call that must fail with error class `cls`. */
#define MPI_ERRCLASS(call, cls)                                                               \
    do {                                                                                      \
        int rt_rc_ = (call), rt_cls_ = -1;                                                    \
        if (rt_rc_ != MPI_SUCCESS)                                                            \
            MPI_Error_class(rt_rc_, &rt_cls_);                                                \
        CHECK(rt_cls_ == (cls), "%s gave class %d, expected %s (%d)", #call, rt_cls_, #cls,   \
              cls);                                                                           \
    } while (0)

static inline void rt_init(int *argc, char ***argv)
{
    MPI_Init(argc, argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rt_rank);
}

/* rt_init asking for MPI_THREAD_MULTIPLE. 0 when the library does not provide it: then MPI
 * is finalized, rank 0 has said that test `name` is skipped, and the test exits 0. */
static inline int rt_init_multiple(int *argc, char ***argv, const char *name)
{
    int provided;

    MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rt_rank);
    if (provided >= MPI_THREAD_MULTIPLE)
        return 1;
    if (rt_rank == 0)
        printf("%s: MPI_THREAD_MULTIPLE not provided (%d), skipped\n", name, provided);
    MPI_Finalize();
    return 0;
}

/*
 * Topology. test/runtests runs every test in several topologies and tells it which one in
 * RMA_TEST_TOPOLOGY (node, netmod-tcp, netmod, twonode; "node" when unset). Locality is what
 * librma uses too: the ranks that MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) puts together.
 */
static inline const char *rt_topology(void)
{
    const char *t = getenv("RMA_TEST_TOPOLOGY");
    return t != NULL && *t != '\0' ? t : "node";
}

/* The ranks of MPI_COMM_WORLD on this node. Collective on the first call. */
static inline MPI_Comm rt_node_comm(void)
{
    static MPI_Comm node = MPI_COMM_NULL;
    if (node == MPI_COMM_NULL)
        MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    return node;
}

/* 1 when MPI_COMM_WORLD spans several nodes: there MPI_Win_allocate_shared on it is erroneous
 * (the standard asks for a communicator whose processes can share memory), so the tests
 * create shared windows on rt_node_comm() or skip that flavor. Collective on the first call. */
static inline int rt_world_spans_nodes(void)
{
    int n, world;
    MPI_Comm_size(rt_node_comm(), &n);
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    return n != world; /* the same answer on every rank */
}

/* 1 when world rank `r` is on this process's node. Collective on the first call. */
static inline int rt_same_node(int r)
{
    MPI_Group wg, ng;
    int nr = MPI_UNDEFINED;
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    MPI_Comm_group(rt_node_comm(), &ng);
    MPI_Group_translate_ranks(wg, 1, &r, ng, &nr);
    MPI_Group_free(&wg);
    MPI_Group_free(&ng);
    return nr != MPI_UNDEFINED;
}

/* 1 when librma is asked to reach every peer through the network (RMA_NETMOD_ONLY=1). */
static inline int rt_netmod_only(void)
{
    const char *e = getenv("RMA_NETMOD_ONLY");
    return e != NULL && atoi(e) != 0;
}

#ifdef RMA_EXT_H
/* 1 when world rank r's librma moves its create and attach memory onto shared memory once
 * traffic pays for it (RMAX_Memory_moves); a rank that cannot says why. With RT_NO_MOVES
 * set, no rank may move, and the reason must contain its value. Collective. */
static inline int rt_moves(int r)
{
    const char *why = NULL, *want = getenv("RT_NO_MOVES");
    int can = 0, n, *all, r_can;
    MPI_OK(RMAX_Memory_moves(&can, &why));
    CHECK(want == NULL || (!can && why != NULL && strstr(why, want) != NULL),
          "RT_NO_MOVES=%s: moves %s (%s)", want, can ? "allowed" : "refused",
          why != NULL ? why : "no reason");
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    all = malloc((size_t)n * sizeof(int));
    MPI_Allgather(&can, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD);
    r_can = all[r];
    free(all);
    if (!can)
        printf("[%d] librma moves no memory here: %s\n", rt_rank,
               why != NULL ? why : "(no reason given)");
    return r_can;
}

/* Gets of one long at disp from target's window (len bytes of it asked about) until
 * RMAX_Win_path says its owner moved it (direct; netmap for an off-node owner), for at
 * most secs seconds: 1 when it was. */
static inline int rt_drive_gets(MPI_Win win, int target, MPI_Aint disp, MPI_Aint len, double secs)
{
    double t0 = MPI_Wtime();
    int path = RMAX_PATH_CMA;
    long v;

    MPI_OK(MPI_Win_lock(MPI_LOCK_SHARED, target, 0, win));
    for (int i = 0; path != RMAX_PATH_DIRECT && path != RMAX_PATH_NETMAP && MPI_Wtime() - t0 < secs;
         i++) {
        MPI_OK(MPI_Get(&v, 1, MPI_LONG, target, disp, 1, MPI_LONG, win));
        MPI_OK(MPI_Win_flush(target, win));
        if (i % 16 == 15)
            MPI_OK(RMAX_Win_path(win, target, disp, len, &path));
    }
    MPI_OK(MPI_Win_unlock(target, win));
    return path == RMAX_PATH_DIRECT || path == RMAX_PATH_NETMAP;
}
#endif

/* The mapping of /proc/self/maps holding addr: its permissions, inode and (range not NULL)
 * its [start, end); 0 if none. rt_mapping_of: without the range. */
static inline int rt_mapping_at(const void *addr, char perms[8], unsigned long *ino,
                                unsigned long range[2])
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512];
    int found = 0;

    while (f != NULL && !found && fgets(line, sizeof(line), f)) {
        unsigned long s, e, off, i;
        char p[8];
        if (sscanf(line, "%lx-%lx %7s %lx %*s %lu", &s, &e, p, &off, &i) == 5 &&
            (unsigned long)addr >= s && (unsigned long)addr < e) {
            strcpy(perms, p);
            *ino = i;
            if (range != NULL)
                range[0] = s, range[1] = e;
            found = 1;
        }
    }
    if (f != NULL)
        fclose(f);
    return found;
}

static inline int rt_mapping_of(const void *addr, char perms[8], unsigned long *ino)
{
    return rt_mapping_at(addr, perms, ino, NULL);
}

/* qsort comparison of long longs. */
static inline int rt_cmp_ll(const void *a, const void *b)
{
    long long x = *(const long long *)a, y = *(const long long *)b;
    return x < y ? -1 : x > y;
}

/* All ranks' n values gathered at rank 0 of MPI_COMM_WORLD must be exactly
 * {0, ..., nprocs*n - 1}: fetched tickets were neither lost nor duplicated. */
static inline void rt_check_permutation(long long *mine, int n, const char *what)
{
    int me, np;
    long long *all;

    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    all = me == 0 ? malloc(sizeof(long long) * n * np) : NULL;
    MPI_Gather(mine, n, MPI_LONG_LONG, all, n, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
    if (me == 0) {
        int bad = 0;
        qsort(all, (size_t)n * np, sizeof(long long), rt_cmp_ll);
        for (long long i = 0; i < (long long)n * np; i++)
            if (all[i] != i && bad++ < 3)
                CHECK(0, "%s: sorted fetched value %lld is %lld", what, i, all[i]);
        CHECK(bad == 0, "%s: fetched values are not a permutation (%d wrong)", what, bad);
        free(all);
    }
}

/* A window of `bytes` zeroed bytes in each flavor, for tests that run every flavor. A
 * dynamic window has the memory attached on rank 0 only; `base` is then rank 0's address
 * (displacements count bytes from address 0), else 0. */
enum { RT_CREATE, RT_ALLOCATE, RT_SHARED, RT_DYNAMIC, RT_NFLAVORS };
static const char *const rt_flavor_name[RT_NFLAVORS] = {"create", "allocate", "shared",
                                                        "dynamic"};

typedef struct rt_win {
    MPI_Win win;
    void *mem;
    MPI_Aint base;
    int flavor;
} rt_win_t;

/* The integer in environment variable name; def when it is not set. */
static inline int rt_env_int(const char *name, int def)
{
    const char *v = getenv(name);

    return v != NULL ? atoi(v) : def;
}

/* 1 (printed once) when the flavor cannot run here: shared windows need one node. */
static inline int rt_flavor_skipped(int flavor)
{
    if (flavor != RT_SHARED || !rt_world_spans_nodes())
        return 0;
    if (rt_rank == 0)
        printf("shared flavor skipped: MPI_COMM_WORLD spans nodes\n");
    return 1;
}

/* run(flavor) for every window flavor that can run here. */
static inline void rt_each_flavor(void (*run)(int flavor))
{
    for (int f = 0; f < RT_NFLAVORS; f++)
        if (!rt_flavor_skipped(f))
            run(f);
}

static inline void rt_win_open(rt_win_t *w, int flavor, MPI_Aint bytes, int disp_unit)
{
    w->flavor = flavor;
    w->base = 0;
    switch (flavor) {
    case RT_CREATE:
        w->mem = calloc(1, bytes);
        MPI_OK(MPI_Win_create(w->mem, bytes, disp_unit, MPI_INFO_NULL, MPI_COMM_WORLD, &w->win));
        break;
    case RT_ALLOCATE:
        MPI_OK(MPI_Win_allocate(bytes, disp_unit, MPI_INFO_NULL, MPI_COMM_WORLD, &w->mem,
                                &w->win));
        memset(w->mem, 0, bytes);
        break;
    case RT_SHARED:
        MPI_OK(MPI_Win_allocate_shared(bytes, disp_unit, MPI_INFO_NULL, MPI_COMM_WORLD, &w->mem,
                                       &w->win));
        memset(w->mem, 0, bytes);
        break;
    default:
        w->mem = calloc(1, bytes);
        MPI_OK(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &w->win));
        if (rt_rank == 0)
            MPI_OK(MPI_Win_attach(w->win, w->mem, bytes));
        MPI_Get_address(w->mem, &w->base);
        break;
    }
    /* every rank's memory is zero before any peer's first access: a bcast alone would let
     * rank 0 put into a rank still clearing its allocated memory (random_epochs lost its
     * first puts so) */
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Bcast(&w->base, 1, MPI_AINT, 0, MPI_COMM_WORLD);
}

static inline void rt_win_close(rt_win_t *w)
{
    if (w->flavor == RT_DYNAMIC && rt_rank == 0)
        MPI_OK(MPI_Win_detach(w->win, w->mem));
    MPI_OK(MPI_Win_free(&w->win));
    if (w->flavor == RT_CREATE || w->flavor == RT_DYNAMIC)
        free(w->mem);
}

/* Sums failures over all ranks; rank 0 prints the summary. Returns the exit code. */
static inline int rt_finish(const char *name)
{
    int fails = 0, checks = 0;

    MPI_Allreduce(&rt_fails, &fails, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&rt_checks, &checks, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rt_rank == 0)
        printf("%s: %d checks, %d failed\n", name, checks, fails);
    MPI_Finalize();
    return fails ? 1 : 0;
}

#endif
