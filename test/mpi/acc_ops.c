/*
 * acc_ops - every predefined op x every predefined type it is defined for, against a
 * sequential reference (MPI_Reduce_local of MPICH), in every window flavor x sync mode.
 *
 * Each (type, op) pair owns a slot of the window. Its origin (the left neighbour, or the
 * owner itself for every third slot) issues in one epoch: a contiguous MPI_Accumulate, an
 * MPI_Get_accumulate, an MPI_Fetch_and_op, an accumulate into a strided target, a
 * Get_accumulate with strided origin and result, a misaligned accumulate, a request-based
 * accumulate (passive modes) and, for REPLACE on CAS types, a matching and a non-matching
 * MPI_Compare_and_swap. Afterwards the owner compares every byte of its slots with the
 * reference and the origin every fetched value with the initial target contents.
 * The shared flavor is skipped when MPI_COMM_WORLD spans nodes.
 */
#include "rmatest.h"

#include <complex.h>
#include <stdint.h>

#define K 6 /* elements per region */

/* *_AM: on MPI_Alloc_mem memory (under librma, UCX's for a rank alone on its node) */
enum { F_CREATE, F_ALLOCATE, F_SHARED, F_DYNAMIC, F_CREATE_AM, F_DYNAMIC_AM, NFLAVORS };
static const char *fname[] = {"create", "allocate", "shared", "dynamic", "create-am", "dynamic-am"};
enum { S_FENCE, S_PSCW, S_LOCK, S_LOCK_ALL, NSYNCS };
static const char *sname[] = {"fence", "pscw", "lock", "lock_all+flush"};

enum { C_INT, C_UINT, C_FLOAT, C_COMPLEX, C_BOOL, C_BYTE, C_PAIR, C_CHAR, C_LOGICAL };
typedef struct {
    MPI_Datatype dt;
    const char *name;
    int cls;
} tinfo_t;

#define TI(dt, cls) {dt, #dt, cls}
static const tinfo_t types[] = {
    TI(MPI_SIGNED_CHAR, C_INT), TI(MPI_UNSIGNED_CHAR, C_UINT), TI(MPI_SHORT, C_INT),
    TI(MPI_UNSIGNED_SHORT, C_UINT), TI(MPI_INT, C_INT), TI(MPI_UNSIGNED, C_UINT),
    TI(MPI_LONG, C_INT), TI(MPI_UNSIGNED_LONG, C_UINT), TI(MPI_LONG_LONG, C_INT),
    TI(MPI_UNSIGNED_LONG_LONG, C_UINT), TI(MPI_INT8_T, C_INT), TI(MPI_INT16_T, C_INT),
    TI(MPI_INT32_T, C_INT), TI(MPI_INT64_T, C_INT), TI(MPI_UINT8_T, C_UINT),
    TI(MPI_UINT16_T, C_UINT), TI(MPI_UINT32_T, C_UINT), TI(MPI_UINT64_T, C_UINT),
    TI(MPI_AINT, C_INT), TI(MPI_OFFSET, C_INT), TI(MPI_COUNT, C_INT),
    TI(MPI_INTEGER, C_INT), TI(MPI_FLOAT, C_FLOAT), TI(MPI_DOUBLE, C_FLOAT),
    TI(MPI_LONG_DOUBLE, C_FLOAT), TI(MPI_REAL8, C_FLOAT), TI(MPI_C_FLOAT_COMPLEX, C_COMPLEX),
    TI(MPI_C_DOUBLE_COMPLEX, C_COMPLEX), TI(MPI_C_LONG_DOUBLE_COMPLEX, C_COMPLEX),
    TI(MPI_C_BOOL, C_BOOL), TI(MPI_BYTE, C_BYTE), TI(MPI_2INT, C_PAIR),
    TI(MPI_FLOAT_INT, C_PAIR), TI(MPI_DOUBLE_INT, C_PAIR), TI(MPI_LONG_INT, C_PAIR),
    TI(MPI_SHORT_INT, C_PAIR), TI(MPI_LONG_DOUBLE_INT, C_PAIR), TI(MPI_CHAR, C_CHAR),
    /* Fortran and C++ types whose kernels at the target are librma's own (acc_locked.c),
     * and MPI_REAL16, which the host library computes as _Float128 (the origin-side path) */
    TI(MPI_LOGICAL, C_LOGICAL), TI(MPI_COMPLEX, C_COMPLEX), TI(MPI_DOUBLE_COMPLEX, C_COMPLEX),
    TI(MPI_CXX_DOUBLE_COMPLEX, C_COMPLEX), TI(MPI_2INTEGER, C_PAIR), TI(MPI_2REAL, C_PAIR),
    TI(MPI_2DOUBLE_PRECISION, C_PAIR), TI(MPI_REAL16, C_FLOAT),
};
#define NTYPES ((int)(sizeof(types) / sizeof(types[0])))

