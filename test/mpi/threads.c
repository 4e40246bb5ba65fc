/*
 * threads - one window used by several threads of each process at once (MPI_THREAD_MULTIPLE).
 * 4 threads per rank loop THREADS_ITERS (500) times: MPI_Win_lock (exclusive and shared in
 * turn) of a target, MPI_Put to the thread's private slot there, MPI_Get it back and check,
 * MPI_Accumulate(MPI_SUM +1, MPI_LONG) on the target's shared counter, MPI_Win_flush,
 * MPI_Fetch_and_op(+1) on its second counter, MPI_Win_unlock; every 10th iteration instead
 * MPI_Win_lock_all, an accumulate to every rank, MPI_Win_flush_all, MPI_Win_unlock_all.
 * Threads of one process lock the same target at the same time: they must wait for each
 * other, never fail or hang (librma's promise; MPI-4 §12.5 wants the access epochs of one
 * process on one window disjoint, and MPICH 4.0 aborts on an internal assertion). At the end
 * both counters of every rank are exact, and the fetch_and_op results at each target are a
 * permutation. One thread locking the same target twice (or unlocking it twice) stays
 * MPI_ERR_RMA_SYNC. Rank 0's threads all put at once in one PSCW access epoch before the
 * targets' (late) posts arrive: the post is consumed once, so the next round's epoch waits
 * for the next post and sees its values land (before, each thread counted it and the next
 * round hung). A thread that joined another thread's shared lock (and lock_all) and
 * unlocks first has its operations complete at the target on return: rank 0's second thread
 * puts under the joined lock, unlocks, and tells the target by MPI_Send, which must then
 * find the value in its memory while the first thread still holds its lock.
 * Skipped (exit 0) when the library does not provide MPI_THREAD_MULTIPLE.
 * THREADS_SERIALIZE=1 makes the program itself keep its threads' epochs apart (one at a time
 * in each process), to check everything else on MPICH.
 */
#include "rmatest.h"

#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#define NT     4
#define O_ACC  0  /* long: accumulate counter */
#define O_FOP  8  /* long: fetch_and_op counter */
#define O_JOIN 16 /* long: the put under a joined lock */
#define O_PSCW 24 /* long[NT]: the threads' puts in one PSCW epoch */
#define O_SLOT 64 /* long[8] per (origin rank, thread) */
#define SLOTL  8

static int ITERS = 500; /* env THREADS_ITERS */
static int rank, nprocs;
static MPI_Win win;
static pthread_mutex_t check_mu = PTHREAD_MUTEX_INITIALIZER;
static long *acc_to, *fop_to; /* [NT * nprocs]: per thread, per target */
static int *seen;             /* [nprocs * maxfop]: fetch_and_op results at each target */
static int maxfop;
static pthread_barrier_t start;
static int *inepoch, *excl; /* [nprocs]: this process's threads inside an epoch on a target */
static int *wanting;        /* [nprocs]: threads of this process inside MPI_Win_lock */
static long contended;      /* MPI_Win_lock calls made while another thread wanted or held it */
static long overlap;        /* an exclusive epoch overlapped another epoch of this process */
static int serialize;       /* env THREADS_SERIALIZE */
static long *winmem;        /* this rank's window memory */
static pthread_mutex_t epoch_mu = PTHREAD_MUTEX_INITIALIZER; /* THREADS_SERIALIZE */

/* CHECK and MPI_OK from threads: rmatest.h's counters are not thread-safe. */
#define TCHECK(cond, ...)                                                                          \
    do {                                                                                           \
        int tc_ok_ = (cond);                                                                       \
        pthread_mutex_lock(&check_mu);                                                             \
        CHECK(tc_ok_, __VA_ARGS__);                                                                \
        pthread_mutex_unlock(&check_mu);                                                           \
    } while (0)
