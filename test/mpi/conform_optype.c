/*
 * conform_optype - every predefined operation against every predefined datatype usable in
 * accumulates (issue 11, conformance), those MPI_Type_create_f90_* returns among them. A pair (op, type) is "accepted" when MPI_Reduce_local
 * accepts it on 2 elements (MPI_REPLACE and MPI_NO_OP are accepted for every type). Rank 0
 * then does MPI_Accumulate (count 2; not with MPI_NO_OP, which MPI_Accumulate refuses),
 * MPI_Get_accumulate (count 2) and MPI_Fetch_and_op (count 1) into rank 1's window under
 * lock_all: an accepted pair must succeed, leave at the target exactly the bytes
 * MPI_Reduce_local(origin, old target) gives locally (MPI_REPLACE: the origin; MPI_NO_OP:
 * unchanged) and fetch the old bytes; a refused pair must fail with MPI_ERR_OP and leave the
 * target unchanged. Also MPI_SUM on MPI_CHAR with sums above 127 (wrapping as
 * MPI_Reduce_local does). On an MPI_Win_allocate and on an MPI_Win_create window. On failure
 * rank 0 prints the table of accepted pairs; CONFORM_VERBOSE=1 prints it always, with the
 * pairs accepted beyond MPI-4's table of operations and types marked '+'.
 *
 * On MPICH 4.0.2's own RMA only the accepted pairs can be run: its accumulates do not check
 * the pair at the origin, so a refused pair returns MPI_SUCCESS and then hangs or aborts at
 * the target. CONFORM_MPICH=1 leaves the refused pairs out (the accepted ones all pass).
 */
#include "rmatest.h"

#include <complex.h>
#include <stdbool.h>
#include <stdint.h>

#define WB  128 /* bytes of the window; every case uses the first 2 extents (<= 64 bytes) */
#define EXT 64

/* how values are stored into an element */
enum kind {
    K_INT,   /* integer of the type's size (C, Fortran, byte, character, multi-language) */
    K_LOG,   /* 0/1 in an integer of the type's size (bool, Fortran logical) */
    K_FLT,   /* float / Fortran real of size 4 */
    K_DBL,   /* double / double precision */
    K_LDBL,  /* long double */
    K_FCPLX, /* float _Complex */
    K_DCPLX, /* double _Complex */
    K_2INT,
    K_FLOAT_INT,
    K_DOUBLE_INT,
    K_LONG_INT,
    K_SHORT_INT,
    K_LDOUBLE_INT,
};

/* MPI-4 section 6.9.2 groups, for the "beyond the standard" marks only */
enum group { G_CINT, G_FINT, G_FLOAT, G_LOGICAL, G_COMPLEX, G_BYTE, G_MULTI, G_PAIR, G_NONE };

struct tinfo {
    const char *name;
    MPI_Datatype dt;
    enum kind k;
    enum group g;
};

#define T(d, k, g)                                                                                 \
    {                                                                                              \
#d, d, k, g                                                                                \
    }