static const MPI_Op ops[] = {MPI_SUM, MPI_PROD, MPI_MAX, MPI_MIN, MPI_LAND, MPI_LOR,
                             MPI_LXOR, MPI_BAND, MPI_BOR, MPI_BXOR, MPI_MAXLOC, MPI_MINLOC,
                             MPI_REPLACE, MPI_NO_OP};
static const char *opname[] = {"SUM", "PROD", "MAX", "MIN", "LAND", "LOR", "LXOR", "BAND",
                               "BOR", "BXOR", "MAXLOC", "MINLOC", "REPLACE", "NO_OP"};
#define NOPS 14

static int allowed(int cls, int o)
{
    MPI_Op op = ops[o];
    if (op == MPI_REPLACE || op == MPI_NO_OP)
        return 1;
    switch (cls) {
    case C_INT:
    case C_UINT:
        return op != MPI_MAXLOC && op != MPI_MINLOC;
    case C_FLOAT:
        return op == MPI_SUM || op == MPI_PROD || op == MPI_MAX || op == MPI_MIN;
    case C_COMPLEX:
        return op == MPI_SUM || op == MPI_PROD;
    case C_BOOL:
    case C_LOGICAL:
        return op == MPI_LAND || op == MPI_LOR || op == MPI_LXOR;
    case C_BYTE:
        return op == MPI_BAND || op == MPI_BOR || op == MPI_BXOR;
    case C_PAIR:
        return op == MPI_MAXLOC || op == MPI_MINLOC;
    }
    return 0;
}

/* MPI-4's integer, logical and byte types, and MPI_CHAR, which MPICH takes too */
static int cas_type(int cls)
{
    return cls == C_INT || cls == C_UINT || cls == C_BOOL || cls == C_BYTE || cls == C_LOGICAL ||
           cls == C_CHAR;
}

