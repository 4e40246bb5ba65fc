/*
 * local_completion - what MPI_Win_flush_local(_all) and request-based operations promise at
 * the origin, and nothing more: after them a put's buffer may be overwritten without
 * changing what reaches the target, and a get's buffer holds the data. For an allocate and
 * a create window, in lock_all, sizes of 8 B, 4 KiB and 256 KiB (a rendezvous off node),
 * contiguous and strided; each rank puts to and gets from its right neighbour:
 *   put, flush_local (or Rput + MPI_Wait), scribble the buffer, flush: the target has the
 *   first contents;
 *   get, flush_local (flush_local_all, Rget + MPI_Wait): the buffer has the data at once.
 */
#include "rmatest.h"

#define MAXB (256 * 1024)

static int rank, nprocs;

static unsigned char pat(int who, int round, size_t i)
{
    return (unsigned char)(who * 31 + round * 7 + i * 13 + (i >> 8));
}

static void run(int flavor)
{
    static const size_t sizes[] = {8, 4096, MAXB};
    unsigned char *mem, *buf = malloc(MAXB);
    int right = (rank + 1) % nprocs, left = (rank + nprocs - 1) % nprocs, round = 0;
    MPI_Datatype halves; /* every other 64-byte block of MAXB bytes */
    MPI_Win win;

    MPI_Type_vector(MAXB / 128, 64, 128, MPI_BYTE, &halves);
    MPI_Type_commit(&halves);
    if (flavor == 0) {
        MPI_OK(MPI_Win_allocate(2 * MAXB, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win));
    } else {
        mem = malloc(2 * MAXB);
        MPI_OK(MPI_Win_create(mem, 2 * MAXB, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    }
    for (int mode = 0; mode < 3; mode++)         /* flush_local, flush_local_all, request */
        for (int k = 0; k < 4; k++, round++) { /* three sizes, then the strided layout */
            size_t n = k < 3 ? sizes[k] : MAXB / 2;
            const char *what = mode == 0 ? "flush_local" : mode == 1 ? "flush_local_all" : "request";
            MPI_Request rq;
            int bad = 0;

            /* the window holds (rank, round)'s pattern; puts go to its second half */
            for (size_t i = 0; i < 2 * MAXB; i++)
                mem[i] = i < MAXB ? pat(rank, round, i) : 0;
            MPI_Barrier(MPI_COMM_WORLD);
            MPI_OK(MPI_Win_lock_all(0, win));
            for (size_t i = 0; i < MAXB; i++)
                buf[i] = pat(100 + rank, round, i);
            if (k < 3 && mode == 2) {
                MPI_OK(MPI_Rput(buf, (int)n, MPI_BYTE, right, MAXB, (int)n, MPI_BYTE, win, &rq));
                MPI_OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
            } else {
                if (k < 3)
                    MPI_OK(MPI_Put(buf, (int)n, MPI_BYTE, right, MAXB, (int)n, MPI_BYTE, win));
                else
                    MPI_OK(MPI_Put(buf, 1, halves, right, MAXB, 1, halves, win));
                if (mode == 1)
                    MPI_OK(MPI_Win_flush_local_all(win));
                else
                    MPI_OK(MPI_Win_flush_local(right, win));
            }
            memset(buf, 0xEE, MAXB); /* the origin's buffer is ours again */
            MPI_OK(MPI_Win_flush(right, win));
            /* the get: the buffer has the data as soon as the call returns */
            memset(buf, 0xDD, MAXB);
            if (k < 3 && mode == 2) {
                MPI_OK(MPI_Rget(buf, (int)n, MPI_BYTE, right, 0, (int)n, MPI_BYTE, win, &rq));
                MPI_OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
            } else {
                if (k < 3)
                    MPI_OK(MPI_Get(buf, (int)n, MPI_BYTE, right, 0, (int)n, MPI_BYTE, win));
                else
                    MPI_OK(MPI_Get(buf, 1, halves, right, 0, 1, halves, win));
                if (mode == 1)
                    MPI_OK(MPI_Win_flush_local_all(win));
                else
                    MPI_OK(MPI_Win_flush_local(right, win));
            }
            for (size_t i = 0; i < (k < 3 ? n : MAXB); i++) {
                int in = k < 3 || (i % 128) < 64;
                unsigned char want = in ? pat(right, round, i) : 0xDD;
                if (buf[i] != want && bad++ < 3)
                    CHECK(0, "%s, %zu B%s: got[%zu] = %#x, want %#x", what, n,
                          k < 3 ? "" : " strided", i, buf[i], want);
            }
            CHECK(bad == 0, "%s, %zu B%s: the get's buffer lacked %d bytes", what, n,
                  k < 3 ? "" : " strided", bad);
            MPI_OK(MPI_Win_unlock_all(win));
            MPI_Barrier(MPI_COMM_WORLD);
            MPI_OK(MPI_Win_sync(win));
            bad = 0;
            for (size_t i = 0; i < (k < 3 ? n : MAXB); i++) {
                int in = k < 3 || (i % 128) < 64;
                unsigned char want = in ? pat(100 + left, round, i) : 0;
                if (mem[MAXB + i] != want && bad++ < 3)
                    CHECK(0, "%s, %zu B%s: target[%zu] = %#x, want %#x (the origin's buffer "
                          "was overwritten after local completion)",
                          what, n, k < 3 ? "" : " strided", i, mem[MAXB + i], want);
            }
            CHECK(bad == 0, "%s, %zu B%s: %d bytes wrong at the target", what, n,
                  k < 3 ? "" : " strided", bad);
        }
    MPI_OK(MPI_Win_free(&win));
    if (flavor == 1)
        free(mem);
    MPI_Type_free(&halves);
    free(buf);
}

int main(int argc, char **argv)
{
    rt_init(&argc, &argv);
    rank = rt_rank;
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    run(0);
    run(1);
    if (rank == 0)
        printf("local_completion: flush_local, flush_local_all and requests checked\n");
    return rt_finish("local_completion");
}
