/*
 * offnode_mixed - same-node and off-node origins contending on one target. Meant for 4 ranks
 * (any number >= 2 works). First the topology: which ranks share a node (MPI_COMM_TYPE_SHARED,
 * librma's locality); under test/runtests' twonode topology (RMA_TEST_TOPOLOGY=twonode, 2+2
 * ranks) every rank must have exactly one same-node peer and two off-node peers, so each
 * target below is hit at once through load/store or CMA and through the network transport.
 *
 * Then, for each flavor (create, allocate, dynamic; create and dynamic on MPI_Alloc_mem memory,
 * which librma gives a rank alone on its node from UCX) and two targets (rank 0 and the last):
 *  - lock_all + flush: every rank, ITER times, MPI_Fetch_and_op(SUM, long long) tickets,
 *    MPI_Accumulate(SUM, int[8]), an MPI_Compare_and_swap increment loop (int64),
 *    MPI_Get_accumulate(SUM, double) and MPI_Accumulate(MAXLOC, MPI_2INT). Exact totals; the
 *    fetched tickets, the fetched doubles and the values each successful CAS replaced each
 *    form a permutation of 0..nprocs*ITER-1 (nothing lost or done twice); MAXLOC picks the
 *    largest value with the smallest index. Read by the target itself and through MPI_Get;
 *    Then 1- and 2-byte elements, which off node are compare-and-swaps of the 8-byte word
 *    holding them while same-node origins use byte atomics: a byte lane per rank in one word
 *    (one-element MPI_Accumulate, LANE_REPS per iteration), its neighbour bytes written meanwhile by MPI_Put (never
 *    undone), a whole word of MPI_SIGNED_CHAR per call, MPI_SHORT fetch_and_op tickets, a
 *    21-byte MPI_UNSIGNED_CHAR accumulate across three words from an odd offset racing
 *    one-element calls on its bytes, a compare_and_swap byte lane per rank, and a strided
 *    accumulate of bytes 0 and 2 of a word (an MPI_Type_vector) raced by MPI_Get_accumulate
 *    NO_OP reads of bytes 0-3, which must see both of its bytes or neither (the whole-call
 *    guarantee of doc/atomicity.md). Wrapped totals exact, tickets a permutation, every
 *    lane's swap seeing its own last value, no read seeing half a call;
 *  - exclusive locks: MPI_Win_lock(EXCLUSIVE), get, flush, increment, put, unlock on one
 *    counter, ITER/4 times per rank: the total is exact.
 * And per flavor, between every pair of ranks (self included): fence epochs, then PSCW
 * epochs, each putting distinct data into the target's slot for the origin and getting
 * another origin's slot back, checked element by element.
 *
 * ITER (environment, default 50) scales the work: the default keeps the test under 20 s with
 * 4 ranks on 2 cores when every peer goes through UCX over TCP (netmod-tcp, ~8 ms per
 * iteration there); on one node it takes well under a second, so the node topology runs it
 * with ITER=2000 too.
 */
#include "rmatest.h"

#include <stdint.h>

static int ITER = 50; /* operations of each kind per rank and target (env ITER) */
#define NACC  8
#define NDATA 64

enum { F_CREATE, F_ALLOCATE, F_DYNAMIC, F_CREATE_AM, F_DYNAMIC_AM, NFLAVORS };
static const char *fname[] = {"create", "allocate", "dynamic", "create-am", "dynamic-am"};

