/*
 * datatypes - MPI_Put and MPI_Get with derived datatypes on both sides (contiguous, vector,
 * hvector, indexed, hindexed, indexed_block, hindexed_block, struct, subarray, darray,
 * resized, dup and nested types) for create, allocate and dynamic windows under fence and
 * lock. The expected result comes from MPICH's own datatype engine: PMPI_Sendrecv of the
 * same (buffer, count, type) pairs to self into a copy of the target buffer. Whole regions
 * are compared, so bytes outside the type map must stay untouched. A last case moves a
 * vector of 1<<20 elements and must take well under a second.
 */
#include "rmatest.h"

#include <stdint.h>

#define REG 16384  /* bytes of the put region A and of the get region B */
#define ODISP 64   /* origin buffers start this far in (room for negative lower bounds) */
#define MAXCASES 40

enum { F_CREATE, F_ALLOCATE, F_DYNAMIC, NFLAVORS };
static const char *fname[] = {"create", "allocate", "dynamic"};

typedef struct {
    const char *name;
    MPI_Datatype ot, tt;
    int oc, tc;
    MPI_Aint disp; /* bytes from the start of the target region */
} tcase_t;

static tcase_t cases[MAXCASES];
static int ncases;
static MPI_Datatype to_free[MAXCASES * 4];
static int nfree;
static int rank, nprocs;

static uint8_t pat_a(int r, int i) { return (uint8_t)(i * 131 + r * 17 + 5); }
static uint8_t pat_b(int r, int i) { return (uint8_t)(i * 29 + r * 71 + 11); }
static uint8_t pat_o(int r, int i) { return (uint8_t)(i * 7 + r * 53 + 1); }
#define FILL 0xee

static MPI_Datatype keep(MPI_Datatype t)
{
    MPI_Type_commit(&t);
    to_free[nfree++] = t;
    return t;
}

/* Bytes [lo, hi) that `count` elements of `t` touch, relative to the buffer address. */
static void span_of(MPI_Datatype t, int count, MPI_Aint *lo, MPI_Aint *hi)
{
    MPI_Aint tlb, text, lb, ext;

    MPI_Type_get_true_extent(t, &tlb, &text);
    MPI_Type_get_extent(t, &lb, &ext);
    *lo = tlb + (ext < 0 ? (count - 1) * ext : 0);
    *hi = tlb + text + (ext > 0 ? (count - 1) * ext : 0);
}

