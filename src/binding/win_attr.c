/*
 * win_attr.c - window attributes (predefined and user keyvals with copy/delete callbacks),
 * names, groups and info.
 *
 * Keyvals are librma's own handles (tag 0x5b in the top byte) because MPICH never sees a
 * librma window to hang attributes on. Window attributes are never copied (windows cannot
 * be duplicated), so copy callbacks are stored but not called.
 *
 * MPICH's Fortran bindings set and get attributes through MPII_Win_set_attr and
 * MPII_Win_get_attr with an integer kind, and make a keyval's callbacks Fortran ones with
 * MPII_Keyval_set_proxy; librma answers those for its windows and keyvals (next.h) with
 * MPICH's meaning: Fortran's predefined keyvals are C's + 1 and give values, not pointers;
 * a value set from Fortran is an integer, which C gets a pointer to.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "binding/binding.h"
#include "binding/next.h"
#include "mpid/rma/grow.h"

#define KEYVAL_TAG  0x5b000000
#define KEYVAL_MASK 0xff000000

typedef struct keyval {
    MPI_Win_copy_attr_function *copy_fn;
    MPI_Win_delete_attr_function *delete_fn;
    void *extra_state;
    rma_attr_delete_proxy_t *delete_proxy; /* Fortran's calling convention, or NULL */
    int refcnt; /* 1 for the user's handle until MPI_Win_free_keyval, +1 per attribute */
} keyval_t;

/* Guards the keyval table and every window's attribute list (not hot). Nobody holds it while
 * a delete callback runs: a callback may call MPI, on this window and its keyvals too. */
static pthread_mutex_t attr_lock = PTHREAD_MUTEX_INITIALIZER;
static keyval_t *keyvals;
static int nkeyvals;

/* The index of a live keyval handle, or -1 (attr_lock held). */
static int keyval_index(int handle)
{
    int idx = handle & ~KEYVAL_MASK;

    if ((handle & KEYVAL_MASK) != KEYVAL_TAG || idx >= nkeyvals || keyvals[idx].refcnt <= 0)
        return -1;
    return idx;
}

int MPI_Win_create_keyval(MPI_Win_copy_attr_function *copy_fn,
                          MPI_Win_delete_attr_function *delete_fn, int *keyval, void *extra_state)
{
    int idx;

    if (keyval == NULL)
        return rma_err(NULL, "MPI_Win_create_keyval", MPI_ERR_ARG, "keyval is NULL");
    pthread_mutex_lock(&attr_lock);
    for (idx = 0; idx < nkeyvals && keyvals[idx].refcnt > 0; idx++)
        ;
    if (idx == nkeyvals) {
        keyval_t *p = realloc(keyvals, (size_t)(nkeyvals + 1) * sizeof(*p));
        if (p == NULL) {
            pthread_mutex_unlock(&attr_lock);
            return rma_err(NULL, "MPI_Win_create_keyval", MPI_ERR_NO_MEM, "out of memory");
        }
        keyvals = p;
        nkeyvals++;
    }
    keyvals[idx] = (keyval_t){copy_fn, delete_fn, extra_state, NULL, 1};
    pthread_mutex_unlock(&attr_lock);
    *keyval = KEYVAL_TAG | idx;
    return MPI_SUCCESS;
}
RMA_PMPI(Win_create_keyval);

int MPI_Win_free_keyval(int *keyval)
{
    int idx;

    pthread_mutex_lock(&attr_lock);
    idx = keyval != NULL ? keyval_index(*keyval) : -1;
    if (idx >= 0)
        keyvals[idx].refcnt--;
    pthread_mutex_unlock(&attr_lock);
    if (idx < 0)
        return rma_err(NULL, "MPI_Win_free_keyval", MPI_ERR_KEYVAL,
                       "not a window keyval (or freed already)");
    *keyval = MPI_KEYVAL_INVALID;
    return MPI_SUCCESS;
}
RMA_PMPI(Win_free_keyval);

/* The predefined keyvals: C's, and Fortran's (C's + 1, MPICH's MPII_ATTR_C_TO_FORTRAN). */
static int is_predefined(int keyval)
{
    static const int c[] = {MPI_WIN_BASE, MPI_WIN_SIZE, MPI_WIN_DISP_UNIT, MPI_WIN_CREATE_FLAVOR,
                            MPI_WIN_MODEL};

    for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++)
        if (keyval == c[i] || keyval == c[i] + 1)
            return 1;
    return 0;
}

static int attr_find(const rma_win_t *win, int keyval)
{
    for (int i = 0; i < win->nattrs; i++)
        if (win->attrs[i].keyval == keyval)
            return i;
    return -1;
}

