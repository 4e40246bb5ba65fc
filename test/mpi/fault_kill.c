/*
 * fault_kill - a peer dies (SIGKILL) in the middle of a synchronization, and the others must
 * not hang. 3 or 4 ranks; the victim is the last rank. FAULT_AT selects the point:
 *   lock   the victim holds MPI_Win_lock(EXCLUSIVE) on rank 0 (an MPI_Win_allocate window,
 *          acquired for sure by a put and a flush) and dies while every other rank waits in
 *          MPI_Win_lock(EXCLUSIVE, 0) for it;
 *   fence  every rank opens a fence epoch on an MPI_Win_create window and puts to its right
 *          neighbour; the victim dies instead of calling the closing fence, in which the
 *          others wait for it;
 *   flush  every rank is in MPI_Win_lock_all on an MPI_Win_create window; the others put to
 *          the victim and flush, over and over, when it dies.
 * The victim prints "fault-test: <point> reached" first; with FAULT_EXIT set it then exits
 * with status 0 instead (a process manager that ends a job for a rank's signal leaves the
 * others to find it). Windows and MPI_COMM_WORLD return
 * errors: a survivor whose call fails prints the error (it should name the dead peer) and exits
 * with status 3; one whose calls keep succeeding gives up after 10 s with status 4; mpiexec
 * may also end the job first. Any of these ends the run with a non-zero status: test/runtests
 * runs it with expect=fail, grep for the line above and a short timeout (a hang fails).
 */
#include "rmatest.h"

#include <signal.h>
#include <unistd.h>

static int rank, nprocs;

static void survivor_ok(int rc, const char *call)
{
    char s[MPI_MAX_ERROR_STRING];
    int len = 0;

    if (rc == MPI_SUCCESS)
        return;
    MPI_Error_string(rc, s, &len);
    printf("fault-test: rank %d: %s failed: %s\n", rank, call, s);
    fflush(stdout);
    _exit(3);
}

static void die(const char *at)
{
    printf("fault-test: %s reached\n", at);
    fflush(stdout);
    usleep(200000); /* mpiexec forwards the line; the others enter their wait */
    if (getenv("FAULT_EXIT") != NULL)
        _exit(0); /* a process manager that ends the job for a signal sees a clean exit */
    raise(SIGKILL);
}

/* A survivor whose calls all succeeded: wait (bounded) to be torn down, then give up. */
static void linger(void)
{
    for (int i = 0; i < 10000; i++)
        usleep(1000);
    printf("fault-test: rank %d was not torn down within 10 s\n", rank);
    fflush(stdout);
    _exit(4);
}

int main(int argc, char **argv)
{
    const char *at = getenv("FAULT_AT");
    int victim, v, *am;
    char *cm;
    MPI_Win aw, cw;

    rt_init(&argc, &argv);
    rank = rt_rank;
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (at == NULL)
        at = "lock";
    victim = nprocs - 1;
    v = rank + 1;
    cm = calloc(1, 1 << 16);
    MPI_OK(MPI_Win_allocate(4096, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &am, &aw));
    MPI_OK(MPI_Win_create(cm, 1 << 16, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &cw));
    MPI_OK(MPI_Win_set_errhandler(aw, MPI_ERRORS_RETURN));
    MPI_OK(MPI_Win_set_errhandler(cw, MPI_ERRORS_RETURN));
    CHECK(nprocs >= 3, "runs with 3 or more ranks, not %d", nprocs);
    if (rank == 0)
        printf("fault-test: FAULT_AT=%s, %d ranks, victim rank %d (%s rank 0's node)\n", at, nprocs,
               victim, rt_same_node(victim) ? "on" : "not on");
    else
        (void)rt_same_node(victim); /* collective on the first call */
    fflush(stdout);
    MPI_Barrier(MPI_COMM_WORLD);

    if (strcmp(at, "lock") == 0) {
        if (rank == victim) {
            MPI_OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, aw));
            MPI_OK(MPI_Put(&v, 1, MPI_INT, 0, 0, 1, MPI_INT, aw));
            MPI_OK(MPI_Win_flush(0, aw)); /* the lock is held from here on */
            MPI_Barrier(MPI_COMM_WORLD);
            die(at);
        }
        survivor_ok(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
        survivor_ok(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, aw), "MPI_Win_lock");
        survivor_ok(MPI_Put(&v, 1, MPI_INT, 0, rank, 1, MPI_INT, aw), "MPI_Put");
        survivor_ok(MPI_Win_unlock(0, aw), "MPI_Win_unlock");
        linger();
    } else if (strcmp(at, "fence") == 0) {
        int right = (rank + 1) % nprocs;
        survivor_ok(MPI_Win_fence(0, cw), "MPI_Win_fence (opening)");
        survivor_ok(MPI_Put(&v, 1, MPI_INT, right, rank, 1, MPI_INT, cw), "MPI_Put");
        if (rank == victim)
            die(at);
        survivor_ok(MPI_Win_fence(0, cw), "MPI_Win_fence (closing)");
        linger();
    } else if (strcmp(at, "flush") == 0) {
        survivor_ok(MPI_Win_lock_all(0, cw), "MPI_Win_lock_all");
        survivor_ok(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
        if (rank == victim)
            die(at);
        for (int i = 0; i < 10000; i++) {
            survivor_ok(MPI_Put(&v, 1, MPI_INT, victim, (rank * 64 + i) % 4096, 1, MPI_INT, cw),
                        "MPI_Put");
            survivor_ok(MPI_Win_flush(victim, cw), "MPI_Win_flush");
            usleep(1000);
        }
        printf("fault-test: rank %d was not torn down within 10 s\n", rank);
        fflush(stdout);
        _exit(4);
    } else {
        CHECK(0, "FAULT_AT=%s: want lock, fence or flush", at);
    }
    MPI_OK(MPI_Win_free(&cw));
    MPI_OK(MPI_Win_free(&aw));
    free(cm);
    return rt_finish("fault_kill");
}
