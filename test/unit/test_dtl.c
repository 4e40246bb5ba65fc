/*
 * test_dtl.c - unit test of the datatype layout engine (src/mpid/rma/dtl.[ch]).
 *
 * A singleton MPI program (run as ./test_dtl). For every datatype family it checks the layout's
 * size/extent/true extent against MPICH, that rma_dtl_copy into and out of a contiguous buffer
 * equals PMPI_Pack / PMPI_Unpack byte for byte (holes untouched), that the general pair walk
 * agrees, that mixed layouts move the right bytes, that regular strides stay compact, and that
 * a freed and re-created type gets a fresh layout. One line per check, then a summary.
 */
#include "dtl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int n_pass, n_fail;

static void check(int ok, const char *what, const char *name)
{
    printf("%s %s: %s\n", ok ? "ok  " : "FAIL", name, what);
    if (ok)
        n_pass++;
    else
        n_fail++;
}

static void fill(unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char) (i * 131 + seed * 7 + 1);
}

typedef struct copy_arg {
    char *dst;
    const char *src;
    MPI_Aint pieces;
} copy_arg_t;

static int copy_fn(void *arg, MPI_Aint dst_off, MPI_Aint src_off, size_t len)
{
    copy_arg_t *c = arg;
    memcpy(c->dst + dst_off, c->src + src_off, len);
    c->pieces++;
    return 0;
}

/* typed buffer of `count` elements: allocation and address to pass as the buffer */
typedef struct tbuf {
    unsigned char *mem;
    char *addr;
    size_t bytes;
} tbuf_t;

static void tbuf_init(tbuf_t *t, const rma_dtl_t *d, int count)
{
    MPI_Aint lo, hi;
    if (rma_dtl_span(d, count, &lo, &hi) != 0)
        abort(); /* check_type's types all fit */
    t->bytes = (size_t) (hi - lo) + 64;
    t->mem = calloc(1, t->bytes);
    t->addr = (char *) t->mem + 32 - lo;
}

/* number of pieces walk_pairs yields between count of t and a contiguous byte buffer */
static MPI_Aint pieces_to_bytes(MPI_Datatype t, int count)
{
    const rma_dtl_t *d, *bytes;
    rma_dtl_get(t, &d);
    rma_dtl_get(MPI_BYTE, &bytes);
    tbuf_t src;
    tbuf_init(&src, d, count);
    char *out = malloc((size_t) (d->size * count) + 1);
    copy_arg_t ca = {out, src.addr, 0};
    rma_dtl_walk_pairs(bytes, d->size * count, d, count, copy_fn, &ca);
    free(out);
    free(src.mem);
    return ca.pieces;
}

