/*
 * dtl.c - MPI datatype layout engine: building layouts from envelopes/contents, the static
 * tables of predefined types, the attribute cache of derived layouts, and the walkers.
 *
 * Representation: an item is (disp, len, child). A leaf item (child NULL) is len contiguous
 * bytes at disp; otherwise the child node's pieces shifted by disp, len being their total.
 * A REPEAT node holds one item placed count times at stride; a SEQ node holds n items in
 * type-map order. Builders normalize on the way up: empty items vanish, a repeat of a leaf
 * whose stride is its length becomes one leaf, nested repeats whose outer stride spans the
 * inner repeat fuse, adjacent leaves of a sequence merge, small child sequences are spliced
 * into their parent, and a sequence of equally spaced identical items becomes a repeat.
 */
#include "dtl.h"

#include <assert.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct dtl_item {
    MPI_Aint disp, len;
    struct rma_dtl_node *child;
} dtl_item_t;

struct rma_dtl_node {
    struct rma_dtl_node *next_alloc;
    MPI_Aint n;      /* REPEAT: count; SEQ: number of items */
    MPI_Aint stride; /* REPEAT: stride in bytes; SEQ: 0 */
    MPI_Aint lo, hi; /* data bytes relative to the node origin */
    int is_seq, depth;
    dtl_item_t items[];
};

typedef struct builder {
    struct rma_dtl_node *allocs;
    MPI_Aint nnodes;
    int err; /* MPI error class of the first failure, or RMA_DTL_TOO_WIDE */
} builder_t;

#define DTL_SPLICE_MAX  64                 /* child sequences up to this many items are spliced */
#define DTL_STACK_LOCAL 32                 /* iterator frames kept on the C stack */
#define DTL_UNSET       ((MPI_Datatype)-1) /* "no basic type yet" (not a datatype handle) */

rma_dtl_t rma_dtl_builtin_table_[256];

static rma_dtl_t dtl_pair_table[5];
static pthread_mutex_t dtl_lock = PTHREAD_MUTEX_INITIALIZER;
static int dtl_keyval = MPI_KEYVAL_INVALID;

/* ---------------------------------------------------------------- items and nodes */

static const dtl_item_t dtl_empty = {0, 0, NULL};

/* Type-map arithmetic. No buffer spans 2^56 bytes (x86-64 user space is 2^47), so a type
 * whose map reaches past +-DTL_LIMIT, or whose products overflow, is refused with
 * MPI_ERR_TYPE rather than walked at wrapped addresses: every displacement, length, stride
 * and bound kept in a layout is within the limit, so the sum of two cannot overflow. */
#define DTL_LIMIT ((MPI_Aint)1 << 56)

static MPI_Aint dtl_bound(builder_t *b, MPI_Aint x)
{
    if (x > DTL_LIMIT || x < -DTL_LIMIT) {
        if (!b->err)
            b->err = RMA_DTL_TOO_WIDE;
        return 0;
    }
    return x;
}

static MPI_Aint dtl_mul(builder_t *b, MPI_Aint x, MPI_Aint y)
{
    MPI_Aint r;
    return dtl_bound(b, __builtin_mul_overflow(x, y, &r) ? DTL_LIMIT + 1 : r);
}

static dtl_item_t item_leaf(MPI_Aint disp, MPI_Aint len)
{
    dtl_item_t it = {disp, len, NULL};
    return len > 0 ? it : dtl_empty;
}

static dtl_item_t item_shift(builder_t *b, dtl_item_t it, MPI_Aint d)
{
    if (it.len > 0)
        it.disp = dtl_bound(b, it.disp + dtl_bound(b, d));
    return it;
}

static MPI_Aint item_lo(const dtl_item_t *it)
{
    return it->disp + (it->child ? it->child->lo : 0);
}

static MPI_Aint item_hi(const dtl_item_t *it)
{
    return it->disp + (it->child ? it->child->hi : it->len);
}

static int item_depth(const dtl_item_t *it)
{
    return it->child ? it->child->depth : 0;
}

static struct rma_dtl_node *node_new(builder_t *b, MPI_Aint nitems)
{
    struct rma_dtl_node *nd = malloc(sizeof(*nd) + (size_t)nitems * sizeof(dtl_item_t));
    if (!nd) {
        if (!b->err)
            b->err = MPI_ERR_NO_MEM;
        return NULL;
    }
    nd->next_alloc = b->allocs;
    b->allocs = nd;
    b->nnodes += 1 + nitems;
    return nd;
}

static void nodes_free(struct rma_dtl_node *nd)
{
    while (nd) {
        struct rma_dtl_node *next = nd->next_alloc;
        free(nd);
        nd = next;
    }
}

/* count copies of `it` at `stride` bytes, as one item at the first copy's place */
static dtl_item_t item_repeat(builder_t *b, MPI_Aint count, MPI_Aint stride, dtl_item_t it)
{
    if (count <= 0 || it.len == 0)
        return dtl_empty;
    if (count == 1)
        return it;
    if (!it.child && stride == it.len)
        return item_leaf(it.disp, dtl_mul(b, count, it.len));

    dtl_item_t inner = {0, it.len, it.child};
    MPI_Aint n = count;
    MPI_Aint cs;
    stride = dtl_bound(b, stride);
    if (it.child && !it.child->is_seq &&
        !__builtin_mul_overflow(it.child->n, it.child->stride, &cs) && cs == stride) {
        inner = it.child->items[0];
        n = dtl_mul(b, count, it.child->n);
        stride = it.child->stride;
    }
    struct rma_dtl_node *nd = node_new(b, 1);
    if (!nd)
        return dtl_empty;
    nd->n = n;
    nd->stride = stride;
    nd->is_seq = 0;
    nd->depth = 1 + item_depth(&inner);
    nd->items[0] = inner;
    MPI_Aint ilo = item_lo(&inner), ihi = item_hi(&inner), span = dtl_mul(b, n - 1, stride);
    nd->lo = dtl_bound(b, stride >= 0 ? ilo : ilo + span);
    nd->hi = dtl_bound(b, stride >= 0 ? ihi + span : ihi);
    dtl_item_t out = {it.disp, dtl_mul(b, count, it.len), nd};
    return out;
}