static struct tinfo types[] = {
    T(MPI_CHAR, K_INT, G_NONE),
    T(MPI_SIGNED_CHAR, K_INT, G_CINT),
    T(MPI_UNSIGNED_CHAR, K_INT, G_CINT),
    T(MPI_WCHAR, K_INT, G_NONE),
    T(MPI_BYTE, K_INT, G_BYTE),
    T(MPI_SHORT, K_INT, G_CINT),
    T(MPI_UNSIGNED_SHORT, K_INT, G_CINT),
    T(MPI_INT, K_INT, G_CINT),
    T(MPI_UNSIGNED, K_INT, G_CINT),
    T(MPI_LONG, K_INT, G_CINT),
    T(MPI_UNSIGNED_LONG, K_INT, G_CINT),
    T(MPI_LONG_LONG, K_INT, G_CINT),
    T(MPI_UNSIGNED_LONG_LONG, K_INT, G_CINT),
    T(MPI_INT8_T, K_INT, G_CINT),
    T(MPI_INT16_T, K_INT, G_CINT),
    T(MPI_INT32_T, K_INT, G_CINT),
    T(MPI_INT64_T, K_INT, G_CINT),
    T(MPI_UINT8_T, K_INT, G_CINT),
    T(MPI_UINT16_T, K_INT, G_CINT),
    T(MPI_UINT32_T, K_INT, G_CINT),
    T(MPI_UINT64_T, K_INT, G_CINT),
    T(MPI_FLOAT, K_FLT, G_FLOAT),
    T(MPI_DOUBLE, K_DBL, G_FLOAT),
    T(MPI_LONG_DOUBLE, K_LDBL, G_FLOAT),
    T(MPI_C_BOOL, K_LOG, G_LOGICAL),
    T(MPI_CXX_BOOL, K_LOG, G_LOGICAL),
    T(MPI_C_FLOAT_COMPLEX, K_FCPLX, G_COMPLEX),
    T(MPI_C_DOUBLE_COMPLEX, K_DCPLX, G_COMPLEX),
    T(MPI_AINT, K_INT, G_MULTI),
    T(MPI_OFFSET, K_INT, G_MULTI),
    T(MPI_COUNT, K_INT, G_MULTI),
    T(MPI_2INT, K_2INT, G_PAIR),
    T(MPI_FLOAT_INT, K_FLOAT_INT, G_PAIR),
    T(MPI_DOUBLE_INT, K_DOUBLE_INT, G_PAIR),
    T(MPI_LONG_INT, K_LONG_INT, G_PAIR),
    T(MPI_SHORT_INT, K_SHORT_INT, G_PAIR),
    T(MPI_LONG_DOUBLE_INT, K_LDOUBLE_INT, G_PAIR),
    T(MPI_INTEGER, K_INT, G_FINT),
    T(MPI_REAL, K_FLT, G_FLOAT),
    T(MPI_DOUBLE_PRECISION, K_DBL, G_FLOAT),
    T(MPI_LOGICAL, K_LOG, G_LOGICAL),
    T(MPI_CHARACTER, K_INT, G_NONE),
    /* predefined too (MPI-4.0 19.1.9), made in main: MPI_Type_create_f90_* */
    {"f90_real(15)", MPI_DATATYPE_NULL, K_DBL, G_FLOAT},
    {"f90_integer(9)", MPI_DATATYPE_NULL, K_INT, G_FINT},
    {"f90_complex(6)", MPI_DATATYPE_NULL, K_FCPLX, G_COMPLEX},
};
#define NT ((int)(sizeof(types) / sizeof(types[0])))

struct oinfo {
    const char *name, *abbr;
    MPI_Op op;
};
static struct oinfo ops[] = {
    {"MPI_MAX", "mx", MPI_MAX},         {"MPI_MIN", "mn", MPI_MIN},
    {"MPI_SUM", "su", MPI_SUM},         {"MPI_PROD", "pr", MPI_PROD},
    {"MPI_LAND", "la", MPI_LAND},       {"MPI_BAND", "ba", MPI_BAND},
    {"MPI_LOR", "lo", MPI_LOR},         {"MPI_BOR", "bo", MPI_BOR},
    {"MPI_LXOR", "lx", MPI_LXOR},       {"MPI_BXOR", "bx", MPI_BXOR},
    {"MPI_MAXLOC", "ML", MPI_MAXLOC},   {"MPI_MINLOC", "mL", MPI_MINLOC},
    {"MPI_REPLACE", "re", MPI_REPLACE}, {"MPI_NO_OP", "no", MPI_NO_OP},
};
#define NO ((int)(sizeof(ops) / sizeof(ops[0])))

static int rank, nprocs;
static int mpich_gaps; /* CONFORM_MPICH=1: run on MPICH's own RMA, see main */
static int accepted[NT][NO];
static char defect[NT][NO]; /* '#' or '!': MPICH's MPI_Reduce_local is broken on the pair */
static MPI_Aint extent[NT];