/* Takes attribute i off the window, keeping the others in the order they were set, and
 * copies its keyval's callbacks into *kv (attr_lock held). */
static rma_attr_t attr_take(rma_win_t *win, int i, keyval_t *kv)
{
    rma_attr_t a = win->attrs[i];

    *kv = keyvals[a.keyval & ~KEYVAL_MASK];
    memmove(&win->attrs[i], &win->attrs[i + 1], (size_t)(win->nattrs - i - 1) * sizeof(a));
    win->nattrs--;
    return a;
}

/* Appends an attribute (attr_lock held); -1 when out of memory. */
static int attr_put(rma_win_t *win, rma_attr_t a)
{
    if (rma_grow(&win->attrs, &win->attrs_cap, win->nattrs, sizeof(*win->attrs), 4) != 0)
        return -1;
    win->attrs[win->nattrs++] = a;
    return 0;
}

/* Runs the delete callback of attribute a, taken off the window (attr_lock not held). On
 * success the attribute's hold of its keyval goes; on failure the attribute goes back
 * unless the key was set again meanwhile. MPI_SUCCESS or the callback's error. */
static int attr_delete(rma_win_t *win, rma_attr_t a, const keyval_t *kv)
{
    int rc = MPI_SUCCESS;

    if (kv->delete_fn != NULL && kv->delete_proxy != NULL)
        rc = kv->delete_proxy(kv->delete_fn, win->handle, a.keyval, a.kind, a.value,
                              kv->extra_state);
    else if (kv->delete_fn != NULL)
        rc = kv->delete_fn(win->handle, a.keyval, a.value, kv->extra_state);
    pthread_mutex_lock(&attr_lock);
    if (rc == MPI_SUCCESS)
        keyvals[a.keyval & ~KEYVAL_MASK].refcnt--;
    else if (attr_find(win, a.keyval) < 0 && attr_put(win, a) != 0)
        keyvals[a.keyval & ~KEYVAL_MASK].refcnt--; /* lost with the memory */
    pthread_mutex_unlock(&attr_lock);
    return rc;
}

static int attr_set(rma_win_t *win, int keyval, void *value, int kind, const char *func)
{
    keyval_t kv;
    rma_attr_t old;
    int i, idx, rc;

    if (is_predefined(keyval))
        return rma_err(win, func, MPI_ERR_KEYVAL, "predefined attributes are read-only");
    for (;;) { /* an old value's callback runs unlocked; then look again */
        pthread_mutex_lock(&attr_lock);
        if ((idx = keyval_index(keyval)) < 0) {
            pthread_mutex_unlock(&attr_lock);
            return rma_err(win, func, MPI_ERR_KEYVAL, "0x%x is not a window keyval",
                           (unsigned)keyval);
        }
        if ((i = attr_find(win, keyval)) < 0)
            break;
        old = attr_take(win, i, &kv);
        pthread_mutex_unlock(&attr_lock);
        rc = attr_delete(win, old, &kv);
        if (rc != MPI_SUCCESS)
            return rma_err(win, func, rc, "the delete callback of the old value failed");
    }
    rc = attr_put(win, (rma_attr_t){keyval, kind, value});
    if (rc == 0)
        keyvals[idx].refcnt++;
    pthread_mutex_unlock(&attr_lock);
    return rc == 0 ? MPI_SUCCESS : rma_err(win, func, MPI_ERR_NO_MEM, "out of memory");
}

/* Gets into *(void **)value what `kind` asks for: C (RMA_ATTR_PTR) gets the pointer set
 * from C, or a pointer to an integer set from Fortran (valid until the window's attributes
 * change); Fortran gets the word as set. */