/* size/extent, span, pack/unpack equivalence, walk equivalence for count elements of t */
static void check_type(const char *name, MPI_Datatype t, int count)
{
    const rma_dtl_t *d = NULL;
    int rc = rma_dtl_get(t, &d);
    check(rc == MPI_SUCCESS && d, "rma_dtl_get succeeds", name);
    if (rc != MPI_SUCCESS)
        return;
    int size;
    MPI_Aint lb, ext, tlb, text;
    PMPI_Type_size(t, &size);
    PMPI_Type_get_extent(t, &lb, &ext);
    PMPI_Type_get_true_extent(t, &tlb, &text);
    check(d->size == size, "size matches MPI_Type_size", name);
    check(d->lb == lb && d->extent == ext, "lb/extent match MPI_Type_get_extent", name);
    check(d->true_lb == tlb && d->true_extent == text, "true lb/extent match", name);
    if (size > 0) {
        MPI_Aint lo, hi;
        check(rma_dtl_span(d, 1, &lo, &hi) == 0 && lo == tlb && hi == tlb + text,
              "span of one element is the true extent", name);
    }
    const rma_dtl_t *bytes;
    rma_dtl_get(MPI_BYTE, &bytes);
    MPI_Aint total = (MPI_Aint) size * count;
    if (total == 0) { /* MPICH 4.0.2's MPI_Unpack divides by zero on empty derived types */
        char one = 42;
        copy_arg_t z = {&one, &one, 0};
        rma_dtl_copy(&one, d, count, &one, bytes, 0);
        rma_dtl_walk_pairs(d, count, bytes, 0, copy_fn, &z);
        rma_dtl_walk_pairs(bytes, 0, d, count, copy_fn, &z);
        check(one == 42 && z.pieces == 0, "no data: nothing copied, no pieces", name);
        return;
    }

    tbuf_t src, dst, ref;
    tbuf_init(&src, d, count);
    tbuf_init(&dst, d, count);
    tbuf_init(&ref, d, count);
    fill(src.mem, src.bytes, 1);
    char *packed = calloc(1, (size_t) total + 1), *mine = calloc(1, (size_t) total + 1);
    int pos = 0;
    PMPI_Pack(src.addr, count, t, packed, (int) total + 1, &pos, MPI_COMM_WORLD);
    rma_dtl_copy(mine, bytes, total, src.addr, d, count);
    check(pos == total && memcmp(packed, mine, (size_t) total) == 0,
          "rma_dtl_copy typed->contig equals MPI_Pack", name);

    copy_arg_t ca = {mine, src.addr, 0};
    memset(mine, 0, (size_t) total);
    rma_dtl_walk_pairs(bytes, total, d, count, copy_fn, &ca);
    check(memcmp(packed, mine, (size_t) total) == 0, "walk_pairs typed->contig equals MPI_Pack",
          name);

    fill((unsigned char *) packed, (size_t) total, 2);
    pos = 0;
    PMPI_Unpack(packed, (int) total + 1, &pos, ref.addr, count, t, MPI_COMM_WORLD);
    rma_dtl_copy(dst.addr, d, count, packed, bytes, total);
    check(memcmp(ref.mem, dst.mem, ref.bytes) == 0,
          "rma_dtl_copy contig->typed equals MPI_Unpack", name);

    memset(dst.mem, 0, dst.bytes);
    ca.dst = dst.addr;
    ca.src = packed;
    rma_dtl_walk_pairs(d, count, bytes, total, copy_fn, &ca);
    check(memcmp(ref.mem, dst.mem, ref.bytes) == 0, "walk_pairs contig->typed equals MPI_Unpack",
          name);

    /* typed -> typed through the same layout: the data bytes of ref move, holes stay zero */
    memset(dst.mem, 0, dst.bytes);
    rma_dtl_copy(dst.addr, d, count, ref.addr, d, count);
    check(memcmp(ref.mem, dst.mem, ref.bytes) == 0, "rma_dtl_copy typed->typed", name);

    free(mine);
    free(packed);
    free(ref.mem);
    free(dst.mem);
    free(src.mem);
}

/* src (count_s of ts) -> dst (count_d of td) must equal pack(src) then unpack into dst */
static void check_mixed(const char *name, MPI_Datatype td, int count_d, MPI_Datatype ts,
                        int count_s)
{
    const rma_dtl_t *dd, *ds;
    rma_dtl_get(td, &dd);
    rma_dtl_get(ts, &ds);
    tbuf_t src, dst, ref;
    tbuf_init(&src, ds, count_s);
    tbuf_init(&dst, dd, count_d);
    tbuf_init(&ref, dd, count_d);
    fill(src.mem, src.bytes, 3);
    MPI_Aint total = ds->size * count_s;
    check(total == dd->size * count_d, "equal totals", name);
    char *packed = malloc((size_t) total + 1);
    int pos = 0;
    PMPI_Pack(src.addr, count_s, ts, packed, (int) total + 1, &pos, MPI_COMM_WORLD);
    pos = 0;
    PMPI_Unpack(packed, (int) total + 1, &pos, ref.addr, count_d, td, MPI_COMM_WORLD);
    rma_dtl_copy(dst.addr, dd, count_d, src.addr, ds, count_s);
    check(memcmp(ref.mem, dst.mem, ref.bytes) == 0, "mixed rma_dtl_copy equals pack+unpack",
          name);
    free(packed);
    free(ref.mem);
    free(dst.mem);
    free(src.mem);
}

/* what librma's windows/win_error.c provides: this process alone, errors returned */
static MPI_Comm quiet = MPI_COMM_NULL;

MPI_Comm rma_quiet_comm(void)
{
    return quiet;
}