/* Writes element i of a deterministic sequence `seed` of type t at p (extent bytes zeroed). */
static void gen(const tinfo_t *t, long seed, int i, char *p, MPI_Aint ext)
{
    long v = (seed * 7 + i * 13) % 11 - 3; /* -3 .. 7 */
    long u = v < 0 ? -v : v;
    long idx = (seed + i) % 5;

    memset(p, 0, ext);
#define SET(T, x) do { T x_ = (T)(x); memcpy(p, &x_, sizeof(x_)); } while (0)
#define SETPAIR(T) do { struct { T a; int b; } s_; memset(&s_, 0, sizeof(s_)); s_.a = (T)v; \
                        s_.b = (int)idx; memcpy(p, &s_, sizeof(s_)); } while (0)
    MPI_Datatype dt = t->dt;
    if (dt == MPI_SIGNED_CHAR || dt == MPI_INT8_T) SET(int8_t, v);
    else if (dt == MPI_UNSIGNED_CHAR || dt == MPI_UINT8_T || dt == MPI_CHAR) SET(uint8_t, u);
    else if (dt == MPI_BYTE) SET(uint8_t, (u * 37 + seed) & 0xff);
    else if (dt == MPI_SHORT || dt == MPI_INT16_T) SET(int16_t, v);
    else if (dt == MPI_UNSIGNED_SHORT || dt == MPI_UINT16_T) SET(uint16_t, u);
    else if (dt == MPI_INT || dt == MPI_INT32_T || dt == MPI_INTEGER || dt == MPI_LOGICAL)
        SET(int32_t, v);
    else if (dt == MPI_UNSIGNED || dt == MPI_UINT32_T) SET(uint32_t, u);
    else if (dt == MPI_LONG || dt == MPI_LONG_LONG || dt == MPI_INT64_T || dt == MPI_AINT ||
             dt == MPI_OFFSET || dt == MPI_COUNT) SET(int64_t, v);
    else if (dt == MPI_UNSIGNED_LONG || dt == MPI_UNSIGNED_LONG_LONG || dt == MPI_UINT64_T)
        SET(uint64_t, u);
    else if (dt == MPI_FLOAT) SET(float, v * 0.5);
    else if (dt == MPI_DOUBLE || dt == MPI_REAL8) SET(double, v * 0.25);
    else if (dt == MPI_LONG_DOUBLE) { long double x = v * 0.125L; memcpy(p, &x, 10); }
    else if (dt == MPI_REAL16) SET(_Float128, v * 0.125);
    else if (dt == MPI_C_FLOAT_COMPLEX || dt == MPI_COMPLEX)
        SET(float _Complex, v + 1.0f * I * (float)idx);
    else if (dt == MPI_C_DOUBLE_COMPLEX || dt == MPI_DOUBLE_COMPLEX || dt == MPI_CXX_DOUBLE_COMPLEX)
        SET(double _Complex, v + 1.0 * I * (double)idx);
    else if (dt == MPI_C_LONG_DOUBLE_COMPLEX) {
        long double x[2] = {v, idx};
        memcpy(p, &x[0], 10);
        memcpy(p + sizeof(long double), &x[1], 10);
    }
    else if (dt == MPI_C_BOOL) SET(uint8_t, u & 1);
    else if (dt == MPI_2INT || dt == MPI_2INTEGER) { int x[2] = {(int)v, (int)idx}; memcpy(p, x, 8); }
    else if (dt == MPI_2REAL) { float x[2] = {(float)v, (float)idx}; memcpy(p, x, 8); }
    else if (dt == MPI_2DOUBLE_PRECISION) { double x[2] = {v, idx}; memcpy(p, x, 16); }
    else if (dt == MPI_FLOAT_INT) SETPAIR(float);
    else if (dt == MPI_DOUBLE_INT) SETPAIR(double);
    else if (dt == MPI_LONG_INT) SETPAIR(long);
    else if (dt == MPI_SHORT_INT) SETPAIR(short);
    else if (dt == MPI_LONG_DOUBLE_INT) {
        struct { long double a; int b; } s_;
        memset(&s_, 0, sizeof(s_));
        long double x = v;
        memcpy(&s_.a, &x, 10);
        s_.b = (int)idx;
        memcpy(p, &s_, sizeof(s_));
    }
#undef SET
#undef SETPAIR
}

/* Fills n elements of sequence seed at buf (stride ext). */
static void gen_n(const tinfo_t *t, long seed, int n, char *buf, MPI_Aint ext)
{
    for (int i = 0; i < n; i++)
        gen(t, seed, i, buf + i * ext, ext);
}

typedef struct {
    int type, op;
    MPI_Aint off, bytes; /* slot in the window */
} slot_t;

static slot_t *slots;
static int nslots;
static MPI_Aint win_bytes;
static int rank, nprocs;

/* Region byte offsets inside a slot. */
static MPI_Aint ext_of(int t)
{
    MPI_Aint lb, ext;
    MPI_Type_get_extent(types[t].dt, &lb, &ext);
    return ext;
}
#define R_ACC(e) 0
#define R_GACC(e) (K * (e))
#define R_FOP(e) (2 * K * (e))
#define R_VEC(e) (3 * K * (e))
#define R_GVEC(e) (4 * K * (e))
#define R_MIS(e) (5 * K * (e) + 1)
#define R_RACC(e) (6 * K * (e) + (e))
#define R_CAS(e) (7 * K * (e) + (e))
#define SLOT_BYTES(e) (((8 * K + 2) * (e) + 63) / 64 * 64)

static void plan(void)
{
    slots = malloc(NTYPES * NOPS * sizeof(*slots));
    for (int t = 0; t < NTYPES; t++)
        for (int o = 0; o < NOPS; o++)
            if (allowed(types[t].cls, o)) {
                slot_t *s = &slots[nslots++];
                s->type = t;
                s->op = o;
                s->off = win_bytes;
                s->bytes = SLOT_BYTES(ext_of(t));
                win_bytes += s->bytes;
            }
}

