/*
 * random_epochs - random puts and gets in random synchronization modes, against a model of
 * every window that each rank computes on its own. Every rank r owns the slice
 * [r*S, (r+1)*S) of every window (S = W/np rounded down to 8 bytes, W = 64 KiB) and is the
 * only one to write it anywhere, so the results do not depend on the order in which the
 * ranks' operations land. Each round a PRNG seeded alike on every rank (so each rank knows
 * every rank's operations) picks the synchronization mode:
 *  - fence (the assertions NOPRECEDE/NOSUCCEED where they hold, at random);
 *  - lock_all, MPI_Win_flush_all after a random prefix of the operations, unlock_all;
 *  - MPI_Win_lock(MPI_LOCK_SHARED) on each target (all held at once or one at a time);
 *  - PSCW with all other ranks as the group;
 * and, for each rank, 1-20 operations on its slice at a random target (itself too, but in
 * PSCW): a contiguous MPI_Put (1-4096 bytes), a strided one (MPI_Type_vector of 1-64
 * blocks of 8-1024 bytes, stride twice the block), or a contiguous or strided MPI_Get of
 * bytes the origin does not put in the round, into a private buffer or into the last 4 KiB
 * of its slice in its own window (which no put targets; halves used in alternate rounds).
 * Bytes put depend on (round, origin, target, offset): a late or lost write shows an earlier
 * round's bytes. After the round's synchronization and an MPI_Barrier every rank checks its
 * whole window and every get's destination (filled beforehand with other bytes) against the
 * model; in the next round its left neighbour gets the scratch half it got into and checks
 * it too: a get into the origin's own window memory must have landed when the epoch closed
 * (what fence_get_own checks for one pattern). A fence round adds an epoch right after the
 * operations' in which every rank gets its right neighbour's scratch half of the round at
 * once (the library from before the held-gets fence fix failed it within 13-163 rounds,
 * every peer over tcp). Runs on MPICH's own RMA as well.
 * Environment: RANDOM_EPOCHS_ROUNDS (default 300), RANDOM_EPOCHS_SEED (default 1),
 * RANDOM_EPOCHS_FLAVOR=allocate (MPI_Win_allocate; default MPI_Win_create on calloc'd memory).
 */
#include "rmatest.h"

#include <stdint.h>

#define W       (64 * 1024) /* window bytes per rank */
#define SCRATCH 4096        /* the end of each slice: get destinations in the owner's window */
#define HALF    (SCRATCH / 2)
#define MAXOPS  21 /* 20 and the neighbour's get */
#define MAXFAIL 5  /* mismatches printed per rank */

enum { M_FENCE, M_LOCK_ALL, M_LOCK, M_PSCW, M_N };
static const char *mode_name[] = {"fence", "lock_all+flush_all", "lock shared", "pscw"};
enum { K_PUT, K_PUTV, K_GET, K_GETV, K_NBR, K_N };
static const char *kind_name[] = {"put", "strided put", "get", "strided get",
                                  "get of the right neighbour's scratch"};

typedef struct op {
    int kind, target;
    int nblk, blk, tstride; /* the target's side: nblk blocks of blk bytes, tstride apart */
    long toff;              /* ... from this byte of the target's window */
    int scratch;            /* a get into the origin's own window (else a private buffer) */
    int ostride;            /* the origin's side: the same blocks, ostride apart ... */
    long ooff;              /* ... from this byte of the private buffer or of the window */
} op_t;

static int me, np, S, P; /* P: the bytes of a slice that puts may write */
static uint64_t rng;
static unsigned char *model; /* np windows of W bytes: what each must hold */
static unsigned char *mem, *priv;
static MPI_Win win;
static op_t ops[64][MAXOPS]; /* this round's operations of each origin */
static int nops[64], split[64], one_at_a_time[64];

static uint32_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 32);
}

static unsigned char val(int round, int o, int t, long off)
{
    uint32_t x = (uint32_t)round * 2654435761u ^ (uint32_t)(o * 97 + t * 13 + 1) * 40503u ^
                 (uint32_t)off * 2246822519u;
    x ^= x >> 15;
    x *= 0x2c1b3c6du;
    x ^= x >> 12;
    x *= 0x297a2d39u;
    x ^= x >> 15;
    return (unsigned char)x;
}

static int is_get(int kind)
{
    return kind >= K_GET;
}

static long extent(const op_t *p)
{
    return (long)(p->nblk - 1) * p->tstride + p->blk;
}

/* 1 when byte `off` of the target's window is one that op p transfers */
static int covers(const op_t *p, long off)
{
    long d = off - p->toff;
    return d >= 0 && d < extent(p) && d % p->tstride < p->blk;
}

