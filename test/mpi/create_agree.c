/*
 * create_agree - a window creation that fails late on one rank fails on every rank. Rank 1
 * lowers its address-space limit so that it cannot map rank 0's 1 GiB of MPI_Win_allocate
 * memory (where a rank maps its peers' memory: one node by mmap, UCX's shared memory by
 * shmat when every peer goes through UCX). Either every rank gets the window or none does;
 * before, UCX's failure to unpack the key was seen by rank 1 alone and rank 0 returned a
 * window its peer did not have. Afterwards a new window works on every rank.
 */
#include "rmatest.h"

#include <sys/resource.h>
#include <unistd.h>

static long vm_bytes(void)
{
    long pages = 0, rss;
    FILE *f = fopen("/proc/self/statm", "r");

    if (f != NULL) {
        if (fscanf(f, "%ld %ld", &pages, &rss) != 2)
            pages = 0;
        fclose(f);
    }
    return pages * sysconf(_SC_PAGESIZE);
}

int main(int argc, char **argv)
{
    int np, rc, ok, all_ok, any_ok, v, got = -1;
    MPI_Win win = MPI_WIN_NULL;
    char *base;
    struct rlimit old;

    rt_init(&argc, &argv);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    /* a first window: endpoints and transports are up before the limit */
    MPI_OK(MPI_Win_allocate(4096, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win));
    MPI_OK(MPI_Win_free(&win));
    getrlimit(RLIMIT_AS, &old);
    if (rt_rank == 1) {
        struct rlimit rl = {(rlim_t)(vm_bytes() + (256L << 20)), old.rlim_max};
        setrlimit(RLIMIT_AS, &rl);
    }
    rc = MPI_Win_allocate(rt_rank == 0 ? (MPI_Aint)1 << 30 : 4096, 1, MPI_INFO_NULL, MPI_COMM_WORLD,
                          &base, &win);
    if (rt_rank == 1)
        setrlimit(RLIMIT_AS, &old);
    ok = rc == MPI_SUCCESS;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    MPI_Allreduce(&ok, &any_ok, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
    CHECK(all_ok == any_ok, "rank %d %s the window while another rank %s", rt_rank,
          ok ? "got" : "did not get", ok ? "did not" : "did");
    CHECK(ok || win == MPI_WIN_NULL, "a failed creation left handle 0x%x", (unsigned)win);
    if (rt_rank == 0)
        printf("create_agree: the 1 GiB window was %s on every rank\n",
               all_ok ? "created" : "refused");
    if (all_ok)
        MPI_OK(MPI_Win_free(&win));
    /* the library still makes windows */
    MPI_OK(MPI_Win_allocate(sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win));
    v = 100 + rt_rank;
    MPI_OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, (rt_rank + 1) % np, 0, win));
    MPI_OK(MPI_Put(&v, 1, MPI_INT, (rt_rank + 1) % np, 0, 1, MPI_INT, win));
    MPI_OK(MPI_Win_unlock((rt_rank + 1) % np, win));
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_OK(MPI_Win_lock(MPI_LOCK_SHARED, rt_rank, 0, win));
    got = *(int *)base;
    MPI_OK(MPI_Win_unlock(rt_rank, win));
    CHECK(got == 100 + (rt_rank + np - 1) % np, "a window after the failure: read %d", got);
    MPI_OK(MPI_Win_free(&win));
    return rt_finish("create_agree");
}
