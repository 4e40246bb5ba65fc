/*
 * dyn_gap - one operation on a dynamic window whose target datatype reaches two attached
 * regions with unattached bytes between them (MPI asks only that the bytes accessed be
 * attached). Each rank attaches two blocks (MPI_Alloc_mem with DYN_GAP_ALLOC_MEM=1, else
 * malloc) and its right neighbour, in one lock_all epoch:
 *   - puts 4 longs into each block with one hindexed type of absolute addresses (target
 *     displacement 0, MPI_BOTTOM-style), then accumulates (SUM) with a type relative to the
 *     second block whose other block lies before it (a negative displacement);
 *   - gets them back with MPI_Get and MPI_Get_accumulate(MPI_NO_OP) through the same types;
 *   - under MPI_ERRORS_RETURN, puts with a type one of whose blocks lies in neither region:
 *     MPI_ERR_RMA_RANGE, and nothing written.
 * Each rank then checks what its left neighbour left in its blocks.
 */
#include "rmatest.h"

int main(int argc, char **argv)
{
    const char *am = getenv("DYN_GAP_ALLOC_MEM");
    int use_am = am != NULL && atoi(am) != 0, rank, np, right, left;
    long *b1, *b2, v[8], g[8], g2[8], zero[8] = {0};
    MPI_Aint mine[2], *all, t1, t2, dabs[2], drel[2], dbad[2];
    int bl[2] = {4, 4};
    MPI_Datatype abs_t, rel_t, bad_t;
    MPI_Win win;

    rt_init(&argc, &argv);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    rank = rt_rank;
    right = (rank + 1) % np;
    left = (rank + np - 1) % np;
    if (use_am) {
        MPI_OK(MPI_Alloc_mem(4096, MPI_INFO_NULL, &b1));
        MPI_OK(MPI_Alloc_mem(8192, MPI_INFO_NULL, &b2));
    } else {
        b1 = malloc(4096);
        b2 = malloc(8192);
    }
    memset(b1, 0, 4096);
    memset(b2, 0, 8192);
    MPI_OK(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    MPI_OK(MPI_Win_attach(win, b1, 4096));
    MPI_OK(MPI_Win_attach(win, b2, 8192));
    MPI_Get_address(b1, &mine[0]);
    MPI_Get_address(b2, &mine[1]);
    all = malloc(2 * (size_t)np * sizeof(*all));
    MPI_Allgather(mine, 2, MPI_AINT, all, 2, MPI_AINT, MPI_COMM_WORLD);
    t1 = all[2 * right];
    t2 = all[2 * right + 1];

    /* absolute: longs 8-11 of block 1 and 16-19 of block 2 */
    dabs[0] = MPI_Aint_add(t1, 64);
    dabs[1] = MPI_Aint_add(t2, 128);
    MPI_Type_create_hindexed(2, bl, dabs, MPI_LONG, &abs_t);
    MPI_Type_commit(&abs_t);
    /* from block 2: its longs 0-3, and longs 32-35 of block 1 (before or after it) */
    drel[0] = 0;
    drel[1] = MPI_Aint_diff(MPI_Aint_add(t1, 256), t2);
    MPI_Type_create_hindexed(2, bl, drel, MPI_LONG, &rel_t);
    MPI_Type_commit(&rel_t);
    /* longs 0-3 of block 1, and 4 longs past its end (attached nowhere: a 1 MiB-aligned
     * address beyond both blocks, far from either) */
    dbad[0] = t1;
    dbad[1] = MPI_Aint_add(t1 > t2 ? t1 : t2, 1 << 20);
    MPI_Type_create_hindexed(2, bl, dbad, MPI_LONG, &bad_t);
    MPI_Type_commit(&bad_t);

    for (int i = 0; i < 8; i++)
        v[i] = 100 * rank + i + 1;
    MPI_OK(MPI_Win_lock_all(0, win));
    MPI_OK(MPI_Put(v, 8, MPI_LONG, right, 0, 1, abs_t, win));
    MPI_OK(MPI_Accumulate(v, 8, MPI_LONG, right, t2, 1, rel_t, MPI_SUM, win));
    MPI_OK(MPI_Win_flush(right, win));
    memset(g, 0, sizeof(g));
    memset(g2, 0, sizeof(g2));
    MPI_OK(MPI_Get(g, 8, MPI_LONG, right, 0, 1, abs_t, win));
    MPI_OK(MPI_Get_accumulate(NULL, 0, MPI_LONG, g2, 8, MPI_LONG, right, t2, 1, rel_t, MPI_NO_OP,
                              win));
    MPI_OK(MPI_Win_flush(right, win));
    MPI_ERRCLASS(MPI_Put(zero, 8, MPI_LONG, right, 0, 1, bad_t, win), MPI_ERR_RMA_RANGE);
    MPI_OK(MPI_Win_flush(right, win));
    MPI_OK(MPI_Win_unlock_all(win));
    for (int i = 0; i < 8; i++) {
        CHECK(g[i] == v[i], "get through the absolute type: long %d is %ld, want %ld", i, g[i],
              v[i]);
        CHECK(g2[i] == v[i], "get_accumulate through the relative type: long %d is %ld, want %ld",
              i, g2[i], v[i]);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < 4; i++) {
        long w = 100 * left + i + 1, w2 = 100 * left + 4 + i + 1;
        CHECK(b1[8 + i] == w, "block 1 long %d is %ld, want %ld", 8 + i, b1[8 + i], w);
        CHECK(b2[16 + i] == w2, "block 2 long %d is %ld, want %ld", 16 + i, b2[16 + i], w2);
        CHECK(b2[i] == w, "block 2 long %d is %ld, want %ld", i, b2[i], w);
        CHECK(b1[32 + i] == w2, "block 1 long %d is %ld, want %ld", 32 + i, b1[32 + i], w2);
        CHECK(b1[i] == 0, "block 1 long %d is %ld after a refused put, want 0", i, b1[i]);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_OK(MPI_Win_detach(win, b1));
    MPI_OK(MPI_Win_detach(win, b2));
    MPI_OK(MPI_Win_free(&win));
    MPI_Type_free(&abs_t);
    MPI_Type_free(&rel_t);
    MPI_Type_free(&bad_t);
    if (use_am) {
        MPI_Free_mem(b1);
        MPI_Free_mem(b2);
    } else {
        free(b1);
        free(b2);
    }
    free(all);
    return rt_finish("dyn_gap");
}