/* One random put or get of origin o at round `round`; 0 when none fitted. */
static int gen_op(int round, int o, int mode, op_t *list, int n, long *priv_used, int *scratch_used)
{
    op_t p;
    int t = rnd() % np, kind = rnd() % 4;

    if (mode == M_PSCW && t == o)
        t = (o + 1) % np;
    for (int attempt = 0; attempt < 10; attempt++) {
        int clash = 0, want_scratch = rnd() % 2, packed = rnd() % 2;
        p.kind = kind;
        p.target = t;
        if (kind == K_PUT || kind == K_GET) {
            p.nblk = 1;
            p.blk = 1 + rnd() % (P < 4096 ? P : 4096);
            p.tstride = p.blk;
        } else {
            int nmax;
            p.blk = 8 + rnd() % 1017;
            nmax = (P / p.blk + 1) / 2;
            nmax = nmax > 64 ? 64 : nmax;
            p.nblk = 1 + rnd() % nmax;
            p.tstride = 2 * p.blk;
        }
        p.toff = (long)o * S + rnd() % (P - extent(&p) + 1);
        /* a get reads nothing the origin puts at that target in the round, and the reverse */
        for (int i = 0; i < n && !clash; i++)
            if (list[i].target == t && is_get(list[i].kind) != is_get(kind) &&
                list[i].kind != K_NBR)
                clash =
                    p.toff < list[i].toff + extent(&list[i]) && list[i].toff < p.toff + extent(&p);
        if (clash)
            continue;
        p.ostride = kind == K_PUT || kind == K_GET || packed ? p.blk : p.tstride;
        p.scratch = 0;
        if (is_get(kind) && want_scratch && *scratch_used + p.nblk * p.blk <= HALF) {
            p.scratch = 1;
            p.ostride = p.blk;
            p.ooff = (long)o * S + P + (round & 1) * HALF + *scratch_used;
            *scratch_used += p.nblk * p.blk;
        } else {
            p.ooff = *priv_used;
            *priv_used += (long)(p.nblk - 1) * p.ostride + p.blk;
        }
        list[n] = p;
        return 1;
    }
    return 0;
}

/* This round's operations of every origin, and the model after them. */
static void gen_round(int round, int mode)
{
    for (int o = 0; o < np; o++) {
        op_t *list = ops[o];
        long priv_used = 0;
        int scratch_used = 0, want = 1 + rnd() % 20, n = 0;
        for (int i = 0; i < want; i++)
            n += gen_op(round, o, mode, list, n, &priv_used, &scratch_used);
        if (round > 0) { /* the right neighbour's scratch half of the previous round */
            int at = rnd() % (n + 1), right = (o + 1) % np;
            op_t p = {K_NBR, right, 1,
                      HALF,  HALF,  (long)right * S + P + ((round - 1) & 1) * HALF,
                      0,     HALF,  priv_used};
            memmove(&list[at + 1], &list[at], sizeof(op_t) * (n - at));
            list[at] = p;
            n++;
        }
        nops[o] = n;
        split[o] = rnd() % (n + 1);
        one_at_a_time[o] = rnd() % 2;
        /* the model: gets copy what the round leaves unchanged, so any order does */
        for (int i = 0; i < n; i++) {
            op_t *p = &list[i];
            unsigned char *tw = model + (long)p->target * W, *ow = model + (long)o * W;
            for (int b = 0; b < p->nblk; b++)
                for (int j = 0; j < p->blk; j++) {
                    long toff = p->toff + (long)b * p->tstride + j;
                    if (!is_get(p->kind))
                        tw[toff] = val(round, o, p->target, toff);
                    else if (p->scratch)
                        ow[p->ooff + (long)b * p->ostride + j] = tw[toff];
                }
        }
    }
}

/* The origin-side byte of op p's block b, byte j. */
static unsigned char *obyte(const op_t *p, int b, int j)
{
    return (p->scratch ? mem : priv) + p->ooff + (long)b * p->ostride + j;
}

static void fill(int round)
{
    for (int i = 0; i < nops[me]; i++) {
        op_t *p = &ops[me][i];
        unsigned char *tw = model + (long)p->target * W;
        for (int b = 0; b < p->nblk; b++)
            for (int j = 0; j < p->blk; j++) {
                long toff = p->toff + (long)b * p->tstride + j;
                /* a put's data; a get's destination gets bytes other than the expected */
                *obyte(p, b, j) =
                    is_get(p->kind) ? (unsigned char)~tw[toff] : val(round, me, p->target, toff);
            }
    }
}