/* window layout (bytes) */
#define O_TICKET  0    /* long long: fetch_and_op SUM 1 */
#define O_ACC     64   /* int[NACC]: accumulate SUM (rank+1)*(j+1) */
#define O_CAS     128  /* int64: compare_and_swap increment loop */
#define O_GACC    192  /* double: get_accumulate SUM 1.0 */
#define O_MAXLOC  256  /* 2INT: accumulate MAXLOC */
#define O_XCNT    320  /* int64: exclusive lock get/increment/put */
#define O_LANE    384  /* uchar[8]: [r] rank r's accumulate lane, [4 + r] its put lane */
#define O_WORD    392  /* schar[8]: accumulate SUM j+1 on the whole word */
#define O_SHORT   400  /* short: fetch_and_op SUM 1 */
#define O_SPAN    408  /* uchar[24]: accumulate SUM 1 on [3, 24), one-element on [3 + 2r] */
#define O_CASB    432  /* uchar[8]: [r] rank r's compare_and_swap lane */
#define O_WHOLE   440  /* uchar[4]: [0] and [2] accumulate SUM 1 by one strided call */
#define NLANES    4    /* ranks with lanes */
#define LANE_REPS 4    /* accumulates per iteration on a lane: the word's hottest race */
#define SPAN_LO   3
#define SPAN_N    21
#define O_FENCE   1024 /* int[nprocs][NDATA]: the fence phase's slot of each origin */
#define O_PSCW(n) (O_FENCE + (n)*NDATA * (int)sizeof(int))

static int rank, nprocs;
static MPI_Aint win_bytes;

typedef struct {
    MPI_Win win;
    char *mem;
    MPI_Aint *addr; /* dynamic: each rank's attached address; else NULL */
} win_t;

static MPI_Aint disp(win_t *w, int t, MPI_Aint off)
{
    return w->addr ? w->addr[t] + off : off;
}

static void topology(void)
{
    const char *topo = rt_topology();
    int leader = rank, *leaders = malloc(sizeof(int) * nprocs), same = 0;

    MPI_Allreduce(MPI_IN_PLACE, &leader, 1, MPI_INT, MPI_MIN, rt_node_comm());
    MPI_Allgather(&leader, 1, MPI_INT, leaders, 1, MPI_INT, MPI_COMM_WORLD);
    for (int r = 0; r < nprocs; r++)
        same += r != rank && leaders[r] == leader;
    if (rank == 0) {
        printf("topology %s%s, %d ranks:\n", topo, rt_netmod_only() ? " (RMA_NETMOD_ONLY=1)" : "",
               nprocs);
        for (int r = 0; r < nprocs; r++) {
            printf("  rank %d: node of rank %d, same node as", r, leaders[r]);
            int any = 0;
            for (int s = 0; s < nprocs; s++)
                if (s != r && leaders[s] == leaders[r])
                    printf(" %d", s), any = 1;
            printf("%s\n", any ? "" : " none");
        }
        fflush(stdout);
    }
    if (strcmp(topo, "twonode") == 0 && nprocs == 4)
        CHECK(same == 1 && nprocs - 1 - same == 2,
              "twonode: rank %d has %d same-node and %d off-node peers, want 1 and 2", rank, same,
              nprocs - 1 - same);
    free(leaders);
}

static void make_window(win_t *w, int flavor)
{
    memset(w, 0, sizeof(*w));
    switch (flavor) {
    case F_CREATE:
    case F_CREATE_AM:
        if (flavor == F_CREATE) {
            w->mem = calloc(1, win_bytes);
        } else {
            MPI_OK(MPI_Alloc_mem(win_bytes, MPI_INFO_NULL, &w->mem));
            memset(w->mem, 0, win_bytes);
        }
        MPI_OK(MPI_Win_create(w->mem, win_bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w->win));
        break;
    case F_ALLOCATE:
        MPI_OK(MPI_Win_allocate(win_bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w->mem, &w->win));
        memset(w->mem, 0, win_bytes);
        break;
    case F_DYNAMIC:
    case F_DYNAMIC_AM: {
        MPI_Aint a;
        if (flavor == F_DYNAMIC) {
            w->mem = calloc(1, win_bytes);
        } else {
            MPI_OK(MPI_Alloc_mem(win_bytes, MPI_INFO_NULL, &w->mem));
            memset(w->mem, 0, win_bytes);
        }
        MPI_OK(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &w->win));
        MPI_OK(MPI_Win_attach(w->win, w->mem, win_bytes));
        w->addr = malloc(sizeof(MPI_Aint) * nprocs);
        MPI_Get_address(w->mem, &a);
        MPI_Allgather(&a, 1, MPI_AINT, w->addr, 1, MPI_AINT, MPI_COMM_WORLD);
        break;
    }
    }
    MPI_OK(MPI_Win_set_errhandler(w->win, MPI_ERRORS_RETURN));
    /* every rank's memory is zero before any peer's first access */
    MPI_Barrier(MPI_COMM_WORLD);
}