/* append `it` to tmp[*m], merging with a preceding adjacent leaf */
static void seq_push(builder_t *b, dtl_item_t *tmp, MPI_Aint *m, dtl_item_t it)
{
    if (it.len == 0)
        return;
    if (*m > 0) {
        dtl_item_t *last = &tmp[*m - 1];
        if (!last->child && !it.child && last->disp + last->len == it.disp) {
            last->len = dtl_bound(b, last->len + it.len);
            return;
        }
    }
    tmp[(*m)++] = it;
}

/* the n items in order, as one item */
static dtl_item_t item_seq(builder_t *b, const dtl_item_t *items, MPI_Aint n)
{
    MPI_Aint cap = 0, m = 0;
    for (MPI_Aint i = 0; i < n; i++) {
        const dtl_item_t *it = &items[i];
        if (it->len == 0)
            continue;
        if (it->child && it->child->is_seq && it->child->n <= DTL_SPLICE_MAX)
            cap += it->child->n;
        else
            cap++;
    }
    if (cap == 0)
        return dtl_empty;
    dtl_item_t *tmp = malloc((size_t)cap * sizeof(*tmp));
    if (!tmp) {
        if (!b->err)
            b->err = MPI_ERR_NO_MEM;
        return dtl_empty;
    }
    for (MPI_Aint i = 0; i < n; i++) {
        const dtl_item_t *it = &items[i];
        if (it->len == 0)
            continue;
        if (it->child && it->child->is_seq && it->child->n <= DTL_SPLICE_MAX) {
            for (MPI_Aint j = 0; j < it->child->n; j++)
                seq_push(b, tmp, &m, item_shift(b, it->child->items[j], it->disp));
        } else {
            seq_push(b, tmp, &m, *it);
        }
    }

    dtl_item_t out = dtl_empty;
    if (m == 1) {
        out = tmp[0];
        goto free_tmp;
    }
    /* equally spaced identical items: a repeat */
    int uniform = 1;
    MPI_Aint step = tmp[1].disp - tmp[0].disp;
    for (MPI_Aint i = 1; i < m && uniform; i++)
        uniform = tmp[i].child == tmp[0].child && tmp[i].len == tmp[0].len &&
                  tmp[i].disp - tmp[i - 1].disp == step;
    if (uniform) {
        out = item_repeat(b, m, step, tmp[0]);
        goto free_tmp;
    }

    struct rma_dtl_node *nd = node_new(b, m);
    if (!nd)
        goto free_tmp;
    nd->n = m;
    nd->stride = 0;
    nd->is_seq = 1;
    nd->depth = 1;
    nd->lo = item_lo(&tmp[0]);
    nd->hi = item_hi(&tmp[0]);
    MPI_Aint total = 0;
    for (MPI_Aint i = 0; i < m; i++) {
        nd->items[i] = tmp[i];
        total = dtl_bound(b, total + tmp[i].len);
        if (item_lo(&tmp[i]) < nd->lo)
            nd->lo = item_lo(&tmp[i]);
        if (item_hi(&tmp[i]) > nd->hi)
            nd->hi = item_hi(&tmp[i]);
        if (1 + item_depth(&tmp[i]) > nd->depth)
            nd->depth = 1 + item_depth(&tmp[i]);
    }
    nd->lo = dtl_bound(b, nd->lo); /* nested sequences: no level adds past the bound */
    nd->hi = dtl_bound(b, nd->hi);
    out.disp = 0;
    out.len = total;
    out.child = nd;
free_tmp:
    free(tmp);
    return out;
}

/* ---------------------------------------------------------------- handles and basics */

static int handle_is_builtin(unsigned h)
{
    return (h & 0xfc000000u) == 0x4c000000u;
}

static int handle_is_pair(unsigned h)
{
    return h >= (unsigned)MPI_FLOAT_INT && h <= (unsigned)MPI_LONG_DOUBLE_INT;
}

/* kind bits say "datatype" and the handle is not the null handle */
static int handle_is_datatype(unsigned h)
{
    return (h & 0x3c000000u) == 0x0c000000u && (h & 0xc0000000u) != 0;
}

static MPI_Datatype basic_merge(MPI_Datatype a, MPI_Datatype b)
{
    if (a == DTL_UNSET)
        return b;
    if (b == DTL_UNSET || a == b)
        return a;
    return MPI_DATATYPE_NULL;
}

/* layout of one element of a pair type: C struct { T value; int index; } as MPICH defines */
static int pair_layout(unsigned h, MPI_Aint *first_p, MPI_Aint *second_off_p, MPI_Aint *ext_p)
{
#define DTL_PAIR(T)                                                                                \
    do {                                                                                           \
        struct dtl_pair {                                                                          \
            T v;                                                                                   \
            int i;                                                                                 \
        };                                                                                         \
        *first_p = sizeof(T);                                                                      \
        *second_off_p = offsetof(struct dtl_pair, i);                                              \
        *ext_p = sizeof(struct dtl_pair);                                                          \
    } while (0)
    switch ((int)h) {
    case MPI_FLOAT_INT: DTL_PAIR(float); break;
    case MPI_DOUBLE_INT: DTL_PAIR(double); break;
    case MPI_LONG_INT: DTL_PAIR(long); break;
    case MPI_SHORT_INT: DTL_PAIR(short); break;
    case MPI_LONG_DOUBLE_INT: DTL_PAIR(long double); break;
    default: return 0;
    }
#undef DTL_PAIR
    return 1;
}

static MPI_Aint basic_size_of(MPI_Datatype t)
{
    unsigned h = (unsigned)t;
    MPI_Aint first, off, ext;
    if (handle_is_builtin(h))
        return (h >> 8) & 0xff;
    if (pair_layout(h, &first, &off, &ext))
        return first + (MPI_Aint)sizeof(int);
    return 0;
}

/* ---------------------------------------------------------------- building from contents */

static int build(builder_t *b, MPI_Datatype t, dtl_item_t *out, MPI_Datatype *basic_p);

static int type_extent(MPI_Datatype t, MPI_Aint *ext_p)
{
    MPI_Aint lb;
    return PMPI_Type_get_extent(t, &lb, ext_p) == MPI_SUCCESS ? MPI_SUCCESS : MPI_ERR_TYPE;
}