static int origin_of(int si, int owner)
{
    return si % 3 == 0 ? owner : (owner + nprocs - 1) % nprocs;
}

static long seed_of(int who, int si, int region)
{
    return who * 100003L + si * 17L + region;
}

/* The owner's initial contents of a slot. */
static void slot_init(int si, int owner, char *p)
{
    const tinfo_t *t = &types[slots[si].type];
    MPI_Aint e = ext_of(slots[si].type);

    memset(p, 0x5a, slots[si].bytes);
    gen_n(t, seed_of(owner, si, 0), K, p + R_ACC(e), e);
    gen_n(t, seed_of(owner, si, 1), K, p + R_GACC(e), e);
    gen_n(t, seed_of(owner, si, 2), 1, p + R_FOP(e), e);
    gen_n(t, seed_of(owner, si, 3), K, p + R_VEC(e), e);
    gen_n(t, seed_of(owner, si, 4), K, p + R_GVEC(e), e);
    gen_n(t, seed_of(owner, si, 5), K, p + R_MIS(e), e);
    gen_n(t, seed_of(owner, si, 6), K, p + R_RACC(e), e);
    gen_n(t, seed_of(owner, si, 7), 2, p + R_CAS(e), e);
}

/* target = target op origin for n elements at stride ext (sequential reference): the
 * target's element is the in-out operand, as in MPICH's RMA */
static void ref_apply(const tinfo_t *t, MPI_Op op, char *target, const char *origin, int n,
                      MPI_Aint ext)
{
    char *tmp = malloc(n * ext);
    if (op == MPI_NO_OP)
        goto out;
    memcpy(tmp, op == MPI_REPLACE ? origin : target, n * ext);
    if (op != MPI_REPLACE)
        MPI_Reduce_local(origin, tmp, n, t->dt, op);
    for (int i = 0; i < n; i++) { /* copy data bytes only: gaps stay as they were */
        MPI_Aint sz;
        int isz;
        MPI_Type_size(t->dt, &isz);
        sz = isz;
        if (t->dt == MPI_SHORT_INT) {
            memcpy(target + i * ext, tmp + i * ext, sizeof(short));
            memcpy(target + i * ext + 4, tmp + i * ext + 4, sizeof(int));
        } else {
            memcpy(target + i * ext, tmp + i * ext, sz);
        }
    }
out:
    free(tmp);
}

/* The owner's expected contents of a slot after its origin's operations. */
static void slot_expect(int si, int owner, char *p, int passive)
{
    const tinfo_t *t = &types[slots[si].type];
    MPI_Aint e = ext_of(slots[si].type);
    MPI_Op op = ops[slots[si].op];
    int org = origin_of(si, owner);
    char o[K * 32], v[2 * 32];

    slot_init(si, owner, p);
    if (op != MPI_NO_OP) {
        gen_n(t, seed_of(org, si, 10), K, o, e);
        ref_apply(t, op, p + R_ACC(e), o, K, e);
        /* R_MIS: a misaligned copy of the same operation */
        char mis[K * 32];
        memcpy(mis, p + R_MIS(e), K * e);
        ref_apply(t, op, mis, o, K, e);
        memcpy(p + R_MIS(e), mis, K * e);
        /* R_VEC: every other element of the target gets origin element i/2 */
        for (int i = 0; i < K; i += 2)
            ref_apply(t, op, p + R_VEC(e) + i * e, o + (i / 2) * e, 1, e);
        if (passive)
            ref_apply(t, op, p + R_RACC(e), o, K, e);
    }
    gen_n(t, seed_of(org, si, 11), K, o, e);
    ref_apply(t, op, p + R_GACC(e), o, K, e);
    ref_apply(t, op, p + R_FOP(e), o, 1, e);
    /* R_GVEC: first K/2 target elements get origin elements 0, 2, 4 */
    for (int i = 0; i < K / 2; i++)
        ref_apply(t, op, p + R_GVEC(e) + i * e, o + 2 * i * e, 1, e);
    if (op == MPI_REPLACE && cas_type(t->cls)) {
        gen_n(t, seed_of(org, si, 12), 2, v, e);
        memcpy(p + R_CAS(e), v, e); /* the first CAS matches, the second does not */
    }
}

