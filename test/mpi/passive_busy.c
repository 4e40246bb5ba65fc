/*
 * passive_busy - passive-target progress while the target computes. 2 ranks: rank 1 is the
 * target (off-node in test/runtests' twonode topology, reached through the network with
 * RMA_NETMOD_ONLY=1). For an MPI_Win_create and an MPI_Win_allocate window: after a fence
 * the target computes for BUSY_SECONDS (default 2) without any MPI call (a spin on
 * clock_gettime plus arithmetic), while rank 0 runs MPI_Win_lock(EXCLUSIVE, 1), MPI_Put,
 * MPI_Get, MPI_Accumulate(SUM), MPI_Win_unlock and times that epoch, then enters a fence.
 * The target, back from computing, enters the same fence (its first librma call since),
 * then checks under a lock on itself what the epoch left; rank 0 checks what it got. The
 * synchronizations are fences (MPI_MODE_NOPRECEDE | MPI_MODE_NOSUCCEED), not MPI_Barrier:
 * with RMA_AGENT=off a rank makes progress for others only inside librma calls.
 *
 * Expected, from RMA_AGENT (default block): block and poll -> the target's progress agent
 * serves the epoch, which ends well before the compute does (elapsed < BUSY_SECONDS / 2);
 * off -> progress only inside librma calls, so the epoch may last until the target calls
 * librma again: only the data are checked. When the target is on this node (and
 * RMA_NETMOD_ONLY is not set) the epoch never needs the target: fast in every mode. The
 * elapsed time is printed in every case.
 *
 * Then the idle phase: after an epoch, both ranks sleep IDLE_SECONDS (default 1) without
 * any MPI call, and each reads the CPU time its progress agent (the thread named
 * "rma-agent") used meanwhile: block and off must use at most 5 % of the time (block sleeps
 * on the worker's event descriptor, off drives no network), poll at least 25 % when the
 * agent drives a network (it polls all the time, as doc/tuning.md says). Printed always.
 */
#define _GNU_SOURCE
#include "rmatest.h"

#include <dirent.h>
#include <time.h>
#include <unistd.h>

#define N      256 /* ints per region */
/* window layout (ints): put region, get region, accumulate region, flag */
#define R_PUT  0
#define R_GET  N
#define R_ACC  (2 * N)
#define R_FLAG (3 * N)
#define NINTS  (3 * N + 1)

static int rank;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* `seconds` of arithmetic and clock reads, with no MPI call. */
static double compute(double seconds)
{
    volatile double x = 1.0;
    double t0 = now();
    while (now() - t0 < seconds)
        for (int i = 0; i < 1000; i++)
            x = x * 1.0000001 + 1e-9;
    return x;
}

static int val(int region, int i)
{
    return region * 7919 + i * 3 + 1;
}

static void run(int create, double busy, const char *mode, int target_local)
{
    const char *fl = create ? "create" : "allocate";
    int *mem = NULL, one = 1;
    MPI_Win win;

    if (create) {
        mem = malloc(NINTS * sizeof(int));
        MPI_OK(MPI_Win_create(mem, NINTS * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD,
                              &win));
    } else {
        MPI_OK(MPI_Win_allocate(NINTS * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD,
                                &mem, &win));
    }
    MPI_OK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    for (int i = 0; i < N; i++) {
        mem[R_PUT + i] = 0;
        mem[R_GET + i] = val(R_GET, i) + rank;
        mem[R_ACC + i] = val(R_ACC, i);
    }
    mem[R_FLAG] = 0;
    /* a barrier, inside librma, after which the stores above are visible to RMA */
    MPI_OK(MPI_Win_fence(MPI_MODE_NOPRECEDE | MPI_MODE_NOSUCCEED, win));

    if (rank == 0) {
        int src[N], got[N], acc[N], bad = 0;
        for (int i = 0; i < N; i++) {
            src[i] = val(R_PUT, i) * 2;
            acc[i] = i + 5;
            got[i] = -1;
        }
        double t0 = MPI_Wtime();
        MPI_OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 1, 0, win));
        MPI_OK(MPI_Put(src, N, MPI_INT, 1, R_PUT, N, MPI_INT, win));
        MPI_OK(MPI_Get(got, N, MPI_INT, 1, R_GET, N, MPI_INT, win));
        MPI_OK(MPI_Accumulate(acc, N, MPI_INT, 1, R_ACC, N, MPI_INT, MPI_SUM, win));
        MPI_OK(MPI_Put(&one, 1, MPI_INT, 1, R_FLAG, 1, MPI_INT, win));
        MPI_OK(MPI_Win_unlock(1, win));
        double el = MPI_Wtime() - t0;
        int fast = target_local || strcmp(mode, "off") != 0;
        printf("passive_busy %-8s RMA_AGENT=%s, target %s: epoch took %.3f s while the target "
               "computed for %.1f s%s\n",
               fl, mode, target_local ? "on this node" : "off-node", el, busy,
               fast ? "" : " (may wait for the target)");
        fflush(stdout);
        if (fast)
            CHECK(el < busy / 2,
                  "%s: the epoch took %.3f s, want < %.3f s: the target's progress did not "
                  "serve it while the target computed (RMA_AGENT=%s, target %s)",
                  fl, el, busy / 2, mode, target_local ? "on this node" : "off-node");
        for (int i = 0; i < N; i++)
            if (got[i] != val(R_GET, i) + 1 && bad++ < 3)
                CHECK(0, "%s: got[%d] = %d, want %d", fl, i, got[i], val(R_GET, i) + 1);
        CHECK(bad == 0, "%s: %d wrong ints fetched", fl, bad);
    } else if (rank == 1) {
        compute(busy);
    }
    /* back in librma: with RMA_AGENT=off, rank 0's epoch may complete only in here */
    MPI_OK(MPI_Win_fence(MPI_MODE_NOPRECEDE | MPI_MODE_NOSUCCEED, win));
    if (rank == 1) {
        int bad = 0;
        MPI_OK(MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, win));
        CHECK(mem[R_FLAG] == 1, "%s: the origin's flag is %d after its epoch", fl, mem[R_FLAG]);
        for (int i = 0; i < N; i++) {
            if (mem[R_PUT + i] != val(R_PUT, i) * 2 && bad++ < 3)
                CHECK(0, "%s: put [%d] = %d, want %d", fl, i, mem[R_PUT + i], val(R_PUT, i) * 2);
            if (mem[R_ACC + i] != val(R_ACC, i) + i + 5 && bad++ < 3)
                CHECK(0, "%s: accumulate [%d] = %d, want %d", fl, i, mem[R_ACC + i],
                      val(R_ACC, i) + i + 5);
        }
        CHECK(bad == 0, "%s: %d wrong ints in the target's window", fl, bad);
        MPI_OK(MPI_Win_unlock(1, win));
    }
    MPI_OK(MPI_Win_free(&win));
    if (create)
        free(mem);
}

