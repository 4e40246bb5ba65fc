/*
 * preload - a plain MPI program (built with mpicc, not linked with librma) doing Put/Get on
 * allocate and create windows under fence, PSCW, lock and lock_all+flush (that once more by
 * PMPI_ names, as a profiling tool above librma calls them). Run with
 * LD_PRELOAD=librma (testlist preload=1) it must find librma (dlsym(RTLD_DEFAULT,
 * "RMAX_Version")) and librma must own its windows (RMAX_Win_path on them succeeds); run
 * without (mpich=1) it must not find librma and pass on MPICH's own RMA.
 */
#define _GNU_SOURCE
#include "rmatest.h"

#include <dlfcn.h>

#define N 512

typedef int (*win_path_fn)(MPI_Win, int, MPI_Aint, MPI_Aint, int *);

int main(int argc, char **argv)
{
    int rank, nprocs, right, left, *mem, *cbuf, src[N], dst[N];
    const char *pre = getenv("LD_PRELOAD");
    int want_librma = pre != NULL && strstr(pre, "librma") != NULL;
    void *ver, *pathfn;
    MPI_Win wins[2];
    MPI_Group world, gl, gr;

    rt_init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    right = (rank + 1) % nprocs;
    left = (rank + nprocs - 1) % nprocs;
    ver = dlsym(RTLD_DEFAULT, "RMAX_Version");
    pathfn = dlsym(RTLD_DEFAULT, "RMAX_Win_path");
    CHECK((ver != NULL) == want_librma, "RMAX_Version %s, but LD_PRELOAD is \"%s\"",
          ver ? "found" : "not found", pre ? pre : "");
    if (rank == 0)
        printf("librma %s (%s)\n", ver ? "preloaded" : "absent",
               ver ? ((const char *(*)(void))ver)() : "MPICH's own RMA");
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Group_incl(world, 1, &left, &gl);
    MPI_Group_incl(world, 1, &right, &gr);
    MPI_OK(MPI_Win_allocate(N * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &mem,
                            &wins[0]));
    cbuf = malloc(N * sizeof(int));
    MPI_OK(MPI_Win_create(cbuf, N * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD,
                          &wins[1]));
    for (int w = 0; w < 2; w++) {
        int *m = w ? cbuf : mem;
        MPI_Win win = wins[w];
        if (pathfn != NULL) {
            int path = -1;
            int rc = ((win_path_fn)pathfn)(win, right, 0, 4, &path);
            CHECK(rc == MPI_SUCCESS && path >= 1 && path <= 4,
                  "RMAX_Win_path on a window of this program: rc %d path %d", rc, path);
        }
        for (int s = 0; s < 5; s++) {
            for (int i = 0; i < N; i++) {
                m[i] = -1;
                src[i] = rank * 10000 + s * 1000 + i;
                dst[i] = -2;
            }
            MPI_Barrier(MPI_COMM_WORLD);
            switch (s) {
            case 0:
                MPI_OK(MPI_Win_fence(0, win));
                MPI_OK(MPI_Put(src, N - 2, MPI_INT, right, 1, N - 2, MPI_INT, win));
                MPI_OK(MPI_Win_fence(0, win));
                MPI_OK(MPI_Get(dst, N, MPI_INT, right, 0, N, MPI_INT, win));
                MPI_OK(MPI_Win_fence(0, win));
                break;
            case 1:
                MPI_OK(MPI_Win_post(gl, 0, win));
                MPI_OK(MPI_Win_start(gr, 0, win));
                MPI_OK(MPI_Put(src, N - 2, MPI_INT, right, 1, N - 2, MPI_INT, win));
                MPI_OK(MPI_Win_complete(win));
                MPI_OK(MPI_Win_wait(win));
                MPI_OK(MPI_Win_post(gl, 0, win));
                MPI_OK(MPI_Win_start(gr, 0, win));
                MPI_OK(MPI_Get(dst, N, MPI_INT, right, 0, N, MPI_INT, win));
                MPI_OK(MPI_Win_complete(win));
                MPI_OK(MPI_Win_wait(win));
                break;
            case 2:
                MPI_OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win));
                MPI_OK(MPI_Put(src, N - 2, MPI_INT, right, 1, N - 2, MPI_INT, win));
                MPI_OK(MPI_Win_unlock(right, win));
                MPI_Barrier(MPI_COMM_WORLD);
                MPI_OK(MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win));
                MPI_OK(MPI_Get(dst, N, MPI_INT, right, 0, N, MPI_INT, win));
                MPI_OK(MPI_Win_unlock(right, win));
                break;
            case 3:
            case 4: /* 4: by PMPI_ names, as a profiling tool layered above librma calls */
#define NAMED(f) (s == 4 ? P##f : f)
                MPI_OK(NAMED(MPI_Win_lock_all)(0, win));
                MPI_OK(NAMED(MPI_Put)(src, N - 2, MPI_INT, right, 1, N - 2, MPI_INT, win));
                MPI_OK(NAMED(MPI_Win_flush)(right, win));
                NAMED(MPI_Barrier)(MPI_COMM_WORLD);
                MPI_OK(NAMED(MPI_Get)(dst, N, MPI_INT, right, 0, N, MPI_INT, win));
                MPI_OK(NAMED(MPI_Win_flush_all)(win));
                MPI_OK(NAMED(MPI_Win_unlock_all)(win));
#undef NAMED
                break;
            }
            MPI_Barrier(MPI_COMM_WORLD);
            int bad = 0;
            for (int i = 0; i < N; i++) {
                int want = i == 0 || i == N - 1 ? -1 : left * 10000 + s * 1000 + i - 1;
                int wantg = i == 0 || i == N - 1 ? -1 : rank * 10000 + s * 1000 + i - 1;
                bad += m[i] != want;
                bad += dst[i] != wantg;
            }
            CHECK(bad == 0, "window %d sync %d: %d wrong ints", w, s, bad);
        }
    }
    MPI_OK(MPI_Win_free(&wins[0]));
    MPI_OK(MPI_Win_free(&wins[1]));
    free(cbuf);
    MPI_Group_free(&gl);
    MPI_Group_free(&gr);
    MPI_Group_free(&world);
    if (rank == 0)
        printf("allocate and create windows x fence, pscw, lock, lock_all+flush (by MPI_ and by "
               "PMPI_ names) checked\n");
    return rt_finish("preload");
}