typedef struct {
    MPI_Win win;
    char *mem;
    MPI_Aint *addrs;
} win_t;

static void make_window(win_t *w, int flavor)
{
    memset(w, 0, sizeof(*w));
    switch (flavor) {
    case F_CREATE:
    case F_CREATE_AM:
        if (flavor == F_CREATE)
            w->mem = malloc(win_bytes);
        else
            MPI_OK(MPI_Alloc_mem(win_bytes, MPI_INFO_NULL, &w->mem));
        MPI_OK(MPI_Win_create(w->mem, win_bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w->win));
        break;
    case F_ALLOCATE:
        MPI_OK(MPI_Win_allocate(win_bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w->mem, &w->win));
        break;
    case F_SHARED:
        MPI_OK(MPI_Win_allocate_shared(win_bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w->mem,
                                       &w->win));
        break;
    case F_DYNAMIC:
    case F_DYNAMIC_AM: {
        MPI_Aint mine;
        if (flavor == F_DYNAMIC)
            w->mem = malloc(win_bytes);
        else
            MPI_OK(MPI_Alloc_mem(win_bytes, MPI_INFO_NULL, &w->mem));
        MPI_OK(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &w->win));
        MPI_OK(MPI_Win_attach(w->win, w->mem, win_bytes));
        w->addrs = malloc(nprocs * sizeof(MPI_Aint));
        MPI_Get_address(w->mem, &mine);
        MPI_Allgather(&mine, 1, MPI_AINT, w->addrs, 1, MPI_AINT, MPI_COMM_WORLD);
        break;
    }
    }
}

static void free_window(win_t *w, int flavor)
{
    if (flavor == F_DYNAMIC || flavor == F_DYNAMIC_AM)
        MPI_OK(MPI_Win_detach(w->win, w->mem));
    MPI_OK(MPI_Win_free(&w->win));
    if (flavor == F_CREATE || flavor == F_DYNAMIC)
        free(w->mem);
    else if (flavor == F_CREATE_AM || flavor == F_DYNAMIC_AM)
        MPI_OK(MPI_Free_mem(w->mem));
    free(w->addrs);
}

static MPI_Aint disp(win_t *w, int target, MPI_Aint off)
{
    return w->addrs ? w->addrs[target] + off : off;
}

/* Issues every operation of slot si as its origin towards `target`; fetched values are
 * checked against the target's initial contents at once (operations have completed when
 * the epoch is closed; results are checked after it). */
typedef struct {
    char *res;   /* fetched values, per slot: GACC K, FOP 1, GVEC K, CAS 2 */
} fetch_t;