/* An MPI call in a thread: counted in the thread's nok or nfail, the first failures shown. */
#define TOK(call)                                                                                  \
    do {                                                                                           \
        int tk_rc_ = (call);                                                                       \
        if (tk_rc_ == MPI_SUCCESS)                                                                 \
            nok++;                                                                                 \
        else if (nfail++ < 3)                                                                      \
            TCHECK(0, "thread %d iteration %d: %s: %s", t, i, #call, errtext(tk_rc_, ebuf));       \
    } while (0)

/* "class N: the error string" of an MPI error code, in buf. */
static const char *errtext(int rc, char *buf)
{
    int cls = -1, len = 0;
    char str[MPI_MAX_ERROR_STRING];

    MPI_Error_class(rc, &cls);
    str[0] = 0;
    MPI_Error_string(rc, str, &len);
    snprintf(buf, MPI_MAX_ERROR_STRING + 32, "class %d: %s", cls, str);
    return buf;
}

static MPI_Aint slot(int origin, int t)
{
    return O_SLOT + (MPI_Aint)(origin * NT + t) * SLOTL * sizeof(long);
}

static void *worker(void *arg)
{
    int t = (int)(long)arg, i = -1, bad = 0, firstbad = -1, nfail = 0, lockfail = 0, rc;
    long nok = 0;
    char ebuf[MPI_MAX_ERROR_STRING + 32];
    long one = 1, vals[SLOTL], got[SLOTL];

    pthread_barrier_wait(&start);
    for (i = 0; i < ITERS; i++) {
        if (i % 10 == 9) {
            if (serialize)
                pthread_mutex_lock(&epoch_mu);
            rc = MPI_Win_lock_all(0, win);
            nok += rc == MPI_SUCCESS;
            if (rc != MPI_SUCCESS) {
                if (lockfail++ < 3)
                    TCHECK(0, "thread %d iteration %d: MPI_Win_lock_all: %s", t, i,
                           errtext(rc, ebuf));
                if (serialize)
                    pthread_mutex_unlock(&epoch_mu);
                continue;
            }
            for (int r = 0; r < nprocs; r++) {
                /* a shared lock on every rank: no exclusive epoch of this process meanwhile */
                __atomic_fetch_add(&inepoch[r], 1, __ATOMIC_SEQ_CST);
                if (__atomic_load_n(&excl[r], __ATOMIC_SEQ_CST))
                    __atomic_fetch_add(&overlap, 1, __ATOMIC_RELAXED);
                TOK(MPI_Accumulate(&one, 1, MPI_LONG, r, O_ACC, 1, MPI_LONG, MPI_SUM, win));
                acc_to[t * nprocs + r]++;
            }
            TOK(MPI_Win_flush_all(win));
            for (int r = 0; r < nprocs; r++)
                __atomic_fetch_sub(&inepoch[r], 1, __ATOMIC_SEQ_CST);
            TOK(MPI_Win_unlock_all(win));
            if (serialize)
                pthread_mutex_unlock(&epoch_mu);
            continue;
        }
        int target = (rank + t + i) % nprocs;
        int lt = (i + t) % 2 ? MPI_LOCK_SHARED : MPI_LOCK_EXCLUSIVE;
        long fr = -1;
        if (__atomic_fetch_add(&wanting[target], 1, __ATOMIC_SEQ_CST) > 0 ||
            __atomic_load_n(&inepoch[target], __ATOMIC_SEQ_CST) > 0)
            __atomic_fetch_add(&contended, 1, __ATOMIC_RELAXED);
        if (serialize)
            pthread_mutex_lock(&epoch_mu);
        rc = MPI_Win_lock(lt, target, 0, win);
        __atomic_fetch_sub(&wanting[target], 1, __ATOMIC_SEQ_CST);
        nok += rc == MPI_SUCCESS;
        if (rc != MPI_SUCCESS) {
            if (lockfail++ < 3)
                TCHECK(0, "thread %d iteration %d: MPI_Win_lock(%s, %d): %s", t, i,
                       lt == MPI_LOCK_EXCLUSIVE ? "exclusive" : "shared", target,
                       errtext(rc, ebuf));
            if (serialize)
                pthread_mutex_unlock(&epoch_mu);
            continue;
        }
        /* an exclusive epoch shares the target with no other epoch of this process either */
        if (__atomic_fetch_add(&inepoch[target], 1, __ATOMIC_SEQ_CST) > 0 &&
            lt == MPI_LOCK_EXCLUSIVE)
            __atomic_fetch_add(&overlap, 1, __ATOMIC_RELAXED);
        if (lt == MPI_LOCK_EXCLUSIVE)
            __atomic_store_n(&excl[target], 1, __ATOMIC_SEQ_CST);
        else if (__atomic_load_n(&excl[target], __ATOMIC_SEQ_CST))
            __atomic_fetch_add(&overlap, 1, __ATOMIC_RELAXED);
        for (int j = 0; j < SLOTL; j++)
            vals[j] = ((long)rank << 40) + ((long)t << 32) + (long)i * SLOTL + j;
        TOK(MPI_Put(vals, SLOTL, MPI_LONG, target, slot(rank, t), SLOTL, MPI_LONG, win));
        if (i % 4 == 0)
            sched_yield(); /* let another thread of this process try this target meanwhile */
        TOK(MPI_Win_flush(target, win));
        memset(got, 0, sizeof(got));
        TOK(MPI_Get(got, SLOTL, MPI_LONG, target, slot(rank, t), SLOTL, MPI_LONG, win));
        TOK(MPI_Win_flush(target, win));
        if (memcmp(got, vals, sizeof(vals)) != 0 && bad++ == 0)
            firstbad = i;
        TOK(MPI_Accumulate(&one, 1, MPI_LONG, target, O_ACC, 1, MPI_LONG, MPI_SUM, win));
        TOK(MPI_Win_flush(target, win));
        TOK(MPI_Fetch_and_op(&one, &fr, MPI_LONG, target, O_FOP, MPI_SUM, win));
        if (lt == MPI_LOCK_EXCLUSIVE)
            __atomic_store_n(&excl[target], 0, __ATOMIC_SEQ_CST);
        __atomic_fetch_sub(&inepoch[target], 1, __ATOMIC_SEQ_CST);
        TOK(MPI_Win_unlock(target, win));
        if (serialize)
            pthread_mutex_unlock(&epoch_mu);
        acc_to[t * nprocs + target]++;
        fop_to[t * nprocs + target]++;
        if (fr >= 0 && fr < maxfop)
            __atomic_fetch_add(&seen[target * maxfop + fr], 1, __ATOMIC_RELAXED);
        else
            TCHECK(0, "thread %d iteration %d: fetch_and_op at %d fetched %ld", t, i, target, fr);
    }
    TCHECK(bad == 0, "thread %d: %d gets after put differ (first at iteration %d)", t, bad,
           firstbad);
    TCHECK(lockfail == 0, "thread %d: %d of %d MPI_Win_lock/MPI_Win_lock_all calls failed", t,
           lockfail, ITERS);
    TCHECK(nfail == 0, "thread %d: %d other MPI calls failed", t, nfail);
    pthread_mutex_lock(&check_mu);
    rt_checks += nok; /* the calls that succeeded, as MPI_OK counts them */
    pthread_mutex_unlock(&check_mu);
    return NULL;
}

typedef struct {
    int t;
    long v;
    int all;
} join_arg_t;

/* Rank 0's threads in one PSCW epoch: thread t puts its value to every other rank. */
static long pscw_val[NT];
static int pscw_rc[NT];

static void *pscw_put(void *arg)
{
    long t = (long)arg;

    pscw_rc[t] = MPI_SUCCESS;
    for (int r = 1; r < nprocs && pscw_rc[t] == MPI_SUCCESS; r++)
        pscw_rc[t] = MPI_Put(&pscw_val[t], 1, MPI_LONG, r, O_PSCW + t * (MPI_Aint)sizeof(long), 1,
                             MPI_LONG, win);
    return NULL;
}

/* Rank 0's second thread: joins the first one's shared lock (or lock_all) on a->t, puts,
 * unlocks and tells the target. */
static void *joined_put(void *arg)
{
    join_arg_t *a = arg;

    if (a->all)
        MPI_OK(MPI_Win_lock_all(0, win));
    else
        MPI_OK(MPI_Win_lock(MPI_LOCK_SHARED, a->t, 0, win));
    MPI_OK(MPI_Put(&a->v, 1, MPI_LONG, a->t, O_JOIN, 1, MPI_LONG, win));
    if (a->all)
        MPI_OK(MPI_Win_unlock_all(win));
    else
        MPI_OK(MPI_Win_unlock(a->t, win));
    MPI_Send(NULL, 0, MPI_BYTE, a->t, 77, MPI_COMM_WORLD);
    return NULL;
}

/* Rank 0's second thread: twice opens an epoch on a->t (an exclusive lock, or lock_all)
 * and puts, and the main thread ends it (the epoch is the process's). */
static pthread_barrier_t handover;

static void *handed_over(void *arg)
{
    join_arg_t *a = arg;

    for (int k = 0; k < 2; k++) {
        long v = a->v + k;
        if (a->all)
            MPI_OK(MPI_Win_lock_all(0, win));
        else
            MPI_OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, a->t, 0, win));
        MPI_OK(MPI_Put(&v, 1, MPI_LONG, a->t, O_JOIN, 1, MPI_LONG, win));
        pthread_barrier_wait(&handover); /* the main thread unlocks */
        pthread_barrier_wait(&handover);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    long *mem;
    pthread_t th[NT];
    MPI_Aint winsize;

    if (!rt_init_multiple(&argc, &argv, "threads"))
        return 0;
    rank = rt_rank;
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    ITERS = rt_env_int("THREADS_ITERS", ITERS);
    serialize = rt_env_int("THREADS_SERIALIZE", serialize);
    maxfop = nprocs * NT * ITERS;
    inepoch = calloc(nprocs, sizeof(int));
    excl = calloc(nprocs, sizeof(int));
    wanting = calloc(nprocs, sizeof(int));
    pthread_barrier_init(&start, NULL, NT);
    acc_to = calloc((size_t)NT * nprocs, sizeof(long));
    fop_to = calloc((size_t)NT * nprocs, sizeof(long));
    seen = calloc((size_t)nprocs * maxfop, sizeof(int));
    winsize = O_SLOT + (MPI_Aint)nprocs * NT * SLOTL * sizeof(long);
    MPI_OK(MPI_Win_allocate(winsize, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win));
    winmem = mem;
    MPI_OK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    memset(mem, 0, winsize);
    MPI_Barrier(MPI_COMM_WORLD);

    double t0 = MPI_Wtime();
    for (long t = 0; t < NT; t++)
        pthread_create(&th[t], NULL, worker, (void *)t);
    for (int t = 0; t < NT; t++)
        pthread_join(th[t], NULL);
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(overlap == 0,
          "%ld times an exclusive epoch of one thread overlapped another thread's epoch", overlap);
    MPI_Allreduce(MPI_IN_PLACE, &contended, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("%d threads x %d iterations per rank%s: %.2f s, %ld MPI_Win_lock calls while "
               "another thread of the process wanted or held that target\n",
               NT, ITERS, serialize ? " (epochs serialized by the program)" : "", MPI_Wtime() - t0,
               contended);

    /* totals: per target, summed over every origin's threads */
    {
        long *want_acc = calloc(nprocs, sizeof(long)), *want_fop = calloc(nprocs, sizeof(long));
        long cnt[2];
        for (int t = 0; t < NT; t++)
            for (int r = 0; r < nprocs; r++) {
                want_acc[r] += acc_to[t * nprocs + r];
                want_fop[r] += fop_to[t * nprocs + r];
            }
        MPI_Allreduce(MPI_IN_PLACE, want_acc, nprocs, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
        MPI_Allreduce(MPI_IN_PLACE, want_fop, nprocs, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
        MPI_OK(MPI_Win_lock_all(0, win));
        for (int r = 0; r < nprocs; r++) {
            cnt[0] = cnt[1] = -1;
            MPI_OK(MPI_Get(cnt, 2, MPI_LONG, r, O_ACC, 2, MPI_LONG, win));
            MPI_OK(MPI_Win_flush(r, win));
            CHECK(cnt[0] == want_acc[r], "accumulate counter at rank %d: %ld, want %ld", r, cnt[0],
                  want_acc[r]);
            CHECK(cnt[1] == want_fop[r], "fetch_and_op counter at rank %d: %ld, want %ld", r,
                  cnt[1], want_fop[r]);
        }
        MPI_OK(MPI_Win_unlock_all(win));
        /* the fetched values at each target: 0 .. count-1, each once */
        MPI_Allreduce(MPI_IN_PLACE, seen, nprocs * maxfop, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        if (rank == 0)
            for (int r = 0; r < nprocs; r++) {
                int bad = 0;
                for (int v = 0; v < maxfop; v++)
                    bad += seen[r * maxfop + v] != (v < want_fop[r]);
                CHECK(bad == 0, "fetch_and_op results at rank %d: not a permutation (%d wrong)", r,
                      bad);
            }
        free(want_acc);
        free(want_fop);
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* a joined lock's unlock completes that thread's operations; again with lock_all */
    for (int all = 0; all < 2; all++) {
        int t = nprocs - 1;
        long v = 4242 + all;
        if (rank == 0) {
            pthread_t b;
            join_arg_t ja = {t, v, all};
            if (all)
                MPI_OK(MPI_Win_lock_all(0, win));
            else
                MPI_OK(MPI_Win_lock(MPI_LOCK_SHARED, t, 0, win));
            pthread_create(&b, NULL, joined_put, &ja);
            pthread_join(b, NULL);
            if (all)
                MPI_OK(MPI_Win_unlock_all(win));
            else
                MPI_OK(MPI_Win_unlock(t, win));
        } else if (rank == t) {
            long got;
            MPI_Recv(NULL, 0, MPI_BYTE, 0, 77, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_OK(MPI_Win_lock(MPI_LOCK_SHARED, t, 0, win));
            got = winmem[O_JOIN / sizeof(long)];
            MPI_OK(MPI_Win_unlock(t, win));
            CHECK(got == v,
                  "%s: rank 0's thread put %ld under a joined lock and unlocked, rank %d "
                  "then found %ld",
                  all ? "lock_all" : "lock", v, t, got);
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }

    /* an epoch one thread opens, another may end: the first may then open it again */
    for (int all = 0; all < 2; all++) {
        int t = nprocs - 1;
        long v = 5000 + 10 * all;
        if (rank == 0) {
            pthread_t b;
            join_arg_t ja = {t, v, all};
            pthread_barrier_init(&handover, NULL, 2);
            pthread_create(&b, NULL, handed_over, &ja);
            for (int k = 0; k < 2; k++) {
                pthread_barrier_wait(&handover);
                if (all)
                    MPI_OK(MPI_Win_unlock_all(win));
                else
                    MPI_OK(MPI_Win_unlock(t, win));
                MPI_Send(NULL, 0, MPI_BYTE, t, 78, MPI_COMM_WORLD);
                MPI_Recv(NULL, 0, MPI_BYTE, t, 79, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* read */
                pthread_barrier_wait(&handover);
            }
            pthread_join(b, NULL);
            pthread_barrier_destroy(&handover);
            /* and the main thread's own epochs on that window still open */
            MPI_OK(MPI_Win_lock(MPI_LOCK_SHARED, t, 0, win));
            MPI_OK(MPI_Win_unlock(t, win));
            MPI_OK(MPI_Win_lock_all(0, win));
            MPI_OK(MPI_Win_unlock_all(win));
        } else if (rank == t) {
            for (int k = 0; k < 2; k++) {
                long got;
                MPI_Recv(NULL, 0, MPI_BYTE, 0, 78, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_OK(MPI_Win_lock(MPI_LOCK_SHARED, t, 0, win));
                got = winmem[O_JOIN / sizeof(long)];
                MPI_OK(MPI_Win_unlock(t, win));
                CHECK(got == v + k,
                      "%s opened by one thread of rank 0 and ended by another (round %d): "
                      "rank %d found %ld, want %ld",
                      all ? "lock_all" : "lock", k, t, got, v + k);
                MPI_Send(NULL, 0, MPI_BYTE, 0, 79, MPI_COMM_WORLD);
            }
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }

    /* one PSCW access epoch, its first operations from several threads at once */
    {
        MPI_Group world, peers;
        int zero = 0;
        MPI_Comm_group(MPI_COMM_WORLD, &world);
        if (rank == 0)
            MPI_Group_excl(world, 1, &zero, &peers);
        else
            MPI_Group_incl(world, 1, &zero, &peers);
        for (int round = 1; round <= 20; round++) {
            if (rank == 0) {
                pthread_t pt[NT];
                MPI_OK(MPI_Win_start(peers, 0, win));
                for (long t = 0; t < NT; t++) {
                    pscw_val[t] = round * 100 + t;
                    pthread_create(&pt[t], NULL, pscw_put, (void *)t);
                }
                for (int t = 0; t < NT; t++) {
                    pthread_join(pt[t], NULL);
                    MPI_OK(pscw_rc[t]);
                }
                MPI_OK(MPI_Win_complete(win));
            } else {
                usleep(2000); /* rank 0's threads wait for this post together */
                MPI_OK(MPI_Win_post(peers, 0, win));
                MPI_OK(MPI_Win_wait(win));
                for (int t = 0; t < NT; t++)
                    CHECK(winmem[O_PSCW / sizeof(long) + t] == round * 100 + t,
                          "PSCW round %d: thread %d's put reads %ld", round, t,
                          winmem[O_PSCW / sizeof(long) + t]);
            }
        }
        MPI_Group_free(&peers);
        MPI_Group_free(&world);
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* one thread locking the same target twice is still an error */
    {
        int right = (rank + 1) % nprocs;
        MPI_OK(MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win));
        MPI_ERRCLASS(MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win), MPI_ERR_RMA_SYNC);
        MPI_ERRCLASS(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win), MPI_ERR_RMA_SYNC);
        MPI_OK(MPI_Win_unlock(right, win));
        MPI_ERRCLASS(MPI_Win_unlock(right, win), MPI_ERR_RMA_SYNC);
        MPI_OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win));
        MPI_ERRCLASS(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win), MPI_ERR_RMA_SYNC);
        MPI_OK(MPI_Win_unlock(right, win));
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_OK(MPI_Win_free(&win));
    free(acc_to);
    free(fop_to);
    free(seen);
    free(inepoch);
    free(excl);
    free(wanting);
    pthread_barrier_destroy(&start);
    return rt_finish("threads");
}