static int attr_get(rma_win_t *win, int keyval, void *value, int *flag, int kind, const char *func)
{
    int i;

    if (value == NULL || flag == NULL)
        return rma_err(win, func, MPI_ERR_ARG, "attribute_val or flag is NULL");
    *flag = 1;
    win->attr_size = win->size;
    win->attr_disp_unit = win->disp_unit;
    win->attr_flavor = win->flavor;
    win->attr_model = win->model;
    switch (keyval) {
    case MPI_WIN_BASE: *(void **)value = win->base; return MPI_SUCCESS;
    case MPI_WIN_SIZE: *(void **)value = &win->attr_size; return MPI_SUCCESS;
    case MPI_WIN_DISP_UNIT: *(void **)value = &win->attr_disp_unit; return MPI_SUCCESS;
    case MPI_WIN_CREATE_FLAVOR: *(void **)value = &win->attr_flavor; return MPI_SUCCESS;
    case MPI_WIN_MODEL: *(void **)value = &win->attr_model; return MPI_SUCCESS;
    case MPI_WIN_BASE + 1: *(intptr_t *)value = (intptr_t)win->base; return MPI_SUCCESS;
    case MPI_WIN_SIZE + 1: *(intptr_t *)value = win->size; return MPI_SUCCESS;
    case MPI_WIN_DISP_UNIT + 1: *(intptr_t *)value = win->disp_unit; return MPI_SUCCESS;
    case MPI_WIN_CREATE_FLAVOR + 1: *(intptr_t *)value = win->flavor; return MPI_SUCCESS;
    case MPI_WIN_MODEL + 1: *(intptr_t *)value = win->model; return MPI_SUCCESS;
    default: break;
    }
    pthread_mutex_lock(&attr_lock);
    if (keyval_index(keyval) < 0) {
        pthread_mutex_unlock(&attr_lock);
        *flag = 0;
        return rma_err(win, func, MPI_ERR_KEYVAL, "0x%x is not a window keyval", (unsigned)keyval);
    }
    i = attr_find(win, keyval);
    *flag = i >= 0;
    if (i >= 0)
        *(void **)value = kind == RMA_ATTR_PTR && win->attrs[i].kind != RMA_ATTR_PTR
                              ? (void *)&win->attrs[i].value
                              : win->attrs[i].value;
    pthread_mutex_unlock(&attr_lock);
    return MPI_SUCCESS;
}

int MPI_Win_set_attr(MPI_Win handle, int keyval, void *value)
{
    rma_win_t *win;

    RMA_WIN_GET(win, handle, "MPI_Win_set_attr");
    return attr_set(win, keyval, value, RMA_ATTR_PTR, "MPI_Win_set_attr");
}
RMA_PMPI(Win_set_attr);

int MPI_Win_get_attr(MPI_Win handle, int keyval, void *value, int *flag)
{
    rma_win_t *win;

    RMA_WIN_GET(win, handle, "MPI_Win_get_attr");
    return attr_get(win, keyval, value, flag, RMA_ATTR_PTR, "MPI_Win_get_attr");
}
RMA_PMPI(Win_get_attr);

/* MPICH's Fortran bindings' calls (next.h): librma's windows and keyvals here, others on. */
int MPII_Win_set_attr(MPI_Win handle, int keyval, void *value, int kind)
{
    rma_win_t *win = rma_win_lookup(handle);

    if (win == NULL && rma_mpi.Win_set_attr != NULL)
        return rma_mpi.Win_set_attr(handle, keyval, value, kind);
    RMA_WIN_GET(win, handle, "MPI_Win_set_attr");
    return attr_set(win, keyval, value, kind, "MPI_Win_set_attr");
}

int MPII_Win_get_attr(MPI_Win handle, int keyval, void *value, int *flag, int kind)
{
    rma_win_t *win = rma_win_lookup(handle);

    if (win == NULL && rma_mpi.Win_get_attr != NULL)
        return rma_mpi.Win_get_attr(handle, keyval, value, flag, kind);
    RMA_WIN_GET(win, handle, "MPI_Win_get_attr");
    return attr_get(win, keyval, value, flag, kind, "MPI_Win_get_attr");
}

void MPII_Keyval_set_proxy(int keyval, rma_attr_copy_proxy_t *copy, rma_attr_delete_proxy_t *del)
{
    int idx;

    pthread_mutex_lock(&attr_lock);
    idx = keyval_index(keyval);
    if (idx >= 0)
        keyvals[idx].delete_proxy = del; /* copy callbacks are never called (file comment) */
    pthread_mutex_unlock(&attr_lock);
    if (idx < 0 && rma_mpi.Keyval_set_proxy != NULL)
        rma_mpi.Keyval_set_proxy(keyval, copy, del);
}

int MPI_Win_delete_attr(MPI_Win handle, int keyval)
{
    static const char func[] = "MPI_Win_delete_attr";
    rma_win_t *win;
    keyval_t kv;
    rma_attr_t a;
    int i, live, rc;

    RMA_WIN_GET(win, handle, func);
    pthread_mutex_lock(&attr_lock);
    live = !is_predefined(keyval) && keyval_index(keyval) >= 0;
    i = live ? attr_find(win, keyval) : -1;
    if (i >= 0)
        a = attr_take(win, i, &kv);
    pthread_mutex_unlock(&attr_lock);
    if (!live)
        return rma_err(win, func, MPI_ERR_KEYVAL, "0x%x is not a user window keyval",
                       (unsigned)keyval);
    if (i < 0)
        return MPI_SUCCESS;
    rc = attr_delete(win, a, &kv);
    if (rc != MPI_SUCCESS)
        return rma_err(win, func, rc, "the attribute's delete callback failed");
    return MPI_SUCCESS;
}
RMA_PMPI(Win_delete_attr);

