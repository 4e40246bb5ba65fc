/*
 * win_attrs - window attributes, names, groups, info and error handlers: the predefined
 * attributes of every flavor; user keyvals with delete callbacks (delete_attr, overwrite,
 * Win_free, a failing callback making Win_free fail, free_keyval while in use); default and
 * set names; MPI_Win_get_group against the communicator's group; the info keys in effect
 * (defaults, given at creation, changed by set_info); user error handlers (set, get, call,
 * freed while a window still uses them) and MPI_ERRORS_RETURN. Shared windows are made on
 * the ranks of this node (MPI_COMM_TYPE_SHARED), so the test runs in every topology.
 */
#include "rmatest.h"

static int rank, nprocs;

enum { F_CREATE, F_ALLOCATE, F_SHARED, F_DYNAMIC, NFLAVORS };
static const char *fname[] = {"create", "allocate", "shared", "dynamic"};
static const int fconst[] = {MPI_WIN_FLAVOR_CREATE, MPI_WIN_FLAVOR_ALLOCATE,
                             MPI_WIN_FLAVOR_SHARED, MPI_WIN_FLAVOR_DYNAMIC};

static void predefined(void)
{
    for (int f = 0; f < NFLAVORS; f++) {
        MPI_Aint size = 40 * (rank + 1), *psize;
        int du = rank + 1, *pint, flag;
        char *mem = NULL, *own = NULL;
        void *base;
        MPI_Win win;

        switch (f) {
        case F_CREATE:
            own = mem = malloc(size);
            MPI_OK(MPI_Win_create(mem, size, du, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
            break;
        case F_ALLOCATE:
            MPI_OK(MPI_Win_allocate(size, du, MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win));
            break;
        case F_SHARED:
            /* on the node's ranks: shared memory cannot span nodes */
            MPI_OK(MPI_Win_allocate_shared(size, du, MPI_INFO_NULL, rt_node_comm(), &mem, &win));
            break;
        case F_DYNAMIC:
            MPI_OK(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
            size = 0;
            du = 1;
            break;
        }
        flag = 0;
        MPI_OK(MPI_Win_get_attr(win, MPI_WIN_BASE, &base, &flag));
        CHECK(flag && base == (f == F_DYNAMIC ? MPI_BOTTOM : (void *)mem),
              "%s: MPI_WIN_BASE flag %d %p, want %p", fname[f], flag, base, (void *)mem);
        flag = 0;
        MPI_OK(MPI_Win_get_attr(win, MPI_WIN_SIZE, &psize, &flag));
        CHECK(flag && *psize == size, "%s: MPI_WIN_SIZE flag %d %ld, want %ld", fname[f], flag,
              flag ? (long)*psize : -1L, (long)size);
        flag = 0;
        MPI_OK(MPI_Win_get_attr(win, MPI_WIN_DISP_UNIT, &pint, &flag));
        CHECK(flag && *pint == du, "%s: MPI_WIN_DISP_UNIT %d, want %d", fname[f],
              flag ? *pint : -1, du);
        flag = 0;
        MPI_OK(MPI_Win_get_attr(win, MPI_WIN_CREATE_FLAVOR, &pint, &flag));
        CHECK(flag && *pint == fconst[f], "%s: MPI_WIN_CREATE_FLAVOR %d, want %d", fname[f],
              flag ? *pint : -1, fconst[f]);
        flag = 0;
        MPI_OK(MPI_Win_get_attr(win, MPI_WIN_MODEL, &pint, &flag));
        CHECK(flag && *pint == MPI_WIN_UNIFIED, "%s: MPI_WIN_MODEL %d, want MPI_WIN_UNIFIED",
              fname[f], flag ? *pint : -1);
        /* predefined attributes are read-only */
        MPI_OK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
        MPI_ERRCLASS(MPI_Win_set_attr(win, MPI_WIN_BASE, NULL), MPI_ERR_KEYVAL);
        MPI_ERRCLASS(MPI_Win_delete_attr(win, MPI_WIN_SIZE), MPI_ERR_KEYVAL);
        MPI_OK(MPI_Win_free(&win));
        free(own);
    }
    if (rank == 0)
        printf("predefined attributes of create, allocate, shared, dynamic checked\n");
}

/* delete callback bookkeeping */
static int ndeleted, last_keyval, fail_delete;
static void *last_value;
static MPI_Win last_win;

static int delete_fn(MPI_Win win, int keyval, void *value, void *extra)
{
    CHECK(extra == &ndeleted, "delete callback: extra_state %p", extra);
    if (fail_delete)
        return MPI_ERR_OTHER;
    ndeleted++;
    last_keyval = keyval;
    last_value = value;
    last_win = win;
    return MPI_SUCCESS;
}

static void user_attrs(void)
{
    int kv, kv2, kv3, flag, *mem;
    void *val;
    MPI_Win win;
    static int a1, a2, a3;

    MPI_OK(MPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, delete_fn, &kv, &ndeleted));
    MPI_OK(MPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, MPI_WIN_NULL_DELETE_FN, &kv2, NULL));
    MPI_OK(MPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, delete_fn, &kv3, &ndeleted));
    CHECK(kv != kv2 && kv2 != kv3 && kv != kv3, "keyvals must differ");
    MPI_OK(MPI_Win_allocate(64, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win));
    MPI_OK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    flag = 1;
    MPI_OK(MPI_Win_get_attr(win, kv, &val, &flag));
    CHECK(flag == 0, "unset attribute: flag %d", flag);
    MPI_OK(MPI_Win_set_attr(win, kv, &a1));
    MPI_OK(MPI_Win_get_attr(win, kv, &val, &flag));
    CHECK(flag && val == &a1, "get_attr: flag %d %p, want %p", flag, val, (void *)&a1);
    CHECK(ndeleted == 0, "set_attr called the delete callback");
    /* overwrite: the old value's delete callback runs */
    MPI_OK(MPI_Win_set_attr(win, kv, &a2));
    CHECK(ndeleted == 1 && last_value == &a1 && last_keyval == kv && last_win == win,
          "overwrite: %d deletes, value %p (want %p)", ndeleted, last_value, (void *)&a1);
    MPI_OK(MPI_Win_get_attr(win, kv, &val, &flag));
    CHECK(flag && val == &a2, "after overwrite: %p", val);
    /* delete_attr */
    MPI_OK(MPI_Win_delete_attr(win, kv));
    CHECK(ndeleted == 2 && last_value == &a2, "delete_attr: %d deletes, value %p", ndeleted,
          last_value);
    MPI_OK(MPI_Win_get_attr(win, kv, &val, &flag));
    CHECK(flag == 0, "after delete_attr: flag %d", flag);
    MPI_OK(MPI_Win_delete_attr(win, kv)); /* not set: nothing to do */
    CHECK(ndeleted == 2, "delete_attr of an unset attribute called the callback");
    /* a failing delete callback */
    MPI_OK(MPI_Win_set_attr(win, kv, &a1));
    fail_delete = 1;
    {
        int rc = MPI_Win_delete_attr(win, kv);
        CHECK(rc != MPI_SUCCESS, "delete_attr with a failing callback returned success");
        rc = MPI_Win_set_attr(win, kv, &a2);
        CHECK(rc != MPI_SUCCESS, "overwrite with a failing callback returned success");
        MPI_OK(MPI_Win_get_attr(win, kv, &val, &flag));
        CHECK(flag && val == &a1, "after failed delete: flag %d %p", flag, val);
    }
    fail_delete = 0;
    /* free_keyval while the attribute is set: the attribute lives on */
    MPI_OK(MPI_Win_set_attr(win, kv3, &a3));
    MPI_OK(MPI_Win_set_attr(win, kv2, &a2));
    {
        int kv3copy = kv3;
        MPI_OK(MPI_Win_free_keyval(&kv3));
        CHECK(kv3 == MPI_KEYVAL_INVALID, "free_keyval must set MPI_KEYVAL_INVALID");
        MPI_ERRCLASS(MPI_Win_free_keyval(&kv3), MPI_ERR_KEYVAL);
        (void)kv3copy;
    }
    MPI_ERRCLASS(MPI_Win_get_attr(win, 0x7777, &val, &flag), MPI_ERR_KEYVAL);
    MPI_ERRCLASS(MPI_Win_set_attr(win, 0x7777, &a1), MPI_ERR_KEYVAL);
    /* Win_free deletes every attribute; a failing callback makes it fail */
    ndeleted = 0;
    fail_delete = 1;
    {
        int rc = MPI_Win_free(&win);
        CHECK(rc != MPI_SUCCESS, "Win_free with a failing delete callback returned success");
        CHECK(win != MPI_WIN_NULL, "a failed Win_free must keep the handle");
    }
    fail_delete = 0;
    ndeleted = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_OK(MPI_Win_free(&win));
    CHECK(ndeleted == 2, "Win_free ran %d delete callbacks, want 2 (kv and freed kv3)",
          ndeleted);
    MPI_OK(MPI_Win_free_keyval(&kv));
    MPI_OK(MPI_Win_free_keyval(&kv2));
    if (rank == 0)
        printf("user keyvals and delete callbacks checked\n");
}

