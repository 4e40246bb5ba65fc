/*
 * count_types - datatypes built with MPI-4's large-count constructors (MPI_Type_*_c) work
 * in RMA calls as target and as origin types. MPICH keeps their arguments apart and refuses
 * the classic MPI_Type_get_envelope on them, so librma must read them with the _c queries.
 *
 * For each constructor (and a type nested on two of them), rank r puts into its right
 * neighbour's window with the type as target type, gets the same elements back, and
 * accumulates into them; then puts with the type as origin type. Every result is compared
 * with what MPICH's own MPI_Pack and MPI_Unpack make of the same type.
 *
 * past_int: types whose counts, strides, displacements or sizes pass INT_MAX (what only
 * the _c constructors can say) but which hold a few bytes, put into a window of 2 GiB +
 * 4 KiB (memory never touched costs nothing): librma read them back into the classic
 * constructor's int arguments and refused them with MPI_ERR_TYPE.
 */
#include "rmatest.h"

#include <limits.h>
#include <stdint.h>

#define WIN_INTS 4096

typedef struct {
    const char *name;
    MPI_Datatype t;
} ctype_t;

static int make_types(ctype_t *ts)
{
    MPI_Count bl[3] = {2, 1, 3}, di[3] = {40, 3, 17}, bdi[3] = {160, 12, 68};
    MPI_Count sizes[2] = {12, 10}, subs[2] = {4, 3}, starts[2] = {5, 2}, gs[2] = {16, 12};
    int dist[2] = {MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_CYCLIC},
        darg[2] = {MPI_DISTRIBUTE_DFLT_DARG, 2};
    int psz[2] = {2, 2};
    MPI_Datatype tys[3] = {MPI_INT, MPI_INT, MPI_INT}, ix;
    int n = 0;

    MPI_Type_contiguous_c(7, MPI_INT, &ts[n].t), ts[n++].name = "contiguous_c";
    MPI_Type_vector_c(5, 2, 7, MPI_INT, &ts[n].t), ts[n++].name = "vector_c";
    MPI_Type_create_hvector_c(4, 3, 44, MPI_INT, &ts[n].t), ts[n++].name = "hvector_c";
    MPI_Type_indexed_c(3, bl, di, MPI_INT, &ts[n].t), ts[n++].name = "indexed_c";
    MPI_Type_create_hindexed_c(3, bl, bdi, MPI_INT, &ts[n].t), ts[n++].name = "hindexed_c";
    MPI_Type_create_indexed_block_c(3, 2, di, MPI_INT, &ts[n].t), ts[n++].name = "indexed_block_c";
    MPI_Type_create_hindexed_block_c(3, 2, bdi, MPI_INT, &ts[n].t),
        ts[n++].name = "hindexed_block_c";
    MPI_Type_create_struct_c(3, bl, bdi, tys, &ts[n].t), ts[n++].name = "struct_c";
    MPI_Type_create_subarray_c(2, sizes, subs, starts, MPI_ORDER_C, MPI_INT, &ts[n].t),
        ts[n++].name = "subarray_c C order";
    MPI_Type_create_subarray_c(2, sizes, subs, starts, MPI_ORDER_FORTRAN, MPI_INT, &ts[n].t),
        ts[n++].name = "subarray_c Fortran order";
    MPI_Type_create_darray_c(4, 1, 2, gs, dist, darg, psz, MPI_ORDER_C, MPI_INT, &ts[n].t),
        ts[n++].name = "darray_c (process 1 of 2 x 2)";
    MPI_Type_create_resized_c(MPI_INT, -8, 20, &ix);
    MPI_Type_contiguous_c(6, ix, &ts[n].t), ts[n++].name = "contiguous_c of resized_c";
    MPI_Type_free(&ix);
    MPI_Type_indexed_c(3, bl, di, MPI_INT, &ix);
    MPI_Type_vector_c(3, 1, 2, ix, &ts[n].t), ts[n++].name = "vector_c of indexed_c";
    MPI_Type_free(&ix);
    for (int i = 0; i < n; i++)
        MPI_Type_commit(&ts[i].t);
    return n;
}

