/*
 * dyn_keys - an origin's copy of a dynamic-window target's table is fetched anew while
 * operations still use the keys and mappings of the copy it replaces (MPI_THREAD_MULTIPLE).
 *
 * Rank 0 attaches one block B for the whole run and, round after round, a small block X_r
 * it then detaches and frees (so its table's generation moves every round). On every other
 * rank, in one MPI_Win_lock_all epoch:
 *   - thread "mover" puts 64 KiB rows into the rank's slice of B, flushes every few puts,
 *     and gets each row back;
 *   - thread "prober" is told each X_r by MPI_Send, puts into it (a miss: the origin fetches
 *     the target's table again), flushes, reads it back and answers.
 * Where UCX maps B here (MPI_Alloc_mem memory from UCX), closing the old copy's key unmaps
 * B while the mover copies through the mapping; elsewhere the key is freed while UCX still
 * moves a put under it. Before, the fetch freed the old copy at once: the mover crashed or
 * read back something else. rank 0 checks every slice at the end.
 * DYN_KEYS_ROUNDS (200) rounds. Skipped (exit 0) without MPI_THREAD_MULTIPLE.
 */
#include "rmatest.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

enum { ROW = 64 * 1024, ROWS = 8, TAG_X = 7, TAG_ACK = 8 };

typedef struct {
    MPI_Win win;
    MPI_Comm comm; /* the prober's messages */
    MPI_Aint b;    /* B at rank 0 */
    int rank, rounds;
    _Atomic int stop;
} ctx_t;

static char pattern(int rank, int pass, size_t i)
{
    return (char)(rank * 31 + pass * 7 + (int)(i % 251) + 1);
}

static void *mover(void *arg)
{
    ctx_t *c = arg;
    char *rows = malloc((size_t)ROWS * ROW), *got = malloc(ROW);
    MPI_Aint slice = c->b + (MPI_Aint)(c->rank - 1) * ROWS * ROW;
    int pass = 0;

    while (!atomic_load(&c->stop) || pass < 4) {
        for (int r = 0; r < ROWS; r++) { /* each row its own buffer until the flush */
            char *row = rows + (size_t)r * ROW;
            for (size_t i = 0; i < ROW; i++)
                row[i] = pattern(c->rank, pass + r, i);
            MPI_OK(
                MPI_Put(row, ROW, MPI_CHAR, 0, slice + (MPI_Aint)r * ROW, ROW, MPI_CHAR, c->win));
            if (r % 3 == 2)
                MPI_OK(MPI_Win_flush(0, c->win));
        }
        MPI_OK(MPI_Win_flush(0, c->win));
        for (int r = 0; r < ROWS; r += 3) {
            MPI_OK(
                MPI_Get(got, ROW, MPI_CHAR, 0, slice + (MPI_Aint)r * ROW, ROW, MPI_CHAR, c->win));
            MPI_OK(MPI_Win_flush(0, c->win));
            CHECK(memcmp(rows + (size_t)r * ROW, got, ROW) == 0,
                  "pass %d: row %d of rank %d reads back wrong", pass, r, c->rank);
        }
        pass++;
    }
    /* the last pass's rows stay for rank 0 to check: pass - 1 + r */
    MPI_Send(&pass, 1, MPI_INT, 0, TAG_ACK + 1, c->comm);
    free(rows);
    free(got);
    return NULL;
}

static void prober(ctx_t *c)
{
    for (int r = 0; r < c->rounds; r++) {
        MPI_Aint x;
        long v = (long)c->rank * 1000 + r, back = -1;
        MPI_Recv(&x, 1, MPI_AINT, 0, TAG_X, c->comm, MPI_STATUS_IGNORE);
        x += (MPI_Aint)(c->rank - 1) * (MPI_Aint)sizeof(long);
        MPI_OK(MPI_Put(&v, 1, MPI_LONG, 0, x, 1, MPI_LONG, c->win));
        MPI_OK(MPI_Win_flush(0, c->win));
        MPI_OK(MPI_Get(&back, 1, MPI_LONG, 0, x, 1, MPI_LONG, c->win));
        MPI_OK(MPI_Win_flush(0, c->win));
        CHECK(back == v, "round %d: rank %d reads back %ld from its word of X, not %ld", r, c->rank,
              back, v);
        MPI_Send(NULL, 0, MPI_INT, 0, TAG_ACK, c->comm);
    }
}

