/*
 * acc_threads - threads of one origin accumulate into one target at once, large and small
 * (MPI_THREAD_MULTIPLE). The first half of the ranks each target one rank of the second
 * half, inside one MPI_Win_lock_all, with three threads:
 *   - the main thread: ACC_THREADS_ITERS (100) MPI_Accumulate(MPI_SUM) of BIG int64
 *     elements (128 KiB: more than one request to the target's agent holds, so the origin
 *     takes the target's accumulate stripes and does the read-modify-write itself), each
 *     followed by MPI_Win_flush;
 *   - a second thread: 20 times as many 2-element accumulates (SUM) to a small area, a
 *     flush every 4 (small enough to go to the target's agent as requests where memory is
 *     reached by cross-memory attach or over the network);
 *   - a third thread: MPI_Fetch_and_op(+1) and MPI_Get_accumulate(MPI_NO_OP) on a counter.
 * The agent needs the stripes the main thread holds to answer the other threads' requests:
 * an origin that waited for those requests while it held the stripes never returned
 * (the deadlock this test was written for). At the end every element is exact, and the
 * fetch_and_op results are distinct. Window flavor: ACC_THREADS_FLAVOR=create (default,
 * malloc'd memory), allocate, or dynamic. Skipped (exit 0) without MPI_THREAD_MULTIPLE.
 */
#include "rmatest.h"

#include <pthread.h>
#include <stdint.h>

#define BIG   16384 /* int64 elements of the large accumulate */
#define SMALL 128   /* int64 elements of the small area, after the large one */
#define CNT   (BIG + SMALL)
#define NCNT  (CNT + 2) /* elements in all: the counter, and one to make 16-byte multiples */

static int iters = 100;
static MPI_Win win;
static int peer;
static MPI_Aint base, unit; /* the target's displacement of element 0, and of one element */
#define DISP(i) (base + (MPI_Aint)(i)*unit)

static void *small_accs(void *arg)
{
    int64_t v[2] = {1, 1};

    (void)arg;
    for (int i = 0; i < iters * 20; i++) {
        MPI_OK(MPI_Accumulate(v, 2, MPI_INT64_T, peer, DISP(BIG + 2 * (i % (SMALL / 2))), 2,
                              MPI_INT64_T, MPI_SUM, win));
        if (i % 4 == 3)
            MPI_OK(MPI_Win_flush(peer, win));
    }
    MPI_OK(MPI_Win_flush(peer, win));
    return NULL;
}

static int64_t *fetched;

static void *counter_ops(void *arg)
{
    int64_t one = 1, got;

    (void)arg;
    for (int i = 0; i < iters * 4; i++) {
        MPI_OK(MPI_Fetch_and_op(&one, &fetched[i], MPI_INT64_T, peer, DISP(CNT), MPI_SUM, win));
        MPI_OK(MPI_Get_accumulate(NULL, 0, MPI_INT64_T, &got, 1, MPI_INT64_T, peer, DISP(CNT), 1,
                                  MPI_INT64_T, MPI_NO_OP, win));
        MPI_OK(MPI_Win_flush(peer, win));
        CHECK(got >= fetched[i] + 1, "counter read %lld after fetch_and_op returned %lld",
              (long long)got, (long long)fetched[i]);
    }
    return NULL;
}

static int cmp64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    const char *flavor = getenv("ACC_THREADS_FLAVOR"), *s = getenv("ACC_THREADS_ITERS");
    int prov, rank, np, origin;
    int64_t *mem = NULL, *big;

    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &prov);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    rt_rank = rank;
    if (prov != MPI_THREAD_MULTIPLE || np < 2) {
        if (rank == 0)
            printf("acc_threads: skipped (needs MPI_THREAD_MULTIPLE and 2 ranks)\n");
        MPI_Finalize();
        return 0;
    }
    if (s != NULL)
        iters = atoi(s);
    flavor = flavor != NULL ? flavor : "create";
    origin = rank < np / 2;
    peer = origin ? rank + np / 2 : rank - np / 2;
    if (rank == np - 1 && np % 2 == 1)
        peer = -1; /* odd one out: neither origin nor target */

    if (strcmp(flavor, "allocate") == 0) {
        MPI_OK(MPI_Win_allocate(NCNT * 8, 8, MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win));
    } else if (strcmp(flavor, "dynamic") == 0) {
        MPI_OK(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
        mem = malloc(NCNT * 8);
        MPI_OK(MPI_Win_attach(win, mem, NCNT * 8));
    } else {
        mem = malloc(NCNT * 8);
        MPI_OK(MPI_Win_create(mem, NCNT * 8, 8, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    }
    memset(mem, 0, NCNT * 8);
    /* a dynamic window's displacements are addresses (bytes), the others' elements */
    unit = strcmp(flavor, "dynamic") == 0 ? 8 : 1;
    {
        MPI_Aint mine = 0, *all = malloc(np * sizeof(*all));
        if (strcmp(flavor, "dynamic") == 0)
            MPI_Get_address(mem, &mine);
        MPI_Allgather(&mine, 1, MPI_AINT, all, 1, MPI_AINT, MPI_COMM_WORLD);
        base = peer >= 0 ? all[peer] : 0;
        free(all);
    }
    MPI_Barrier(MPI_COMM_WORLD);

    big = malloc(BIG * 8);
    fetched = malloc((size_t)iters * 4 * sizeof(*fetched));
    for (int i = 0; i < BIG; i++)
        big[i] = 1;

    MPI_OK(MPI_Win_lock_all(0, win));
    if (origin && peer >= 0) {
        pthread_t t1, t2;
        pthread_create(&t1, NULL, small_accs, NULL);
        pthread_create(&t2, NULL, counter_ops, NULL);
        for (int i = 0; i < iters; i++) {
            MPI_OK(MPI_Accumulate(big, BIG, MPI_INT64_T, peer, DISP(0), BIG, MPI_INT64_T, MPI_SUM,
                                  win));
            MPI_OK(MPI_Win_flush(peer, win));
        }
        pthread_join(t1, NULL);
        pthread_join(t2, NULL);
        qsort(fetched, (size_t)iters * 4, sizeof(*fetched), cmp64);
        for (int i = 0; i < iters * 4; i++)
            CHECK(fetched[i] == i, "fetch_and_op results: sorted, %d-th is %lld", i,
                  (long long)fetched[i]);
    }
    MPI_OK(MPI_Win_unlock_all(win));
    MPI_Barrier(MPI_COMM_WORLD);

    if (!origin && peer >= 0) {
        int64_t sum = 0;
        int bad = 0;
        for (int i = 0; i < BIG; i++)
            bad += mem[i] != iters;
        CHECK(bad == 0, "%d of %d elements of the large accumulates are not %d (first: %lld)", bad,
              BIG, iters, (long long)mem[0]);
        for (int i = BIG; i < CNT; i++)
            sum += mem[i];
        CHECK(sum == (int64_t)iters * 20 * 2, "small accumulates sum to %lld, expected %lld",
              (long long)sum, (long long)iters * 40);
        CHECK(mem[CNT] == iters * 4, "counter %lld, expected %d", (long long)mem[CNT], iters * 4);
    }
    if (strcmp(flavor, "dynamic") == 0)
        MPI_OK(MPI_Win_detach(win, mem));
    MPI_Win_free(&win);
    if (strcmp(flavor, "allocate") != 0)
        free(mem);
    free(big);
    free(fetched);
    return rt_finish("acc_threads");
}