/* child item and extent of an old type */
static int build_old(builder_t *b, MPI_Datatype t, dtl_item_t *it, MPI_Aint *ext_p,
                     MPI_Datatype *basic_p)
{
    int rc = build(b, t, it, basic_p);
    if (rc == MPI_SUCCESS)
        rc = type_extent(t, ext_p);
    return rc;
}

static dtl_item_t build_subarray(builder_t *b, const MPI_Aint *iv, dtl_item_t it, MPI_Aint ext)
{
    int nd = (int)iv[0];
    const MPI_Aint *sizes = iv + 1, *subsizes = iv + 1 + nd, *starts = iv + 1 + 2 * nd;
    int order = (int)iv[1 + 3 * nd];
    MPI_Aint mult = ext;
    for (int k = 0; k < nd; k++) {
        int d = order == MPI_ORDER_C ? nd - 1 - k : k;
        it = item_shift(b, item_repeat(b, subsizes[d], mult, it), dtl_mul(b, starts[d], mult));
        mult = dtl_mul(b, mult, sizes[d]);
    }
    return it;
}

/* the indices of one dimension a process owns, as repeats of `it` (one index = mult bytes) */
static dtl_item_t darray_dim(builder_t *b, dtl_item_t it, MPI_Aint mult, MPI_Aint gsize,
                             int distrib, int darg, int psize, int coord)
{
    MPI_Aint n = gsize, p = psize, c = coord;
    if (distrib == MPI_DISTRIBUTE_NONE)
        return item_repeat(b, n, mult, it);
    if (distrib == MPI_DISTRIBUTE_BLOCK) {
        MPI_Aint bs = darg == MPI_DISTRIBUTE_DFLT_DARG ? (n + p - 1) / p : darg;
        MPI_Aint start = c * bs, len = n - start < bs ? n - start : bs;
        if (len <= 0)
            return dtl_empty;
        return item_shift(b, item_repeat(b, len, mult, it), dtl_mul(b, start, mult));
    }
    /* cyclic(k): blocks c, c+p, c+2p, ... of k indices, the last one possibly short */
    MPI_Aint k = darg == MPI_DISTRIBUTE_DFLT_DARG ? 1 : darg;
    if (c * k >= n)
        return dtl_empty;
    MPI_Aint nb = (n - c * k + p * k - 1) / (p * k);
    MPI_Aint last = (c + (nb - 1) * p) * k, last_len = n - last < k ? n - last : k;
    MPI_Aint nfull = last_len == k ? nb : nb - 1;
    dtl_item_t blk = item_repeat(b, k, mult, it);
    dtl_item_t parts[2];
    parts[0] =
        item_shift(b, item_repeat(b, nfull, dtl_mul(b, p * k, mult), blk), dtl_mul(b, c * k, mult));
    parts[1] = dtl_empty;
    if (last_len < k)
        parts[1] = item_shift(b, item_repeat(b, last_len, mult, it), dtl_mul(b, last, mult));
    return item_seq(b, parts, 2);
}

static dtl_item_t build_darray(builder_t *b, const MPI_Aint *iv, dtl_item_t it, MPI_Aint ext)
{
    int rank = (int)iv[1], nd = (int)iv[2];
    const MPI_Aint *gsizes = iv + 3, *distribs = iv + 3 + nd, *dargs = iv + 3 + 2 * nd;
    const MPI_Aint *psizes = iv + 3 + 3 * nd;
    int order = (int)iv[3 + 4 * nd];
    int coords[nd > 0 ? nd : 1];
    int r = rank;
    for (int d = nd - 1; d >= 0; d--) { /* process grid is row-major whatever the order */
        coords[d] = r % (int)psizes[d];
        r /= (int)psizes[d];
    }
    MPI_Aint mult = ext;
    for (int k = 0; k < nd; k++) {
        int d = order == MPI_ORDER_C ? nd - 1 - k : k;
        it = darray_dim(b, it, mult, gsizes[d], (int)distribs[d], (int)dargs[d], (int)psizes[d],
                        coords[d]);
        mult = dtl_mul(b, mult, gsizes[d]);
    }
    return it;
}

/* (h)indexed(_block) and struct: items[i] = blens[i] old elements at disps[i] bytes */
/* types NULL: every block is of the old type already built (*out, *basic_p, extent old_ext) */
static int build_blocks(builder_t *b, int count, const MPI_Aint *blens, MPI_Aint blen_all,
                        const MPI_Aint *idisps, const MPI_Aint *adisps, MPI_Aint unit,
                        const MPI_Datatype *types, MPI_Aint old_ext, dtl_item_t *out,
                        MPI_Datatype *basic_p)
{
    int rc = MPI_SUCCESS;
    dtl_item_t *items = calloc((size_t)(count > 0 ? count : 1), sizeof(*items));
    if (!items)
        return MPI_ERR_NO_MEM;
    dtl_item_t old = *out;
    MPI_Aint ext = old_ext;
    MPI_Datatype any = DTL_UNSET, used = DTL_UNSET, ob = *basic_p;
    for (int i = 0; i < count; i++) {
        if (types && (i == 0 || types[i] != types[i - 1])) {
            rc = build_old(b, types[i], &old, &ext, &ob);
            if (rc != MPI_SUCCESS)
                goto free_items;
        }
        MPI_Aint blen = blens ? blens[i] : blen_all;
        MPI_Aint disp = idisps ? dtl_mul(b, idisps[i], unit) : adisps[i];
        items[i] = item_shift(b, item_repeat(b, blen, ext, old), disp);
        any = basic_merge(any, ob);
        if (items[i].len > 0)
            used = basic_merge(used, ob);
    }
    *out = item_seq(b, items, count);
    *basic_p = used != DTL_UNSET ? used : any;
free_items:
    free(items);
    return rc;
}

/* A type an MPI-4 large-count constructor (_c) made keeps its counts, block lengths, strides
 * and displacements apart, in lc (subarray and darray keep their other arguments in the
 * integers); they are put back here where the classic constructor has them, in its
 * integers iv (held as MPI_Aint: room for ni + nc) and addrs (room for nc), so one builder
 * serves both, whatever their size (a count past INT_MAX included). */
