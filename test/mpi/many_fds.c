/*
 * many_fds - librma holds a descriptor for each shared segment (a window's control words, an
 * MPI_Alloc_mem block) so that peers can open it, and Linux gives an ordinary user a soft
 * limit of 1024. With the soft limit set just above what is open (the hard limit left as it
 * is), 300 MPI_Alloc_mem blocks and 150 windows on them, all alive at once, must work, each
 * window's data checked through a fence epoch. Then, where its blocks are memfds (it shares
 * its node, and not RMA_NETMOD_ONLY=1), with every descriptor up to the hard limit taken,
 * MPI_Alloc_mem must fail with MPI_ERR_NO_MEM and a message naming the limit, and work again
 * once they are closed.
 */
#include "rmatest.h"

#include <dirent.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

enum { NBLOCKS = 300, NWINS = 150, INTS = 64 };

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
    int rank, nprocs, right, left, *blocks[NBLOCKS], bad = 0;
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
    MPI_Barrier(MPI_COMM_WORLD);
    return rt_finish("many_fds");
}
