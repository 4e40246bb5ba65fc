/*
 * many_fds - librma holds a descriptor for each shared segment (a window's control words, an
 * MPI_Alloc_mem block) so that peers can open it, and Linux gives an ordinary user a soft
 * limit of 1024. With the soft limit set just above what is open (the hard limit left as it
 * is), 300 MPI_Alloc_mem blocks and 150 windows on them, all alive at once, must work, each
 * window's data checked through a fence epoch. Then, where its blocks are memfds (it shares
 * its node, and not RMA_NETMOD_ONLY=1), with every descriptor up to the hard limit taken,
 * MPI_Alloc_mem must fail with MPI_ERR_NO_MEM and a message naming the limit, and work again
 * once they are closed. Last, on one node, one rank at a time (the lowest, the node's
 * leader, and the highest) takes every descriptor up to its hard limit while all create a
 * window of each flavor: the window must fail on every rank or on none (a rank that fails
 * alone must not leave the others waiting, nor with a window it lacks), the failing rank's
 * message naming the limit and the others' naming that rank; once the descriptors are
 * closed, a window of that flavor works again.
 */
#include "rmatest.h"

#include <dirent.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

enum { NBLOCKS = 300, NWINS = 150, INTS = 64 };

static int rank, nprocs, right, left;

enum { F_CREATE, F_ALLOCATE, F_DYNAMIC, NFLAVORS };
static const char *const flavor_names[NFLAVORS] = {"create", "allocate", "dynamic"};

static int create_window(int flavor, int *buf, int **base, MPI_Win *win)
{
    switch (flavor) {
    case F_CREATE:
        *base = buf;
        return MPI_Win_create(buf, INTS * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD,
                              win);
    case F_ALLOCATE:
        return MPI_Win_allocate(INTS * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD,
                                base, win);
    default: *base = NULL; return MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, win);
    }
}

/* Rank `who` takes every descriptor up to its hard limit (dups: room for them) while all
 * create a window of the flavor; then all create one again, with descriptors to spare, and
 * a put through it must land. */
static void one_rank_out(int who, int flavor, int *dups, rlim_t hard)
{
    static int buf[INTS];
    int *base, rc, ok, *oks = malloc((size_t)nprocs * sizeof(int)), ndup = 0, cls = 0, len = 0;
    char msg[MPI_MAX_ERROR_STRING] = "", name[32];
    MPI_Win win;

    if (rank == who) {
        struct rlimit all = {hard, hard};
        CHECK(setrlimit(RLIMIT_NOFILE, &all) == 0, "setrlimit(soft = hard)");
        while ((dups[ndup] = dup(0)) >= 0)
            ndup++;
    }
    rc = create_window(flavor, buf, &base, &win);
    ok = rc == MPI_SUCCESS;
    if (!ok) {
        MPI_Error_class(rc, &cls);
        MPI_Error_string(rc, msg, &len);
    }
    while (ndup > 0)
        close(dups[--ndup]);
    MPI_Allgather(&ok, 1, MPI_INT, oks, 1, MPI_INT, MPI_COMM_WORLD);
    for (int r = 0; r < nprocs; r++)
        CHECK(oks[r] == oks[0], "%s, rank %d out of descriptors: rank %d %s, rank 0 %s",
              flavor_names[flavor], who, r, oks[r] ? "has the window" : "failed",
              oks[0] ? "has it" : "failed");
    snprintf(name, sizeof(name), "rank %d", who);
    CHECK(ok || cls == MPI_ERR_NO_MEM, "%s, rank %d out of descriptors: class %d (%s)",
          flavor_names[flavor], who, cls, msg);
    CHECK(ok || strstr(msg, rank == who ? "ulimit -Hn" : name) != NULL,
          "%s, rank %d out of descriptors: the message names neither: %s", flavor_names[flavor],
          who, msg);
    if (rank == 0)
        printf("%s, rank %d out of descriptors: %s\n", flavor_names[flavor], who,
               ok ? "created on every rank" : msg);
    if (ok)
        MPI_OK(MPI_Win_free(&win));
    free(oks);

    rc = create_window(flavor, buf, &base, &win);
    CHECK(rc == MPI_SUCCESS, "%s again, descriptors free: %d", flavor_names[flavor], rc);
    if (rc != MPI_SUCCESS)
        MPI_Abort(MPI_COMM_WORLD, 1);
    int v = rank + 7, got = -1;
    MPI_Aint disp = 0;
    if (flavor == F_DYNAMIC) {
        MPI_OK(MPI_Win_attach(win, buf, INTS * sizeof(int)));
        MPI_Get_address(buf, &disp);
        base = buf;
    }
    {
        MPI_Aint *disps = malloc((size_t)nprocs * sizeof(MPI_Aint));
        MPI_Allgather(&disp, 1, MPI_AINT, disps, 1, MPI_AINT, MPI_COMM_WORLD);
        MPI_OK(MPI_Win_fence(0, win));
        MPI_OK(MPI_Put(&v, 1, MPI_INT, right, flavor == F_DYNAMIC ? disps[right] : 0, 1, MPI_INT,
                       win));
        MPI_OK(MPI_Win_fence(0, win));
        free(disps);
    }
    got = base[0];
    CHECK(got == left + 7, "%s again: put gave %d", flavor_names[flavor], got);
    if (flavor == F_DYNAMIC)
        MPI_OK(MPI_Win_detach(win, buf));
    MPI_OK(MPI_Win_free(&win));
}