static int contents_classic(int comb, int *ni_p, MPI_Aint *iv, int *na_p, MPI_Aint *addrs,
                            const MPI_Count *lc, int nc)
{
    int ni = *ni_p, na = 0, nd = ni > 0 ? (int)iv[0] : 0, nint = nc, lo = 0;

    switch (comb) { /* lc[lo, nint) go to ints, lc[nint, nc) to addrs (as bytes) */
    case MPI_COMBINER_HVECTOR: nint = 2; break;
    case MPI_COMBINER_HINDEXED:
    case MPI_COMBINER_STRUCT: nint = nc > 0 ? 1 + (int)lc[0] : 0; break;
    case MPI_COMBINER_HINDEXED_BLOCK: nint = 2; break;
    case MPI_COMBINER_RESIZED: nint = 0; break;
    case MPI_COMBINER_SUBARRAY: /* ints: ndims, order; lc: sizes, subsizes, starts */
        if (ni != 2 || nc != 3 * nd)
            return MPI_ERR_TYPE;
        iv[1 + nc] = iv[1];
        lo = 1;
        break;
    case MPI_COMBINER_DARRAY: /* ints: size, rank, ndims, 3 x ndims, order; lc: gsizes */
        nd = ni > 2 ? (int)iv[2] : -1;
        if (ni != 4 + 3 * nd || nc != nd)
            return MPI_ERR_TYPE;
        memmove(iv + 3 + nc, iv + 3, (size_t)(ni - 3) * sizeof(*iv));
        lo = 3;
        break;
    default: break;
    }
    if (nint < 0 || nint > nc)
        return MPI_ERR_TYPE;
    for (int i = 0; i < nint; i++)
        iv[lo + i] = (MPI_Aint)lc[i];
    for (int i = nint; i < nc; i++)
        addrs[na++] = (MPI_Aint)lc[i];
    *ni_p = comb == MPI_COMBINER_SUBARRAY || comb == MPI_COMBINER_DARRAY ? ni + nc : nint;
    *na_p = na;
    return MPI_SUCCESS;
}

static int build_contents(builder_t *b, MPI_Datatype t, int comb, MPI_Count cni, MPI_Count cna,
                          MPI_Count cnc, MPI_Count cnt, dtl_item_t *out, MPI_Datatype *basic_p)
{
    int rc = MPI_SUCCESS, ni, na, nc, nt;
    int *ints = NULL;
    MPI_Aint *iv = NULL, *addrs = NULL;
    MPI_Count *lc = NULL;
    MPI_Datatype *types = NULL;

    if (cni < 0 || cna < 0 || cnc < 0 || cnt < 0 || cni + cnc > INT_MAX || cna > INT_MAX ||
        cnt > INT_MAX)
        return MPI_ERR_TYPE;
    ni = (int)cni, na = (int)cna, nc = (int)cnc, nt = (int)cnt;
    ints = malloc((size_t)(ni > 0 ? ni : 1) * sizeof(int));
    iv = malloc((size_t)(ni + nc > 0 ? ni + nc : 1) * sizeof(MPI_Aint));
    addrs = malloc((size_t)(na + nc > 0 ? na + nc : 1) * sizeof(MPI_Aint));
    lc = malloc((size_t)(nc > 0 ? nc : 1) * sizeof(MPI_Count));
    types = malloc((size_t)(nt > 0 ? nt : 1) * sizeof(MPI_Datatype));
    if (!ints || !iv || !addrs || !lc || !types) {
        rc = MPI_ERR_NO_MEM;
        nt = 0;
        goto free_arrays;
    }
    if (PMPI_Type_get_contents_c(t, ni, na, nc, nt, ints, addrs, lc, types) != MPI_SUCCESS) {
        rc = MPI_ERR_TYPE;
        nt = 0;
        goto free_arrays;
    }
    for (int i = 0; i < ni; i++)
        iv[i] = ints[i];
    if (nc > 0 && (rc = contents_classic(comb, &ni, iv, &na, addrs, lc, nc)) != MPI_SUCCESS)
        goto free_types;

    dtl_item_t old = dtl_empty;
    MPI_Aint ext = 0;
    if (comb != MPI_COMBINER_STRUCT && comb != MPI_COMBINER_STRUCT_INTEGER) {
        rc = build_old(b, types[0], &old, &ext, basic_p);
        if (rc != MPI_SUCCESS)
            goto free_types;
    }
    MPI_Aint n = ni > 0 ? iv[0] : 0;
    /* a count of blocks is at most the length of the arrays MPI handed back (ints) */
    int nb = n >= 0 && n <= (MPI_Aint)ni + na ? (int)n : -1;
    int blocks = comb == MPI_COMBINER_INDEXED || comb == MPI_COMBINER_HINDEXED_INTEGER ||
                 comb == MPI_COMBINER_HINDEXED || comb == MPI_COMBINER_INDEXED_BLOCK ||
                 comb == MPI_COMBINER_HINDEXED_BLOCK || comb == MPI_COMBINER_STRUCT_INTEGER ||
                 comb == MPI_COMBINER_STRUCT;
    if (blocks && nb < 0) {
        rc = MPI_ERR_TYPE;
        goto free_types;
    }
    *out = old;
    switch (comb) {
    case MPI_COMBINER_DUP:
    case MPI_COMBINER_RESIZED: *out = old; break;
    case MPI_COMBINER_CONTIGUOUS: *out = item_repeat(b, n, ext, old); break;
    case MPI_COMBINER_VECTOR:
        *out = item_repeat(b, n, dtl_mul(b, iv[2], ext), item_repeat(b, iv[1], ext, old));
        break;
    case MPI_COMBINER_HVECTOR_INTEGER:
        *out = item_repeat(b, n, iv[2], item_repeat(b, iv[1], ext, old));
        break;
    case MPI_COMBINER_HVECTOR:
        *out = item_repeat(b, n, addrs[0], item_repeat(b, iv[1], ext, old));
        break;
    case MPI_COMBINER_INDEXED:
        rc = build_blocks(b, nb, iv + 1, 0, iv + 1 + nb, NULL, ext, NULL, ext, out, basic_p);
        break;
    case MPI_COMBINER_HINDEXED_INTEGER:
        rc = build_blocks(b, nb, iv + 1, 0, iv + 1 + nb, NULL, 1, NULL, ext, out, basic_p);
        break;
    case MPI_COMBINER_HINDEXED:
        rc = build_blocks(b, nb, iv + 1, 0, NULL, addrs, 1, NULL, ext, out, basic_p);
        break;
    case MPI_COMBINER_INDEXED_BLOCK:
        rc = build_blocks(b, nb, NULL, iv[1], iv + 2, NULL, ext, NULL, ext, out, basic_p);
        break;
    case MPI_COMBINER_HINDEXED_BLOCK:
        rc = build_blocks(b, nb, NULL, iv[1], NULL, addrs, 1, NULL, ext, out, basic_p);
        break;
    case MPI_COMBINER_STRUCT_INTEGER:
        rc = build_blocks(b, nb, iv + 1, 0, iv + 1 + nb, NULL, 1, types, 0, out, basic_p);
        break;
    case MPI_COMBINER_STRUCT:
        rc = build_blocks(b, nb, iv + 1, 0, NULL, addrs, 1, types, 0, out, basic_p);
        break;
    case MPI_COMBINER_SUBARRAY: *out = build_subarray(b, iv, old, ext); break;
    case MPI_COMBINER_DARRAY: *out = build_darray(b, iv, old, ext); break;
    default: rc = MPI_ERR_TYPE; break;
    }

free_types:
    for (int i = 0; i < nt; i++) {
        int cc;
        if (rma_dtl_combiner(types[i], &cc) == MPI_SUCCESS && !rma_dtl_comb_predefined(cc))
            PMPI_Type_free(&types[i]);
    }
free_arrays:
    free(types);
    free(lc);
    free(addrs);
    free(iv);
    free(ints);
    return rc;
}

