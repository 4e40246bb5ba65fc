/*
 * origin_order.c - one origin's operations to overlapping bytes of one target take effect
 * in the order it issued them, with only local completion in between, as they do with
 * MPICH's RMA (ARMCI-MPI's location consistency relies on it; MPI itself orders only
 * accumulates). The last rank (off node in the twonode topology) works on rank 0's window
 * inside one MPI_Win_lock_all epoch; each sequence ends with a get and one MPI_Win_flush,
 * and the get must see everything issued before it.
 *
 *   mixed:  a put (contiguous, strided, or element by element), then accumulates of the
 *           three shapes, then a get of one of the three shapes (27 combinations: held
 *           puts and accumulates, requests to the agent, RDMA, network atomics);
 *   held:   one small put, then 16 more that aggregation holds back, then a get of them;
 *   war:    64 gets (more than UCX takes at once: it queues some), then puts and an
 *           accumulate to the same bytes: the gets see the old values;
 *   acc_put: accumulates held back, then a put over them: the put wins;
 *   large:  a put of 256 KiB (a rendezvous through the target's agent), then a get of its
 *           last bytes.
 *
 * And one case that needs no flush at all: the origin puts small pieces that aggregation
 * holds, then waits in MPI_Barrier and then in MPI_Recv; rank 0, past the barrier, must
 * see them arrive (MPI_Barrier sends what aggregation holds). Every flavor; ROUNDS rounds.
 */
#include "rmatest.h"

#include <stdlib.h>
#include <time.h>

enum { N = 16, WORDS = 64, BIG = 256 * 1024 / 8 };

static int me, np;
static MPI_Datatype vec; /* N longs at stride 2 */

static int at(int shape, int i)
{
    return shape == 0 ? i : shape == 1 ? 2 * i : 8 + i;
}

enum { PUT, ACC, GET };

/* One operation of N longs between buf and displacement d of rank 0 in shape s: one call
 * (s 0: contiguous, 1: strided by vec), or one call an element (s 2, at(2, i)). */
static void issue(int op, int s, long *buf, MPI_Aint d, rt_win_t *w)
{
    int calls = s == 2 ? N : 1, oc = s == 2 ? 1 : N, tc = s == 1 ? 1 : oc;
    MPI_Datatype tt = s == 1 ? vec : MPI_LONG;

    for (int i = 0; i < calls; i++) {
        long *b = s == 2 ? &buf[i] : buf;
        MPI_Aint td = s == 2 ? d + at(2, i) * 8 : d;
        if (op == PUT)
            MPI_OK(MPI_Put(b, oc, MPI_LONG, 0, td, tc, tt, w->win));
        else if (op == ACC)
            MPI_OK(MPI_Accumulate(b, oc, MPI_LONG, 0, td, tc, tt, MPI_SUM, w->win));
        else
            MPI_OK(MPI_Get(b, oc, MPI_LONG, 0, td, tc, tt, w->win));
    }
}

/* The first i where got and want differ, or -1. */
static int first_bad(const long *got, const long *want, int n)
{
    for (int i = 0; i < n; i++)
        if (got[i] != want[i])
            return i;
    return -1;
}

/* Rank 0 zeroes its window once the last sequence is over; everybody waits for that. */
static void zero(rt_win_t *w, MPI_Aint bytes)
{
    MPI_Barrier(MPI_COMM_WORLD);
    if (me == 0) {
        MPI_OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, w->win));
        memset(w->mem, 0, bytes);
        MPI_OK(MPI_Win_unlock(0, w->win));
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

static void mixed(rt_win_t *w, int r)
{
    long ps[N], as[3][N], res[N], want[N];
    int b;

    for (int c = 0; c < 27; c++) {
        int pm = c % 3, first = (c / 3) % 3, gm = c / 9;
        zero(w, WORDS * 8);
        if (me != np - 1)
            continue;
        for (int i = 0; i < N; i++) {
            ps[i] = 100 + r;
            as[0][i] = 1;
            as[1][i] = 2;
            as[2][i] = 4;
            res[i] = -1;
        }
        MPI_OK(MPI_Win_lock_all(0, w->win));
        issue(PUT, pm, ps, w->base, w);
        MPI_OK(MPI_Win_flush_local(0, w->win));
        for (int k = 0; k < 3; k++) {
            int s = (first + k) % 3;
            issue(ACC, s, as[s], w->base, w);
            MPI_OK(MPI_Win_flush_local(0, w->win));
        }
        issue(GET, gm, res, w->base, w);
        MPI_OK(MPI_Win_flush(0, w->win));
        MPI_OK(MPI_Win_unlock_all(w->win));
        for (int i = 0; i < N; i++) {
            int x = at(gm, i);
            want[i] = (x < N) + 2 * (x % 2 == 0) + 4 * (x >= 8 && x < 8 + N);
            if ((pm == 0 && x < N) || (pm == 1 && x % 2 == 0) || (pm == 2 && x >= 8 && x < 8 + N))
                want[i] += 100 + r;
        }
        b = first_bad(res, want, N);
        CHECK(b < 0, "%s mixed put %d, accumulates from %d, get %d: word %d is %ld, want %ld",
              rt_flavor_name[w->flavor], pm, first, gm, at(gm, b), res[b], want[b]);
    }
}

