/*
 * attr_threads - window attributes under MPI_THREAD_MULTIPLE, and delete callbacks that call
 * MPI (the standard lets them).
 *
 * 1. Two threads set, get and delete attributes of keyvals of their own on one window, many
 *    times; each must always read back its own value.
 * 2. A delete callback that creates keyvals (the keyval table grows under it) and sets and
 *    deletes attributes of the same window; every value must still be right afterwards and
 *    each callback runs exactly once.
 * 3. MPI_Win_free deletes the attributes newest first, each callback once, also when a
 *    callback deletes another attribute of the window.
 */
#include "rmatest.h"

#include <pthread.h>

#define ROUNDS 5000
#define NKV    8

static MPI_Win win;
static _Atomic int bad[2];

static void *setter(void *arg)
{
    int id = (int)(long)arg, kv[NKV], flag;
    void *v;

    for (int i = 0; i < NKV; i++)
        MPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, MPI_WIN_NULL_DELETE_FN, &kv[i], NULL);
    for (int r = 0; r < ROUNDS; r++) {
        for (int i = 0; i < NKV; i++)
            MPI_Win_set_attr(win, kv[i], (void *)(intptr_t)(id * 1000000 + r * NKV + i + 1));
        for (int i = 0; i < NKV; i++) {
            MPI_Win_get_attr(win, kv[i], &v, &flag);
            if (!flag || v != (void *)(intptr_t)(id * 1000000 + r * NKV + i + 1))
                bad[id]++;
        }
        for (int i = 0; i < NKV; i++)
            MPI_Win_delete_attr(win, kv[i]);
    }
    for (int i = 0; i < NKV; i++)
        MPI_Win_free_keyval(&kv[i]);
    return NULL;
}

/* part 2 and 3: what the callbacks did */
static int deletes[4], order[4], norder, made[64], nmade, side_kv = MPI_KEYVAL_INVALID;

static int growing_delete(MPI_Win w, int keyval, void *value, void *extra)
{
    (void)keyval, (void)extra;
    deletes[(intptr_t)value]++;
    for (int i = 0; i < 16 && nmade < 64; i++) /* the table grows (realloc) under us */
        MPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, MPI_WIN_NULL_DELETE_FN, &made[nmade++], NULL);
    if (side_kv != MPI_KEYVAL_INVALID) /* and the window's list changes */
        MPI_Win_set_attr(w, side_kv, (void *)(intptr_t)77);
    return MPI_SUCCESS;
}

static int ordered_delete(MPI_Win w, int keyval, void *value, void *extra)
{
    (void)keyval;
    order[norder++] = (int)(intptr_t)value;
    if ((intptr_t)value == 3) /* the newest deletes another attribute (extra: its keyval) */
        MPI_Win_delete_attr(w, *(int *)extra);
    return MPI_SUCCESS;
}

int main(int argc, char **argv)
{
    int provided, kv[4], sib, flag;
    pthread_t th[2];
    void *v;
    MPI_Win w2;

    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rt_rank);
    MPI_OK(MPI_Win_create(NULL, 0, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);

    if (provided == MPI_THREAD_MULTIPLE) {
        for (long i = 0; i < 2; i++)
            pthread_create(&th[i], NULL, setter, (void *)i);
        for (int i = 0; i < 2; i++)
            pthread_join(th[i], NULL);
        CHECK(bad[0] == 0 && bad[1] == 0, "threads read %d and %d wrong or missing values",
              (int)bad[0], (int)bad[1]);
    }

    /* 2: callbacks that grow the keyval table and change the window's attributes */
    MPI_OK(MPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, growing_delete, &kv[0], NULL));
    MPI_OK(MPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, MPI_WIN_NULL_DELETE_FN, &side_kv, NULL));
    MPI_OK(MPI_Win_set_attr(win, kv[0], (void *)(intptr_t)1));
    MPI_OK(MPI_Win_set_attr(win, kv[0], (void *)(intptr_t)2)); /* replaces 1: its callback */
    MPI_OK(MPI_Win_free_keyval(&kv[0]));                       /* the attribute keeps it */
    MPI_OK(MPI_Win_get_attr(win, side_kv, &v, &flag));
    CHECK(flag && v == (void *)(intptr_t)77, "the callback's own attribute: flag %d", flag);
    CHECK(deletes[1] == 1 && deletes[2] == 0, "callbacks ran %d and %d times, want 1 and 0",
          deletes[1], deletes[2]);
    for (int i = 0; i < nmade; i++)
        MPI_OK(MPI_Win_free_keyval(&made[i]));
    nmade = 0;

    /* 3: MPI_Win_free, newest first, a callback deleting another attribute */
    MPI_OK(MPI_Win_create(NULL, 0, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w2));
    MPI_OK(MPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, MPI_WIN_NULL_DELETE_FN, &sib, NULL));
    for (int i = 1; i <= 3; i++) {
        MPI_OK(MPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, ordered_delete, &kv[i], &sib));
        MPI_OK(MPI_Win_set_attr(w2, kv[i], (void *)(intptr_t)i));
        if (i == 1)
            MPI_OK(MPI_Win_set_attr(w2, sib, (void *)(intptr_t)9));
    }
    MPI_OK(MPI_Win_delete_attr(w2, kv[2])); /* out of the middle */
    MPI_OK(MPI_Win_free(&w2));
    CHECK(norder == 3 && order[0] == 2 && order[1] == 3 && order[2] == 1,
          "delete callbacks ran %d times, in order %d %d %d (want 2, then 3 1 at the free)", norder,
          order[0], order[1], order[2]);
    for (int i = 1; i <= 3; i++)
        MPI_OK(MPI_Win_free_keyval(&kv[i]));
    MPI_OK(MPI_Win_free_keyval(&sib));

    MPI_OK(MPI_Win_free(&win)); /* deletes 2 (growing_delete, the table grows again) */
    CHECK(deletes[2] == 1, "the last value's callback ran %d times at MPI_Win_free", deletes[2]);
    for (int i = 0; i < nmade; i++)
        MPI_OK(MPI_Win_free_keyval(&made[i]));
    return rt_finish("attr_threads");
}