/* one element of t as an item with type-map displacements, and its basic type */
static int build(builder_t *b, MPI_Datatype t, dtl_item_t *out, MPI_Datatype *basic_p)
{
    unsigned h = (unsigned)t;
    MPI_Aint first, off, ext;
    if (handle_is_builtin(h)) {
        MPI_Aint size = (h >> 8) & 0xff;
        *out = item_leaf(0, size);
        *basic_p = size > 0 ? t : DTL_UNSET;
        return MPI_SUCCESS;
    }
    if (pair_layout(h, &first, &off, &ext)) {
        dtl_item_t parts[2] = {item_leaf(0, first), item_leaf(off, sizeof(int))};
        *out = item_seq(b, parts, 2);
        *basic_p = t;
        return MPI_SUCCESS;
    }
    if (!handle_is_datatype(h))
        return MPI_ERR_TYPE;

    MPI_Count ni, na, nc, nt;
    int comb;
    if (PMPI_Type_get_envelope_c(t, &ni, &na, &nc, &nt, &comb) != MPI_SUCCESS)
        return MPI_ERR_TYPE;
    if (rma_dtl_comb_predefined(comb)) {
        int size, tc = MPI_TYPECLASS_REAL;
        if (PMPI_Type_size(t, &size) != MPI_SUCCESS)
            return MPI_ERR_TYPE;
        *out = item_leaf(0, size);
        *basic_p = t;
        if (comb != MPI_COMBINER_NAMED) {
            MPI_Datatype named;
            if (comb == MPI_COMBINER_F90_COMPLEX)
                tc = MPI_TYPECLASS_COMPLEX;
            else if (comb == MPI_COMBINER_F90_INTEGER)
                tc = MPI_TYPECLASS_INTEGER;
            *basic_p =
                PMPI_Type_match_size(tc, size, &named) == MPI_SUCCESS ? named : MPI_DATATYPE_NULL;
        }
        return MPI_SUCCESS;
    }
    return build_contents(b, t, comb, ni, na, nc, nt, out, basic_p);
}

/* public fields and fast-path descriptors from the root item */
static void dtl_finish(rma_dtl_t *d, dtl_item_t root, MPI_Datatype basic)
{
    d->root_disp_ = root.disp;
    d->root_len_ = root.len;
    d->root_child_ = root.child;
    d->size = root.len;
    d->basic = basic == DTL_UNSET ? MPI_DATATYPE_NULL : basic;
    d->basic_size = basic_size_of(d->basic);
    if (d->basic != MPI_DATATYPE_NULL && d->basic_size == 0) {
        int s = 0;
        PMPI_Type_size(d->basic, &s);
        d->basic_size = s;
    }
    d->lo_ = root.len > 0 ? item_lo(&root) : 0;
    d->hi_ = root.len > 0 ? item_hi(&root) : 0;
    d->depth_ = item_depth(&root);
    d->is_contig = root.len == 0 || (!root.child && d->extent == root.len);
    d->simple_ = 0;
    if (root.len > 0 && !root.child) {
        d->simple_ = 1;
        d->s_disp_ = root.disp;
        d->s_count_ = 1;
        d->s_stride_ = 0;
        d->s_len_ = root.len;
    } else if (root.len > 0 && !root.child->is_seq && !root.child->items[0].child) {
        d->simple_ = 1;
        d->s_disp_ = root.disp + root.child->items[0].disp;
        d->s_count_ = root.child->n;
        d->s_stride_ = root.child->stride;
        d->s_len_ = root.child->items[0].len;
    }
}

/* ---------------------------------------------------------------- static tables and cache */

void (*_Atomic rma_dtl_before_free)(void);

static int dtl_delete_fn(MPI_Datatype type, int keyval, void *attr, void *extra)
{
    rma_dtl_t *d = attr;
    (void)type;
    (void)keyval;
    (void)extra;
    if (rma_dtl_before_free != NULL)
        rma_dtl_before_free();
    nodes_free(d->allocs_);
    free(d);
    return MPI_SUCCESS;
}

static void fill_builtin(rma_dtl_t *d, MPI_Datatype t)
{
    MPI_Aint size = ((unsigned)t >> 8) & 0xff;
    memset((char *)d, 0, offsetof(rma_dtl_t, handle_));
    d->lb = 0;
    d->extent = d->true_extent = size;
    d->true_lb = 0;
    dtl_finish(d, item_leaf(0, size), size > 0 ? t : DTL_UNSET);
    d->basic = t; /* MPI_LB / MPI_UB are their own (empty) basic type */
    d->nnodes_ = 1;
    d->allocs_ = NULL;
}