/* MPI_Win_free: delete every attribute, newest first; stops at a failing callback. */
int rma_attr_delete_all(rma_win_t *win)
{
    for (;;) {
        keyval_t kv;
        rma_attr_t a;
        int rc;

        pthread_mutex_lock(&attr_lock);
        if (win->nattrs == 0) {
            pthread_mutex_unlock(&attr_lock);
            return MPI_SUCCESS;
        }
        a = attr_take(win, win->nattrs - 1, &kv);
        pthread_mutex_unlock(&attr_lock);
        if ((rc = attr_delete(win, a, &kv)) != MPI_SUCCESS)
            return rma_err(win, "MPI_Win_free", rc, "an attribute's delete callback failed");
    }
}

int MPI_Win_set_name(MPI_Win handle, const char *name)
{
    rma_win_t *win;

    RMA_WIN_GET(win, handle, "MPI_Win_set_name");
    if (name == NULL)
        return rma_err(win, "MPI_Win_set_name", MPI_ERR_ARG, "name is NULL");
    strncpy(win->name, name, MPI_MAX_OBJECT_NAME - 1);
    win->name[MPI_MAX_OBJECT_NAME - 1] = '\0';
    return MPI_SUCCESS;
}
RMA_PMPI(Win_set_name);

int MPI_Win_get_name(MPI_Win handle, char *name, int *resultlen)
{
    rma_win_t *win;

    RMA_WIN_GET(win, handle, "MPI_Win_get_name");
    if (name == NULL || resultlen == NULL)
        return rma_err(win, "MPI_Win_get_name", MPI_ERR_ARG, "name or resultlen is NULL");
    strcpy(name, win->name);
    *resultlen = (int)strlen(win->name);
    return MPI_SUCCESS;
}
RMA_PMPI(Win_get_name);

int MPI_Win_get_group(MPI_Win handle, MPI_Group *group)
{
    rma_win_t *win;

    RMA_WIN_GET(win, handle, "MPI_Win_get_group");
    if (group == NULL)
        return rma_err(win, "MPI_Win_get_group", MPI_ERR_ARG, "group is NULL");
    int range[1][3] = {{0, win->nranks - 1, 1}};
    return PMPI_Group_range_incl(win->group, 1, range, group); /* a new handle to free */
}
RMA_PMPI(Win_get_group);

int MPI_Win_set_info(MPI_Win handle, MPI_Info info)
{
    rma_win_t *win;

    RMA_WIN_GET(win, handle, "MPI_Win_set_info");
    if (info == MPI_INFO_NULL)
        return rma_err(win, "MPI_Win_set_info", MPI_ERR_INFO, "info is MPI_INFO_NULL");
    rma_win_info_parse(win, info);
    return MPI_SUCCESS;
}
RMA_PMPI(Win_set_info);

int MPI_Win_get_info(MPI_Win handle, MPI_Info *info_used)
{
    rma_win_t *win;
    MPI_Info info;
    char num[24];

    RMA_WIN_GET(win, handle, "MPI_Win_get_info");
    if (info_used == NULL)
        return rma_err(win, "MPI_Win_get_info", MPI_ERR_ARG, "info_used is NULL");
    PMPI_Info_create(&info);
    PMPI_Info_set(info, "no_locks", win->info.no_locks ? "true" : "false");
    PMPI_Info_set(info, "accumulate_ordering", win->info.accumulate_ordering);
    PMPI_Info_set(info, "accumulate_ops", win->info.accumulate_ops);
    snprintf(num, sizeof(num), "%ld", win->info.accumulate_granularity);
    PMPI_Info_set(info, "mpi_accumulate_granularity", num);
    PMPI_Info_set(info, "same_size", win->info.same_size ? "true" : "false");
    PMPI_Info_set(info, "same_disp_unit", win->info.same_disp_unit ? "true" : "false");
    if (win->flavor == MPI_WIN_FLAVOR_SHARED)
        PMPI_Info_set(info, "alloc_shared_noncontig",
                      win->info.alloc_shared_noncontig ? "true" : "false");
    *info_used = info;
    return MPI_SUCCESS;
}
RMA_PMPI(Win_get_info);