static int open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    int n = 0;

    if (d == NULL)
        return -1;
    while (readdir(d) != NULL)
        n++;
    closedir(d);
    return n - 3; /* ., .. and d's own */
}

int main(int argc, char **argv)
{
    int *blocks[NBLOCKS], bad = 0;
    MPI_Win wins[NWINS];
    struct rlimit rl, low;

    rt_init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    right = (rank + 1) % nprocs;
    left = (rank + nprocs - 1) % nprocs;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    {
        /* the transport to other nodes starts, and connects, with a first window: what it
         * opens is its own (UCX does not raise the limit) */
        MPI_Win warm;
        void *wb;
        MPI_OK(MPI_Win_allocate(64, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &wb, &warm));
        MPI_OK(MPI_Win_free(&warm));
    }
    CHECK(getrlimit(RLIMIT_NOFILE, &rl) == 0, "getrlimit");
    low = rl;
    low.rlim_cur = (rlim_t)open_fds() + 16;
    if (low.rlim_cur > rl.rlim_max)
        low.rlim_cur = rl.rlim_max;
    CHECK(setrlimit(RLIMIT_NOFILE, &low) == 0, "setrlimit(soft %lu)", (unsigned long)low.rlim_cur);

    for (int b = 0; b < NBLOCKS; b++) {
        int rc = MPI_Alloc_mem(INTS * sizeof(int), MPI_INFO_NULL, &blocks[b]);
        CHECK(rc == MPI_SUCCESS, "MPI_Alloc_mem of block %d (%d descriptors open) gave %d", b,
              open_fds(), rc);
        if (rc != MPI_SUCCESS) /* the rest would only repeat it */
            MPI_Abort(MPI_COMM_WORLD, 1);
        for (int i = 0; i < INTS; i++)
            blocks[b][i] = -1;
    }
    for (int w = 0; w < NWINS; w++) {
        int rc = MPI_Win_create(blocks[w], INTS * sizeof(int), sizeof(int), MPI_INFO_NULL,
                                MPI_COMM_WORLD, &wins[w]);
        CHECK(rc == MPI_SUCCESS, "MPI_Win_create of window %d (%d descriptors open) gave %d", w,
              open_fds(), rc);
        if (rc != MPI_SUCCESS)
            MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (int w = 0; w < NWINS; w++) {
        int v = rank * 1000 + w;
        MPI_OK(MPI_Win_fence(0, wins[w]));
        MPI_OK(MPI_Put(&v, 1, MPI_INT, right, w % INTS, 1, MPI_INT, wins[w]));
        MPI_OK(MPI_Win_fence(0, wins[w]));
    }
    for (int w = 0; w < NWINS; w++)
        bad += blocks[w][w % INTS] != left * 1000 + w;
    CHECK(bad == 0, "%d of %d windows lost their put", bad, NWINS);
    {
        struct rlimit now;
        getrlimit(RLIMIT_NOFILE, &now);
        if (rank == 0)
            printf("%d blocks and %d windows alive: %d descriptors open, soft limit %lu -> %lu\n",
                   NBLOCKS, NWINS, open_fds(), (unsigned long)low.rlim_cur,
                   (unsigned long)now.rlim_cur);
    }
    for (int w = 0; w < NWINS; w++)
        MPI_OK(MPI_Win_free(&wins[w]));

    /* the hard limit reached (descriptors taken by dup up to it): a clear error, and
     * nothing broken once they are closed. A process alone on its node, or with
     * RMA_NETMOD_ONLY=1, takes the block from UCX's System V memory, which needs none. */
    int shared_node, *dups = NULL, ndup = 0;
    MPI_Comm_size(rt_node_comm(), &shared_node);
    if (shared_node > 1 && !rt_netmod_only() && rl.rlim_max <= 65536 &&
        (dups = malloc(rl.rlim_max * sizeof(int))) != NULL) {
        void *p = NULL;
        int rc, cls = -1, len = 0;
        char msg[MPI_MAX_ERROR_STRING] = "";
        struct rlimit all = {rl.rlim_max, rl.rlim_max};
        CHECK(setrlimit(RLIMIT_NOFILE, &all) == 0, "setrlimit(soft = hard)");
        while ((dups[ndup] = dup(0)) >= 0)
            ndup++;
        rc = MPI_Alloc_mem(4096, MPI_INFO_NULL, &p);
        if (rc != MPI_SUCCESS) {
            MPI_Error_class(rc, &cls);
            MPI_Error_string(rc, msg, &len);
        }
        while (ndup > 0)
            close(dups[--ndup]);
        CHECK(cls == MPI_ERR_NO_MEM, "MPI_Alloc_mem at the hard limit gave class %d", cls);
        CHECK(strstr(msg, "ulimit -Hn") != NULL, "message does not name the limit: %s", msg);
        rc = MPI_Alloc_mem(4096, MPI_INFO_NULL, &p);
        CHECK(rc == MPI_SUCCESS, "MPI_Alloc_mem with descriptors free again gave %d", rc);
        if (rc == MPI_SUCCESS)
            MPI_OK(MPI_Free_mem(p));
        if (rank == 0)
            printf("at the hard limit: %s\n", msg);
        free(dups);
    } else if (rank == 0) {
        printf("hard limit not reached (blocks from UCX, or a limit over 65536)\n");
    }
    setrlimit(RLIMIT_NOFILE, &rl);
    for (int b = 0; b < NBLOCKS; b++)
        MPI_OK(MPI_Free_mem(blocks[b]));
    /* on one node only: UCX, which other nodes' peers need, breaks its endpoints when it
     * runs out of descriptors (a socket, an epoll set) and the job ends naming the peer */
    if (!rt_world_spans_nodes() && !rt_netmod_only() && rl.rlim_max <= 65536 &&
        (dups = malloc(rl.rlim_max * sizeof(int))) != NULL) {
        for (int f = 0; f < NFLAVORS; f++)
            for (int who = 0; who < nprocs; who += nprocs - 1) {
                one_rank_out(who, f, dups, rl.rlim_max);
                setrlimit(RLIMIT_NOFILE, &rl);
            }
        free(dups);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    return rt_finish("many_fds");
}