static int fill_pair(rma_dtl_t *d, MPI_Datatype t)
{
    builder_t b = {NULL, 0, 0};
    MPI_Aint first, off, ext;
    pair_layout((unsigned)t, &first, &off, &ext);
    dtl_item_t parts[2] = {item_leaf(0, first), item_leaf(off, sizeof(int))};
    dtl_item_t root = item_seq(&b, parts, 2);
    if (b.err) {
        nodes_free(b.allocs);
        return b.err;
    }
    memset((char *)d, 0, offsetof(rma_dtl_t, handle_));
    d->lb = 0;
    d->extent = ext;
    d->true_lb = 0;
    d->true_extent = off + (MPI_Aint)sizeof(int);
    dtl_finish(d, root, t);
    d->nnodes_ = 1 + b.nnodes;
    d->allocs_ = b.allocs;
    return MPI_SUCCESS;
}

/* The predefined handles' entries, filled on first use under a lock of their own: a
 * target's agent serving an accumulate of a pair type inside a thread's MPI call fills one,
 * and dtl_lock is held across MPICH's attribute calls (which take MPICH's lock): one lock
 * for both closed a cycle with MPICH's lock and the request list's (hp54). */
static pthread_mutex_t static_lock = PTHREAD_MUTEX_INITIALIZER;

/* static entry for a predefined handle, filled under static_lock on first use */
static int get_static(MPI_Datatype type, const rma_dtl_t **dtl_p)
{
    unsigned h = (unsigned)type;
    rma_dtl_t *d = handle_is_builtin(h) ? &rma_dtl_builtin_table_[h & 0xff]
                                        : &dtl_pair_table[h - (unsigned)MPI_FLOAT_INT];
    int rc = MPI_SUCCESS;
    pthread_mutex_lock(&static_lock);
    if (atomic_load_explicit(&d->handle_, memory_order_relaxed) != type) {
        if (handle_is_builtin(h) && atomic_load_explicit(&d->handle_, memory_order_relaxed)) {
            /* a second handle with the same index: never seen in MPICH, refuse it */
            rc = MPI_ERR_TYPE;
        } else if (handle_is_builtin(h)) {
            fill_builtin(d, type);
        } else {
            rc = fill_pair(d, type);
        }
        if (rc == MPI_SUCCESS)
            atomic_store_explicit(&d->handle_, type, memory_order_release);
    }
    pthread_mutex_unlock(&static_lock);
    if (rc == MPI_SUCCESS)
        *dtl_p = d;
    return rc;
}

static int build_derived(MPI_Datatype type, rma_dtl_t **dtl_p)
{
    rma_dtl_t *d = calloc(1, sizeof(*d));
    if (!d)
        return MPI_ERR_NO_MEM;
    builder_t b = {NULL, 0, 0};
    dtl_item_t root = dtl_empty;
    MPI_Datatype basic = DTL_UNSET;
    int rc = build(&b, type, &root, &basic);
    if (rc == MPI_SUCCESS && b.err)
        rc = b.err;
    if (rc == MPI_SUCCESS &&
        (PMPI_Type_get_extent(type, &d->lb, &d->extent) != MPI_SUCCESS ||
         PMPI_Type_get_true_extent(type, &d->true_lb, &d->true_extent) != MPI_SUCCESS))
        rc = MPI_ERR_TYPE;
    if (rc == MPI_SUCCESS) { /* the host's own figures, bounded as the map is */
        (void)dtl_bound(&b, d->extent), (void)dtl_bound(&b, d->lb);
        (void)dtl_bound(&b, d->true_extent), (void)dtl_bound(&b, d->true_lb);
        rc = b.err;
    }
    if (rc != MPI_SUCCESS)
        goto free_layout;
    dtl_finish(d, root, basic);
    d->nnodes_ = 1 + b.nnodes;
    d->allocs_ = b.allocs;
    *dtl_p = d;
    return MPI_SUCCESS;

free_layout:
    nodes_free(b.allocs);
    free(d);
    return rc;
}

/* A derived type may be used once committed; predefined ones (F90 included) always. MPI has
 * no query for "committed", so ask the host library: MPICH's MPI_Pack_size refuses an
 * uncommitted type, on librma's quiet communicator (win_error.h). Only types without a
 * cached layout get here: once per committed type. Without that communicator (a second
 * session's program after the first session ended) a type is taken as committed. */
static int type_is_committed(MPI_Datatype type)
{
    MPI_Comm quiet = rma_quiet_comm();
    int comb, size;

    if (rma_dtl_combiner(type, &comb) != MPI_SUCCESS)
        return 0;
    if (rma_dtl_comb_predefined(comb) || quiet == MPI_COMM_NULL)
        return 1;
    return PMPI_Pack_size(1, type, quiet, &size) == MPI_SUCCESS;
}

int rma_dtl_get_slow(MPI_Datatype type, const rma_dtl_t **dtl_p)
{
    unsigned h = (unsigned)type;
    if (handle_is_builtin(h) || handle_is_pair(h))
        return get_static(type, dtl_p);
    if (!handle_is_datatype(h))
        return MPI_ERR_TYPE;

    int keyval, flag, rc;
    void *val;
    rma_dtl_t *d;

    pthread_mutex_lock(&dtl_lock); /* threads: one keyval, made once */
    if (dtl_keyval == MPI_KEYVAL_INVALID &&
        PMPI_Type_create_keyval(MPI_TYPE_NULL_COPY_FN, dtl_delete_fn, &dtl_keyval, NULL) !=
            MPI_SUCCESS)
        dtl_keyval = MPI_KEYVAL_INVALID;
    keyval = dtl_keyval;
    pthread_mutex_unlock(&dtl_lock);
    if (keyval == MPI_KEYVAL_INVALID)
        return MPI_ERR_OTHER;
    if (PMPI_Type_get_attr(type, keyval, &val, &flag) != MPI_SUCCESS)
        return MPI_ERR_TYPE;
    if (flag) {
        *dtl_p = val;
        return MPI_SUCCESS;
    }
    if (!type_is_committed(type))
        return MPI_ERR_TYPE;
    rc = build_derived(type, &d);
    if (rc != MPI_SUCCESS)
        return rc;
    /* Another thread may have cached its own layout of the type meanwhile: that one stays
     * (setting ours would make MPI free it under that thread's walk) and ours goes. */
    pthread_mutex_lock(&dtl_lock);
    if (PMPI_Type_get_attr(type, keyval, &val, &flag) != MPI_SUCCESS)
        rc = MPI_ERR_TYPE;
    else if (!flag && PMPI_Type_set_attr(type, keyval, d) != MPI_SUCCESS)
        rc = MPI_ERR_TYPE;
    pthread_mutex_unlock(&dtl_lock);
    if (rc != MPI_SUCCESS || flag) {
        dtl_delete_fn(type, keyval, d, NULL);
        d = val;
    }
    if (rc == MPI_SUCCESS)
        *dtl_p = d;
    return rc;
}