/* MPI-4 table: which groups each op is defined on */
static int in_standard(int o, enum group g)
{
    MPI_Op op = ops[o].op;

    if (op == MPI_REPLACE || op == MPI_NO_OP)
        return 1;
    if (op == MPI_MAX || op == MPI_MIN)
        return g == G_CINT || g == G_FINT || g == G_FLOAT || g == G_MULTI;
    if (op == MPI_SUM || op == MPI_PROD)
        return g == G_CINT || g == G_FINT || g == G_FLOAT || g == G_COMPLEX || g == G_MULTI;
    if (op == MPI_LAND || op == MPI_LOR || op == MPI_LXOR)
        return g == G_CINT || g == G_LOGICAL;
    if (op == MPI_BAND || op == MPI_BOR || op == MPI_BXOR)
        return g == G_CINT || g == G_FINT || g == G_BYTE || g == G_MULTI;
    return g == G_PAIR; /* MAXLOC, MINLOC */
}

/* MPICH 4.0.2's MPI_Reduce_local is broken on some pairs MPI-4 does not define; they count
 * as refused (MPI_ERR_OP expected from MPI_Accumulate and friends):
 *  '#' MPI_LAND and MPI_LOR on the C floating types (MPI_FLOAT, MPI_DOUBLE, MPI_LONG_DOUBLE)
 *      pass its argument check (count 0 succeeds) but then fail an internal assertion
 *      (opland.c, oplor.c) and abort the process, so they are not run at all;
 *  '!' MPI_LAND, MPI_LOR and MPI_LXOR on MPI_REAL and MPI_DOUBLE_PRECISION return
 *      MPI_SUCCESS and leave the inout buffer unchanged. The values used (see fill) make every
 *      op change the target, so a reduction that changes nothing is taken as refused. */
static int reduce_aborts(int t, int o)
{
    enum kind k = types[t].k;

    return (ops[o].op == MPI_LAND || ops[o].op == MPI_LOR) &&
           (types[t].dt == MPI_FLOAT || types[t].dt == MPI_DOUBLE ||
            types[t].dt == MPI_LONG_DOUBLE) &&
           (k == K_FLT || k == K_DBL || k == K_LDBL);
}

static void put_int(void *p, int size, long v)
{
    switch (size) {
    case 1: *(int8_t *)p = (int8_t)v; break;
    case 2: *(int16_t *)p = (int16_t)v; break;
    case 4: *(int32_t *)p = (int32_t)v; break;
    case 8: *(int64_t *)p = (int64_t)v; break;
    default: CHECK(0, "integer size %d", size);
    }
}

/* Element i of buffer b of type t gets value v (with index loc for the pair types). */
static void set_elem(int t, unsigned char *b, int i, int v, int loc)
{
    unsigned char *p = b + i * extent[t];
    int size;

    MPI_Type_size(types[t].dt, &size);
    switch (types[t].k) {
    case K_INT: put_int(p, size, v); break;
    case K_LOG:
        if (size == 1)
            *(bool *)p = v & 1;
        else
            put_int(p, size, v & 1);
        break;
    case K_FLT: *(float *)p = (float)v; break;
    case K_DBL: *(double *)p = v; break;
    case K_LDBL: *(long double *)p = v; break;
    case K_FCPLX: *(float _Complex *)p = (float)v + (float)(v + 1) * I; break;
    case K_DCPLX: *(double _Complex *)p = (double)v + (double)(v + 1) * I; break;
    case K_2INT: ((int *)p)[0] = v, ((int *)p)[1] = loc; break;
    case K_FLOAT_INT: {
        struct {
            float v;
            int l;
        } *s = (void *)p;
        s->v = (float)v, s->l = loc;
        break;
    }
    case K_DOUBLE_INT: {
        struct {
            double v;
            int l;
        } *s = (void *)p;
        s->v = v, s->l = loc;
        break;
    }
    case K_LONG_INT: {
        struct {
            long v;
            int l;
        } *s = (void *)p;
        s->v = v, s->l = loc;
        break;
    }
    case K_SHORT_INT: {
        struct {
            short v;
            int l;
        } *s = (void *)p;
        s->v = (short)v, s->l = loc;
        break;
    }
    case K_LDOUBLE_INT: {
        struct {
            long double v;
            int l;
        } *s = (void *)p;
        s->v = v, s->l = loc;
        break;
    }
    }
}