static void held(rt_win_t *w, int r)
{
    long one = 7, src[N], res[N];
    int b;

    zero(w, WORDS * 8);
    if (me != np - 1)
        return;
    for (int i = 0; i < N; i++)
        src[i] = 1000 * r + i;
    MPI_OK(MPI_Win_lock_all(0, w->win));
    MPI_OK(MPI_Put(&one, 1, MPI_LONG, 0, w->base + 8 * (WORDS - 1), 1, MPI_LONG, w->win));
    for (int i = 0; i < N; i++)
        MPI_OK(MPI_Put(&src[i], 1, MPI_LONG, 0, w->base + 8 * i, 1, MPI_LONG, w->win));
    MPI_OK(MPI_Win_flush_local(0, w->win));
    MPI_OK(MPI_Get(res, N, MPI_LONG, 0, w->base, N, MPI_LONG, w->win));
    MPI_OK(MPI_Win_flush(0, w->win));
    MPI_OK(MPI_Win_unlock_all(w->win));
    b = first_bad(res, src, N);
    CHECK(b < 0, "%s held puts, then a get: word %d is %ld, want %ld", rt_flavor_name[w->flavor],
          b, res[b], src[b]);
}

/* WORDS gets: more than UCX's shared-memory lanes take at once, so that it queues some */
static void war(rt_win_t *w, int r)
{
    static const long zero_n[WORDS];
    long old[WORDS], src[WORDS], one = 1, res[WORDS];
    int b;

    zero(w, WORDS * 8);
    if (me != np - 1)
        return;
    for (int i = 0; i < WORDS; i++) {
        src[i] = 50 + r;
        old[i] = -1;
    }
    MPI_OK(MPI_Win_lock_all(0, w->win));
    for (int i = 0; i < WORDS; i++)
        MPI_OK(MPI_Get(&old[i], 1, MPI_LONG, 0, w->base + 8 * i, 1, MPI_LONG, w->win));
    for (int i = 0; i < WORDS; i++)
        MPI_OK(MPI_Put(&src[i], 1, MPI_LONG, 0, w->base + 8 * i, 1, MPI_LONG, w->win));
    MPI_OK(MPI_Accumulate(&one, 1, MPI_LONG, 0, w->base + 8 * (WORDS - 1), 1, MPI_LONG, MPI_SUM,
                          w->win));
    MPI_OK(MPI_Win_flush(0, w->win));
    MPI_OK(MPI_Get(res, WORDS, MPI_LONG, 0, w->base, WORDS, MPI_LONG, w->win));
    MPI_OK(MPI_Win_unlock_all(w->win));
    src[WORDS - 1] += 1; /* the accumulate */
    b = first_bad(old, zero_n, WORDS);
    if (b < 0)
        b = first_bad(res, src, WORDS);
    CHECK(b < 0, "%s gets, then puts to the same words: word %d read %ld (want 0), holds %ld "
          "(want %ld)", rt_flavor_name[w->flavor], b, old[b], res[b], src[b]);
}