static void free_window(win_t *w, int flavor)
{
    if (flavor == F_DYNAMIC || flavor == F_DYNAMIC_AM)
        MPI_OK(MPI_Win_detach(w->win, w->mem));
    MPI_OK(MPI_Win_free(&w->win));
    if (flavor == F_CREATE_AM || flavor == F_DYNAMIC_AM)
        MPI_OK(MPI_Free_mem(w->mem));
    else if (flavor != F_ALLOCATE)
        free(w->mem);
    free(w->addr);
}

static int maxloc_value(int r, int i)
{
    return (r * 7 + i * 13) % 50 + 1; /* ties on purpose; 0 (the initial value) never wins */
}

/* The counters at target t, as read from `c` (the window's first 512 bytes there). */
static void check_counters(const char *c, const char *what)
{
    long long ll, total = (long long)ITER * nprocs;
    int64_t i64;
    double dv;
    int iv, pair[2], bv = -1, bi = 0;

    memcpy(&ll, c + O_TICKET, 8);
    CHECK(ll == total, "%s: fetch_and_op counter %lld, want %lld", what, ll, total);
    for (int j = 0; j < NACC; j++) {
        int want = ITER * (j + 1) * nprocs * (nprocs + 1) / 2;
        memcpy(&iv, c + O_ACC + 4 * j, 4);
        CHECK(iv == want, "%s: accumulate acc[%d] %d, want %d", what, j, iv, want);
    }
    memcpy(&i64, c + O_CAS, 8);
    CHECK(i64 == total, "%s: compare_and_swap counter %lld, want %lld", what, (long long)i64,
          total);
    memcpy(&dv, c + O_GACC, 8);
    CHECK(dv == (double)total, "%s: get_accumulate double %g, want %lld", what, dv, total);
    for (int r = 0; r < nprocs; r++)
        for (int i = 0; i < ITER; i++) {
            int v = maxloc_value(r, i), ix = r * ITER + i;
            if (v > bv || (v == bv && ix < bi))
                bv = v, bi = ix;
        }
    memcpy(pair, c + O_MAXLOC, 8);
    CHECK(pair[0] == bv && pair[1] == bi, "%s: maxloc (%d, %d), want (%d, %d)", what, pair[0],
          pair[1], bv, bi);
    for (int r = 0; r < nprocs && r < NLANES; r++) {
        unsigned char lane = (unsigned char)c[O_LANE + r], put = (unsigned char)c[O_LANE + 4 + r];
        unsigned char casb = (unsigned char)c[O_CASB + r];
        CHECK(lane == (unsigned char)(ITER * LANE_REPS), "%s: rank %d's byte lane %d, want %d",
              what, r, lane, ITER * LANE_REPS & 0xff);
        CHECK(put == (ITER - 1) % 100 + 1, "%s: rank %d's put byte %d, want %d", what, r, put,
              (ITER - 1) % 100 + 1);
        CHECK(casb == (unsigned char)ITER, "%s: rank %d's compare_and_swap byte %d, want %d", what,
              r, casb, ITER & 0xff);
    }
    for (int j = 0; j < 8; j++) {
        signed char want = (signed char)(unsigned char)(total * (j + 1));
        CHECK((signed char)c[O_WORD + j] == want, "%s: signed char word [%d] %d, want %d", what, j,
              (signed char)c[O_WORD + j], want);
    }
    {
        short sv;
        memcpy(&sv, c + O_SHORT, 2);
        CHECK(sv == (short)total, "%s: short fetch_and_op counter %d, want %lld", what, sv, total);
    }
    CHECK((unsigned char)c[O_WHOLE] == (unsigned char)total &&
              (unsigned char)c[O_WHOLE + 2] == (unsigned char)total && c[O_WHOLE + 1] == 0 &&
              c[O_WHOLE + 3] == 0,
          "%s: strided byte accumulate %d %d %d %d, want %d 0 %d 0", what,
          (unsigned char)c[O_WHOLE], c[O_WHOLE + 1], (unsigned char)c[O_WHOLE + 2], c[O_WHOLE + 3],
          (int)(total & 0xff), (int)(total & 0xff));
    for (int k = 0; k < 24; k++) {
        long long n = k < SPAN_LO ? 0 : total;
        int j = k - SPAN_LO;
        if (j >= 0 && j % 2 == 0 && j / 2 < nprocs)
            n += ITER;
        CHECK((unsigned char)c[O_SPAN + k] == (unsigned char)n,
              "%s: 21-byte accumulate [%d] %d, want %d", what, k, (unsigned char)c[O_SPAN + k],
              (int)(n & 0xff));
    }
    memcpy(&i64, c + O_XCNT, 8);
    total = (long long)(ITER / 4) * nprocs;
    CHECK(i64 == total, "%s: exclusive-lock counter %lld, want %lld", what, (long long)i64, total);
}