static void issue(const op_t *p)
{
    MPI_Datatype tt = MPI_BYTE, ot = MPI_BYTE;
    int tc = p->blk, oc = p->blk;

    if (p->kind == K_PUTV || p->kind == K_GETV) {
        MPI_OK(MPI_Type_vector(p->nblk, p->blk, p->tstride, MPI_BYTE, &tt));
        MPI_OK(MPI_Type_commit(&tt));
        tc = 1;
        if (p->ostride == p->blk) {
            oc = p->nblk * p->blk;
        } else {
            ot = tt;
            oc = 1;
        }
    }
    if (is_get(p->kind))
        MPI_OK(MPI_Get(obyte(p, 0, 0), oc, ot, p->target, p->toff, tc, tt, win));
    else
        MPI_OK(MPI_Put(obyte(p, 0, 0), oc, ot, p->target, p->toff, tc, tt, win));
    if (tt != MPI_BYTE)
        MPI_OK(MPI_Type_free(&tt));
}

/* Checks the destination of each of this rank's gets in [from, to). */
/* A fence round's extra epoch, right after the one with the operations: the right
 * neighbour's scratch half that its gets of this round filled, read at once by a rank that
 * just left the fence (they must have landed before anyone could leave it). */
static unsigned char peek[HALF];

static long peek_off(int round)
{
    int right = (me + 1) % np;

    return (long)right * S + P + (round & 1) * HALF;
}

static void peek_scratch(int round)
{
    memset(peek, 0xA5, sizeof(peek));
    MPI_OK(MPI_Get(peek, HALF, MPI_BYTE, (me + 1) % np, peek_off(round), HALF, MPI_BYTE, win));
}

static void check_peek(int round)
{
    const unsigned char *want = model + (long)((me + 1) % np) * W + peek_off(round);

    for (int i = 0; i < HALF; i++)
        if (peek[i] != want[i]) {
            CHECK(0,
                  "round %d (fence): rank %d's scratch byte %d, read right after the fence, "
                  "is %d, want %d",
                  round, (me + 1) % np, i, peek[i], want[i]);
            break;
        }
}

static void check_gets(int round, int mode, int from, int to)
{
    for (int i = from; i < to; i++) {
        op_t *p = &ops[me][i];
        unsigned char *tw = model + (long)p->target * W;
        int bad = 0;
        if (!is_get(p->kind))
            continue;
        for (int b = 0; b < p->nblk && !bad; b++)
            for (int j = 0; j < p->blk && !bad; j++) {
                long toff = p->toff + (long)b * p->tstride + j;
                unsigned char got = *obyte(p, b, j);
                if (got != tw[toff] && rt_fails < MAXFAIL) {
                    bad = 1;
                    CHECK(0,
                          "round %d (%s): %s (%d x %d bytes) from rank %d into %s: byte at "
                          "target offset %ld is 0x%02x, expected 0x%02x%s",
                          round, mode_name[mode], kind_name[p->kind], p->nblk, p->blk, p->target,
                          p->scratch ? "its own window" : "a private buffer", toff, got, tw[toff],
                          got == (unsigned char)~tw[toff] ? " (the poison put there before the get)"
                                                          : "");
                }
            }
        CHECK(1, "get");
    }
}

/* This rank's window against the model: the first wrong byte of each slice. */
static void check_window(int round, int mode)
{
    unsigned char *m = model + (long)me * W;

    for (int o = 0; o < np; o++) {
        long bad = -1;
        const op_t *by = NULL;
        char what[128];
        for (long i = (long)o * S; i < (long)(o + 1) * S && bad < 0; i++)
            if (mem[i] != m[i])
                bad = i;
        if (bad < 0 || rt_fails >= MAXFAIL) {
            CHECK(1, "window");
            continue;
        }
        for (int i = 0; i < nops[o]; i++) {
            const op_t *p = &ops[o][i];
            if (!is_get(p->kind) && p->target == me && covers(p, bad))
                by = p;
        }
        if (o == me)
            for (int i = 0; i < nops[o]; i++) {
                const op_t *p = &ops[o][i];
                if (p->scratch && bad >= p->ooff &&
                    bad < p->ooff + (long)(p->nblk - 1) * p->ostride + p->blk)
                    by = p;
            }
        if (by)
            snprintf(what, sizeof what, "written by a %s to/from rank %d", kind_name[by->kind],
                     by->target);
        else
            snprintf(what, sizeof what, "not written this round");
        CHECK(0,
              "round %d (%s): rank %d's slice of the window, byte at offset %ld is 0x%02x, "
              "expected 0x%02x (%s)",
              round, mode_name[mode], o, bad, mem[bad], m[bad], what);
    }
}

