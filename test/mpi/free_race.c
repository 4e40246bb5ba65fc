/*
 * free_race - no write is lost, and no stale or zero value read, while MPI_Win_free moves a
 * window's pages back to the program's private memory (doc/protocols.md): each rank's
 * window on a malloc'd array is moved by its left neighbour's gets (onto a memfd from a
 * same-node peer; onto a block from UCX for a rank alone on its node), then one of its
 * threads stores into and reads back every page in turn while its main thread frees the
 * window. Afterwards each page holds the thread's last store and the neighbour's data, and
 * the array grows with realloc. A timer's signal handler on the freeing thread reads the
 * window's last page meanwhile. Last, a window made and freed by a thread whose stack lies
 * right below it moves back too. Rounds without a move still check the data; with
 * FREE_RACE_EXPECT_MOVE set, half the windows must have moved where librma moves memory.
 * Needs MPI_THREAD_MULTIPLE. FREE_RACE_ROUNDS sets the rounds (default 12).
 */
#include "rma_ext.h"
#include "rmatest.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define LEN   (4L << 20)
#define PAGES (LEN / 4096)
#define WORDS (4096 / (long)sizeof(long))

static long *buf;
static long last[PAGES]; /* the thread's last store into each page */
static atomic_int stop;
static atomic_long passes; /* over every page */
static atomic_long bad;

/* A timer's signal to the freeing thread every 20 µs, whose handler reads the last page:
 * the page the move back fills last, so a handler that waited for its own thread would
 * hang MPI_Win_free */
static volatile long signals, sig_sum;

static void on_timer(int sig)
{
    (void)sig;
    sig_sum += buf[(PAGES - 1) * WORDS + 3];
    signals++;
}

static void *toucher(void *arg)
{
    long v = 1;

    (void)arg;
    while (!atomic_load(&stop)) {
        for (long p = 0; p < PAGES; p++) {
            buf[p * WORDS + 7] = v;
            last[p] = v;
            if (buf[p * WORDS + 7] != v || buf[p * WORDS + 3] != p)
                atomic_fetch_add(&bad, 1);
        }
        v++;
        atomic_fetch_add(&passes, 1);
    }
    return NULL;
}

/* The buffer's mapping is private (its permissions end in 'p'), or 1 when it cannot be
 * read. */
static int buf_private(const void *p)
{
    char perms[8];
    unsigned long ino;

    return !rt_mapping_of(p, perms, &ino) || perms[3] == 'p';
}

/* A window made, moved and freed by a thread whose stack lies right below the buffer
 * (mapped just before the thread was started): its pages move back all the same. */
static int stack_rank, stack_nprocs, stack_moved;