/* origin {3, 2} and target {2, 5}: MAXLOC takes the origin in element 0 and the target in
 * element 1; as logicals the origin is {1, 0} and the target {0, 1} */
static void fill(int t, unsigned char *origin, unsigned char *target)
{
    memset(origin, 0, WB);
    memset(target, 0, WB);
    set_elem(t, origin, 0, 3, 10);
    set_elem(t, origin, 1, 2, 11);
    set_elem(t, target, 0, 2, 20);
    set_elem(t, target, 1, 5, 21);
}

static void print_table(void)
{
    fprintf(stderr,
            "accepted (op, type) pairs: Y accepted, + accepted beyond MPI-4's table, . refused,\n"
            "? refused though in MPI-4's table, # / ! MPICH's MPI_Reduce_local aborts / does\n"
            "nothing (counted refused)\n%-24s",
            "");
    for (int o = 0; o < NO; o++)
        fprintf(stderr, " %s", ops[o].abbr);
    fprintf(stderr, "\n");
    for (int t = 0; t < NT; t++) {
        fprintf(stderr, "%-24s", types[t].name);
        for (int o = 0; o < NO; o++) {
            int std = in_standard(o, types[t].g);
            char c = accepted[t][o] ? (std ? 'Y' : '+') : (std ? '?' : '.');
            fprintf(stderr, "  %c", defect[t][o] ? defect[t][o] : c);
        }
        fprintf(stderr, "\n");
    }
}

static void hexdiff(const char *what, const unsigned char *got, const unsigned char *want, int n)
{
    char g[3 * EXT + 1] = "", w[3 * EXT + 1] = "";

    for (int i = 0; i < n && i < EXT; i++) {
        sprintf(g + 3 * i, "%02x ", got[i]);
        sprintf(w + 3 * i, "%02x ", want[i]);
    }
    fprintf(stderr, "[%d]   %s got  %s\n[%d]   %s want %s\n", rank, what, g, rank, what, w);
}

enum call { C_ACC, C_GACC, C_FOP };
static const char *call_names[] = {"MPI_Accumulate", "MPI_Get_accumulate", "MPI_Fetch_and_op"};