static MPI_Datatype commit(MPI_Datatype t)
{
    PMPI_Type_commit(&t);
    return t;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    PMPI_Init(&argc, &argv);
    const rma_dtl_t *d, *d2;
    MPI_Datatype t;

    PMPI_Comm_dup(MPI_COMM_SELF, &quiet);
    PMPI_Comm_set_errhandler(quiet, MPI_ERRORS_RETURN);
    /* a derived type is used only once committed (asked on the quiet communicator) */
    PMPI_Type_vector(3, 1, 2, MPI_INT, &t);
    check(rma_dtl_get(t, &d) != MPI_SUCCESS, "refused before MPI_Type_commit", "uncommitted");
    PMPI_Type_commit(&t);
    check(rma_dtl_get(t, &d) == MPI_SUCCESS, "taken after MPI_Type_commit", "uncommitted");
    PMPI_Type_free(&t);

    /* predefined */
    check_type("MPI_INT x1", MPI_INT, 1);
    check_type("MPI_DOUBLE x5", MPI_DOUBLE, 5);
    check_type("MPI_CHAR x0", MPI_CHAR, 0);
    check_type("MPI_2INT x3", MPI_2INT, 3);
    check_type("MPI_LONG_DOUBLE x2", MPI_LONG_DOUBLE, 2);
    check_type("MPI_FLOAT_INT x3", MPI_FLOAT_INT, 3);
    check_type("MPI_DOUBLE_INT x3", MPI_DOUBLE_INT, 3);
    check_type("MPI_LONG_INT x3", MPI_LONG_INT, 3);
    check_type("MPI_SHORT_INT x3", MPI_SHORT_INT, 3);
    check_type("MPI_LONG_DOUBLE_INT x3", MPI_LONG_DOUBLE_INT, 3);
    rma_dtl_get(MPI_DOUBLE, &d);
    rma_dtl_get(MPI_DOUBLE, &d2);
    check(d == d2 && d->is_contig && d->basic == MPI_DOUBLE && d->basic_size == 8,
          "static entry reused, contiguous, basic MPI_DOUBLE", "MPI_DOUBLE");
    rma_dtl_get(MPI_DOUBLE_INT, &d);
    check(d->basic == MPI_DOUBLE_INT && d->basic_size == 12 && !d->is_contig,
          "basic is the pair type, not contiguous", "MPI_DOUBLE_INT");
    rma_dtl_get(MPI_SHORT_INT, &d);
    check(d->size == 6 && d->extent == 8, "short+int has a hole", "MPI_SHORT_INT");
    check(rma_dtl_get(MPI_DATATYPE_NULL, &d) == MPI_ERR_TYPE, "MPI_DATATYPE_NULL -> MPI_ERR_TYPE",
          "errors");
    check(rma_dtl_get((MPI_Datatype) MPI_COMM_WORLD, &d) == MPI_ERR_TYPE,
          "a communicator handle -> MPI_ERR_TYPE", "errors");

    /* contiguous, vector, hvector */
    PMPI_Type_contiguous(7, MPI_INT, &t);
    t = commit(t);
    check_type("contiguous(7,int) x3", t, 3);
    check(pieces_to_bytes(t, 3) == 1, "one piece", "contiguous(7,int) x3");
    rma_dtl_get(t, &d);
    check(d->is_contig && rma_dtl_node_count(d) == 1, "contiguous is one leaf", "contiguous");
    PMPI_Type_free(&t);

    PMPI_Type_vector(4, 2, 3, MPI_DOUBLE, &t);
    t = commit(t);
    check_type("vector(4,2,3,double) x3", t, 3);
    check(pieces_to_bytes(t, 3) == 10, "10 maximal pieces (elements touch)",
          "vector(4,2,3,double) x3");
    PMPI_Type_free(&t);

    PMPI_Type_vector(5, 1, -2, MPI_INT, &t);
    t = commit(t);
    check_type("vector negative stride x2", t, 2);
    PMPI_Type_free(&t);

    PMPI_Type_create_hvector(3, 2, -20, MPI_SHORT, &t);
    t = commit(t);
    check_type("hvector negative stride x2", t, 2);
    PMPI_Type_free(&t);

    PMPI_Type_vector(1 << 20, 1, 2, MPI_DOUBLE, &t);
    t = commit(t);
    rma_dtl_get(t, &d);
    check(rma_dtl_node_count(d) <= 3, "vector of 1<<20 doubles is compact", "vector 1<<20");
    check(d->basic == MPI_DOUBLE && !d->is_contig, "basic double, not contiguous",
          "vector 1<<20");
    check_type("vector 1<<20 x1", t, 1);
    PMPI_Type_free(&t);

    PMPI_Type_vector(0, 3, 5, MPI_INT, &t);
    t = commit(t);
    check_type("vector count 0 x4", t, 4);
    rma_dtl_get(t, &d);
    check(d->size == 0 && d->is_contig, "zero-size type", "vector count 0");
    PMPI_Type_free(&t);

    /* indexed families */
    {
        int bl[4] = {2, 0, 3, 1}, disp[4] = {5, 1, -4, 0};
        PMPI_Type_indexed(4, bl, disp, MPI_INT, &t);
        t = commit(t);
        check_type("indexed negative displacements x3", t, 3);
        PMPI_Type_free(&t);

        MPI_Aint hd[4] = {40, 0, -24, 100};
        PMPI_Type_create_hindexed(4, bl, hd, MPI_DOUBLE, &t);
        t = commit(t);
        check_type("hindexed x2", t, 2);
        PMPI_Type_free(&t);

        PMPI_Type_create_indexed_block(4, 2, disp, MPI_FLOAT, &t);
        t = commit(t);
        check_type("indexed_block x2", t, 2);
        PMPI_Type_free(&t);

        PMPI_Type_create_hindexed_block(4, 3, hd, MPI_CHAR, &t);
        t = commit(t);
        check_type("hindexed_block x2", t, 2);
        PMPI_Type_free(&t);

        int eq[3] = {0, 4, 8};
        PMPI_Type_create_indexed_block(3, 2, eq, MPI_INT, &t);
        t = commit(t);
        rma_dtl_get(t, &d);
        check(rma_dtl_node_count(d) <= 3, "equally spaced blocks become a repeat",
              "indexed_block regular");
        check_type("indexed_block regular x2", t, 2);
        PMPI_Type_free(&t);
    }

    /* struct, vector of struct, nested */
    MPI_Datatype st, vs;
    {
        int bl[3] = {1, 2, 1};
        MPI_Aint disp[3] = {0, 8, 24};
        MPI_Datatype ty[3] = {MPI_CHAR, MPI_DOUBLE, MPI_SHORT};
        PMPI_Type_create_struct(3, bl, disp, ty, &st);
        st = commit(st);
        check_type("struct{char,2 double,short} x3", st, 3);
        check(pieces_to_bytes(st, 3) == 6, "6 maximal pieces", "struct x3");
        check(pieces_to_bytes(MPI_DOUBLE_INT, 3) == 3, "3 maximal pieces", "MPI_DOUBLE_INT x3");
        check(pieces_to_bytes(MPI_SHORT_INT, 3) == 4, "4 maximal pieces", "MPI_SHORT_INT x3");
        rma_dtl_get(st, &d);
        check(d->basic == MPI_DATATYPE_NULL && d->basic_size == 0, "mixed basic is NULL",
              "struct");
        PMPI_Type_vector(3, 2, 3, st, &vs);
        vs = commit(vs);
        check_type("vector of struct x2", vs, 2);
        rma_dtl_get(vs, &d);
        check(rma_dtl_node_count(d) < 12, "vector of struct is compact", "vector of struct");

        MPI_Datatype ty2[2] = {vs, MPI_DOUBLE_INT};
        int bl2[2] = {1, 2};
        MPI_Aint disp2[2] = {-200, 400};
        PMPI_Type_create_struct(2, bl2, disp2, ty2, &t);
        t = commit(t);
        check_type("struct{vector of struct, 2 double_int} x2", t, 2);
        PMPI_Type_free(&t);

        PMPI_Type_contiguous(3, MPI_DOUBLE_INT, &t);
        t = commit(t);
        rma_dtl_get(t, &d);
        check(d->basic == MPI_DOUBLE_INT, "basic of contiguous pair type", "contig(double_int)");
        check_type("contiguous(3,double_int) x2", t, 2);
        PMPI_Type_free(&t);
    }

    /* resized and dup */
    {
        PMPI_Type_create_resized(MPI_INT, -4, 12, &t);
        t = commit(t);
        check_type("resized(int,-4,12) x4", t, 4);
        MPI_Datatype v;
        PMPI_Type_vector(3, 2, -3, t, &v);
        v = commit(v);
        check_type("vector of resized, negative stride x2", v, 2);
        PMPI_Type_free(&v);
        PMPI_Type_free(&t);

        PMPI_Type_create_resized(vs, 0, 16, &t);
        t = commit(t);
        check_type("resized vector of struct (overlapping) x1", t, 1);
        PMPI_Type_free(&t);

        PMPI_Type_dup(st, &t);
        check_type("dup(struct) x2", t, 2);
        PMPI_Type_free(&t);
    }

    /* subarray */
    {
        int sizes[3] = {5, 6, 7}, sub[3] = {2, 3, 4}, starts[3] = {1, 2, 3};
        PMPI_Type_create_subarray(3, sizes, sub, starts, MPI_ORDER_C, MPI_DOUBLE, &t);
        t = commit(t);
        check_type("subarray 3D C x2", t, 2);
        PMPI_Type_free(&t);
        PMPI_Type_create_subarray(3, sizes, sub, starts, MPI_ORDER_FORTRAN, MPI_INT, &t);
        t = commit(t);
        check_type("subarray 3D Fortran x2", t, 2);
        PMPI_Type_free(&t);
        PMPI_Type_create_subarray(3, sizes, sub, starts, MPI_ORDER_C, st, &t);
        t = commit(t);
        check_type("subarray 3D C of struct x1", t, 1);
        PMPI_Type_free(&t);
    }

    /* darray: every rank of a 2x3 grid, several distributions */
    {
        int gs[2] = {10, 13}, ps[2] = {2, 3};
        int dist_cc[2] = {MPI_DISTRIBUTE_CYCLIC, MPI_DISTRIBUTE_CYCLIC};
        int dist_bc[2] = {MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_CYCLIC};
        int dist_nb[2] = {MPI_DISTRIBUTE_NONE, MPI_DISTRIBUTE_BLOCK};
        int darg_k[2] = {2, 3}, darg_d[2] = {MPI_DISTRIBUTE_DFLT_DARG, MPI_DISTRIBUTE_DFLT_DARG};
        int ps_n[2] = {1, 6};
        char name[96];
        for (int r = 0; r < 6; r++) {
            for (int order = 0; order < 2; order++) {
                int ord = order ? MPI_ORDER_FORTRAN : MPI_ORDER_C;
                const char *on = order ? "Fortran" : "C";
                PMPI_Type_create_darray(6, r, 2, gs, dist_cc, darg_k, ps, ord, MPI_INT, &t);
                t = commit(t);
                snprintf(name, sizeof(name), "darray 2D cyclic(2,3) %s rank %d x2", on, r);
                check_type(name, t, 2);
                PMPI_Type_free(&t);
                PMPI_Type_create_darray(6, r, 2, gs, dist_bc, darg_d, ps, ord, MPI_DOUBLE, &t);
                t = commit(t);
                snprintf(name, sizeof(name), "darray 2D block,cyclic dflt %s rank %d x1", on, r);
                check_type(name, t, 1);
                PMPI_Type_free(&t);
                PMPI_Type_create_darray(6, r, 2, gs, dist_nb, darg_d, ps_n, ord, MPI_SHORT, &t);
                t = commit(t);
                snprintf(name, sizeof(name), "darray 2D none,block %s rank %d x1", on, r);
                check_type(name, t, 1);
                PMPI_Type_free(&t);
            }
        }
    }

    /* maps past 2^56 bytes: refused, never wrapped */
    {
        MPI_Datatype huge, far, wide, nested;
        int one = 1;
        MPI_Aint big = (MPI_Aint)1 << 60, lo = -1, hi = -1;
        PMPI_Type_create_resized(MPI_INT, 0, (MPI_Aint)1 << 62, &huge);
        huge = commit(huge);
        check(rma_dtl_get(huge, &d) == RMA_DTL_TOO_WIDE, "extent 2^62: too wide", "resized");
        PMPI_Type_create_hindexed(1, &one, &big, MPI_INT, &far);
        far = commit(far);
        check(rma_dtl_get(far, &d) == RMA_DTL_TOO_WIDE, "displacement 2^60: too wide",
              "hindexed");
        PMPI_Type_create_resized(MPI_INT, 0, (MPI_Aint)1 << 50, &wide);
        wide = commit(wide);
        check(rma_dtl_get(wide, &d) == MPI_SUCCESS && rma_dtl_span(d, 1 << 6, &lo, &hi) == 0 &&
                  hi == ((MPI_Aint)63 << 50) + 4,
              "extent 2^50: 64 elements fit", "resized");
        check(rma_dtl_span(d, 1 << 14, &lo, &hi) == -1 && lo == 0 && hi == 0,
              "extent 2^50: 2^14 elements (2^64 bytes, 0 wrapped) do not", "resized");
        PMPI_Type_contiguous(1 << 14, wide, &nested); /* MPICH's own extent wraps to 0 */
        nested = commit(nested);
        check(rma_dtl_get(nested, &d) == RMA_DTL_TOO_WIDE, "2^14 of extent 2^50: too wide",
              "contiguous of resized");
        PMPI_Type_free(&huge), PMPI_Type_free(&far), PMPI_Type_free(&wide);
        PMPI_Type_free(&nested);
    }

    /* F90 combiners */
    {
        MPI_Datatype f;
        if (PMPI_Type_create_f90_real(15, MPI_UNDEFINED, &f) == MPI_SUCCESS) {
            check_type("f90_real(15) x3", f, 3);
            rma_dtl_get(f, &d);
            check(d->basic == MPI_REAL8 || d->basic == MPI_DOUBLE_PRECISION ||
                      d->basic == MPI_DOUBLE,
                  "basic is the matching named type", "f90_real");
            PMPI_Type_vector(2, 1, 2, f, &t);
            t = commit(t);
            check_type("vector of f90_real x2", t, 2);
            PMPI_Type_free(&t);
        }
        if (PMPI_Type_create_f90_integer(9, &f) == MPI_SUCCESS)
            check_type("f90_integer(9) x3", f, 3);
        if (PMPI_Type_create_f90_complex(6, MPI_UNDEFINED, &f) == MPI_SUCCESS)
            check_type("f90_complex(6) x3", f, 3);
    }

    /* mixed layouts */
    {
        MPI_Datatype v, ix;
        int bl[3] = {3, 1, 4}, disp[3] = {7, -2, 20};
        PMPI_Type_vector(4, 2, 3, MPI_INT, &v);
        v = commit(v);
        PMPI_Type_indexed(3, bl, disp, MPI_INT, &ix);
        ix = commit(ix);
        check_mixed("vector(4,2,3) x1 -> indexed x1", ix, 1, v, 1);
        {
            const rma_dtl_t *dv, *di;
            rma_dtl_get(v, &dv);
            rma_dtl_get(ix, &di);
            int sb[32], db[32];
            copy_arg_t ca = {(char *) db + 16, (char *) sb + 16, 0};
            rma_dtl_walk_pairs(di, 1, dv, 1, copy_fn, &ca);
            check(ca.pieces == 5, "5 maximal pieces", "vector -> indexed walk");
        }
        check_mixed("indexed x1 -> vector(4,2,3) x1", v, 1, ix, 1);
        check_mixed("vector x2 -> int x16", MPI_INT, 16, v, 2);
        check_mixed("indexed x2 -> vector x2", v, 2, ix, 2);
        check_mixed("struct x2 -> vector of struct x1 (x6 struct)", vs, 1, st, 6);
        PMPI_Type_free(&ix);
        PMPI_Type_free(&v);
    }

    /* a freed and re-created handle gets a fresh layout */
    {
        PMPI_Type_vector(3, 1, 4, MPI_INT, &t);
        t = commit(t);
        rma_dtl_get(t, &d);
        MPI_Datatype old = t;
        check(d->size == 12, "first layout", "reuse");
        PMPI_Type_free(&t);
        PMPI_Type_contiguous(5, MPI_DOUBLE, &t);
        t = commit(t);
        rma_dtl_get(t, &d);
        check(d->size == 40 && d->is_contig, t == old ? "same handle, fresh layout"
                                                      : "new handle, fresh layout", "reuse");
        check_type("re-created type x2", t, 2);
        PMPI_Type_free(&t);
    }

    PMPI_Type_free(&vs);
    PMPI_Type_free(&st);
    rma_dtl_finalize();
    PMPI_Comm_free(&quiet);
    PMPI_Finalize();
    printf("%d passed, %d failed\n", n_pass, n_fail);
    return n_fail ? 1 : 0;
}
