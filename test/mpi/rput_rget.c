/*
 * rput_rget - request-based RMA: MPI_Rput/MPI_Rget and their _c forms completed with
 * MPI_Wait, MPI_Test, MPI_Waitall, MPI_Testany, MPI_Testall, MPI_Waitany,
 * MPI_Request_get_status and MPI_Request_free, under lock and lock_all, on allocate and create windows; values are
 * checked at the target and at the origin. Request-based operations outside a passive
 * target epoch (none, fence, PSCW) fail with MPI_ERR_RMA_SYNC and create no request.
 */
#include "rmatest.h"

#define N 256
#define NREQ 8

static int rank, nprocs, right, left;

static void run(int create)
{
    int *mem, *own = NULL, src[N], dst[N];
    MPI_Win win;
    MPI_Request req[NREQ];
    MPI_Status st;
    int flag, idx;
    const char *fl = create ? "create" : "allocate";

    if (create) {
        own = malloc(N * sizeof(int));
        mem = own;
        MPI_OK(MPI_Win_create(mem, N * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD,
                              &win));
    } else {
        MPI_OK(MPI_Win_allocate(N * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD,
                                &mem, &win));
    }
    MPI_OK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    for (int i = 0; i < N; i++) {
        mem[i] = 1000000 * rank + i;
        src[i] = -(rank * 1000 + i);
        dst[i] = 7;
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* Rput + Wait, Rget + Test (loop), under an exclusive lock */
    MPI_OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win));
    req[0] = MPI_REQUEST_NULL;
    MPI_OK(MPI_Rput(src, 16, MPI_INT, right, 0, 16, MPI_INT, win, &req[0]));
    CHECK(req[0] != MPI_REQUEST_NULL, "%s: Rput gave MPI_REQUEST_NULL", fl);
    MPI_OK(MPI_Wait(&req[0], &st));
    CHECK(req[0] == MPI_REQUEST_NULL, "%s: Wait must free the request", fl);
    MPI_OK(MPI_Rget(dst, 8, MPI_INT, right, 100, 8, MPI_INT, win, &req[1]));
    flag = 0;
    for (int spin = 0; !flag && spin < 1000000; spin++)
        MPI_OK(MPI_Test(&req[1], &flag, MPI_STATUS_IGNORE));
    CHECK(flag && req[1] == MPI_REQUEST_NULL, "%s: Test never completed the Rget", fl);
    MPI_OK(MPI_Win_unlock(right, win));
    for (int i = 0; i < 8; i++)
        CHECK(dst[i] == 1000000 * right + 100 + i, "%s: Rget+Test dst[%d] = %d", fl, i, dst[i]);

    /* the _c forms, several requests, Waitall / Testany / Testall / Waitany / free */
    MPI_OK(MPI_Win_lock_all(0, win));
    MPI_OK(MPI_Rput_c(src + 16, 16, MPI_INT, right, 16, 16, MPI_INT, win, &req[0]));
    MPI_OK(MPI_Rput(src + 32, 16, MPI_INT, right, 32, 16, MPI_INT, win, &req[1]));
    MPI_OK(MPI_Rget_c(dst + 16, 16, MPI_INT, right, 200, 16, MPI_INT, win, &req[2]));
    MPI_OK(MPI_Rget(dst + 32, 8, MPI_INT, right, 240, 8, MPI_INT, win, &req[3]));
    {
        MPI_Status sts[4];
        MPI_OK(MPI_Waitall(4, req, sts));
        for (int i = 0; i < 4; i++)
            CHECK(req[i] == MPI_REQUEST_NULL, "%s: Waitall left request %d", fl, i);
    }
    MPI_OK(MPI_Rget(dst + 48, 4, MPI_INT, right, 48, 4, MPI_INT, win, &req[0]));
    MPI_OK(MPI_Rget(dst + 52, 4, MPI_INT, right, 52, 4, MPI_INT, win, &req[1]));
    {
        int done = 0;
        for (int spin = 0; done < 2 && spin < 1000000; spin++) {
            MPI_OK(MPI_Testany(2, req, &idx, &flag, MPI_STATUS_IGNORE));
            if (flag && idx != MPI_UNDEFINED)
                done++;
        }
        CHECK(done == 2, "%s: Testany completed %d of 2", fl, done);
        MPI_OK(MPI_Testany(2, req, &idx, &flag, MPI_STATUS_IGNORE));
        CHECK(flag && idx == MPI_UNDEFINED, "%s: Testany on null requests: flag %d idx %d", fl,
              flag, idx);
    }
    MPI_OK(MPI_Rput(src + 60, 4, MPI_INT, right, 60, 4, MPI_INT, win, &req[0]));
    MPI_OK(MPI_Rput(src + 64, 4, MPI_INT, right, 64, 4, MPI_INT, win, &req[1]));
    MPI_OK(MPI_Waitany(2, req, &idx, MPI_STATUS_IGNORE));
    CHECK(idx == 0 || idx == 1, "%s: Waitany index %d", fl, idx);
    flag = 0;
    for (int spin = 0; !flag && spin < 1000000; spin++) {
        MPI_Status sts[2];
        MPI_OK(MPI_Testall(2, req, &flag, sts));
    }
    CHECK(flag, "%s: Testall never completed", fl);
    /* MPI_Request_get_status alone completes it (and leaves the request to free) */
    MPI_OK(MPI_Rget(dst + 60, 4, MPI_INT, right, 250, 4, MPI_INT, win, &req[0]));
    flag = 0;
    for (double t0 = MPI_Wtime(); !flag && MPI_Wtime() - t0 < 30;)
        MPI_OK(MPI_Request_get_status(req[0], &flag, MPI_STATUS_IGNORE));
    CHECK(flag && req[0] != MPI_REQUEST_NULL, "%s: Request_get_status: flag %d in 30 s", fl,
          flag);
    MPI_OK(MPI_Wait(&req[0], MPI_STATUS_IGNORE));
    for (int i = 60; i < 64; i++)
        CHECK(dst[i] == 1000000 * right + 190 + i, "%s: Request_get_status Rget dst[%d] = %d", fl,
              i, dst[i]);
    MPI_OK(MPI_Rput(src + 68, 4, MPI_INT, right, 68, 4, MPI_INT, win, &req[0]));
    MPI_OK(MPI_Request_free(&req[0]));
    CHECK(req[0] == MPI_REQUEST_NULL, "%s: Request_free must null the handle", fl);
    MPI_OK(MPI_Win_flush(right, win)); /* completes the freed request's put */
    MPI_OK(MPI_Win_unlock_all(win));
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < 72; i++) {
        int want = i >= 48 && i < 60 ? 1000000 * rank + i : -(left * 1000 + i);
        CHECK(mem[i] == want, "%s: target mem[%d] = %d, want %d", fl, i, mem[i], want);
    }
    for (int i = 72; i < N; i++)
        CHECK(mem[i] == 1000000 * rank + i, "%s: untouched mem[%d] = %d", fl, i, mem[i]);
    for (int i = 16; i < 40; i++) {
        int want = i < 32 ? 1000000 * right + 200 + (i - 16) : 1000000 * right + 240 + (i - 32);
        CHECK(dst[i] == want, "%s: Rget dst[%d] = %d, want %d", fl, i, dst[i], want);
    }
    for (int i = 48; i < 56; i++)
        CHECK(dst[i] == 1000000 * right + i, "%s: Testany Rget dst[%d] = %d", fl, i, dst[i]);
    CHECK(dst[40] == 7 && dst[47] == 7 && dst[56] == 7, "%s: origin bytes outside changed", fl);
    MPI_Barrier(MPI_COMM_WORLD);

    /* outside a passive target epoch */
    req[0] = MPI_REQUEST_NULL;
    MPI_ERRCLASS(MPI_Rput(src, 1, MPI_INT, right, 0, 1, MPI_INT, win, &req[0]),
                 MPI_ERR_RMA_SYNC);
    MPI_ERRCLASS(MPI_Rget(dst, 1, MPI_INT, right, 0, 1, MPI_INT, win, &req[0]),
                 MPI_ERR_RMA_SYNC);
    MPI_ERRCLASS(MPI_Rput_c(src, 1, MPI_INT, right, 0, 1, MPI_INT, win, &req[0]),
                 MPI_ERR_RMA_SYNC);
    MPI_ERRCLASS(MPI_Rget_c(dst, 1, MPI_INT, right, 0, 1, MPI_INT, win, &req[0]),
                 MPI_ERR_RMA_SYNC);
    CHECK(req[0] == MPI_REQUEST_NULL, "%s: a failed Rput must not create a request", fl);
    MPI_OK(MPI_Win_fence(0, win));
    MPI_ERRCLASS(MPI_Rput(src, 1, MPI_INT, right, 0, 1, MPI_INT, win, &req[0]),
                 MPI_ERR_RMA_SYNC);
    MPI_OK(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
    {
        MPI_Group world, g;
        MPI_Comm_group(MPI_COMM_WORLD, &world);
        MPI_Group_incl(world, 1, &left, &g);
        MPI_OK(MPI_Win_post(g, 0, win));
        MPI_Group_free(&g);
        MPI_Group_incl(world, 1, &right, &g);
        MPI_OK(MPI_Win_start(g, 0, win));
        MPI_ERRCLASS(MPI_Rget(dst, 1, MPI_INT, right, 0, 1, MPI_INT, win, &req[0]),
                     MPI_ERR_RMA_SYNC);
        MPI_OK(MPI_Win_complete(win));
        MPI_OK(MPI_Win_wait(win));
        MPI_Group_free(&g);
        MPI_Group_free(&world);
    }
    /* errors inside the epoch come back without a request too */
    MPI_OK(MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win));
    MPI_ERRCLASS(MPI_Rput(src, 1, MPI_INT, right, N, 1, MPI_INT, win, &req[0]),
                 MPI_ERR_RMA_RANGE);
    MPI_ERRCLASS(MPI_Rget(dst, 1, MPI_INT, nprocs, 0, 1, MPI_INT, win, &req[0]), MPI_ERR_RANK);
    CHECK(req[0] == MPI_REQUEST_NULL, "%s: a failed Rget must not create a request", fl);
    /* MPI_PROC_NULL: a request that completes at once */
    req[0] = MPI_REQUEST_NULL;
    MPI_OK(MPI_Rput(src, 1, MPI_INT, MPI_PROC_NULL, 0, 1, MPI_INT, win, &req[0]));
    CHECK(req[0] != MPI_REQUEST_NULL, "%s: Rput to MPI_PROC_NULL must give a request", fl);
    if (req[0] != MPI_REQUEST_NULL)
        MPI_OK(MPI_Wait(&req[0], MPI_STATUS_IGNORE));
    MPI_OK(MPI_Win_unlock(right, win));
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_OK(MPI_Win_free(&win));
    free(own);
    if (rank == 0)
        printf("%s: Rput/Rget with Wait, Test, Waitall, Testany, Testall, Waitany, "
               "Request_get_status, Request_free and the epoch errors checked\n", fl);
}

int main(int argc, char **argv)
{
    rt_init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    right = (rank + 1) % nprocs;
    left = (rank + nprocs - 1) % nprocs;
    run(0);
    run(1);
    return rt_finish("rput_rget");
}