static void issue(win_t *w, int si, int target, int passive, char *res)
{
    const tinfo_t *t = &types[slots[si].type];
    MPI_Aint e = ext_of(slots[si].type), base = slots[si].off;
    MPI_Op op = ops[slots[si].op];
    MPI_Datatype vec, rvec;
    static char o[K * 32], g[K * 32], v[2 * 32], c[2 * 32];

    memset(res, 0x33, (2 * K + 4) * e);
    if (op != MPI_NO_OP) {
        gen_n(t, seed_of(rank, si, 10), K, o, e);
        MPI_OK(MPI_Accumulate(o, K, t->dt, target, disp(w, target, base + R_ACC(e)), K, t->dt,
                              op, w->win));
        MPI_OK(MPI_Accumulate(o, K, t->dt, target, disp(w, target, base + R_MIS(e)), K, t->dt,
                              op, w->win));
        MPI_Type_vector(K / 2, 1, 2, t->dt, &vec);
        MPI_Type_commit(&vec);
        MPI_OK(MPI_Accumulate(o, K / 2, t->dt, target, disp(w, target, base + R_VEC(e)), 1,
                              vec, op, w->win));
        MPI_Type_free(&vec);
        if (passive) {
            MPI_Request req;
            MPI_OK(MPI_Raccumulate(o, K, t->dt, target, disp(w, target, base + R_RACC(e)), K,
                                   t->dt, op, w->win, &req));
            MPI_OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
        }
    }
    gen_n(t, seed_of(rank, si, 11), K, g, e);
    if (passive && si % 2) {
        MPI_Request req;
        MPI_OK(MPI_Rget_accumulate(g, K, t->dt, res, K, t->dt, target,
                                   disp(w, target, base + R_GACC(e)), K, t->dt, op, w->win,
                                   &req));
        MPI_OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
    } else {
        MPI_OK(MPI_Get_accumulate(g, K, t->dt, res, K, t->dt, target,
                                  disp(w, target, base + R_GACC(e)), K, t->dt, op, w->win));
    }
    MPI_OK(MPI_Fetch_and_op(op == MPI_NO_OP ? NULL : g, res + K * e, t->dt, target,
                            disp(w, target, base + R_FOP(e)), op, w->win));
    /* strided origin (elements 0, 2, 4) and result, contiguous target */
    MPI_Type_vector(K / 2, 1, 2, t->dt, &vec);
    MPI_Type_commit(&vec);
    MPI_Type_create_resized(vec, 0, 1, &rvec); /* exercise a resized result type too */
    MPI_Type_commit(&rvec);
    MPI_OK(MPI_Get_accumulate(g, 1, vec, res + (K + 1) * e, 1, rvec, target,
                              disp(w, target, base + R_GVEC(e)), K / 2, t->dt, op, w->win));
    MPI_Type_free(&vec);
    MPI_Type_free(&rvec);
    if (op == MPI_REPLACE && cas_type(t->cls)) {
        MPI_Aint ce = base + R_CAS(e);
        gen_n(t, seed_of(rank, si, 12), 2, v, e);
        gen_n(t, seed_of(target, si, 7), 2, c, e); /* matches the first element only */
        c[e] ^= 1;
        MPI_OK(MPI_Compare_and_swap(v, c, res + (2 * K + 1) * e, t->dt, target,
                                    disp(w, target, ce), w->win));
        MPI_OK(MPI_Compare_and_swap(v + e, c + e, res + (2 * K + 2) * e, t->dt, target,
                                    disp(w, target, ce + e), w->win));
    }
}

/* Fetched values must equal the target's initial contents. */
static void check_fetched(int si, int target, const char *res, const char *what)
{
    const tinfo_t *t = &types[slots[si].type];
    MPI_Aint e = ext_of(slots[si].type);
    int sz;
    char *init = malloc(slots[si].bytes);

    MPI_Type_size(t->dt, &sz);
    slot_init(si, target, init);
    int bad = 0;
    for (int i = 0; i < K; i++)
        bad += memcmp(res + i * e, init + R_GACC(e) + i * e, sz) != 0 &&
               !(t->dt == MPI_SHORT_INT && !memcmp(res + i * e, init + R_GACC(e) + i * e, 2) &&
                 !memcmp(res + i * e + 4, init + R_GACC(e) + i * e + 4, 4));
    CHECK(bad == 0, "%s: %s %s get_accumulate fetched %d wrong elements", what, t->name,
          opname[slots[si].op], bad);
    CHECK(memcmp(res + K * e, init + R_FOP(e), t->dt == MPI_SHORT_INT ? 2 : sz) == 0,
          "%s: %s %s fetch_and_op fetched a wrong value", what, t->name, opname[slots[si].op]);
    bad = 0;
    for (int i = 0; i < K / 2; i++) /* rvec has extent 1: element i at byte i of res */
        bad += memcmp(res + (K + 1) * e + 2 * i * e, init + R_GVEC(e) + i * e,
                      t->dt == MPI_SHORT_INT ? 2 : sz) != 0;
    CHECK(bad == 0, "%s: %s %s strided get_accumulate fetched %d wrong elements", what,
          t->name, opname[slots[si].op], bad);
    if (ops[slots[si].op] == MPI_REPLACE && cas_type(t->cls)) {
        CHECK(memcmp(res + (2 * K + 1) * e, init + R_CAS(e), sz) == 0 &&
              memcmp(res + (2 * K + 2) * e, init + R_CAS(e) + e, sz) == 0,
              "%s: %s compare_and_swap fetched wrong values", what, t->name);
    }
    free(init);
}