static void names_groups(void)
{
    MPI_Win win;
    MPI_Comm half;
    MPI_Group wg, cg;
    char name[MPI_MAX_OBJECT_NAME], longname[2 * MPI_MAX_OBJECT_NAME];
    int len = -1, cmp, *mem;

    MPI_OK(MPI_Win_allocate(8, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win));
    name[0] = 'x';
    MPI_OK(MPI_Win_get_name(win, name, &len));
    CHECK(len == 0 && name[0] == '\0', "default window name \"%s\" (%d)", name, len);
    MPI_OK(MPI_Win_set_name(win, "my window"));
    MPI_OK(MPI_Win_get_name(win, name, &len));
    CHECK(len == 9 && strcmp(name, "my window") == 0, "name \"%s\" (%d)", name, len);
    memset(longname, 'n', sizeof(longname) - 1);
    longname[sizeof(longname) - 1] = '\0';
    MPI_OK(MPI_Win_set_name(win, longname));
    MPI_OK(MPI_Win_get_name(win, name, &len));
    CHECK(len == MPI_MAX_OBJECT_NAME - 1 && (int)strlen(name) == len,
          "long name truncated to %d (%zu)", len, strlen(name));
    MPI_OK(MPI_Win_get_group(win, &wg));
    MPI_Comm_group(MPI_COMM_WORLD, &cg);
    MPI_Group_compare(wg, cg, &cmp);
    CHECK(cmp == MPI_IDENT, "window group vs world group: %d", cmp);
    MPI_Group_free(&wg);
    MPI_Group_free(&cg);
    MPI_OK(MPI_Win_free(&win));
    /* a window on a sub-communicator with reversed ranks */
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, nprocs - rank, &half);
    MPI_OK(MPI_Win_create_dynamic(MPI_INFO_NULL, half, &win));
    MPI_OK(MPI_Win_get_group(win, &wg));
    MPI_Comm_group(half, &cg);
    MPI_Group_compare(wg, cg, &cmp);
    CHECK(cmp == MPI_IDENT, "window group vs split comm group: %d", cmp);
    {
        int sz, r;
        MPI_Group_size(wg, &sz);
        MPI_Group_rank(wg, &r);
        int hs, hr;
        MPI_Comm_size(half, &hs);
        MPI_Comm_rank(half, &hr);
        CHECK(sz == hs && r == hr, "group size/rank %d/%d, want %d/%d", sz, r, hs, hr);
    }
    MPI_Group_free(&wg);
    MPI_Group_free(&cg);
    MPI_OK(MPI_Win_free(&win));
    MPI_Comm_free(&half);
    if (rank == 0)
        printf("names and groups checked\n");
}