/* The window memory `t` (count 1, at displacement disp ints) gives when the ints of
 * `packed` (as MPI_Pack made them) are put along it into zeros, unpacked by MPICH. */
static void expected_put(MPI_Datatype t, MPI_Aint disp, const int *packed, int nint, int *out)
{
    int pos = 0;

    memset(out, 0, WIN_INTS * sizeof(int));
    MPI_Unpack(packed, nint * (int)sizeof(int), &pos, out + disp, 1, t, MPI_COMM_SELF);
}

static void one_type(const ctype_t *ct, int *mem, MPI_Win win, int right, int left)
{
    MPI_Aint lb, ext, disp;
    MPI_Count size;
    int nint, pos = 0, bad = 0;
    int *src, *packed, *want, *got;

    MPI_Type_get_extent(ct->t, &lb, &ext);
    MPI_Type_size_c(ct->t, &size);
    nint = (int)(size / (MPI_Count)sizeof(int));
    disp = lb < 0 ? (-lb + 3) / 4 : 0; /* keep the type map inside the window */
    src = malloc(WIN_INTS * sizeof(int));
    packed = malloc((size_t)(nint + 1) * sizeof(int));
    want = malloc(WIN_INTS * sizeof(int));
    got = malloc(WIN_INTS * sizeof(int));
    for (int i = 0; i < nint; i++)
        packed[i] = 1000 * (rt_rank + 1) + i;

    /* target type: put, then get back, then accumulate */
    memset(mem, 0, WIN_INTS * sizeof(int));
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win));
    MPI_OK(MPI_Put(packed, nint, MPI_INT, right, disp, 1, ct->t, win));
    MPI_OK(MPI_Win_flush(right, win));
    memset(got, 0xff, (size_t)(nint + 1) * sizeof(int));
    MPI_OK(MPI_Get(got, nint, MPI_INT, right, disp, 1, ct->t, win));
    MPI_OK(MPI_Win_flush(right, win));
    for (int i = 0; i < nint; i++)
        bad += got[i] != packed[i];
    CHECK(bad == 0, "%s: get of what was put: %d of %d ints differ", ct->name, bad, nint);
    MPI_OK(MPI_Accumulate(packed, nint, MPI_INT, right, disp, 1, ct->t, MPI_SUM, win));
    MPI_OK(MPI_Win_unlock(right, win));
    MPI_Barrier(MPI_COMM_WORLD);
    {
        int *lp = malloc((size_t)(nint + 1) * sizeof(int));
        for (int i = 0; i < nint; i++)
            lp[i] = 2 * (1000 * (left + 1) + i); /* put, then summed again */
        expected_put(ct->t, disp, lp, nint, want);
        free(lp);
    }
    bad = 0;
    for (int i = 0; i < WIN_INTS; i++)
        bad += mem[i] != want[i];
    CHECK(bad == 0, "%s as target type: %d of %d window ints differ from MPI_Unpack's", ct->name,
          bad, WIN_INTS);

    /* origin type: put from src along the type, packed at the target */
    for (int i = 0; i < WIN_INTS; i++)
        src[i] = 7 * i + rt_rank;
    MPI_Pack(src + disp, 1, ct->t, packed, nint * (int)sizeof(int), &pos, MPI_COMM_SELF);
    memset(mem, 0, WIN_INTS * sizeof(int));
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win));
    MPI_OK(MPI_Put(src + disp, 1, ct->t, right, 0, nint, MPI_INT, win));
    MPI_OK(MPI_Win_unlock(right, win));
    MPI_Barrier(MPI_COMM_WORLD);
    {
        int *lsrc = malloc(WIN_INTS * sizeof(int));
        pos = 0;
        for (int i = 0; i < WIN_INTS; i++)
            lsrc[i] = 7 * i + left;
        MPI_Pack(lsrc + disp, 1, ct->t, want, WIN_INTS * (int)sizeof(int), &pos, MPI_COMM_SELF);
        free(lsrc);
    }
    bad = 0;
    for (int i = 0; i < nint; i++)
        bad += mem[i] != want[i];
    CHECK(bad == 0, "%s as origin type: %d of %d ints differ from MPI_Pack's", ct->name, bad, nint);
    free(src);
    free(packed);
    free(want);
    free(got);
}