static void add(const char *name, MPI_Datatype ot, int oc, MPI_Datatype tt, int tc,
                MPI_Aint disp)
{
    int os, ts;
    MPI_Aint lo, hi;

    MPI_Type_size(ot, &os);
    MPI_Type_size(tt, &ts);
    if ((long)os * oc != (long)ts * tc || ncases == MAXCASES) {
        fprintf(stderr, "test setup: case %s has mismatched sizes\n", name);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    span_of(tt, tc, &lo, &hi);
    if (disp + lo < 0 || disp + hi > REG) {
        fprintf(stderr, "test setup: case %s target span [%ld,%ld) too big\n", name,
                (long)(disp + lo), (long)(disp + hi));
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    span_of(ot, oc, &lo, &hi);
    if (ODISP + lo < 0 || ODISP + hi > REG) {
        fprintf(stderr, "test setup: case %s origin span too big\n", name);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    cases[ncases++] = (tcase_t){name, ot, tt, oc, tc, disp};
}

static void build_cases(void)
{
    MPI_Datatype t, t2, t3;

    add("int-int", MPI_INT, 100, MPI_INT, 100, 12);
    add("contig", keep((MPI_Type_contiguous(17, MPI_INT, &t), t)), 3, MPI_INT, 51, 4);
    add("int-contig", MPI_INT, 51, keep((MPI_Type_contiguous(17, MPI_INT, &t), t)), 3, 100);
    t = keep((MPI_Type_vector(5, 3, 7, MPI_INT, &t), t));
    add("vector-vector", t, 2, t, 2, 8);
    add("int-vector", MPI_INT, 30, t, 2, 0);
    add("vector-int", t, 2, MPI_INT, 30, 36);
    t = keep((MPI_Type_create_hvector(4, 2, 40, MPI_DOUBLE, &t), t));
    add("hvector", t, 3, t, 3, 16);
    add("double-hvector", MPI_DOUBLE, 24, t, 3, 8);
    {
        int bl[3] = {1, 3, 2}, dp[3] = {0, 5, 12};
        t = keep((MPI_Type_indexed(3, bl, dp, MPI_INT, &t), t));
        add("indexed", t, 4, t, 4, 20);
        add("indexed-int", t, 4, MPI_INT, 24, 20);
    }
    {
        int bl[3] = {2, 1, 4};
        MPI_Aint dp[3] = {100, 0, 40}; /* not monotonic */
        t = keep((MPI_Type_create_hindexed(3, bl, dp, MPI_SHORT, &t), t));
        add("hindexed", t, 5, t, 5, 2);
        add("short-hindexed", MPI_SHORT, 35, t, 5, 2);
    }
    {
        int dp[4] = {9, 0, 4, 13};
        t = keep((MPI_Type_create_indexed_block(4, 2, dp, MPI_INT, &t), t));
        add("indexed_block", t, 3, t, 3, 0);
    }
    {
        MPI_Aint dp[3] = {0, 64, 24};
        t = keep((MPI_Type_create_hindexed_block(3, 3, dp, MPI_CHAR, &t), t));
        add("hindexed_block", t, 7, t, 7, 1);
        add("char-hindexed_block", MPI_CHAR, 63, t, 7, 3);
    }
    {
        int bl[3] = {1, 1, 3};
        MPI_Aint dp[3] = {0, 8, 16};
        MPI_Datatype ty[3] = {MPI_INT, MPI_DOUBLE, MPI_CHAR};
        t = keep((MPI_Type_create_struct(3, bl, dp, ty, &t), t)); /* extent 24: padding */
        add("struct", t, 5, t, 5, 8);
        t2 = keep((MPI_Type_vector(3, 2, 3, t, &t2), t2));
        add("vector-of-struct", t2, 2, t2, 2, 0);
        add("struct-vector-of-struct", t, 12, t2, 2, 24);
    }
    {
        int sz[3] = {6, 5, 4}, sub[3] = {2, 3, 2}, st[3] = {1, 1, 1};
        t = keep((MPI_Type_create_subarray(3, sz, sub, st, MPI_ORDER_C, MPI_INT, &t), t));
        add("subarray-C", t, 1, t, 1, 0);
        add("int-subarray", MPI_INT, 12, t, 1, 8);
        t = keep((MPI_Type_create_subarray(3, sz, sub, st, MPI_ORDER_FORTRAN, MPI_INT, &t),
                  t));
        add("subarray-F", t, 2, t, 2, 4);
    }
    {
        int gs[2] = {8, 8}, ds[2] = {MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_CYCLIC};
        int da[2] = {MPI_DISTRIBUTE_DFLT_DARG, 2}, ps[2] = {2, 2};
        t = keep((MPI_Type_create_darray(4, 1, 2, gs, ds, da, ps, MPI_ORDER_C, MPI_INT, &t),
                  t));
        add("darray", t, 1, t, 1, 0);
        add("int-darray", MPI_INT, 16, t, 1, 4);
    }
    {
        t = keep((MPI_Type_create_resized(MPI_INT, 0, 12, &t), t));
        add("resized-stride", t, 10, t, 10, 4);
        t2 = keep((MPI_Type_vector(2, 1, 3, MPI_INT, &t2), t2));
        t3 = keep((MPI_Type_create_resized(t2, -8, 20, &t3), t3)); /* negative lower bound */
        add("resized-neglb", t3, 6, t3, 6, 64);
        add("int-resized-neglb", MPI_INT, 12, t3, 6, 32);
        int bl[2] = {2, 1};
        MPI_Aint dp[2] = {-16, 8};
        t = keep((MPI_Type_create_hindexed(2, bl, dp, MPI_INT, &t), t));
        add("hindexed-negdisp", t, 4, t, 4, 32);
        add("int-hindexed-negdisp", MPI_INT, 12, t, 4, 16);
        int bl1 = 3;
        MPI_Aint dp1 = -24; /* every byte below the type's origin: its upper bound is < 0 */
        t = keep((MPI_Type_create_hindexed(1, &bl1, &dp1, MPI_INT, &t), t));
        add("hindexed-all-below", t, 1, t, 1, 64);
        add("int-hindexed-all-below", MPI_INT, 3, t, 1, 40);
    }
    {
        MPI_Type_vector(4, 1, 3, MPI_DOUBLE, &t2); /* not committed, freed by dup chain */
        t = keep((MPI_Type_dup(t2, &t), t));
        MPI_Type_free(&t2);
        add("dup", t, 3, t, 3, 16);
    }
    {
        int sz[2] = {4, 6}, sub[2] = {2, 3}, st[2] = {1, 2};
        t2 = keep((MPI_Type_vector(2, 1, 2, MPI_INT, &t2), t2)); /* extent 12 */
        t = keep((MPI_Type_create_subarray(2, sz, sub, st, MPI_ORDER_C, t2, &t), t));
        add("subarray-of-vector", t, 1, t, 1, 0);
        add("int-subarray-of-vector", MPI_INT, 12, t, 1, 4);
    }
    {
        int bl[2] = {1, 2};
        MPI_Aint dp[2] = {0, 200};
        MPI_Datatype ty[2];
        t2 = keep((MPI_Type_vector(3, 1, 4, MPI_SHORT, &t2), t2));
        int ibl[2] = {2, 1}, idp[2] = {0, 5};
        t3 = keep((MPI_Type_indexed(2, ibl, idp, MPI_SHORT, &t3), t3));
        ty[0] = t2;
        ty[1] = t3;
        t = keep((MPI_Type_create_struct(2, bl, dp, ty, &t), t));
        add("struct-of-vector-indexed", t, 3, t, 3, 10);
        MPI_Datatype h;
        MPI_Aint hdp[2] = {300, 0};
        int hbl[2] = {1, 2};
        h = keep((MPI_Type_create_hindexed(2, hbl, hdp, t, &h), h));
        add("hindexed-of-struct", h, 2, h, 2, 0);
    }
}

static void init_regions(uint8_t *a, uint8_t *b)
{
    for (int i = 0; i < REG; i++) {
        a[i] = pat_a(rank, i);
        if (b != NULL)
            b[i] = pat_b(rank, i);
    }
}

/* Check the put region and the fetched buffer of case `c` against MPICH's own engine. */
static int check_case(const tcase_t *c, const uint8_t *a, const uint8_t *res, int left,
                      int right)
{
    uint8_t *exp = malloc(REG), *org = malloc(REG);
    int bad = 0, first = -1;

    /* put: our region A holds pat_a(rank) overwritten by left's origin through the types */
    for (int i = 0; i < REG; i++) {
        exp[i] = pat_a(rank, i);
        org[i] = pat_o(left, i);
    }
    PMPI_Sendrecv(org + ODISP, c->oc, c->ot, 0, 1, exp + c->disp, c->tc, c->tt, 0, 1,
                  MPI_COMM_SELF, MPI_STATUS_IGNORE);
    for (int i = 0; i < REG; i++)
        if (a[i] != exp[i] && bad++ == 0)
            first = i;
    CHECK(bad == 0, "put %s: %d bytes of the target region differ, first at %d (%d, want %d)",
          c->name, bad, first, first >= 0 ? a[first] : 0, first >= 0 ? exp[first] : 0);
    /* get: res was FILL, then right's region B through the types */
    int gbad = 0;
    for (int i = 0; i < REG; i++) {
        exp[i] = FILL;
        org[i] = pat_b(right, i);
    }
    PMPI_Sendrecv(org + c->disp, c->tc, c->tt, 0, 1, exp + ODISP, c->oc, c->ot, 0, 1,
                  MPI_COMM_SELF, MPI_STATUS_IGNORE);
    first = -1;
    for (int i = 0; i < REG; i++)
        if (res[i] != exp[i] && gbad++ == 0)
            first = i;
    CHECK(gbad == 0, "get %s: %d bytes of the result differ, first at %d (%d, want %d)",
          c->name, gbad, first, first >= 0 ? res[first] : 0, first >= 0 ? exp[first] : 0);
    free(exp);
    free(org);
    return bad + gbad;
}

static void run_flavor(int flavor)
{
    int left = (rank + nprocs - 1) % nprocs, right = (rank + 1) % nprocs;
    uint8_t *mem = NULL, *org = malloc(REG), *res = malloc(REG);
    MPI_Aint *addr = NULL, tbase;
    MPI_Win win;

    switch (flavor) {
    case F_CREATE:
        mem = malloc(2 * REG);
        MPI_OK(MPI_Win_create(mem, 2 * REG, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
        break;
    case F_ALLOCATE:
        MPI_OK(MPI_Win_allocate(2 * REG, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win));
        break;
    case F_DYNAMIC:
        mem = malloc(2 * REG);
        MPI_OK(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
        MPI_OK(MPI_Win_attach(win, mem, 2 * REG));
        addr = malloc(nprocs * sizeof(*addr));
        MPI_Get_address(mem, &tbase);
        MPI_Allgather(&tbase, 1, MPI_AINT, addr, 1, MPI_AINT, MPI_COMM_WORLD);
        break;
    }
    tbase = addr ? addr[right] : 0;
    for (int i = 0; i < REG; i++)
        org[i] = pat_o(rank, i);
    for (int sync = 0; sync < 2; sync++) {
        init_regions(mem, mem + REG);
        memset(res, FILL, REG);
        if (sync == 0)
            MPI_OK(MPI_Win_fence(0, win));
        else
            MPI_Barrier(MPI_COMM_WORLD);
        for (int k = 0; k < ncases; k++) {
            const tcase_t *c = &cases[k];
            if (sync == 1)
                MPI_OK(MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win));
            MPI_OK(MPI_Put(org + ODISP, c->oc, c->ot, right, tbase + c->disp, c->tc, c->tt,
                           win));
            MPI_OK(MPI_Get(res + ODISP, c->oc, c->ot, right, tbase + REG + c->disp, c->tc,
                           c->tt, win));
            if (sync == 0) {
                MPI_OK(MPI_Win_fence(0, win));
            } else {
                MPI_OK(MPI_Win_unlock(right, win));
                MPI_Barrier(MPI_COMM_WORLD);
            }
            if (check_case(c, mem, res, left, right) && rank == 0)
                printf("  %s/%s/%s FAIL\n", fname[flavor], sync ? "lock" : "fence", c->name);
            init_regions(mem, NULL);
            memset(res, FILL, REG);
            if (sync == 0)
                MPI_OK(MPI_Win_fence(k == ncases - 1 ? MPI_MODE_NOSUCCEED : 0, win));
            else
                MPI_Barrier(MPI_COMM_WORLD);
        }
        if (rank == 0)
            printf("%-9s %-6s %d datatype cases checked (put and get)\n", fname[flavor],
                   sync ? "lock" : "fence", ncases);
    }
    if (flavor == F_DYNAMIC)
        MPI_OK(MPI_Win_detach(win, mem));
    MPI_OK(MPI_Win_free(&win));
    if (flavor != F_ALLOCATE)
        free(mem);
    free(addr);
    free(org);
    free(res);
}

/* A vector of 1<<20 one-byte elements (stride 2) each way: must be fast. */
static void large_vector(int create)
{
    const int n = 1 << 20;
    int right = (rank + 1) % nprocs, left = (rank + nprocs - 1) % nprocs;
    uint8_t *mem, *org = malloc(2 * (size_t)n), *res = malloc(2 * (size_t)n);
    MPI_Datatype vec;
    MPI_Win win;
    double t0, tput, tget;
    int bad = 0;

    MPI_Type_vector(n, 1, 2, MPI_CHAR, &vec);
    MPI_Type_commit(&vec);
    uint8_t *own = NULL;
    if (create) {
        own = mem = malloc(2 * (size_t)n);
        MPI_OK(MPI_Win_create(mem, 2 * (MPI_Aint)n, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    } else {
        MPI_OK(MPI_Win_allocate(2 * (MPI_Aint)n, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &mem,
                                &win));
    }
    for (int i = 0; i < 2 * n; i++) {
        mem[i] = (uint8_t)(i % 251);
        org[i] = (uint8_t)(rank + i % 13);
        res[i] = FILL;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    MPI_OK(MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win));
    MPI_OK(MPI_Put(org, n, MPI_CHAR, right, 0, 1, vec, win)); /* contiguous -> vector */
    MPI_OK(MPI_Win_unlock(right, win));
    tput = MPI_Wtime() - t0;
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < 2 * n; i++) {
        uint8_t want = (i & 1) ? (uint8_t)(i % 251) : (uint8_t)(left + (i / 2) % 13);
        if (mem[i] != want && bad++ < 3)
            CHECK(0, "large vector put: mem[%d] = %d, want %d", i, mem[i], want);
    }
    CHECK(bad == 0, "large vector put: %d wrong bytes", bad);
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    MPI_OK(MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win));
    MPI_OK(MPI_Get(res, 1, vec, right, 1, 1, vec, win)); /* vector -> vector, odd bytes */
    MPI_OK(MPI_Win_unlock(right, win));
    tget = MPI_Wtime() - t0;
    bad = 0;
    for (int i = 0; i + 1 < 2 * n; i++) {
        uint8_t want = (i & 1) ? FILL : (uint8_t)((i + 1) % 251);
        if (res[i] != want && bad++ < 3)
            CHECK(0, "large vector get: res[%d] = %d, want %d", i, res[i], want);
    }
    CHECK(bad == 0, "large vector get: %d wrong bytes", bad);
    /* a sanity bound, not a speed target (bench/ has those): off-node, the million pieces
     * travel to the target's agent in a few host-assisted requests (one RDMA each would take
     * tens of seconds); on one node a create window's go through CMA, 512 per system call,
     * 0.9-1.0 s on a 2-core machine that is running other tests beside this one */
    double limit = 5.0;
    CHECK(tput < limit && tget < limit, "vector of 1<<20 elements: put %.3f s, get %.3f s", tput,
          tget);
    if (rank == 0)
        printf("large vector (1<<20 elements, %s window): put %.4f s, get %.4f s\n",
               create ? "create" : "allocate", tput, tget);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_OK(MPI_Win_free(&win));
    MPI_Type_free(&vec);
    free(own);
    free(org);
    free(res);
}

int main(int argc, char **argv)
{
    rt_init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    build_cases();
    for (int f = 0; f < NFLAVORS; f++)
        run_flavor(f);
    large_vector(0);
    large_vector(1);
    for (int i = 0; i < nfree; i++)
        MPI_Type_free(&to_free[i]);
    return rt_finish("datatypes");
}
