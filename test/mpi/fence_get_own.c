/*
 * fence_get_own - a get whose origin buffer is the origin's own window memory, completed by
 * MPI_Win_fence: once the fence returns, every rank may read that memory. Each rank gets
 * the right neighbour's rows (1 KiB rows 2 KiB apart: a strided get, which the target's
 * agent gathers off node) into the second half of its own window, then, after the fence,
 * the left neighbour gets them back from it and checks every byte. Rounds change the
 * pattern, so a row that landed late shows the previous round's bytes. Create windows, so
 * that off node (RMA_MOVE_EAGER=0, over tcp) the gets are host-assisted. FENCE_GET_SPLIT=1
 * gets each row with an MPI_Get of its own (small gets, which over tcp are held back until
 * the fence sends them).
 */
#include "rmatest.h"

#define ROW  1024
#define ROWS 32
#define HALF (2 * ROW * ROWS) /* the rows' span; the second half receives */

static unsigned char pat(int who, int round, size_t i)
{
    return (unsigned char)(who * 37 + round * 11 + i * 3 + (i >> 10));
}

int main(int argc, char **argv)
{
    int rank, np, right, left, rounds = rt_env_int("FENCE_GET_ROUNDS", 200);
    int split = rt_env_int("FENCE_GET_SPLIT", 0);
    unsigned char *mem, *back;
    MPI_Datatype rows;
    MPI_Win win;

    rt_init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    right = (rank + 1) % np;
    left = (rank + np - 1) % np;
    mem = calloc(1, 2 * HALF);
    back = malloc(HALF);
    MPI_OK(MPI_Win_create(mem, 2 * HALF, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    MPI_OK(MPI_Type_vector(ROWS, ROW, 2 * ROW, MPI_BYTE, &rows));
    MPI_OK(MPI_Type_commit(&rows));
    for (int r = 0; r < rounds && rt_fails == 0; r++) {
        /* this round's rows in the first half, touched by no one else in the round */
        for (size_t i = 0; i < HALF; i++)
            mem[i] = pat(rank, r, i);
        MPI_OK(MPI_Win_fence(0, win));
        if (split)
            for (int k = 0; k < ROWS; k++)
                MPI_OK(MPI_Get(mem + HALF + 2 * k * ROW, ROW, MPI_BYTE, right, 2 * k * ROW, ROW,
                               MPI_BYTE, win));
        else
            MPI_OK(MPI_Get(mem + HALF, 1, rows, right, 0, 1, rows, win));
        MPI_OK(MPI_Win_fence(0, win));
        /* the left neighbour's second half now holds this rank's rows */
        MPI_OK(MPI_Get(back, 1, rows, left, HALF, 1, rows, win));
        MPI_OK(MPI_Win_fence(0, win));
        for (size_t k = 0; k < ROWS; k++) {
            size_t off = 2 * k * ROW;
            int bad = -1;
            for (size_t i = 0; i < ROW && bad < 0; i++)
                if (back[off + i] != pat(rank, r, off + i))
                    bad = (int)i;
            CHECK(bad < 0, "round %d: row %zu byte %d read back from rank %d is stale", r, k, bad,
                  left);
        }
    }
    MPI_OK(MPI_Type_free(&rows));
    MPI_OK(MPI_Win_free(&win));
    free(mem);
    free(back);
    return rt_finish("fence_get_own");
}