/* Atomics of every rank on target t inside lock_all, then exclusive-lock increments. */
static void contend(win_t *w, int flavor, int t)
{
    long long *tk = malloc(sizeof(long long) * ITER * 4);
    long long *t_fop = tk, *t_gacc = tk + ITER, *t_cas = tk + 2 * ITER, *t_short = tk + 3 * ITER;
    int acc[NACC], other = (t + 1) % nprocs, halves = 0;
    long cas_retries = 0;
    MPI_Datatype two; /* bytes 0 and 2 */
    char what[96];
    double t0 = MPI_Wtime();

    for (int j = 0; j < NACC; j++)
        acc[j] = (rank + 1) * (j + 1);
    MPI_Type_vector(2, 1, 2, MPI_UNSIGNED_CHAR, &two);
    MPI_Type_commit(&two);
    MPI_OK(MPI_Win_lock_all(0, w->win));
    for (int i = 0; i < ITER; i++) {
        long long one = 1, r = -1;
        double d1 = 1.0, dr = -1;
        int64_t cur, next, got;
        int pair[2] = {maxloc_value(rank, i), rank * ITER + i};

        MPI_OK(MPI_Fetch_and_op(&one, &r, MPI_LONG_LONG, t, disp(w, t, O_TICKET), MPI_SUM, w->win));
        MPI_OK(MPI_Accumulate(acc, NACC, MPI_INT, t, disp(w, t, O_ACC), NACC, MPI_INT, MPI_SUM,
                              w->win));
        MPI_OK(MPI_Get_accumulate(&d1, 1, MPI_DOUBLE, &dr, 1, MPI_DOUBLE, t, disp(w, t, O_GACC), 1,
                                  MPI_DOUBLE, MPI_SUM, w->win));
        MPI_OK(MPI_Accumulate(pair, 1, MPI_2INT, t, disp(w, t, O_MAXLOC), 1, MPI_2INT, MPI_MAXLOC,
                              w->win));
        MPI_OK(MPI_Win_flush(t, w->win)); /* the fetched values are valid from here on */
        t_fop[i] = r;
        t_gacc[i] = (long long)dr;
        MPI_OK(MPI_Fetch_and_op(NULL, &cur, MPI_INT64_T, t, disp(w, t, O_CAS), MPI_NO_OP, w->win));
        MPI_OK(MPI_Win_flush(t, w->win));
        for (long tries = 0;; tries++) {
            next = cur + 1;
            got = -1;
            MPI_OK(
                MPI_Compare_and_swap(&next, &cur, &got, MPI_INT64_T, t, disp(w, t, O_CAS), w->win));
            MPI_OK(MPI_Win_flush(t, w->win));
            if (got == cur)
                break;
            cas_retries++;
            if (got < cur || tries > 1000000) {
                CHECK(0, "%s to %d: compare_and_swap loop: had %lld, target gave %lld",
                      fname[flavor], t, (long long)cur, (long long)got);
                break;
            }
            cur = got;
        }
        t_cas[i] = cur;

        /* 1- and 2-byte elements */
        {
            unsigned char one8 = 1, ones[SPAN_N], casv = (unsigned char)i,
                          casn = (unsigned char)(i + 1), casr = 0;
            unsigned char putv = (unsigned char)(i % 100 + 1);
            signed char word[8];
            short s1 = 1, sr = -1;

            memset(ones, 1, sizeof(ones));
            for (int j = 0; j < 8; j++)
                word[j] = (signed char)(j + 1);
            if (rank < NLANES) {
                for (int k = 0; k < LANE_REPS; k++)
                    MPI_OK(MPI_Accumulate(&one8, 1, MPI_UNSIGNED_CHAR, t,
                                          disp(w, t, O_LANE + rank), 1, MPI_UNSIGNED_CHAR, MPI_SUM,
                                          w->win));
                MPI_OK(MPI_Put(&putv, 1, MPI_UNSIGNED_CHAR, t, disp(w, t, O_LANE + 4 + rank), 1,
                               MPI_UNSIGNED_CHAR, w->win));
            }
            MPI_OK(MPI_Accumulate(word, 8, MPI_SIGNED_CHAR, t, disp(w, t, O_WORD), 8,
                                  MPI_SIGNED_CHAR, MPI_SUM, w->win));
            MPI_OK(MPI_Fetch_and_op(&s1, &sr, MPI_SHORT, t, disp(w, t, O_SHORT), MPI_SUM, w->win));
            MPI_OK(MPI_Accumulate(ones, SPAN_N, MPI_UNSIGNED_CHAR, t, disp(w, t, O_SPAN + SPAN_LO),
                                  SPAN_N, MPI_UNSIGNED_CHAR, MPI_SUM, w->win));
            MPI_OK(MPI_Accumulate(&one8, 1, MPI_UNSIGNED_CHAR, t,
                                  disp(w, t, O_SPAN + SPAN_LO + 2 * rank), 1, MPI_UNSIGNED_CHAR,
                                  MPI_SUM, w->win));
            if (rank < NLANES)
                MPI_OK(MPI_Compare_and_swap(&casn, &casv, &casr, MPI_UNSIGNED_CHAR, t,
                                            disp(w, t, O_CASB + rank), w->win));
            MPI_OK(MPI_Win_flush(t, w->win));
            t_short[i] = sr;
            {
                unsigned char ones2[2] = {1, 1}, seen4[4];
                MPI_OK(MPI_Accumulate(ones2, 2, MPI_UNSIGNED_CHAR, t, disp(w, t, O_WHOLE), 1, two,
                                      MPI_SUM, w->win));
                for (int k = 0; k < 2; k++) {
                    MPI_OK(MPI_Get_accumulate(NULL, 0, MPI_UNSIGNED_CHAR, seen4, 4,
                                              MPI_UNSIGNED_CHAR, t, disp(w, t, O_WHOLE), 4,
                                              MPI_UNSIGNED_CHAR, MPI_NO_OP, w->win));
                    MPI_OK(MPI_Win_flush(t, w->win));
                    halves += seen4[0] != seen4[2];
                }
            }
            if (rank < NLANES)
                CHECK(casr == casv, "%s to %d: byte compare_and_swap %d saw %d, want %d",
                      fname[flavor], t, i, casr, casv);
        }
    }
    MPI_OK(MPI_Win_flush_all(w->win));
    MPI_OK(MPI_Win_unlock_all(w->win));
    MPI_Type_free(&two);
    CHECK(halves == 0, "%s to %d: %d four-byte reads saw half of a strided two-byte accumulate",
          fname[flavor], t, halves);

    /* exclusive locks: a plain get / increment / put is safe under them */
    for (int i = 0; i < ITER / 4; i++) {
        int64_t v = -1;
        MPI_OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, t, 0, w->win));
        MPI_OK(MPI_Get(&v, 1, MPI_INT64_T, t, disp(w, t, O_XCNT), 1, MPI_INT64_T, w->win));
        MPI_OK(MPI_Win_flush(t, w->win));
        v++;
        MPI_OK(MPI_Put(&v, 1, MPI_INT64_T, t, disp(w, t, O_XCNT), 1, MPI_INT64_T, w->win));
        MPI_OK(MPI_Win_unlock(t, w->win));
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* the target reads its own memory; another rank reads it through MPI_Get */
    if (rank == t) {
        MPI_OK(MPI_Win_lock(MPI_LOCK_SHARED, t, 0, w->win));
        snprintf(what, sizeof(what), "%s, target %d, read by itself", fname[flavor], t);
        check_counters(w->mem, what);
        MPI_OK(MPI_Win_unlock(t, w->win));
    }
    if (rank == other && other != t) {
        char c[O_FENCE];
        memset(c, 0xff, sizeof(c));
        MPI_OK(MPI_Win_lock(MPI_LOCK_SHARED, t, 0, w->win));
        MPI_OK(MPI_Get(c, O_FENCE, MPI_BYTE, t, disp(w, t, 0), O_FENCE, MPI_BYTE, w->win));
        MPI_OK(MPI_Win_unlock(t, w->win));
        snprintf(what, sizeof(what), "%s, target %d, read by rank %d (%s)", fname[flavor], t, rank,
                 rt_same_node(t) ? "same node" : "off-node");
        check_counters(c, what);
    }
    MPI_Barrier(MPI_COMM_WORLD); /* no lock epoch is left when the fence phase starts */
    snprintf(what, sizeof(what), "%s, target %d: fetch_and_op tickets", fname[flavor], t);
    rt_check_permutation(t_fop, ITER, what);
    snprintf(what, sizeof(what), "%s, target %d: get_accumulate values", fname[flavor], t);
    rt_check_permutation(t_gacc, ITER, what);
    snprintf(what, sizeof(what), "%s, target %d: values replaced by compare_and_swap",
             fname[flavor], t);
    rt_check_permutation(t_cas, ITER, what);
    snprintf(what, sizeof(what), "%s, target %d: short fetch_and_op tickets", fname[flavor], t);
    rt_check_permutation(t_short, ITER, what);
    {
        long all = 0;
        MPI_Reduce(&cas_retries, &all, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
        if (rank == 0)
            printf("%-8s target %d: atomics and exclusive locks checked in %.2f s (%ld "
                   "compare_and_swap retries)\n",
                   fname[flavor], t, MPI_Wtime() - t0, all);
    }
    free(tk);
}