void rma_dtl_finalize(void)
{
    pthread_mutex_lock(&static_lock);
    for (int i = 0; i < 256; i++)
        atomic_store_explicit(&rma_dtl_builtin_table_[i].handle_, 0, memory_order_relaxed);
    for (int i = 0; i < 5; i++) {
        if (atomic_load_explicit(&dtl_pair_table[i].handle_, memory_order_relaxed))
            nodes_free(dtl_pair_table[i].allocs_);
        dtl_pair_table[i].allocs_ = NULL;
        atomic_store_explicit(&dtl_pair_table[i].handle_, 0, memory_order_relaxed);
    }
    pthread_mutex_unlock(&static_lock);
    if (dtl_keyval != MPI_KEYVAL_INVALID)
        PMPI_Type_free_keyval(&dtl_keyval);
    dtl_keyval = MPI_KEYVAL_INVALID;
}

MPI_Aint rma_dtl_node_count(const rma_dtl_t *dtl)
{
    return dtl->nnodes_;
}

int rma_dtl_span(const rma_dtl_t *dtl, MPI_Aint count, MPI_Aint *lo_p, MPI_Aint *hi_p)
{
    MPI_Aint span;

    *lo_p = *hi_p = 0;
    if (count <= 0 || dtl->size == 0)
        return 0;
    /* lo_ and hi_ are within 2 * DTL_LIMIT (the builder's bound): the sums cannot overflow */
    if (__builtin_mul_overflow(count - 1, dtl->extent, &span) || span > DTL_LIMIT ||
        span < -DTL_LIMIT)
        return -1;
    *lo_p = dtl->lo_ + (span < 0 ? span : 0);
    *hi_p = dtl->hi_ + (span > 0 ? span : 0);
    return 0;
}

/* ---------------------------------------------------------------- iterators and walks */

typedef struct dtl_frame {
    const dtl_item_t *items;
    MPI_Aint n, i, stride, base;
    int is_seq;
} dtl_frame_t;

typedef struct dtl_iter {
    dtl_frame_t *stack;
    int sp, cap;
    dtl_item_t top;
    MPI_Aint off, len;   /* current maximal piece, what is left of it */
    MPI_Aint poff, plen; /* next raw piece, read ahead while merging */
    int have_pending;
    dtl_frame_t local[DTL_STACK_LOCAL];
} dtl_iter_t;

static int iter_init(dtl_iter_t *it, const rma_dtl_t *d, MPI_Aint count)
{
    it->cap = d->depth_ + 1;
    it->stack = it->local;
    if (it->cap > DTL_STACK_LOCAL) {
        it->stack = malloc((size_t)it->cap * sizeof(dtl_frame_t));
        if (!it->stack)
            return -1;
    }
    it->top.disp = d->root_disp_;
    it->top.len = d->root_len_;
    it->top.child = d->root_child_;
    dtl_frame_t f = {&it->top, count, 0, d->extent, 0, 0};
    it->stack[0] = f;
    it->sp = 0;
    it->len = 0;
    it->have_pending = 0;
    return 0;
}

static void iter_fini(dtl_iter_t *it)
{
    if (it->stack != it->local)
        free(it->stack);
}

static int iter_raw(dtl_iter_t *it, MPI_Aint *off_p, MPI_Aint *len_p)
{
    while (it->sp >= 0) {
        dtl_frame_t *f = &it->stack[it->sp];
        if (f->i == f->n) {
            it->sp--;
            continue;
        }
        const dtl_item_t *item;
        MPI_Aint base;
        if (f->is_seq) {
            item = &f->items[f->i];
            base = f->base;
        } else {
            item = f->items;
            base = f->base + f->i * f->stride;
        }
        f->i++;
        base += item->disp;
        if (!item->child) {
            if (item->len == 0)
                continue;
            *off_p = base;
            *len_p = item->len;
            if (!f->is_seq && f->stride == item->len) { /* the rest of the repeat adjoins */
                *len_p += (f->n - f->i) * item->len;
                f->i = f->n;
            }
            return 1;
        }
        const struct rma_dtl_node *nd = item->child;
        assert(it->sp + 1 < it->cap);
        dtl_frame_t nf = {nd->items, nd->n, 0, nd->stride, base, nd->is_seq};
        it->stack[++it->sp] = nf;
    }
    return 0;
}

/* next maximal contiguous piece into it->off/len; 0 at the end */
static int iter_next(dtl_iter_t *it)
{
    if (!it->have_pending && !iter_raw(it, &it->poff, &it->plen))
        return 0;
    it->off = it->poff;
    it->len = it->plen;
    it->have_pending = 0;
    MPI_Aint o, l;
    while (iter_raw(it, &o, &l)) {
        if (o != it->off + it->len) {
            it->poff = o;
            it->plen = l;
            it->have_pending = 1;
            break;
        }
        it->len += l;
    }
    return 1;
}

/* contiguous for this count: one run at root_disp_ */
static int dtl_contig_for(const rma_dtl_t *d, MPI_Aint count)
{
    return d->is_contig || (count == 1 && !d->root_child_);
}

/* count elements of a simple layout: outer runs, ext bytes apart from s_disp_, of inner
 * pieces of len bytes, s apart (one run when the elements continue each other's stride) */
typedef struct dtl_runs {
    MPI_Aint outer, inner, ext, s, len;
} dtl_runs_t;

