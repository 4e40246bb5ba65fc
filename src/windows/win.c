/*
 * win.c - the window handle table and window info keys.
 */
#include "windows/win.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

rma_win_t **rma_win_table;
unsigned rma_win_table_size;
static unsigned win_live;
static pthread_mutex_t win_lock = PTHREAD_MUTEX_INITIALIZER;

rma_win_t *rma_win_new(void)
{
    rma_win_t *win = calloc(1, sizeof(*win));
    unsigned idx;

    if (win == NULL)
        return NULL;
    pthread_mutex_lock(&win_lock);
    for (idx = 0; idx < rma_win_table_size; idx++)
        if (rma_win_table[idx] == NULL)
            break;
    if (idx == rma_win_table_size) {
        unsigned cap = rma_win_table_size ? 2 * rma_win_table_size : 16;
        rma_win_t **t =
            cap <= RMA_WIN_INDEX_MASK + 1u ? realloc(rma_win_table, cap * sizeof(*t)) : NULL;
        if (t == NULL) {
            pthread_mutex_unlock(&win_lock);
            free(win);
            return NULL;
        }
        memset(t + rma_win_table_size, 0, (cap - rma_win_table_size) * sizeof(*t));
        rma_win_table = t;
        rma_win_table_size = cap;
    }
    win->handle = (MPI_Win)(RMA_WIN_HANDLE_TAG | idx);
    rma_win_table[idx] = win;
    win_live++;
    pthread_mutex_unlock(&win_lock);
    win->errhandler = MPI_ERRORS_ARE_FATAL;
    win->model = MPI_WIN_UNIFIED;
    win->seg_fd = -1;
    win->group = MPI_GROUP_NULL;
    return win;
}

void rma_win_delete(rma_win_t *win)
{
    pthread_mutex_lock(&win_lock);
    rma_win_table[(unsigned)win->handle & RMA_WIN_INDEX_MASK] = NULL;
    win_live--;
    pthread_mutex_unlock(&win_lock);
    free(win->attrs);
    free(win);
}

int rma_win_count(void)
{
    return (int)win_live;
}

static int info_bool(MPI_Info info, const char *key, int dflt)
{
    char val[16];
    int flag = 0;

    if (info == MPI_INFO_NULL)
        return dflt;
    PMPI_Info_get(info, key, sizeof(val) - 1, val, &flag);
    if (!flag)
        return dflt;
    return strcmp(val, "true") == 0 || strcmp(val, "1") == 0;
}

static void info_str(MPI_Info info, const char *key, char *dst, size_t len)
{
    char val[128];
    int flag = 0;

    if (info == MPI_INFO_NULL)
        return;
    PMPI_Info_get(info, key, sizeof(val) - 1, val, &flag);
    if (flag && strlen(val) < len)
        strcpy(dst, val);
}

void rma_win_info_parse(rma_win_t *win, MPI_Info info)
{
    rma_win_info_t *wi = &win->info;

    if (wi->accumulate_ordering[0] == '\0') {
        strcpy(wi->accumulate_ordering, "rar,raw,war,waw");
        strcpy(wi->accumulate_ops, "same_op_no_op");
    }
    wi->no_locks = info_bool(info, "no_locks", wi->no_locks);
    wi->same_size = info_bool(info, "same_size", wi->same_size);
    wi->same_disp_unit = info_bool(info, "same_disp_unit", wi->same_disp_unit);
    wi->alloc_shared_noncontig =
        info_bool(info, "alloc_shared_noncontig", wi->alloc_shared_noncontig);
    info_str(info, "accumulate_ordering", wi->accumulate_ordering, sizeof(wi->accumulate_ordering));
    info_str(info, "accumulate_ops", wi->accumulate_ops, sizeof(wi->accumulate_ops));
}