/* CPU seconds the thread named "rma-agent" of this process has used, or -1 without one. */
static double agent_cpu(void)
{
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    double sec = -1;

    while (d != NULL && (e = readdir(d)) != NULL) {
        char path[300], buf[512] = "";
        unsigned long ut = 0, st = 0;
        FILE *f;

        snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
        if ((f = fopen(path, "r")) == NULL)
            continue;
        if (fgets(buf, sizeof(buf), f) == NULL || strcmp(buf, "rma-agent\n") != 0) {
            fclose(f);
            continue;
        }
        fclose(f);
        snprintf(path, sizeof(path), "/proc/self/task/%s/stat", e->d_name);
        if ((f = fopen(path, "r")) == NULL)
            continue;
        if (fgets(buf, sizeof(buf), f) != NULL && strrchr(buf, ')') != NULL &&
            sscanf(strrchr(buf, ')') + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu",
                   &ut, &st) == 2)
            sec = (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
        fclose(f);
    }
    if (d != NULL)
        closedir(d);
    return sec;
}

/* The agent's CPU use while both ranks sleep after an epoch (see the top of the file). */
static void idle(const char *mode, int target_local)
{
    const char *s = getenv("IDLE_SECONDS");
    double secs = s != NULL && atof(s) > 0 ? atof(s) : 1.0, c0, c1, use;
    struct timespec ts = {(time_t)secs, (long)((secs - (double)(time_t)secs) * 1e9)};
    int *mem, v = 7;
    MPI_Win win;

    MPI_OK(MPI_Win_allocate(sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win));
    MPI_OK(MPI_Win_lock_all(0, win));
    MPI_OK(MPI_Put(&v, 1, MPI_INT, 1 - rank, 0, 1, MPI_INT, win));
    MPI_OK(MPI_Win_unlock_all(win));
    MPI_OK(MPI_Win_fence(MPI_MODE_NOPRECEDE | MPI_MODE_NOSUCCEED, win));
    c0 = agent_cpu();
    nanosleep(&ts, NULL);
    c1 = agent_cpu();
    use = c0 >= 0 && c1 >= 0 ? (c1 - c0) / secs : 0;
    printf("passive_busy idle     RMA_AGENT=%s, rank %d: the agent used %.1f %% of a CPU "
           "over %.1f s of sleep%s\n",
           mode, rank, 100 * use, secs, c0 < 0 ? " (no agent thread)" : "");
    fflush(stdout);
    if (strcmp(mode, "poll") == 0 && !target_local)
        CHECK(c0 >= 0 && use >= 0.25,
              "RMA_AGENT=poll: the agent used %.1f %% of a CPU while idle, want >= 25 %%",
              100 * use);
    else if (strcmp(mode, "poll") != 0)
        CHECK(use <= 0.05, "RMA_AGENT=%s: the agent used %.1f %% of a CPU while idle, want <= 5 %%",
              mode, 100 * use);
    MPI_OK(MPI_Win_fence(MPI_MODE_NOPRECEDE | MPI_MODE_NOSUCCEED, win));
    CHECK(*mem == 7, "idle phase: the put left %d, want 7", *mem);
    MPI_OK(MPI_Win_free(&win));
}

int main(int argc, char **argv)
{
    const char *b = getenv("BUSY_SECONDS"), *mode = getenv("RMA_AGENT");
    double busy = b != NULL && atof(b) > 0 ? atof(b) : 2.0;
    int nprocs, target_local;

    rt_init(&argc, &argv);
    rank = rt_rank;
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (mode == NULL || *mode == '\0')
        mode = "block";
    CHECK(nprocs == 2, "runs with 2 ranks, not %d", nprocs);
    if (nprocs != 2)
        return rt_finish("passive_busy");
    /* The epoch needs the target only when the target is reached through the network. */
    target_local = rt_same_node(1) && !rt_netmod_only();
    if (rank == 0 && strcmp(rt_topology(), "twonode") == 0)
        CHECK(!rt_same_node(1), "twonode: rank 1 shares rank 0's node");
    run(1, busy, mode, target_local);
    run(0, busy, mode, target_local);
    idle(mode, target_local);
    return rt_finish("passive_busy");
}