static void info_expect(MPI_Info info, const char *key, const char *want, const char *what)
{
    char val[MPI_MAX_INFO_VAL + 1];
    int flag = 0;

    MPI_Info_get(info, key, MPI_MAX_INFO_VAL, val, &flag);
    if (want == NULL)
        CHECK(!flag, "%s: key %s present (\"%s\")", what, key, val);
    else
        CHECK(flag && strcmp(val, want) == 0, "%s: %s = \"%s\" (flag %d), want \"%s\"", what,
              key, flag ? val : "", flag, want);
}

static void infos(void)
{
    MPI_Win win;
    MPI_Info in, used;
    int *mem;

    MPI_OK(MPI_Win_allocate(8, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win));
    MPI_OK(MPI_Win_get_info(win, &used));
    info_expect(used, "no_locks", "false", "defaults");
    info_expect(used, "accumulate_ordering", "rar,raw,war,waw", "defaults");
    info_expect(used, "accumulate_ops", "same_op_no_op", "defaults");
    info_expect(used, "same_size", "false", "defaults");
    info_expect(used, "same_disp_unit", "false", "defaults");
    info_expect(used, "mpi_accumulate_granularity", "0", "defaults"); /* MPI-4.0 */
    MPI_Info_free(&used);
    /* set_info changes what get_info returns */
    MPI_Info_create(&in);
    MPI_Info_set(in, "accumulate_ordering", "none");
    MPI_Info_set(in, "accumulate_ops", "same_op");
    MPI_Info_set(in, "mpi_accumulate_granularity", "8");
    MPI_OK(MPI_Win_set_info(win, in));
    MPI_Info_free(&in);
    MPI_OK(MPI_Win_get_info(win, &used));
    info_expect(used, "accumulate_ordering", "none", "after set_info");
    info_expect(used, "accumulate_ops", "same_op", "after set_info");
    info_expect(used, "no_locks", "false", "after set_info");
    info_expect(used, "mpi_accumulate_granularity", "8", "after set_info");
    MPI_Info_free(&used);
    /* a value that is not a non-negative integer is ignored, as an unknown key is */
    MPI_Info_create(&in);
    MPI_Info_set(in, "mpi_accumulate_granularity", "-4");
    MPI_Info_set(in, "librma_no_such_key", "1");
    MPI_OK(MPI_Win_set_info(win, in));
    MPI_Info_set(in, "mpi_accumulate_granularity", "16 bytes");
    MPI_Info_set(in, "accumulate_ordering", "nonsense"); /* would read as "none" */
    MPI_Info_set(in, "accumulate_ops", "any_op");
    MPI_Info_set(in, "no_locks", "maybe");
    MPI_OK(MPI_Win_set_info(win, in));
    MPI_Info_set(in, "accumulate_ordering", "rar,raw,");
    MPI_Info_set(in, "no_locks", "");
    MPI_OK(MPI_Win_set_info(win, in));
    MPI_Info_free(&in);
    MPI_OK(MPI_Win_get_info(win, &used));
    info_expect(used, "mpi_accumulate_granularity", "8", "after malformed values");
    info_expect(used, "accumulate_ordering", "none", "after malformed values");
    info_expect(used, "accumulate_ops", "same_op", "after malformed values");
    info_expect(used, "no_locks", "false", "after malformed values");
    /* ... and valid ones are taken */
    MPI_Info_create(&in);
    MPI_Info_set(in, "accumulate_ordering", "waw,rar");
    MPI_OK(MPI_Win_set_info(win, in));
    MPI_Info_free(&in);
    MPI_Info_free(&used);
    MPI_OK(MPI_Win_get_info(win, &used));
    info_expect(used, "accumulate_ordering", "waw,rar", "after a valid list");
    info_expect(used, "librma_no_such_key", NULL, "after an unknown key");
    MPI_Info_free(&used);
    MPI_OK(MPI_Win_free(&win));
    /* keys given at creation */
    MPI_Info_create(&in);
    MPI_Info_set(in, "no_locks", "true");
    MPI_Info_set(in, "accumulate_ordering", "rar,waw");
    MPI_Info_set(in, "same_size", "true");
    MPI_Info_set(in, "same_disp_unit", "true");
    MPI_Info_set(in, "alloc_shared_noncontig", "true");
    MPI_Info_set(in, "mpi_accumulate_granularity", "64");
    MPI_OK(MPI_Win_allocate_shared(16, 4, in, rt_node_comm(), &mem, &win));
    MPI_OK(MPI_Win_get_info(win, &used));
    info_expect(used, "no_locks", "true", "shared, given");
    info_expect(used, "accumulate_ordering", "rar,waw", "shared, given");
    info_expect(used, "same_size", "true", "shared, given");
    info_expect(used, "same_disp_unit", "true", "shared, given");
    info_expect(used, "alloc_shared_noncontig", "true", "shared, given");
    info_expect(used, "mpi_accumulate_granularity", "64", "shared, given");
    MPI_Info_free(&used);
    MPI_OK(MPI_Win_free(&win));
    MPI_OK(MPI_Win_allocate_shared(16, 4, MPI_INFO_NULL, rt_node_comm(), &mem, &win));
    MPI_OK(MPI_Win_get_info(win, &used));
    info_expect(used, "alloc_shared_noncontig", "false", "shared, default");
    MPI_Info_free(&used);
    MPI_OK(MPI_Win_free(&win));
    MPI_Info_free(&in);
    if (rank == 0)
        printf("info keys (defaults, creation, set_info) checked\n");
}