static void target(ctx_t *c, int np)
{
    for (int r = 0; r < c->rounds; r++) {
        long *x = NULL;
        MPI_Aint at;
        /* sizes vary so that blocks come and go at overlapping addresses */
        size_t n = (size_t)np + (size_t)(r % 7) * 64;
        MPI_OK(MPI_Alloc_mem((MPI_Aint)(n * sizeof(long)), MPI_INFO_NULL, &x));
        memset(x, 0, n * sizeof(long));
        MPI_OK(MPI_Win_attach(c->win, x, (MPI_Aint)(n * sizeof(long))));
        MPI_Get_address(x, &at);
        for (int o = 1; o < np; o++)
            MPI_Send(&at, 1, MPI_AINT, o, TAG_X, c->comm);
        for (int o = 1; o < np; o++)
            MPI_Recv(NULL, 0, MPI_INT, o, TAG_ACK, c->comm, MPI_STATUS_IGNORE);
        for (int o = 1; o < np; o++)
            CHECK(x[o - 1] == (long)o * 1000 + r, "round %d: word of rank %d holds %ld", r, o,
                  x[o - 1]);
        MPI_OK(MPI_Win_detach(c->win, x));
        MPI_OK(MPI_Free_mem(x));
    }
}

int main(int argc, char **argv)
{
    const char *s = getenv("DYN_KEYS_ROUNDS");
    int prov, np;
    ctx_t c = {.rounds = s != NULL ? atoi(s) : 200};
    char *b = NULL;
    size_t blen;

    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &prov);
    MPI_Comm_rank(MPI_COMM_WORLD, &rt_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    if (prov != MPI_THREAD_MULTIPLE || np < 2) {
        if (rt_rank == 0)
            printf("dyn_keys: skipped (needs MPI_THREAD_MULTIPLE and 2 ranks)\n");
        MPI_Finalize();
        return 0;
    }
    c.rank = rt_rank;
    MPI_Comm_dup(MPI_COMM_WORLD, &c.comm);
    MPI_OK(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &c.win));
    blen = (size_t)(np - 1) * ROWS * ROW;
    if (rt_rank == 0) {
        MPI_OK(MPI_Alloc_mem((MPI_Aint)blen, MPI_INFO_NULL, &b));
        memset(b, 0, blen);
        MPI_OK(MPI_Win_attach(c.win, b, (MPI_Aint)blen));
        MPI_Get_address(b, &c.b);
    }
    MPI_Bcast(&c.b, 1, MPI_AINT, 0, MPI_COMM_WORLD);
    if (rt_rank == 0) {
        int pass[64];
        target(&c, np);
        for (int o = 1; o < np; o++)
            MPI_Recv(&pass[o], 1, MPI_INT, o, TAG_ACK + 1, c.comm, MPI_STATUS_IGNORE);
        MPI_Barrier(MPI_COMM_WORLD); /* the origins' epochs ended */
        for (int o = 1; o < np; o++) {
            size_t bad = 0;
            for (int r = 0; r < ROWS; r++)
                for (size_t i = 0; i < ROW; i++)
                    bad +=
                        b[((size_t)(o - 1) * ROWS + r) * ROW + i] != pattern(o, pass[o] - 1 + r, i);
            CHECK(bad == 0, "%zu bytes of rank %d's slice of B are wrong", bad, o);
        }
    } else {
        pthread_t th;
        MPI_OK(MPI_Win_lock_all(0, c.win));
        pthread_create(&th, NULL, mover, &c);
        prober(&c);
        atomic_store(&c.stop, 1);
        pthread_join(th, NULL);
        MPI_OK(MPI_Win_unlock_all(c.win));
        MPI_Barrier(MPI_COMM_WORLD);
    }
    if (rt_rank == 0) {
        MPI_OK(MPI_Win_detach(c.win, b));
    }
    MPI_OK(MPI_Win_free(&c.win));
    if (b != NULL)
        MPI_Free_mem(b);
    MPI_Comm_free(&c.comm);
    return rt_finish("dyn_keys");
}