static void run(int flavor, int sync)
{
    win_t w;
    int right = (rank + 1) % nprocs, left = (rank + nprocs - 1) % nprocs;
    char *res = malloc((size_t)nslots * (2 * K + 4) * 32), what[64];
    char *want = malloc(win_bytes);
    int passive = sync == S_LOCK || sync == S_LOCK_ALL;
    MPI_Group world, grp;

    snprintf(what, sizeof(what), "%s/%s", fname[flavor], sname[sync]);
    make_window(&w, flavor);
    for (int si = 0; si < nslots; si++)
        slot_init(si, rank, w.mem + slots[si].off);
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    int peers[3] = {rank, left, right}, npeers = nprocs == 1 ? 1 : nprocs == 2 ? 2 : 3;
    MPI_Group_incl(world, npeers, peers, &grp);

    switch (sync) {
    case S_FENCE:
        MPI_OK(MPI_Win_fence(0, w.win));
        break;
    case S_PSCW:
        MPI_OK(MPI_Win_post(grp, 0, w.win));
        MPI_OK(MPI_Win_start(grp, 0, w.win));
        break;
    case S_LOCK:
        MPI_Barrier(MPI_COMM_WORLD);
        break;
    case S_LOCK_ALL:
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_OK(MPI_Win_lock_all(0, w.win));
        break;
    }
    for (int pass = 0; pass < 2; pass++) { /* pass 0: to the right neighbour, 1: to self */
        int target = pass == 0 ? right : rank;
        if (sync == S_LOCK)
            MPI_OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, target, 0, w.win));
        for (int si = 0; si < nslots; si++)
            if ((si % 3 == 0) == (pass == 1))
                issue(&w, si, target, passive, res + (size_t)si * (2 * K + 4) * 32);
        if (sync == S_LOCK)
            MPI_OK(MPI_Win_unlock(target, w.win));
        if (sync == S_LOCK_ALL)
            MPI_OK(MPI_Win_flush(target, w.win));
    }
    switch (sync) {
    case S_FENCE:
        MPI_OK(MPI_Win_fence(0, w.win));
        break;
    case S_PSCW:
        MPI_OK(MPI_Win_complete(w.win));
        MPI_OK(MPI_Win_wait(w.win));
        break;
    case S_LOCK:
        MPI_Barrier(MPI_COMM_WORLD);
        break;
    case S_LOCK_ALL:
        MPI_OK(MPI_Win_unlock_all(w.win));
        MPI_Barrier(MPI_COMM_WORLD);
        break;
    }
    for (int si = 0; si < nslots; si++) {
        int target = si % 3 == 0 ? rank : right;
        check_fetched(si, target, res + (size_t)si * (2 * K + 4) * 32, what);
    }
    int bad = 0;
    for (int si = 0; si < nslots; si++) {
        char *p = want + slots[si].off;
        slot_expect(si, rank, p, passive);
        if (memcmp(p, w.mem + slots[si].off, slots[si].bytes) != 0) {
            MPI_Aint e = ext_of(slots[si].type), b;
            for (b = 0; b < slots[si].bytes && p[b] == w.mem[slots[si].off + b]; b++)
                ;
            if (bad++ < 5)
                CHECK(0, "%s: slot %s %s differs from the reference at byte %ld (region %ld)",
                      what, types[slots[si].type].name, opname[slots[si].op], (long)b,
                      (long)(b / (K * e)));
        }
    }
    CHECK(bad == 0, "%s: %d of %d slots differ from the reference", what, bad, nslots);
    MPI_Group_free(&grp);
    MPI_Group_free(&world);
    free_window(&w, flavor);
    free(res);
    free(want);
}

int main(int argc, char **argv)
{
    rt_init(&argc, &argv);
    rank = rt_rank;
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    plan();
    for (int f = 0; f < NFLAVORS; f++) {
        /* shared windows need ranks that share memory: not across nodes */
        if (f == F_SHARED && rt_world_spans_nodes()) {
            if (rank == 0)
                printf("shared flavor skipped: MPI_COMM_WORLD spans nodes\n");
            continue;
        }
        for (int s = 0; s < NSYNCS; s++)
            run(f, s);
    }
    if (rank == 0)
        printf("acc_ops: %d (type, op) pairs x %d flavors x %d sync modes\n", nslots, NFLAVORS,
               NSYNCS);
    free(slots);
    return rt_finish("acc_ops");
}