/* error handler bookkeeping */
static int ncalls, last_code;
static MPI_Win last_eh_win;

static void record_eh(MPI_Win *win, int *code, ...)
{
    ncalls++;
    last_code = *code;
    last_eh_win = *win;
}

static void errhandlers(void)
{
    MPI_Errhandler eh, got;
    MPI_Win win;
    int *mem, v = 1, cls, rc;

    MPI_OK(MPI_Win_allocate(8, 4, MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win));
    MPI_OK(MPI_Win_get_errhandler(win, &got));
    CHECK(got == MPI_ERRORS_ARE_FATAL, "default window error handler is not ERRORS_ARE_FATAL");
    MPI_OK(MPI_Win_create_errhandler(record_eh, &eh));
    MPI_OK(MPI_Win_set_errhandler(win, eh));
    MPI_OK(MPI_Win_get_errhandler(win, &got));
    CHECK(got == eh, "get_errhandler gave another handler");
    MPI_OK(MPI_Errhandler_free(&got));
    /* an error goes to the handler, which returns; the call returns the code */
    rc = MPI_Put(&v, 1, MPI_INT, 0, 0, 1, MPI_INT, win);
    MPI_Error_class(rc, &cls);
    CHECK(ncalls == 1 && last_eh_win == win, "handler calls %d (window ok %d)", ncalls,
          last_eh_win == win);
    CHECK(cls == MPI_ERR_RMA_SYNC, "Put outside epoch through a user handler: class %d", cls);
    MPI_Error_class(last_code, &cls);
    CHECK(cls == MPI_ERR_RMA_SYNC, "handler saw class %d", cls);
    /* MPI_Win_call_errhandler */
    MPI_OK(MPI_Win_call_errhandler(win, MPI_ERR_OTHER));
    CHECK(ncalls == 2 && last_code == MPI_ERR_OTHER, "call_errhandler: %d calls, code %d",
          ncalls, last_code);
    /* freeing the handler while the window uses it: the window keeps it */
    MPI_OK(MPI_Errhandler_free(&eh));
    CHECK(eh == MPI_ERRHANDLER_NULL, "Errhandler_free must set MPI_ERRHANDLER_NULL");
    MPI_Win_lock(MPI_LOCK_SHARED, 0, 1 << 20, win); /* bad assert */
    CHECK(ncalls == 3, "handler after Errhandler_free: %d calls", ncalls);
    MPI_Error_class(last_code, &cls);
    CHECK(cls == MPI_ERR_ASSERT, "bad assert: class %d", cls);
    /* MPI_ERRORS_RETURN: no handler call */
    MPI_OK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    MPI_ERRCLASS(MPI_Win_unlock(0, win), MPI_ERR_RMA_SYNC);
    CHECK(ncalls == 3, "ERRORS_RETURN still called the user handler");
    MPI_OK(MPI_Win_call_errhandler(win, MPI_ERR_OTHER));
    CHECK(ncalls == 3, "call_errhandler with ERRORS_RETURN called the user handler");
    /* one handler on two windows, set then freed */
    {
        MPI_Win w2;
        int *m2;
        MPI_OK(MPI_Win_create_errhandler(record_eh, &eh));
        MPI_OK(MPI_Win_allocate(8, 4, MPI_INFO_NULL, MPI_COMM_WORLD, &m2, &w2));
        MPI_OK(MPI_Win_set_errhandler(win, eh));
        MPI_OK(MPI_Win_set_errhandler(w2, eh));
        MPI_OK(MPI_Errhandler_free(&eh));
        MPI_OK(MPI_Win_free(&w2));
        MPI_Win_flush(0, win);
        CHECK(ncalls == 4 && last_eh_win == win, "shared handler after the other window "
              "was freed: %d calls", ncalls);
        MPI_OK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    }
    MPI_OK(MPI_Win_free(&win));
    if (rank == 0)
        printf("error handlers checked\n");
}

int main(int argc, char **argv)
{
    rt_init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    predefined();
    user_attrs();
    names_groups();
    infos();
    errhandlers();
    return rt_finish("win_attrs");
}