static void acc_put(rt_win_t *w, int r)
{
    long add[N], src[N], res[N];
    int b;

    zero(w, WORDS * 8);
    if (me != np - 1)
        return;
    for (int i = 0; i < N; i++) {
        add[i] = 3;
        src[i] = 70 + r;
    }
    MPI_OK(MPI_Win_lock_all(0, w->win));
    for (int k = 0; k < 4; k++) /* the first goes alone, the others are held back */
        MPI_OK(MPI_Accumulate(add, N, MPI_LONG, 0, w->base, N, MPI_LONG, MPI_SUM, w->win));
    MPI_OK(MPI_Win_flush_local(0, w->win));
    MPI_OK(MPI_Put(src, N, MPI_LONG, 0, w->base, N, MPI_LONG, w->win));
    MPI_OK(MPI_Win_flush_local(0, w->win));
    MPI_OK(MPI_Get(res, N, MPI_LONG, 0, w->base, N, MPI_LONG, w->win));
    MPI_OK(MPI_Win_flush(0, w->win));
    MPI_OK(MPI_Win_unlock_all(w->win));
    b = first_bad(res, src, N);
    CHECK(b < 0, "%s accumulates, then a put over them: word %d is %ld, want %ld",
          rt_flavor_name[w->flavor], b, res[b], src[b]);
}

static void large(rt_win_t *w, int r)
{
    long *src, res[N];
    int b;

    zero(w, BIG * 8);
    if (me != np - 1)
        return;
    src = malloc(BIG * sizeof(long));
    for (int i = 0; i < BIG; i++)
        src[i] = r * 3 + i;
    MPI_OK(MPI_Win_lock_all(0, w->win));
    MPI_OK(MPI_Put(src, BIG, MPI_LONG, 0, w->base, BIG, MPI_LONG, w->win));
    MPI_OK(MPI_Win_flush_local(0, w->win));
    MPI_OK(MPI_Get(res, N, MPI_LONG, 0, w->base + 8 * (BIG - N), N, MPI_LONG, w->win));
    MPI_OK(MPI_Win_flush(0, w->win));
    MPI_OK(MPI_Win_unlock_all(w->win));
    b = first_bad(res, src + BIG - N, N);
    CHECK(b < 0, "%s a large put, then a get: word %d is %ld, want %ld", rt_flavor_name[w->flavor],
          BIG - N + b, res[b], src[BIG - N + b]);
    free(src);
}

/* Puts left unflushed while the origin waits in MPI_Barrier, then in MPI_Recv. */
static void barrier_sends(rt_win_t *w, int r)
{
    long one = 9, src[N];
    int seen = 0;

    zero(w, WORDS * 8);
    for (int i = 0; i < N; i++)
        src[i] = 500 + r + i;
    if (me == np - 1) {
        MPI_OK(MPI_Win_lock_all(0, w->win));
        MPI_OK(MPI_Put(&one, 1, MPI_LONG, 0, w->base + 8 * (WORDS - 1), 1, MPI_LONG, w->win));
        for (int i = 0; i < N; i++)
            MPI_OK(MPI_Put(&src[i], 1, MPI_LONG, 0, w->base + 8 * i, 1, MPI_LONG, w->win));
        MPI_OK(MPI_Win_flush_local(0, w->win));
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (me == 0) {
        volatile long *mem = w->mem;
        struct timespec t0, now;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        MPI_OK(MPI_Win_lock_all(0, w->win));
        do {
            MPI_Win_sync(w->win);
            seen = 1;
            for (int i = 0; i < N; i++)
                seen &= mem[i] == src[i];
            clock_gettime(CLOCK_MONOTONIC, &now);
        } while (!seen && now.tv_sec - t0.tv_sec < 20);
        MPI_OK(MPI_Win_unlock_all(w->win));
        CHECK(seen, "%s puts held back before MPI_Barrier never arrived (20 s): word 0 is %ld",
              rt_flavor_name[w->flavor], mem[0]);
        MPI_Send(&seen, 1, MPI_INT, np - 1, 0, MPI_COMM_WORLD);
    } else if (me == np - 1) {
        MPI_Recv(&seen, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_OK(MPI_Win_unlock_all(w->win));
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

static void run(int flavor)
{
    rt_win_t w;
    int rounds = rt_env_int("ROUNDS", 5);

    rt_win_open(&w, flavor, BIG * 8, 1);
    for (int r = 0; r < rounds; r++) {
        mixed(&w, r);
        held(&w, r);
        war(&w, r);
        acc_put(&w, r);
        large(&w, r);
        barrier_sends(&w, r);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    rt_win_close(&w);
}

int main(int argc, char **argv)
{
    rt_init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    CHECK(np >= 2, "needs 2 ranks");
    MPI_Type_vector(N, 1, 2, MPI_LONG, &vec);
    MPI_Type_commit(&vec);
    if (np >= 2)
        rt_each_flavor(run);
    MPI_Type_free(&vec);
    return rt_finish("origin_order");
}