/* Rank 0: reset the target bytes, do one call, check the result. */
static void one_case(MPI_Win w, const char *fl, int t, int o, enum call c)
{
    unsigned char origin[WB], init[WB], expect[WB], now[WB], result[WB];
    int count = c == C_FOP ? 1 : 2, rc, cls = MPI_SUCCESS;
    MPI_Datatype dt = types[t].dt;
    MPI_Op op = ops[o].op;
    int acc = accepted[t][o];

    fill(t, origin, init);
    memset(result, 0, WB);
    MPI_OK(MPI_Put(init, WB, MPI_BYTE, 1, 0, WB, MPI_BYTE, w));
    MPI_OK(MPI_Win_flush(1, w));

    switch (c) {
    case C_ACC: rc = MPI_Accumulate(origin, count, dt, 1, 0, count, dt, op, w); break;
    case C_GACC:
        rc = MPI_Get_accumulate(origin, count, dt, result, count, dt, 1, 0, count, dt, op, w);
        break;
    default: rc = MPI_Fetch_and_op(origin, result, dt, 1, 0, op, w); break;
    }
    if (rc != MPI_SUCCESS)
        MPI_Error_class(rc, &cls);
    MPI_OK(MPI_Win_flush(1, w));
    memset(now, 0xee, WB);
    MPI_OK(MPI_Get(now, WB, MPI_BYTE, 1, 0, WB, MPI_BYTE, w));
    MPI_OK(MPI_Win_flush(1, w));

    memcpy(expect, init, WB);
    if (acc) {
        if (op == MPI_REPLACE)
            memcpy(expect, origin, count * extent[t]);
        else if (op != MPI_NO_OP)
            MPI_OK(MPI_Reduce_local(origin, expect, count, dt, op));
    }
    if (acc) {
        CHECK(rc == MPI_SUCCESS,
              "%s: %s(%s, %s) refused (class %d), but MPI_Reduce_local accepts the pair", fl,
              call_names[c], ops[o].name, types[t].name, cls);
        if (rc != MPI_SUCCESS)
            return;
        CHECK(memcmp(now, expect, WB) == 0,
              "%s: %s(%s, %s): target bytes differ from MPI_Reduce_local's", fl, call_names[c],
              ops[o].name, types[t].name);
        if (memcmp(now, expect, WB) != 0)
            hexdiff("target", now, expect, 2 * extent[t]);
        if (c != C_ACC) {
            int n = count * extent[t];
            CHECK(memcmp(result, init, n) == 0,
                  "%s: %s(%s, %s): fetched bytes are not the old target", fl, call_names[c],
                  ops[o].name, types[t].name);
            if (memcmp(result, init, n) != 0)
                hexdiff("result", result, init, n);
        }
    } else {
        CHECK(cls == MPI_ERR_OP, "%s: %s(%s, %s) gave class %d, want MPI_ERR_OP (%d)%s", fl,
              call_names[c], ops[o].name, types[t].name, cls, MPI_ERR_OP,
              defect[t][o] ? " (MPI-4 does not define the pair, MPICH's reduction is broken)"
                           : " (MPI_Reduce_local refuses the pair)");
        CHECK(memcmp(now, init, WB) == 0, "%s: %s(%s, %s) refused but changed the target", fl,
              call_names[c], ops[o].name, types[t].name);
    }
}

/* MPI_SUM on MPI_CHAR past 127: the target must hold what MPI_Reduce_local gives. */
static void char_wrap(MPI_Win w, const char *fl)
{
    char origin[4] = {100, 120, 127, 1}, init[4] = {100, 20, 127, -128}, expect[4], now[4];
    char res[4] = {0};
    int rc;

    MPI_OK(MPI_Put(init, 4, MPI_CHAR, 1, 0, 4, MPI_CHAR, w));
    MPI_OK(MPI_Win_flush(1, w));
    rc = MPI_Accumulate(origin, 4, MPI_CHAR, 1, 0, 4, MPI_CHAR, MPI_SUM, w);
    CHECK(rc == MPI_SUCCESS, "%s: MPI_Accumulate(MPI_SUM, MPI_CHAR) returned %d", fl, rc);
    MPI_OK(MPI_Win_flush(1, w));
    MPI_OK(MPI_Get(now, 4, MPI_CHAR, 1, 0, 4, MPI_CHAR, w));
    MPI_OK(MPI_Win_flush(1, w));
    memcpy(expect, init, 4);
    if (MPI_Reduce_local(origin, expect, 4, MPI_CHAR, MPI_SUM) == MPI_SUCCESS) {
        CHECK(memcmp(now, expect, 4) == 0,
              "%s: MPI_CHAR sum past 127: target %d %d %d %d, MPI_Reduce_local %d %d %d %d", fl,
              now[0], now[1], now[2], now[3], expect[0], expect[1], expect[2], expect[3]);
        /* and the same through Fetch_and_op */
        MPI_OK(MPI_Put(init, 4, MPI_CHAR, 1, 0, 4, MPI_CHAR, w));
        MPI_OK(MPI_Win_flush(1, w));
        MPI_OK(MPI_Fetch_and_op(&origin[0], res, MPI_CHAR, 1, 0, MPI_SUM, w));
        MPI_OK(MPI_Win_flush(1, w));
        MPI_OK(MPI_Get(now, 4, MPI_CHAR, 1, 0, 4, MPI_CHAR, w));
        MPI_OK(MPI_Win_flush(1, w));
        CHECK(now[0] == expect[0] && res[0] == init[0],
              "%s: Fetch_and_op(MPI_SUM, MPI_CHAR) 100 + 100: target %d, fetched %d", fl, now[0],
              res[0]);
    } else {
        CHECK(0, "%s: MPI_Reduce_local refuses MPI_SUM on MPI_CHAR", fl);
    }
}