static dtl_runs_t simple_runs(const rma_dtl_t *d, MPI_Aint count)
{
    dtl_runs_t r = {count, d->s_count_, d->extent, d->s_stride_, d->s_len_};

    if (r.inner == 1) {
        r.inner = count;
        r.outer = 1;
        r.s = r.ext;
    } else if (r.ext == r.inner * r.s) {
        r.inner *= count;
        r.outer = 1;
    }
    return r;
}

/* The pieces of `count` elements of a simple layout d against one contiguous run at coff:
 * a loop, not the iterator. fn(arg, d's offset, the run's offset, len) when strided_dst,
 * else with the two offsets swapped. Only where no two pieces adjoin (the iterator would
 * join them): -2 then, and nothing was called. */
static int walk_strided(const rma_dtl_t *d, MPI_Aint count, MPI_Aint coff, int strided_dst,
                        rma_dtl_pair_fn fn, void *arg)
{
    dtl_runs_t r = simple_runs(d, count);
    size_t len = (size_t)r.len;
    int rc = 0;

    if (r.len == 0 || r.s == r.len || (r.outer > 1 && r.ext == (r.inner - 1) * r.s + r.len))
        return -2;
    for (MPI_Aint e = 0; e < r.outer && rc == 0; e++) {
        MPI_Aint p = d->s_disp_ + e * r.ext;
        for (MPI_Aint i = 0; i < r.inner && rc == 0; i++, p += r.s, coff += r.len)
            rc = strided_dst ? fn(arg, p, coff, len) : fn(arg, coff, p, len);
    }
    return rc;
}

int rma_dtl_walk_pairs(const rma_dtl_t *dst, MPI_Aint dst_count, const rma_dtl_t *src,
                       MPI_Aint src_count, rma_dtl_pair_fn fn, void *arg)
{
    MPI_Aint dtot = dst_count > 0 ? dst_count * dst->size : 0;
    MPI_Aint stot = src_count > 0 ? src_count * src->size : 0;
    MPI_Aint total = dtot < stot ? dtot : stot;
    int dc = dtl_contig_for(dst, dst_count), sc = dtl_contig_for(src, src_count), rc;
    if (total == 0)
        return 0;
    if (dc && sc)
        return fn(arg, dst->root_disp_, src->root_disp_, (size_t)total);
    if (dtot == stot && sc && dst->simple_ &&
        (rc = walk_strided(dst, dst_count, src->root_disp_, 1, fn, arg)) != -2)
        return rc;
    if (dtot == stot && dc && src->simple_ &&
        (rc = walk_strided(src, src_count, dst->root_disp_, 0, fn, arg)) != -2)
        return rc;

    dtl_iter_t a, b;
    if (iter_init(&a, dst, dst_count))
        return -1;
    if (iter_init(&b, src, src_count)) {
        iter_fini(&a);
        return -1;
    }
    rc = 0;
    int more = iter_next(&a) && iter_next(&b);
    while (more) {
        MPI_Aint n = a.len < b.len ? a.len : b.len;
        rc = fn(arg, a.off, b.off, (size_t)n);
        if (rc)
            break;
        a.off += n;
        a.len -= n;
        b.off += n;
        b.len -= n;
        if (a.len == 0 && !iter_next(&a))
            break;
        if (b.len == 0 && !iter_next(&b))
            break;
    }
    iter_fini(&b);
    iter_fini(&a);
    return rc;
}

typedef struct dtl_copy_arg {
    char *dst;
    const char *src;
} dtl_copy_arg_t;

static int copy_piece(void *arg, MPI_Aint dst_off, MPI_Aint src_off, size_t len)
{
    dtl_copy_arg_t *c = arg;
    memcpy(c->dst + dst_off, c->src + src_off, len);
    return 0;
}

/* runs of a simple layout <-> one contiguous buffer; to_contig says which way */
static void copy_strided(char *contig, char *strided, const rma_dtl_t *d, MPI_Aint count,
                         int to_contig)
{
    dtl_runs_t r = simple_runs(d, count);
    MPI_Aint inner = r.inner, s = r.s, len = r.len;
    for (MPI_Aint e = 0; e < r.outer; e++) {
        char *p = strided + d->s_disp_ + e * r.ext;
#define DTL_LOOP(L)                                                                                \
    for (MPI_Aint i = 0; i < inner; i++, p += s, contig += (L)) {                                  \
        if (to_contig)                                                                             \
            memcpy(contig, p, (L));                                                                \
        else                                                                                       \
            memcpy(p, contig, (L));                                                                \
    }
        if (len == 8) {
            DTL_LOOP(8)
        } else if (len == 4) {
            DTL_LOOP(4)
        } else if (len == 16) {
            DTL_LOOP(16)
        } else {
            DTL_LOOP(len)
        }
#undef DTL_LOOP
    }
}

void rma_dtl_copy(char *dst, const rma_dtl_t *dst_dtl, MPI_Aint dst_count, const char *src,
                  const rma_dtl_t *src_dtl, MPI_Aint src_count)
{
    MPI_Aint dtot = dst_count > 0 ? dst_count * dst_dtl->size : 0;
    MPI_Aint stot = src_count > 0 ? src_count * src_dtl->size : 0;
    if (dtot == 0 || stot == 0)
        return;
    int dc = dtl_contig_for(dst_dtl, dst_count), sc = dtl_contig_for(src_dtl, src_count);
    if (dc && sc) {
        memcpy(dst + dst_dtl->root_disp_, src + src_dtl->root_disp_,
               (size_t)(dtot < stot ? dtot : stot));
        return;
    }
    if (dtot == stot && dc && src_dtl->simple_) {
        copy_strided(dst + dst_dtl->root_disp_, (char *)(uintptr_t)src, src_dtl, src_count, 1);
        return;
    }
    if (dtot == stot && sc && dst_dtl->simple_) {
        copy_strided((char *)(uintptr_t)(src + src_dtl->root_disp_), dst, dst_dtl, dst_count, 0);
        return;
    }
    dtl_copy_arg_t arg = {dst, src};
    rma_dtl_walk_pairs(dst_dtl, dst_count, src_dtl, src_count, copy_piece, &arg);
}