int main(int argc, char **argv)
{
    int rounds = rt_env_int("RANDOM_EPOCHS_ROUNDS", 300);
    int seed = rt_env_int("RANDOM_EPOCHS_SEED", 1);
    const char *fl = getenv("RANDOM_EPOCHS_FLAVOR");
    int flavor = fl != NULL && strcmp(fl, "allocate") == 0 ? RT_ALLOCATE : RT_CREATE;
    int *modes, fails = 0;
    rt_win_t w;
    MPI_Group world, others;

    rt_init(&argc, &argv);
    me = rt_rank;
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    S = (W / np) & ~7;
    P = S - SCRATCH;
    if (np < 2 || np > 12) {
        if (me == 0)
            printf("random_epochs: needs 2 to 12 ranks\n");
        MPI_Finalize();
        return 1;
    }
    model = calloc(np, W);
    priv = malloc((size_t)MAXOPS * W);
    rt_win_open(&w, flavor, W, 1);
    win = w.win;
    mem = w.mem;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Group_excl(world, 1, &me, &others);

    /* the modes first, so that a closing fence knows the next round's */
    rng = 0x9E3779B97F4A7C15ull * (uint64_t)(seed + 1);
    modes = malloc(sizeof(int) * (rounds + 1));
    for (int r = 0; r < rounds; r++)
        modes[r] = rnd() % M_N;
    modes[rounds] = -1;

    for (int r = 0; r < rounds && fails == 0; r++) {
        int mode = modes[r], next = modes[r + 1], n;
        int open_assert = (r == 0 || modes[r - 1] != M_FENCE || rnd() % 2) ? MPI_MODE_NOPRECEDE : 0;
        int close_assert = (next != M_FENCE || rnd() % 2) ? MPI_MODE_NOSUCCEED : 0;
        op_t *list = ops[me];

        gen_round(r, mode);
        n = nops[me];
        fill(r);
        switch (mode) {
        case M_FENCE:
            MPI_OK(MPI_Win_fence(open_assert, win));
            for (int i = 0; i < n; i++)
                issue(&list[i]);
            MPI_OK(MPI_Win_fence(0, win));
            peek_scratch(r);
            MPI_OK(MPI_Win_fence(close_assert, win));
            check_peek(r);
            break;
        case M_LOCK_ALL:
            MPI_OK(MPI_Win_lock_all(0, win));
            for (int i = 0; i < split[me]; i++)
                issue(&list[i]);
            MPI_OK(MPI_Win_flush_all(win));
            check_gets(r, mode, 0, split[me]);
            for (int i = split[me]; i < n; i++)
                issue(&list[i]);
            MPI_OK(MPI_Win_unlock_all(win));
            break;
        case M_LOCK:
            for (int t = 0; t < np; t++) {
                int any = 0;
                for (int i = 0; i < n; i++)
                    any |= list[i].target == t;
                if (!any)
                    continue;
                MPI_OK(MPI_Win_lock(MPI_LOCK_SHARED, t, 0, win));
                for (int i = 0; i < n; i++)
                    if (one_at_a_time[me] && list[i].target == t)
                        issue(&list[i]);
                if (one_at_a_time[me])
                    MPI_OK(MPI_Win_unlock(t, win));
            }
            if (!one_at_a_time[me]) {
                for (int i = 0; i < n; i++)
                    issue(&list[i]);
                for (int t = np - 1; t >= 0; t--) {
                    int any = 0;
                    for (int i = 0; i < n; i++)
                        any |= list[i].target == t;
                    if (any)
                        MPI_OK(MPI_Win_unlock(t, win));
                }
            }
            break;
        default:
            MPI_OK(MPI_Win_post(others, 0, win));
            MPI_OK(MPI_Win_start(others, 0, win));
            for (int i = 0; i < n; i++)
                issue(&list[i]);
            MPI_OK(MPI_Win_complete(win));
            MPI_OK(MPI_Win_wait(win));
            break;
        }
        MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
        /* after passive-target epochs, MPI_Win_sync (in an epoch of its own) before loads */
        if (mode == M_LOCK_ALL || mode == M_LOCK) {
            MPI_OK(MPI_Win_lock(MPI_LOCK_SHARED, me, 0, win));
            MPI_OK(MPI_Win_sync(win));
        }
        check_gets(r, mode, mode == M_LOCK_ALL ? split[me] : 0, n);
        check_window(r, mode);
        if (mode == M_LOCK_ALL || mode == M_LOCK)
            MPI_OK(MPI_Win_unlock(me, win));
        /* no one starts the next round before every rank checked its window */
        MPI_Allreduce(&rt_fails, &fails, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        if (fails && me == 0)
            printf("random_epochs: stopped after round %d (%s), seed %d, %d ranks, %s window\n", r,
                   mode_name[mode], seed, np, rt_flavor_name[flavor]);
    }
    MPI_Group_free(&others);
    MPI_Group_free(&world);
    rt_win_close(&w);
    free(modes);
    free(model);
    free(priv);
    return rt_finish("random_epochs");
}