static void run(int create)
{
    const char *fl = create ? "create" : "allocate";
    unsigned char *mem, *own = NULL;
    MPI_Win w;

    if (create) {
        own = calloc(1, WB);
        mem = own;
        MPI_OK(MPI_Win_create(mem, WB, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w));
    } else {
        MPI_OK(MPI_Win_allocate(WB, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &w));
    }
    MPI_OK(MPI_Win_set_errhandler(w, MPI_ERRORS_RETURN));
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_OK(MPI_Win_lock_all(0, w));
    if (rank == 0) {
        for (int t = 0; t < NT; t++)
            for (int o = 0; o < NO; o++) {
                if (mpich_gaps && !accepted[t][o])
                    continue;
                if (ops[o].op != MPI_NO_OP)
                    one_case(w, fl, t, o, C_ACC);
                one_case(w, fl, t, o, C_GACC);
                one_case(w, fl, t, o, C_FOP);
            }
        char_wrap(w, fl);
    }
    MPI_OK(MPI_Win_unlock_all(w));
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_OK(MPI_Win_free(&w));
    free(own);
}

int main(int argc, char **argv)
{
    int verbose = rt_env_int("CONFORM_VERBOSE", 0) != 0;

    rt_init(&argc, &argv);
    rank = rt_rank;
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    /* MPICH 4.0.2's RMA (ch4:ucx) does not check the (op, type) pair at the origin: a refused
     * pair returns MPI_SUCCESS and then hangs or aborts at the target, so a run on MPICH's own
     * RMA (CONFORM_MPICH=1) only does the accepted pairs */
    mpich_gaps = rt_env_int("CONFORM_MPICH", 0) != 0;
    CHECK(nprocs >= 2, "needs 2 ranks");
    if (nprocs < 2)
        return rt_finish("conform_optype");

    MPI_Type_create_f90_real(15, MPI_UNDEFINED, &types[NT - 3].dt);
    MPI_Type_create_f90_integer(9, &types[NT - 2].dt);
    MPI_Type_create_f90_complex(6, MPI_UNDEFINED, &types[NT - 1].dt);

    /* which pairs MPI_Reduce_local accepts */
    for (int t = 0; t < NT; t++) {
        MPI_Aint lb;
        unsigned char a[WB], b[WB], b0[WB];
        MPI_Type_get_extent(types[t].dt, &lb, &extent[t]);
        CHECK(extent[t] > 0 && 2 * extent[t] <= EXT, "%s: extent %ld", types[t].name,
              (long)extent[t]);
        if (extent[t] <= 0 || 2 * extent[t] > EXT)
            extent[t] = 1;
        for (int o = 0; o < NO; o++) {
            if (ops[o].op == MPI_REPLACE || ops[o].op == MPI_NO_OP) {
                accepted[t][o] = 1;
                continue;
            }
            fill(t, a, b);
            if (reduce_aborts(t, o)) {
                /* MPICH's check passes (count 0 succeeds) but 2 elements abort the process */
                accepted[t][o] = 0;
                defect[t][o] = '#';
                continue;
            }
            memcpy(b0, b, WB);
            accepted[t][o] = MPI_Reduce_local(a, b, 2, types[t].dt, ops[o].op) == MPI_SUCCESS;
            if (accepted[t][o] && memcmp(b, b0, WB) == 0) {
                /* every op changes the target on these values: accepted but not computed */
                accepted[t][o] = 0;
                defect[t][o] = '!';
            }
        }
    }

    run(0);
    run(1);

    if (rank == 0 && (verbose || rt_fails))
        print_table();
    return rt_finish("conform_optype");
}