static int pattern(int round, int origin, int target, int j)
{
    return round * 1000003 + origin * 10007 + target * 101 + j;
}

/* One rank's slot in the region at `region` of target t's window. */
static MPI_Aint slot(win_t *w, int t, MPI_Aint region, int origin)
{
    return disp(w, t, region + (MPI_Aint)origin * NDATA * (MPI_Aint)sizeof(int));
}

/* Checks the slots this rank's window got from every origin, and what it fetched back. */
static void check_slots(win_t *w, MPI_Aint region, int round, int *fetched, int self_too,
                        const char *what)
{
    int bad = 0;
    for (int o = 0; o < nprocs; o++) {
        const int *s = (const int *)(w->mem + region) + o * NDATA;
        if (o == rank && !self_too)
            continue;
        for (int j = 0; j < NDATA; j++)
            if (s[j] != pattern(round, o, rank, j) && bad++ < 3)
                CHECK(0, "%s: slot of origin %d [%d] = %d, want %d", what, o, j, s[j],
                      pattern(round, o, rank, j));
    }
    for (int t = 0; t < nprocs; t++) {
        int s = (t + 1) % nprocs; /* the slot fetched from t: written there by s */
        if (t == rank && !self_too)
            continue;
        for (int j = 0; j < NDATA; j++)
            if (fetched[t * NDATA + j] != pattern(round, s, t, j) && bad++ < 3)
                CHECK(0, "%s: got from rank %d slot %d [%d] = %d, want %d", what, t, s, j,
                      fetched[t * NDATA + j], pattern(round, s, t, j));
    }
    CHECK(bad == 0, "%s: %d wrong elements", what, bad);
}

