/*
 * flush_complete.c - every completion call completes every kind of operation. The last
 * rank (off node in the twonode topology) updates a region of rank 0's window with one
 * kind of operation, completes it with one call, and then tells rank 0 by MPI_Send what
 * the region must now hold; rank 0 checks its memory after MPI_Win_sync and answers before
 * the origin goes on. The rounds completed by a flush share one epoch. Kinds: put of 64
 * ints, accumulate of 1 and of 64 ints (the latter goes to the target's agent off node),
 * get_accumulate of 64 ints, fetch_and_op, compare_and_swap. Completions: flush,
 * flush_all, unlock, unlock_all, and flush_local / flush_local_all, after which a fetching
 * kind's result must be in place (then a flush completes it at the target). Every flavor;
 * ROUNDS (environment, default 20) rounds of each pair.
 */
#include "rmatest.h"

#include <stdlib.h>

enum { N = 64 };
enum { K_PUT, K_ACC1, K_ACC, K_GACC, K_FOP, K_CAS, NK };
enum { C_FLUSH, C_FLUSH_ALL, C_UNLOCK, C_UNLOCK_ALL, C_FLUSH_LOCAL, C_FLUSH_LOCAL_ALL, NC };
static const char *kind_name[NK] = {"put",  "accumulate 1", "accumulate 64", "get_accumulate",
                                    "fetch_and_op", "compare_and_swap"};
static const char *comp_name[NC] = {"flush",        "flush_all",      "unlock",
                                    "unlock_all",   "flush_local",    "flush_local_all"};

static int me, np;

static int fetching(int k)
{
    return k == K_GACC || k == K_FOP || k == K_CAS;
}

/* The origin's side of one (kind, completion) round: the region's elements go from v to
 * v + 1. Returns what the region's last element must hold. */
static int origin_round(rt_win_t *w, int k, int c, int v)
{
    MPI_Aint d = w->base + (MPI_Aint)k * N * (MPI_Aint)sizeof(int), last = d + (N - 1) * sizeof(int);
    int src[N], res[N], one = 1, cmp = v, nv = v + 1, t = 0;

    for (int i = 0; i < N; i++) {
        src[i] = k == K_PUT ? v + 1 : 1;
        res[i] = -1;
    }
    if (c == C_UNLOCK)
        MPI_OK(MPI_Win_lock(MPI_LOCK_SHARED, t, 0, w->win));
    else if (c == C_UNLOCK_ALL)
        MPI_OK(MPI_Win_lock_all(0, w->win));
    switch (k) {
    case K_PUT: MPI_OK(MPI_Put(src, N, MPI_INT, t, d, N, MPI_INT, w->win)); break;
    case K_ACC1: MPI_OK(MPI_Accumulate(&one, 1, MPI_INT, t, last, 1, MPI_INT, MPI_SUM, w->win)); break;
    case K_ACC: MPI_OK(MPI_Accumulate(src, N, MPI_INT, t, d, N, MPI_INT, MPI_SUM, w->win)); break;
    case K_GACC:
        MPI_OK(MPI_Get_accumulate(src, N, MPI_INT, res, N, MPI_INT, t, d, N, MPI_INT, MPI_SUM,
                                  w->win));
        break;
    case K_FOP: MPI_OK(MPI_Fetch_and_op(&one, &res[N - 1], MPI_INT, t, last, MPI_SUM, w->win)); break;
    default: MPI_OK(MPI_Compare_and_swap(&nv, &cmp, &res[N - 1], MPI_INT, t, last, w->win)); break;
    }
    switch (c) {
    case C_FLUSH: MPI_OK(MPI_Win_flush(t, w->win)); break;
    case C_FLUSH_ALL: MPI_OK(MPI_Win_flush_all(w->win)); break;
    case C_UNLOCK: MPI_OK(MPI_Win_unlock(t, w->win)); break;
    case C_UNLOCK_ALL: MPI_OK(MPI_Win_unlock_all(w->win)); break;
    case C_FLUSH_LOCAL: MPI_OK(MPI_Win_flush_local(t, w->win)); break;
    default: MPI_OK(MPI_Win_flush_local_all(w->win)); break;
    }
    if (fetching(k)) /* every completion call completes locally */
        CHECK(res[N - 1] == v && (k != K_GACC || res[0] == v), "%s %s, %s: fetched %d %d, want %d",
              rt_flavor_name[w->flavor], kind_name[k], comp_name[c], res[0], res[N - 1], v);
    if (c == C_FLUSH_LOCAL || c == C_FLUSH_LOCAL_ALL)
        MPI_OK(MPI_Win_flush(t, w->win)); /* at the target too, before it is told */
    return v + 1;
}

static void run(int flavor)
{
    rt_win_t w;
    int rounds = rt_env_int("ROUNDS", 20), o = np - 1, msg[3];
    int *mem;

    rt_win_open(&w, flavor, NK * N * sizeof(int), 1);
    mem = w.mem;
    if (me == o) {
        int v[NK] = {0};
        for (int c = 0; c < NC; c++)
            for (int k = 0; k < NK; k++) {
                /* the rounds of a flush share one epoch: an unlock would complete them */
                int flush = c != C_UNLOCK && c != C_UNLOCK_ALL;
                if (flush)
                    MPI_OK(MPI_Win_lock_all(0, w.win));
                for (int r = 0; r < rounds; r++) {
                    msg[0] = k;
                    msg[1] = c;
                    msg[2] = v[k] = origin_round(&w, k, c, v[k]);
                    MPI_Send(msg, 3, MPI_INT, 0, 0, MPI_COMM_WORLD);
                    MPI_Recv(msg, 1, MPI_INT, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                }
                if (flush)
                    MPI_OK(MPI_Win_unlock_all(w.win));
            }
        msg[0] = -1;
        MPI_Send(msg, 3, MPI_INT, 0, 0, MPI_COMM_WORLD);
    } else if (me == 0) {
        MPI_OK(MPI_Win_lock_all(0, w.win)); /* MPI_Win_sync in an epoch of its own */
        for (;;) {
            MPI_Recv(msg, 3, MPI_INT, o, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (msg[0] < 0)
                break;
            MPI_OK(MPI_Win_sync(w.win));
            volatile int *reg = mem + msg[0] * N;
            int first = msg[0] == K_PUT || msg[0] == K_ACC || msg[0] == K_GACC;
            CHECK(reg[N - 1] == msg[2] && (!first || reg[0] == msg[2]),
                  "%s %s, %s: the target holds %d %d after the origin's completion, want %d",
                  rt_flavor_name[flavor], kind_name[msg[0]], comp_name[msg[1]], reg[0],
                  reg[N - 1], msg[2]);
            MPI_Send(msg, 1, MPI_INT, o, 1, MPI_COMM_WORLD); /* checked: the next round */
        }
        MPI_OK(MPI_Win_unlock_all(w.win));
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
    if (np >= 2)
        rt_each_flavor(run);
    return rt_finish("flush_complete");
}