static void *stack_neighbour(void *arg)
{
    MPI_Win win;

    (void)arg;
    MPI_OK(MPI_Win_create(buf, 256 * 1024, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    stack_moved = rt_drive_gets(win, (stack_rank + 1) % stack_nprocs, 24, 64, 2);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_OK(MPI_Win_free(&win));
    return NULL;
}

static void test_stack_neighbour(int rank, int nprocs)
{
    pthread_t t;
    int moved;

    pthread_attr_t attr;
    size_t stack = 1 << 20;
    char *both =
        mmap(NULL, stack + 256 * 1024, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    stack_rank = rank;
    stack_nprocs = nprocs;
    buf = (long *)(both + stack); /* the thread's stack below it, as mmap places them */
    for (long p = 0; p < 64; p++)
        buf[p * WORDS + 3] = p;
    pthread_attr_init(&attr);
    pthread_attr_setstack(&attr, both, stack);
    CHECK(pthread_create(&t, &attr, stack_neighbour, NULL) == 0, "pthread_create failed");
    pthread_join(t, NULL);
    pthread_attr_destroy(&attr);
    moved = stack_moved; /* this rank's memory, moved by the left neighbour's traffic */
    MPI_Allreduce(MPI_IN_PLACE, &moved, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    if (getenv("FREE_RACE_EXPECT_MOVE") != NULL && rt_moves(rank))
        CHECK(moved, "stack neighbour: the window was not moved");
    if (moved)
        CHECK(buf_private(buf), "stack neighbour: the buffer is still shared memory after "
                                "MPI_Win_free by a thread whose stack is next to it");
    CHECK(buf[63 * WORDS + 3] == 63, "stack neighbour: data lost");
    munmap(both, stack + 256 * 1024);
}

int main(int argc, char **argv)
{
    int provided, rank, nprocs, moves = 0;
    int rounds = getenv("FREE_RACE_ROUNDS") ? atoi(getenv("FREE_RACE_ROUNDS")) : 12;

    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    rt_rank = rank;
    CHECK(provided == MPI_THREAD_MULTIPLE, "MPI_THREAD_MULTIPLE not provided (%d)", provided);
    struct sigaction sa = {.sa_handler = on_timer, .sa_flags = SA_RESTART};
    struct sigevent ev = {.sigev_notify = SIGEV_THREAD_ID, .sigev_signo = SIGALRM};
    struct itimerspec every = {{0, 20000}, {0, 20000}}, off = {{0, 0}, {0, 0}};
    timer_t timer;
    sigaction(SIGALRM, &sa, NULL);
    ev._sigev_un._tid = (pid_t)syscall(SYS_gettid);
    CHECK(timer_create(CLOCK_MONOTONIC, &ev, &timer) == 0, "timer_create failed");
    for (int r = 0; r < rounds && provided == MPI_THREAD_MULTIPLE; r++) {
        MPI_Win win;
        pthread_t t;
        long b, pass0;

        buf = malloc(LEN);
        for (long p = 0; p < PAGES; p++) {
            buf[p * WORDS + 3] = p;
            buf[p * WORDS + 7] = last[p] = 0;
        }
        MPI_OK(MPI_Win_create(buf, LEN, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
        moves += rt_drive_gets(win, (rank + 1) % nprocs, 24, 64, 2);
        MPI_Barrier(MPI_COMM_WORLD);
        atomic_store(&stop, 0);
        atomic_store(&passes, 0);
        pthread_create(&t, NULL, toucher, NULL);
        while (atomic_load(&passes) < 1)
            sched_yield();
        timer_settime(timer, 0, &every, NULL);
        MPI_OK(MPI_Win_free(&win));
        timer_settime(timer, 0, &off, NULL);
        pass0 = atomic_load(&passes);
        while (atomic_load(&passes) < pass0 + 2)
            sched_yield();
        atomic_store(&stop, 1);
        pthread_join(t, NULL);
        b = atomic_exchange(&bad, 0);
        CHECK(b == 0, "round %d: %ld reads of the thread's own store or the data wrong", r, b);
        b = 0;
        for (long p = 0; p < PAGES; p++)
            b += buf[p * WORDS + 7] != last[p] || buf[p * WORDS + 3] != p;
        CHECK(b == 0, "round %d: %ld pages lost a store after MPI_Win_free", r, b);
        CHECK(sig_sum == (PAGES - 1) * signals, "round %d: the timer's handler read %ld", r,
              sig_sum);
        sig_sum = signals = 0;
        long *grown = realloc(buf, 2 * LEN); /* SIGBUS where pages stayed on a segment */
        CHECK(grown != NULL, "round %d: realloc failed", r);
        if (grown != NULL) {
            memset(grown + LEN / sizeof(long), 1, LEN);
            CHECK(grown[5 * WORDS + 3] == 5, "round %d: realloc lost the data", r);
            buf = grown;
        }
        free(buf);
    }
    if (provided == MPI_THREAD_MULTIPLE)
        test_stack_neighbour(rank, nprocs);
    MPI_Allreduce(MPI_IN_PLACE, &moves, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("free_race: %d of %d windows moved\n", moves, rounds * nprocs);
    /* where memory moves, most windows did (or the race was not run) */
    if (getenv("FREE_RACE_EXPECT_MOVE") != NULL && rt_moves(rank))
        CHECK(moves * 2 >= rounds * nprocs, "only %d of %d windows moved", moves, rounds * nprocs);
    return rt_finish("free_race");
}