/* Fence epochs, then PSCW epochs: put distinct data to every target, get another slot back. */
static void epochs(win_t *w, int flavor)
{
    int *src = malloc(sizeof(int) * nprocs * NDATA), *got = malloc(sizeof(int) * nprocs * NDATA);
    MPI_Group world, others;
    char what[64];
    double t0 = MPI_Wtime();

    for (int t = 0; t < nprocs; t++)
        for (int j = 0; j < NDATA; j++)
            src[t * NDATA + j] = pattern(1, rank, t, j);
    for (int i = 0; i < nprocs * NDATA; i++)
        got[i] = -1;
    MPI_OK(MPI_Win_fence(MPI_MODE_NOPRECEDE, w->win));
    for (int t = 0; t < nprocs; t++)
        MPI_OK(MPI_Put(src + t * NDATA, NDATA, MPI_INT, t, slot(w, t, O_FENCE, rank), NDATA,
                       MPI_INT, w->win));
    MPI_OK(MPI_Win_fence(0, w->win));
    for (int t = 0; t < nprocs; t++)
        MPI_OK(MPI_Get(got + t * NDATA, NDATA, MPI_INT, t, slot(w, t, O_FENCE, (t + 1) % nprocs),
                       NDATA, MPI_INT, w->win));
    MPI_OK(MPI_Win_fence(MPI_MODE_NOSUCCEED, w->win));
    snprintf(what, sizeof(what), "%s fence", fname[flavor]);
    check_slots(w, O_FENCE, 1, got, 1, what);

    /* PSCW: every other rank is both an origin and a target of this one */
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Group_excl(world, 1, &rank, &others);
    for (int t = 0; t < nprocs; t++)
        for (int j = 0; j < NDATA; j++)
            src[t * NDATA + j] = pattern(2, rank, t, j);
    for (int i = 0; i < nprocs * NDATA; i++)
        got[i] = -1;
    MPI_OK(MPI_Win_post(others, 0, w->win));
    MPI_OK(MPI_Win_start(others, 0, w->win));
    for (int t = 0; t < nprocs; t++)
        if (t != rank)
            MPI_OK(MPI_Put(src + t * NDATA, NDATA, MPI_INT, t, slot(w, t, O_PSCW(nprocs), rank),
                           NDATA, MPI_INT, w->win));
    MPI_OK(MPI_Win_complete(w->win));
    MPI_OK(MPI_Win_wait(w->win));
    MPI_OK(MPI_Win_post(others, MPI_MODE_NOPUT, w->win));
    MPI_OK(MPI_Win_start(others, 0, w->win));
    for (int t = 0; t < nprocs; t++)
        if (t != rank)
            MPI_OK(MPI_Get(got + t * NDATA, NDATA, MPI_INT, t,
                           slot(w, t, O_PSCW(nprocs), (t + 1) % nprocs), NDATA, MPI_INT, w->win));
    MPI_OK(MPI_Win_complete(w->win));
    MPI_OK(MPI_Win_wait(w->win));
    snprintf(what, sizeof(what), "%s pscw", fname[flavor]);
    check_slots(w, O_PSCW(nprocs), 2, got, 0, what);
    MPI_Group_free(&others);
    MPI_Group_free(&world);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        printf("%-8s fence and PSCW put/get between every pair checked in %.2f s\n", fname[flavor],
               MPI_Wtime() - t0);
    free(src);
    free(got);
}

int main(int argc, char **argv)
{
    const char *e = getenv("ITER");

    rt_init(&argc, &argv);
    rank = rt_rank;
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (e != NULL && atoi(e) > 0)
        ITER = atoi(e);
    win_bytes = O_PSCW(nprocs) + (MPI_Aint)nprocs * NDATA * sizeof(int);
    CHECK(nprocs >= 2, "needs at least 2 ranks, has %d", nprocs);
    topology();
    for (int f = 0; f < NFLAVORS; f++) {
        win_t w;
        make_window(&w, f);
        contend(&w, f, 0);
        if (nprocs > 1)
            contend(&w, f, nprocs - 1);
        epochs(&w, f);
        free_window(&w, f);
    }
    return rt_finish("offnode_mixed");
}