#define BIG ((MPI_Count)INT_MAX + 1) /* 2^31 */

static void past_int(int right, int left)
{
    MPI_Aint bytes = (MPI_Aint)BIG + 4096;
    MPI_Count blens[2] = {4, 4}, disps[2] = {0, BIG + 3}, size = BIG + 16, sub = 8, start = BIG;
    struct {
        const char *name;
        MPI_Datatype t;
        MPI_Aint at[2]; /* where its two runs of bytes lie */
        int len[2];
    } ts[3] = {{"vector_c(2, 8, 2^31 + 8)", 0, {0, (MPI_Aint)BIG + 8}, {8, 8}},
               {"indexed_c(2, {4, 4}, {0, 2^31 + 3})", 0, {0, (MPI_Aint)BIG + 3}, {4, 4}},
               {"subarray_c({2^31 + 16}, {8}, {2^31})", 0, {(MPI_Aint)BIG, 0}, {8, 0}}};
    unsigned char src[16], *mem;
    MPI_Win win;

    MPI_Type_vector_c(2, 8, BIG + 8, MPI_CHAR, &ts[0].t);
    MPI_Type_indexed_c(2, blens, disps, MPI_CHAR, &ts[1].t);
    MPI_Type_create_subarray_c(1, &size, &sub, &start, MPI_ORDER_C, MPI_CHAR, &ts[2].t);
    MPI_OK(MPI_Win_allocate(bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win));
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    for (int k = 0; k < 3; k++) {
        int n = ts[k].len[0] + ts[k].len[1], bad = 0;

        MPI_Type_commit(&ts[k].t);
        for (int i = 0; i < 16; i++)
            src[i] = (unsigned char)(100 + 16 * k + i + rt_rank);
        for (int r = 0; r < 2; r++) /* the runs and a byte either side of each */
            if (ts[k].len[r] > 0)
                memset(mem + ts[k].at[r] - (ts[k].at[r] > 0), 0, (size_t)ts[k].len[r] + 2);
        MPI_OK(MPI_Win_fence(0, win));
        MPI_OK(MPI_Put(src, n, MPI_CHAR, right, 0, 1, ts[k].t, win));
        MPI_OK(MPI_Win_fence(0, win));
        for (int r = 0, i = 0; r < 2; r++) {
            unsigned char *p = mem + ts[k].at[r];

            if (ts[k].len[r] == 0)
                continue;
            bad += ts[k].at[r] > 0 && p[-1] != 0;
            bad += p[ts[k].len[r]] != 0;
            for (int j = 0; j < ts[k].len[r]; j++, i++)
                bad += p[j] != (unsigned char)(100 + 16 * k + i + left);
        }
        CHECK(bad == 0, "%s: %d bytes wrong at the target", ts[k].name, bad);
        MPI_Type_free(&ts[k].t);
    }
    MPI_OK(MPI_Win_free(&win));
}

int main(int argc, char **argv)
{
    ctype_t ts[16];
    int np, n, *mem;
    MPI_Win win;

    rt_init(&argc, &argv);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    n = make_types(ts);
    MPI_OK(MPI_Win_allocate(WIN_INTS * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD,
                            &mem, &win));
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    for (int i = 0; i < n; i++) {
        one_type(&ts[i], mem, win, (rt_rank + 1) % np, (rt_rank + np - 1) % np);
        MPI_Type_free(&ts[i].t);
    }
    MPI_OK(MPI_Win_free(&win));
    past_int((rt_rank + 1) % np, (rt_rank + np - 1) % np);
    return rt_finish("count_types");
}
