/*
 * hx.c - host-assisted transfers (see hx.h): the origin's packing and unpacking, and the
 * target agent's checks, scatter and gather.
 */
#define _GNU_SOURCE
#include "config.h"

#include "mpid/rma/hx.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpid/rma/acc.h"
#include "mpid/rma/env.h"
#include "mpid/rma/grow.h"
#include "netmod/netmod.h"
#include "sync/ctl.h"
#include "sync/sync.h"
#include "sync/wait.h"

#define HX_MAX_REC       1024       /* records in one request */
#define HX_MAX_BYTES     (4u << 20) /* data bytes in one request (RMA_HX_MSG is at most this) */
/* An accumulate-family call is one request, whole or not at all (doc/atomicity.md: atomic as
 * a whole call), so its limits are wider; a larger call takes the origin-side path */
#define HX_ACC_MAX_REC   (1u << 16)
#define HX_ACC_MAX_BYTES (64u << 20)
#define HX_MIN_RUNS      16
#define HX_FEW_REC       16 /* the agent copies a request of at most this many records on its stack */

_Static_assert(sizeof(rma_hx_hdr_t) + sizeof(rma_hx_rec_t) <= RMA_NM_AM_HDR_MAX,
               "a rendezvous request's header and record travel as the message's header");

/* What the origin waits on for one request: the answer's destination and a counter. */
typedef struct hx_wait {
    _Atomic int *left; /* decremented when the answer arrived */
    _Atomic int *err;  /* set to the answer's status when it is not 0 */
    _Atomic int *also; /* also decremented: nm->hx_unordered or nm->hx_acks, or NULL */
    int owned;         /* freed by the handler (puts: nobody waits on the call) */
    int own_runs;      /* ... with runs (gets held back by aggregation) */
    /* get: the answer's bytes go to dst, or to pieces skip.. of runs[0], then
     * runs[1..nruns) */
    char *dst;
    const rma_hx_run_t *runs;
    char *lbase; /* the runs' local addresses are offsets from it (NULL: addresses) */
    int nruns;
    uint64_t skip, bytes;
    rma_nm_way_t *way; /* timed (netmod.h rma_nm_way_t): the target's, and when it left */
    uint64_t sent;
} hx_wait_t;

/* Times a request of n data bytes whose answer the origin waits for at once (netmod.h
 * rma_nm_way_t): a same-node target's, sent by a flush (wait) or for a fetch. */
static void hx_time(rma_nm_tgt_t *nm, hx_wait_t *w, uint64_t n, int wait)
{
    if (nm->way.small != 0 && n <= nm->way.small &&
        (wait || atomic_load_explicit(&nm->way.flushing, memory_order_relaxed))) {
        w->way = &nm->way;
        w->sent = rma_now_ns();
    }
}

/* ------------------------------------------------------------------ one origin's order */

/* Bytes [lo, hi) of the target that hx's runs touch. */
static void hx_span(const rma_hx_t *hx, uint64_t *lo, uint64_t *hi)
{
    *lo = UINT64_MAX;
    *hi = 0;
    for (int i = 0; i < hx->nruns; i++) {
        const rma_hx_run_t *r = &hx->runs[i];
        uint64_t a = r->taddr, b = r->taddr + (r->count - 1) * (uint64_t)r->tstride;
        if (r->tstride < 0) {
            uint64_t t = a;
            a = b;
            b = t;
        }
        *lo = a < *lo ? a : *lo;
        *hi = b + r->len > *hi ? b + r->len : *hi;
    }
}

#define ORD_BIT(k) (1u << RMA_NM_ORD_##k)

/* What an operation (RMA_HX_ORD_*, sent or held back) could overtake. A held put joins the
 * held puts, in order, and the gets held with them go first at a flush; an accumulate to
 * the agent is sent after the held puts (agg_take, rma_hx_acc) and after the requests the
 * agent applies in order. Held gets are sent at a flush, before the puts held with them. */
static unsigned ord_overtakes(int what, int held)
{
    switch (what) {
    case RMA_HX_ORD_PUT:
        return ORD_BIT(GET_HELD) | ORD_BIT(ACC) | ORD_BIT(RNDV) | ORD_BIT(QUEUED_PUT) |
               ORD_BIT(QUEUED_GET) | (held ? 0 : ORD_BIT(PUT_HELD));
    case RMA_HX_ORD_GET: /* a get may pass a get */
        return ORD_BIT(PUT_HELD) | ORD_BIT(ACC) | ORD_BIT(RNDV) | ORD_BIT(QUEUED_PUT);
    default: /* RMA_HX_ORD_ACC */
        return ORD_BIT(GET_HELD) | ORD_BIT(RNDV) | ORD_BIT(QUEUED_PUT) | ORD_BIT(QUEUED_GET);
    }
}

int rma_hx_order_slow(rma_win_t *win, int trank, uint64_t lo, uint64_t hi, int what, int held)
{
    rma_nm_tgt_t *nm = &win->targets[trank].nm;
    unsigned k =
        atomic_load_explicit(&nm->ord_kinds, memory_order_acquire) & ord_overtakes(what, held);

    for (int i = 0; k != 0; i++, k >>= 1)
        if ((k & 1) && lo < atomic_load_explicit(&nm->ord_hi[i], memory_order_relaxed) &&
            hi > atomic_load_explicit(&nm->ord_lo[i], memory_order_relaxed))
            return rma_ctl_order(win, trank);
    return 0;
}

/* ------------------------------------------------------------------ the origin */

int rma_hx_add(rma_hx_t *hx, uintptr_t ta, char *buf, size_t len)
{
    rma_hx_run_t *r = hx->nruns > 0 ? &hx->runs[hx->nruns - 1] : NULL;

    if (r != NULL && r->len == len && r->count < UINT32_MAX) {
        if (r->count == 1) {
            r->tstride = (int64_t)(ta - r->taddr);
            r->lstride = buf - r->laddr;
        }
        if (ta == r->taddr + r->count * (uint64_t)r->tstride &&
            buf == r->laddr + (int64_t)r->count * r->lstride) {
            r->count++;
            hx->pieces++;
            hx->bytes += len;
            return 0;
        }
    }
    if (rma_grow(&hx->runs, &hx->cap, hx->nruns, sizeof(*hx->runs), HX_MIN_RUNS) != 0)
        return -ENOMEM;
    hx->runs[hx->nruns++] = (rma_hx_run_t){ta, 0, buf, 0, 1, (uint32_t)len};
    hx->pieces++;
    hx->bytes += len;
    return 0;
}

void rma_hx_done(rma_hx_t *hx)
{
    free(hx->runs);
    hx->runs = NULL;
    hx->nruns = hx->cap = 0;
    hx->pieces = hx->bytes = 0;
}

/* Fills one request's records from runs[*ri], piece *rp on: at most max_rec records and
 * max_bytes of data, packed into data when it is not NULL (put) from lbase plus the runs'
 * local addresses (lbase NULL: they are addresses). Advances (*ri, *rp); returns the number
 * of records and their bytes in *bytes. */
static uint32_t hx_fill(const rma_hx_t *hx, int *ri, uint64_t *rp, rma_hx_rec_t *recs, char *data,
                        const char *lbase, uint32_t max_rec, size_t max_bytes, uint64_t *bytes)
{
    uint32_t n = 0;
    uint64_t used = 0;

    while (*ri < hx->nruns && n < max_rec) {
        const rma_hx_run_t *r = &hx->runs[*ri];
        uint64_t room = (max_bytes - used) / r->len, k = r->count - *rp;

        if (room == 0)
            break;
        if (k > room)
            k = room;
        recs[n++] =
            (rma_hx_rec_t){r->taddr + *rp * (uint64_t)r->tstride, r->tstride, r->len, (uint32_t)k};
        for (uint64_t i = 0; data != NULL && i < k; i++)
            memcpy(data + used + i * r->len,
                   (const char *)((uintptr_t)lbase + (uintptr_t)r->laddr) +
                       (int64_t)(*rp + i) * r->lstride,
                   r->len);
        used += k * r->len;
        *rp += k;
        if (*rp == r->count) {
            (*ri)++;
            *rp = 0;
        }
    }
    *bytes = used;
    return n;
}

static void hx_hdr_init(rma_hx_hdr_t *h, const rma_hx_t *hx, uint32_t nrec, uint64_t bytes,
                        hx_wait_t *w)
{
    const rma_target_t *tg = &hx->win->targets[hx->trank];

    *h = (rma_hx_hdr_t){.magic = RMA_HX_MAGIC,
                        .kind = hx->write ? RMA_HX_PUT : RMA_HX_GET,
                        .flags = hx->flags,
                        .win = (int32_t)tg->peer_win,
                        .serial = tg->peer_serial,
                        .origin = hx->win->world[hx->win->rank],
                        .nrec = nrec,
                        .bytes = bytes,
                        .cookie = (uint64_t)(uintptr_t)w};
}

/* A request of waiter w is over (answered, or not sent): its counters go down, and an owned
 * waiter is freed with its runs. */
static void hx_wait_end(hx_wait_t *w)
{
    /* a waiter on the caller's stack may be gone once left drops: under
     * MPI_THREAD_MULTIPLE another thread may run this handler while the caller waits */
    int owned = w->owned;

    if (w->own_runs)
        free((void *)w->runs);
    if (w->also != NULL)
        atomic_fetch_sub_explicit(w->also, 1, memory_order_release);
    atomic_fetch_sub_explicit(w->left, 1, memory_order_release);
    if (owned)
        free(w);
}

/* An issued request whose answer a flush of nm waits for (nm->hx_out, and w->also
 * when set; its waiter w owned): counted before it is sent (the answer may come at once),
 * and ended with the send's result rc: undone when it failed, else issued, to nm and to
 * win (MPI_Win_flush_all looks at the targets only then). Returns rc. */
static void hx_out_begin(rma_nm_tgt_t *nm, hx_wait_t *w)
{
    atomic_fetch_add_explicit(&nm->hx_out, 1, memory_order_relaxed);
    if (w->also != NULL)
        atomic_fetch_add_explicit(w->also, 1, memory_order_relaxed);
}

static int hx_out_end(rma_win_t *win, rma_nm_tgt_t *nm, hx_wait_t *w, int rc)
{
    if (rc != 0) {
        hx_wait_end(w);
    } else {
        rma_nm_issued(nm);
        rma_win_net_issued(win);
    }
    return rc;
}

/* Sends one request that the call does not wait for, a put or a non-fetching accumulate: h
 * (its cookie set here), then body, len bytes (the records, then the data). The
 * acknowledgement is counted down in nm->hx_out, which a flush waits for; an accumulate's
 * in nm->hx_unordered too, as the agent may defer it, a put's in nm->hx_acks. 0 or -errno. */
static int hx_post(rma_win_t *win, rma_nm_tgt_t *nm, rma_hx_hdr_t *h, const char *body, size_t len)
{
    hx_wait_t *w = malloc(sizeof(*w));

    if (w == NULL)
        return -ENOMEM;
    *w = (hx_wait_t){.left = &nm->hx_out,
                     .err = &nm->hx_err,
                     .also = h->kind == RMA_HX_ACC ? &nm->hx_unordered : &nm->hx_acks,
                     .owned = 1};
    h->cookie = (uint64_t)(uintptr_t)w;
    hx_time(nm, w, h->bytes, 0);
    hx_out_begin(nm, w);
    return hx_out_end(
        win, nm, w,
        nm->ops->am_send(nm, RMA_NM_AM_HX_REQ, h, sizeof(*h), body, len, RMA_NM_AM_COPY));
}

/* Sends one request that nobody answers (RMA_HX_F_QUIET in h's flags): no waiter, nothing
 * for a flush to wait for. 0 or -errno. */
static int hx_post_quiet(rma_nm_tgt_t *nm, rma_hx_hdr_t *h, const char *body, size_t len)
{
    h->cookie = 0;
    return nm->ops->am_send(nm, RMA_NM_AM_HX_REQ, h, sizeof(*h), body, len, RMA_NM_AM_COPY);
}

/* Sends one get request for hx's pieces from run *ri, piece *rp on (advanced past them):
 * at most HX_MAX_REC records and RMA_HX_MSG bytes, built in recs. The answer is unpacked
 * into the pieces' local addresses. Counted in nm->hx_out, which a flush waits for; its
 * waiter keeps a copy of the runs (hx is emptied once sent). 0 or -errno. */
static int hx_get_post(rma_nm_tgt_t *nm, rma_hx_t *hx, int *ri, uint64_t *rp, rma_hx_rec_t *recs)
{
    int first = *ri;
    uint64_t skip = *rp, bytes;
    uint32_t nrec = hx_fill(hx, ri, rp, recs, NULL, NULL, HX_MAX_REC, nm->hx_msg, &bytes);
    int nruns = (*rp == 0 ? *ri : *ri + 1) - first, rc;
    hx_wait_t *w;
    rma_hx_hdr_t h;

    if (nrec == 0) /* a piece larger than a request (RMA_HX_PIECE > RMA_HX_MSG) */
        return -EINVAL;
    if ((w = malloc(sizeof(*w))) == NULL)
        return -ENOMEM;
    /* freed by the answer's handler, which unpacks into the runs */
    *w = (hx_wait_t){.left = &nm->hx_out,
                     .err = &nm->hx_err,
                     .owned = 1,
                     .own_runs = 1,
                     .nruns = nruns,
                     .skip = skip,
                     .bytes = bytes};
    rma_hx_run_t *copy = malloc((size_t)nruns * sizeof(*copy));
    if (copy == NULL) {
        free(w);
        return -ENOMEM;
    }
    w->runs = memcpy(copy, &hx->runs[first], (size_t)nruns * sizeof(*copy));
    hx_hdr_init(&h, hx, nrec, bytes, w);
    if (hx->noted && *ri == hx->nruns) {
        h.flags |= RMA_HX_F_NOTE;
        h.note_off = hx->note_off;
        h.note = hx->note;
    }
    hx_time(nm, w, bytes, 0);
    atomic_fetch_add_explicit(w->left, 1, memory_order_relaxed);
    rc = nm->ops->am_send(nm, RMA_NM_AM_HX_REQ, &h, sizeof(h), recs, nrec * sizeof(*recs),
                          RMA_NM_AM_COPY);
    return hx_out_end(hx->win, nm, w, rc);
}

/* rma_hx_send; held: hx holds gets that aggregation held back, which complete at the
 * target's flush (under way when this returns), in the order it keeps. Gets are answered
 * later either way (the flush waits for them), puts acknowledged later. */
static int hx_send(rma_hx_t *hx, int held)
{
    rma_nm_tgt_t *nm = &hx->win->targets[hx->trank].nm;
    size_t max_bytes = nm->hx_msg;
    size_t body_cap = HX_MAX_REC * sizeof(rma_hx_rec_t) +
                      (hx->write ? (hx->bytes < max_bytes ? (size_t)hx->bytes : max_bytes) : 0);
    char *body = malloc(body_cap);
    int ri = 0, rc = 0, gets = 0;
    uint64_t rp = 0, lo = 0, hi = 0;

    if (body == NULL)
        return -ENOMEM;
    if (!held) { /* held gets are sent by a flush, in the order it keeps */
        hx_span(hx, &lo, &hi);
        rc = rma_hx_order(hx->win, hx->trank, lo, hi, hx->write ? RMA_HX_ORD_PUT : RMA_HX_ORD_GET,
                          0);
    }
    while (ri < hx->nruns && rc == 0) {
        rma_hx_rec_t *recs = (rma_hx_rec_t *)body;
        char *data = body + HX_MAX_REC * sizeof(rma_hx_rec_t);
        uint64_t bytes;
        uint32_t nrec;
        rma_hx_hdr_t h;

        if (!hx->write) { /* answered later: a flush waits for them */
            if ((rc = hx_get_post(nm, hx, &ri, &rp, recs)) == 0)
                gets++;
            continue;
        }
        nrec = hx_fill(hx, &ri, &rp, recs, data, NULL, HX_MAX_REC, max_bytes, &bytes);
        if (nrec == 0) { /* a piece larger than a request (RMA_HX_PIECE > RMA_HX_MSG) */
            rc = -EINVAL;
            break;
        }
        /* the records go right before the data */
        memmove(data - nrec * sizeof(*recs), recs, nrec * sizeof(*recs));
        hx_hdr_init(&h, hx, nrec, bytes, NULL);
        rc = hx_post(hx->win, nm, &h, data - nrec * sizeof(*recs), nrec * sizeof(*recs) + bytes);
    }
    /* a device's RDMA does not queue behind the agent's requests as UCX's emulation does:
     * a later one to these bytes must wait for them (a held put's rule) */
    if (rc == 0 && !held && hx->write && nm->dev_rma)
        rma_nm_ord_note(nm, RMA_NM_ORD_PUT_HELD, lo, hi);
    /* gets land when their answers come, at the latest at the target's next flush: a later
     * put to these bytes must not overtake them (a held get's rule), and MPI_Win_flush_local
     * and requests must wait for them */
    if (gets > 0 && !held) { /* those sent, even when a later one failed */
        rma_nm_ord_note(nm, RMA_NM_ORD_GET_HELD, lo, hi);
        rma_nm_need_local(nm);
    }
    free(body);
    hx->nruns = 0;
    hx->pieces = hx->bytes = 0;
    return rc;
}

int rma_hx_send(rma_hx_t *hx)
{
    return hx_send(hx, 0);
}

int rma_hx_rndv(rma_win_t *win, int trank, uintptr_t ta, char *buf, size_t n, int write)
{
    rma_nm_tgt_t *nm = &win->targets[trank].nm;
    hx_wait_t *w = malloc(sizeof(*w));
    rma_hx_t hx = {.win = win, .trank = trank, .write = write};
    int rc;
    struct {
        rma_hx_hdr_t h;
        rma_hx_rec_t r;
    } m = {.r = {ta, 0, (uint32_t)n, 1}};

    if (w == NULL)
        return -ENOMEM;
    if ((rc = rma_hx_order(win, trank, ta, ta + n, write ? RMA_HX_ORD_PUT : RMA_HX_ORD_GET, 0)) !=
        0) {
        free(w);
        return rc;
    }
    *w = (hx_wait_t){.left = &nm->hx_out,
                     .err = &nm->hx_err,
                     .also = &nm->hx_unordered, /* the data lands later */
                     .owned = 1,
                     .dst = write ? NULL : buf,
                     .bytes = n};
    hx_hdr_init(&m.h, &hx, 1, n, w);
    m.h.flags = RMA_HX_F_RNDV;
    hx_out_begin(nm, w);
    rc = hx_out_end(
        win, nm, w,
        write ? nm->ops->am_send(nm, RMA_NM_AM_HX_REQ, &m, sizeof(m), buf, n, RMA_NM_AM_RNDV)
              : nm->ops->am_send(nm, RMA_NM_AM_HX_REQ, &m.h, sizeof(m.h), &m.r, sizeof(m.r),
                                 RMA_NM_AM_COPY));
    if (rc == 0) {
        rma_nm_ord_note(nm, RMA_NM_ORD_RNDV, ta, ta + n);
        rma_nm_need_local(nm); /* the target reads buf, or writes it, later */
    }
    return rc;
}

/* ------------------------------------------------------------------ aggregation */

/* The request being filled for one target: puts, or non-fetching accumulates of one op on
 * one basic type (h says which). Its records are at the front of buf, room for HX_MAX_REC
 * of them, then its data, room for RMA_AGGREGATE bytes; at sending, the records are moved
 * up to meet the data. */
struct rma_hx_agg {
    atomic_flag busy; /* callers on several threads (MPI_THREAD_MULTIPLE) */
    rma_hx_hdr_t h;   /* kind, op, type; window, serial, origin */
    uint32_t nrec;
    uint64_t bytes;
    rma_hx_t gets; /* small gets held back (tcp alone, nm->am_rma), sent at a flush */
    char buf[];
};

/* nm's aggregation buffer: made by the first thread that holds something back and
 * published with a compare-and-swap (agg_open), so read with acquire: what its maker wrote
 * into it is seen here */
static inline rma_hx_agg_t *agg_of(const rma_nm_tgt_t *nm)
{
    return __atomic_load_n(&nm->agg, __ATOMIC_ACQUIRE);
}

static void agg_lock(rma_hx_agg_t *a)
{
    rma_backoff_t bo = RMA_BACKOFF_INIT;

    while (atomic_flag_test_and_set_explicit(&a->busy, memory_order_acquire))
        rma_backoff(&bo);
}

static void agg_unlock(rma_hx_agg_t *a)
{
    atomic_flag_clear_explicit(&a->busy, memory_order_release);
}

static rma_hx_rec_t *agg_recs(rma_hx_agg_t *a)
{
    return (rma_hx_rec_t *)a->buf;
}

static char *agg_data(rma_hx_agg_t *a)
{
    return a->buf + HX_MAX_REC * sizeof(rma_hx_rec_t);
}

/* a (locked) was sent: its target holds nothing now unless gets stay */
static void agg_settle(rma_hx_agg_t *a)
{
    if (a->nrec == 0 && a->gets.nruns == 0)
        rma_nm_hold_end(&a->gets.win->targets[a->gets.trank].nm, RMA_NM_HOLD_AGG);
}

/* Sends the request held in a (the caller holds it) as one acknowledged request; with
 * RMA_HX_F_QUIET in its flags as one that nobody waits for, which may hold no records (a
 * notification alone). */
static int agg_send(rma_nm_tgt_t *nm, rma_hx_agg_t *a)
{
    size_t rbytes = a->nrec * sizeof(rma_hx_rec_t);
    char *body = agg_data(a) - rbytes;
    int quiet = (a->h.flags & RMA_HX_F_QUIET) != 0, rc;

    if (a->nrec == 0 && !quiet)
        return 0;
    a->h.nrec = a->nrec;
    a->h.bytes = a->bytes;
    memmove(body, agg_recs(a), rbytes);
    rc = quiet ? hx_post_quiet(nm, &a->h, body, rbytes + a->bytes)
               : hx_post(a->gets.win, nm, &a->h, body, rbytes + a->bytes);
    a->nrec = 0;
    a->bytes = 0;
    agg_settle(a);
    return rc;
}

/* Sends the gets held in a (the caller holds it), as few requests as they fit. */
static int agg_send_gets(rma_hx_agg_t *a)
{
    int rc = a->gets.nruns > 0 ? hx_send(&a->gets, 1) : 0;

    agg_settle(a);
    return rc;
}

/* A notification that rides on the last request sent (RMA_HX_F_NOTE); quiet: in a request
 * nobody answers (RMA_HX_F_QUIET), alone when nothing is held. */
typedef struct hx_note {
    uint64_t off, v;
    int quiet;
} hx_note_t;

/* Sends what a (locked) holds back for nm; a flush also sends the gets and lets the next
 * small operation go on its own. note (a flush only): the last request carries it, and
 * the puts go only if the gets went, as the note says that everything before it took
 * effect. A quiet note is never sent with gets held (their answers are what a get waits
 * for). */
static int agg_send_locked(rma_nm_tgt_t *nm, rma_hx_agg_t *a, int flush, const hx_note_t *note)
{
    int rc, grc = 0;

    if (flush) {
        atomic_store_explicit(&nm->primed, 0, memory_order_relaxed);
        if (note != NULL && a->nrec == 0 && a->gets.nruns > 0) { /* gets alone: the last */
            a->gets.noted = 1;
            a->gets.note_off = note->off;
            a->gets.note = note->v;
        }
        grc = agg_send_gets(a);
        a->gets.noted = 0;
        if (note != NULL && ((a->nrec == 0 && !note->quiet) || grc != 0))
            return grc;
    }
    if (note == NULL)
        return (rc = agg_send(nm, a)) != 0 ? rc : grc;
    a->h.flags = RMA_HX_F_NOTE | (note->quiet ? RMA_HX_F_QUIET : 0);
    a->h.note_off = note->off;
    a->h.note = note->v;
    rc = agg_send(nm, a);
    a->h.flags = 0;
    a->h.note_off = a->h.note = 0;
    return rc;
}

static int agg_send_held(rma_nm_tgt_t *nm, int flush)
{
    rma_hx_agg_t *a = agg_of(nm);
    int rc;

    agg_lock(a);
    rc = agg_send_locked(nm, a, flush, NULL);
    agg_unlock(a);
    return rc;
}

/* The network's drain hook: a flush of nm sends what is held back first. */
static int agg_drain(rma_nm_tgt_t *nm)
{
    return agg_send_held(nm, 1);
}

static int agg_same_kind(const rma_hx_hdr_t *a, const rma_hx_hdr_t *b)
{
    return a->kind == b->kind && a->op == b->op && a->acc == b->acc && a->basic == b->basic;
}

/* 1 when every small operation to the target is held back, the first after a flush and
 * gets too: over tcp alone (UCX's emulated put or get and the flush after it cost more than
 * librma's request and its answer), to a same-node target whose small operations go to its
 * agent now (netmod.h rma_nm_way_t), and in a lazy lock's epoch (its gate is set), which
 * ends as one request. */
static int agg_holds_all(rma_nm_tgt_t *nm)
{
    return nm->am_rma || rma_nm_way_msg(nm) || rma_nm_gated(nm);
}

/* Takes what is held back for target trank, locked, for an operation of n bytes that needs
 * at most nrec records. Returns 0 (*a_p is held), 1 when the operation goes on its own
 * (aggregation is off, it is too large, or it is the first small operation since a flush,
 * so that a lone operation + flush costs what it did, unless agg_holds_all), or -errno. */
static int agg_open(rma_win_t *win, int trank, uint32_t nrec, size_t n, rma_hx_agg_t **a_p)
{
    rma_nm_tgt_t *nm = &win->targets[trank].nm;
    rma_hx_agg_t *a = agg_of(nm);

    if (nm->aggregate == 0 || n > nm->aggregate || nrec > HX_MAX_REC ||
        (nm->way.small != 0 && !rma_nm_way_msg(nm))) /* same node, by cross-memory attach */
        return 1;
    if (a == NULL) {
        rma_hx_t hx = {.win = win, .trank = trank, .write = 1};
        rma_hx_agg_t *none = NULL;
        a = calloc(1, sizeof(*a) + HX_MAX_REC * sizeof(rma_hx_rec_t) + nm->aggregate);
        if (a == NULL)
            return 1;
        hx_hdr_init(&a->h, &hx, 0, 0, NULL);
        a->gets = (rma_hx_t){.win = win, .trank = trank};
        if (!__atomic_compare_exchange_n(&nm->agg, &none, a, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
            free(a); /* another thread's came first */
        a = agg_of(nm);
        if (!agg_holds_all(nm)) {
            atomic_store_explicit(&nm->primed, 1, memory_order_relaxed);
            return 1;
        }
    }
    agg_lock(a);
    if (!agg_holds_all(nm) && !atomic_load_explicit(&nm->primed, memory_order_relaxed) &&
        a->nrec == 0 && a->gets.nruns == 0) {
        atomic_store_explicit(&nm->primed, 1, memory_order_relaxed);
        agg_unlock(a);
        return 1;
    }
    *a_p = a;
    return 0;
}

/* agg_open for an operation of the kind k says (kind, op, acc, basic): the request held is
 * sent first when it is of another kind or leaves no room. */
static int agg_take(rma_win_t *win, int trank, const rma_hx_hdr_t *k, uint32_t nrec, size_t n,
                    rma_hx_agg_t **a_p)
{
    rma_nm_tgt_t *nm = &win->targets[trank].nm;
    rma_hx_agg_t *a;
    int rc = agg_open(win, trank, nrec, n, &a);

    if (rc != 0)
        return rc;
    if (a->nrec > 0 &&
        (!agg_same_kind(&a->h, k) || a->nrec + nrec > HX_MAX_REC || a->bytes + n > nm->aggregate) &&
        (rc = agg_send(nm, a)) != 0) {
        agg_unlock(a);
        return rc; /* not held back: the error is the call's */
    }
    a->h.kind = k->kind;
    a->h.op = k->op;
    a->h.acc = k->acc;
    a->h.basic = k->basic;
    *a_p = a;
    return 0;
}

/* Appends the piece of n bytes from buf for target address ta to a (held, with room),
 * into its last record when the piece continues that record's stride. */
static void agg_piece(rma_hx_agg_t *a, uint64_t ta, const char *buf, size_t n)
{
    rma_hx_rec_t *r = a->nrec > 0 ? &agg_recs(a)[a->nrec - 1] : NULL;

    if (r != NULL && r->len == n && r->count < UINT32_MAX &&
        (r->count == 1 || ta == r->addr + r->count * (uint64_t)r->stride)) {
        if (r->count == 1)
            r->stride = (int64_t)(ta - r->addr);
        r->count++;
    } else {
        agg_recs(a)[a->nrec++] = (rma_hx_rec_t){ta, 0, (uint32_t)n, 1};
    }
    memcpy(agg_data(a) + a->bytes, buf, n);
    a->bytes += n;
}

/* Ends agg_take: what was appended counts as issued to the target, which now holds
 * something back (netmod.h, held operations). */
static void agg_held(rma_win_t *win, int trank, rma_hx_agg_t *a)
{
    rma_nm_tgt_t *nm = &win->targets[trank].nm;
    int first = rma_nm_hold_begin(nm, RMA_NM_HOLD_AGG);

    rma_nm_issued(nm);
    rma_win_net_issued(win);
    agg_unlock(a);
    if (first)
        rma_nm_hold_list(nm);
}

int rma_hx_agg_put(rma_win_t *win, int trank, uintptr_t ta, const char *buf, size_t n)
{
    const rma_hx_hdr_t k = {.kind = RMA_HX_PUT};
    rma_hx_agg_t *a;
    int rc = rma_hx_order(win, trank, ta, ta + n, RMA_HX_ORD_PUT, 1);

    if (rc != 0 || (rc = agg_take(win, trank, &k, 1, n, &a)) != 0)
        return rc;
    agg_piece(a, ta, buf, n);
    agg_held(win, trank, a);
    rma_nm_ord_note(&win->targets[trank].nm, RMA_NM_ORD_PUT_HELD, ta, ta + n);
    return 0;
}

int rma_hx_agg_whole(rma_win_t *win, int trank, const rma_hx_t *hx)
{
    rma_nm_tgt_t *nm = &win->targets[trank].nm;

    return agg_holds_all(nm) && hx->bytes <= nm->aggregate && hx->pieces <= HX_MAX_REC;
}

int rma_hx_agg_get(rma_win_t *win, int trank, uintptr_t ta, char *buf, size_t n)
{
    rma_nm_tgt_t *nm = &win->targets[trank].nm;
    rma_hx_agg_t *a;
    int rc;

    if (!agg_holds_all(nm))
        return 1;
    if ((rc = rma_hx_order(win, trank, ta, ta + n, RMA_HX_ORD_GET, 1)) != 0 ||
        (rc = agg_open(win, trank, 1, n, &a)) != 0)
        return rc;
    if ((a->gets.nruns == HX_MAX_REC || a->gets.bytes + n > nm->aggregate) &&
        (rc = agg_send_gets(a)) != 0) {
        agg_unlock(a);
        return rc;
    }
    if ((rc = rma_hx_add(&a->gets, ta, buf, n)) != 0) {
        agg_unlock(a);
        return 1; /* out of memory: it goes on its own */
    }
    agg_held(win, trank, a);
    rma_nm_ord_note(nm, RMA_NM_ORD_GET_HELD, ta, ta + n);
    rma_nm_need_local(nm); /* its data lands when a flush sends it */
    return 0;
}

/* Holds back a non-fetching accumulate: the pieces of hx's runs, their data at opk plus
 * each run's local offset. 0, 1 (not held: it goes on its own) or -errno. */
static int agg_acc(rma_hx_t *hx, int op, MPI_Datatype basic, const char *opk)
{
    const rma_hx_hdr_t k = {
        .kind = RMA_HX_ACC, .op = (uint8_t)op, .acc = RMA_ACC, .basic = (int32_t)basic};
    rma_hx_agg_t *a;
    /* a run's first piece may not continue the last record: two records a run at most */
    int rc = agg_take(hx->win, hx->trank, &k, 2 * (uint32_t)hx->nruns, (size_t)hx->bytes, &a);

    if (rc != 0)
        return rc;
    for (int i = 0; i < hx->nruns; i++) {
        const rma_hx_run_t *r = &hx->runs[i];
        for (uint64_t p = 0; p < r->count; p++)
            agg_piece(a, r->taddr + p * (uint64_t)r->tstride,
                      opk + (uintptr_t)r->laddr + (int64_t)p * r->lstride, r->len);
    }
    agg_held(hx->win, hx->trank, a);
    return 0;
}

int rma_hx_agg_shared(rma_win_t *win, int trank)
{
    rma_nm_tgt_t *nm = &win->targets[trank].nm;
    rma_hx_agg_t *a = agg_of(nm);
    int rc = 0;

    if (a == NULL)
        return 0;
    agg_lock(a);
    if (a->nrec > 0 ? a->gets.nruns > 0 || a->h.kind != RMA_HX_PUT : a->gets.bytes > nm->hx_msg) {
        agg_unlock(a);
        return 1;
    }
    if (a->nrec > 0) {
        a->h.flags = RMA_HX_F_SHARED;
        rc = agg_send(nm, a);
        a->h.flags = 0;
    } else if (a->gets.nruns > 0) {
        a->gets.flags = RMA_HX_F_SHARED;
        rc = agg_send_gets(a);
        a->gets.flags = 0;
    }
    agg_unlock(a);
    return rc;
}

int rma_hx_agg_notify(rma_win_t *win, int trank, size_t off, uint64_t v, int puts_only)
{
    rma_nm_tgt_t *nm = &win->targets[trank].nm;
    rma_hx_agg_t *a = agg_of(nm);
    int rc;

    if (a == NULL)
        return 1;
    agg_lock(a);
    rc = a->nrec > 0 ? a->h.kind != RMA_HX_PUT : a->gets.nruns == 0;
    if (puts_only && a->gets.nruns > 0)
        rc = 1;
    if (rc == 0)
        rc = agg_send_locked(nm, a, 1, &(hx_note_t){off, v, 0});
    agg_unlock(a);
    return rc;
}

int rma_hx_notify_quiet(rma_win_t *win, int trank, size_t off, uint64_t v)
{
    rma_nm_tgt_t *nm = &win->targets[trank].nm;
    rma_hx_agg_t *a = agg_of(nm);
    int rc;

    if (a == NULL) { /* aggregation off: the notification alone */
        rma_hx_t hx = {.win = win, .trank = trank, .write = 1};
        rma_hx_hdr_t h;

        hx_hdr_init(&h, &hx, 0, 0, NULL);
        h.flags = RMA_HX_F_NOTE | RMA_HX_F_QUIET;
        h.note_off = off;
        h.note = v;
        return hx_post_quiet(nm, &h, NULL, 0);
    }
    agg_lock(a);
    rc = a->gets.nruns > 0 || (a->nrec > 0 && a->h.kind != RMA_HX_PUT);
    if (rc == 0) {
        a->h.kind = RMA_HX_PUT; /* when nothing is held: the notification alone */
        rc = agg_send_locked(nm, a, 1, &(hx_note_t){off, v, 1});
    }
    agg_unlock(a);
    return rc;
}

int rma_hx_agg_holds(const rma_nm_tgt_t *nm)
{
    const rma_hx_agg_t *a = agg_of(nm);

    return a != NULL && (a->nrec > 0 || a->gets.nruns > 0);
}

int rma_hx_in_flight(rma_nm_tgt_t *nm)
{
    return atomic_load_explicit(&nm->hx_out, memory_order_acquire) > 0 || rma_hx_agg_holds(nm);
}

void rma_hx_agg_free(rma_nm_tgt_t *nm)
{
    rma_hx_agg_t *a = agg_of(nm);

    if (a == NULL)
        return;
    rma_nm_hold_drop(nm);
    rma_hx_done(&a->gets);
    free(a);
    nm->agg = NULL;
}

/* Origin: the answer to waiter arg is in (its data landed), with status 0 or -errno. */
static void hx_answered(void *arg, int status)
{
    hx_wait_t *w = arg;

    if (w->way != NULL)
        rma_nm_way_note(w->way, RMA_NM_WAY_MSG, rma_now_ns() - w->sent);
    if (status != 0)
        atomic_store_explicit(w->err, status, memory_order_relaxed);
    hx_wait_end(w);
}

/* Origin: the waiter an answer's header names, and its status in *status; NULL for a
 * header cut short. */
static hx_wait_t *hx_answer_waiter(const void *hdr, size_t hlen, int *status)
{
    const rma_hx_reply_t *a = hdr;

    if (hlen < sizeof(*a))
        return NULL;
    *status = a->status;
    return (hx_wait_t *)(uintptr_t)a->cookie;
}

/* Origin: an answer arrives (inside rma_net->progress on this thread). */
static void hx_answer(const void *hdr, size_t hlen, const void *data, size_t len, void *reply_ep)
{
    int status;
    hx_wait_t *w = hx_answer_waiter(hdr, hlen, &status);

    (void)reply_ep;
    if (w == NULL)
        return;
    if (status == 0 && w->dst != NULL) {
        if (len == w->bytes)
            memcpy(w->dst, data, len);
        else
            status = -EPROTO;
    } else if (status == 0 && w->runs != NULL) {
        const char *src = data;
        uint64_t p = w->skip;
        if (len != w->bytes)
            status = -EPROTO;
        for (int i = 0; status == 0 && i < w->nruns && len > 0; i++, p = 0) {
            const rma_hx_run_t *r = &w->runs[i];
            char *to = (char *)((uintptr_t)w->lbase + (uintptr_t)r->laddr);
            for (; p < r->count && len >= r->len; p++) {
                memcpy(to + (int64_t)p * r->lstride, src, r->len);
                src += r->len;
                len -= r->len;
            }
        }
    }
    hx_answered(w, status);
}

/* Origin: an answer whose data comes by rendezvous (a get of one piece into w->dst). */
static void hx_answer_rndv(const void *hdr, size_t hlen, rma_nm_rndv_t *rv, size_t len,
                           void *reply_ep)
{
    int rc;
    hx_wait_t *w = hx_answer_waiter(hdr, hlen, &rc);

    (void)reply_ep;
    if (w == NULL)
        return;
    if (rc == 0 && (w->dst == NULL || len != w->bytes))
        rc = -EPROTO;
    if (rc == 0)
        rc = rma_net->am_recv(rv, w->dst, len, hx_answered, w);
    if (rc != 0)
        hx_answered(w, rc);
}

/* A request body of at most this many bytes is built on the stack (the send copies it) */
#define HX_BODY_STACK 2048

int rma_hx_acc(rma_hx_t *hx, int kind, int op, MPI_Datatype basic, size_t esize, const char *opk,
               const char *compare, char *rpk)
{
    rma_nm_tgt_t *nm = &hx->win->targets[hx->trank].nm;
    size_t cmp = kind == RMA_CAS ? esize : 0, data = opk != NULL ? (size_t)hx->bytes : 0;
    size_t rbytes = (size_t)hx->nruns * sizeof(rma_hx_rec_t), blen = rbytes + cmp + data;
    _Atomic int left = 1, err = 0;
    hx_wait_t w = {.left = &left, .err = &err};
    char stack[HX_BODY_STACK] __attribute__((aligned(8)));
    char *body = stack;
    int rc, ri = 0;
    uint64_t rp = 0, bytes, lo, hi;
    rma_hx_hdr_t h;

    if ((uint32_t)hx->nruns > HX_ACC_MAX_REC || hx->bytes > HX_ACC_MAX_BYTES)
        return -ENOSPC;
    hx_span(hx, &lo, &hi);
    if ((rc = rma_hx_order(hx->win, hx->trank, lo, hi, RMA_HX_ORD_ACC, 0)) != 0)
        return rc;
    if (kind == RMA_ACC && (rc = agg_acc(hx, op, basic, opk)) <= 0) {
        if (rc == 0) /* held back */
            rma_nm_ord_note(nm, RMA_NM_ORD_ACC, lo, hi);
        return rc;
    }
    /* accumulates from one origin take effect in issue order: what is held back goes first */
    if (agg_of(nm) != NULL && (rc = agg_send_held(nm, 0)) != 0)
        return rc;
    if (blen > sizeof(stack) && (body = malloc(blen)) == NULL)
        return -ENOMEM;
    /* the records from the runs, the data packed along them from opk (the runs' local
     * addresses are offsets in the packed elements); the answer is unpacked along them
     * into rpk. NO_OP: no data, the records alone */
    if (hx_fill(hx, &ri, &rp, (rma_hx_rec_t *)body, opk != NULL ? body + rbytes + cmp : NULL, opk,
                HX_ACC_MAX_REC, HX_ACC_MAX_BYTES, &bytes) != (uint32_t)hx->nruns) {
        rc = -ENOSPC;
        goto out;
    }
    if (cmp > 0) /* compare-and-swap only (compare is NULL otherwise) */
        memcpy(body + rbytes, compare, cmp);
    if (rpk != NULL)
        w = (hx_wait_t){.left = &left,
                        .err = &err,
                        .runs = hx->runs,
                        .lbase = rpk,
                        .nruns = hx->nruns,
                        .bytes = hx->bytes};
    hx_hdr_init(&h, hx, (uint32_t)hx->nruns, hx->bytes, &w);
    h.kind = RMA_HX_ACC;
    h.op = (uint8_t)op;
    h.acc = (uint8_t)kind;
    h.basic = (int32_t)basic;
    if (kind == RMA_ACC) { /* done at the target's next flush, as a put */
        if ((rc = hx_post(hx->win, nm, &h, body, blen)) == 0)
            rma_nm_ord_note(nm, RMA_NM_ORD_ACC, lo, hi);
        goto out;
    }
    hx_time(nm, &w, hx->bytes, 1);
    rc = nm->ops->am_send(nm, RMA_NM_AM_HX_REQ, &h, sizeof(h), body, blen, RMA_NM_AM_COPY);
    if (rc == 0) {
        rma_net->wait_zero(&left);
        rc = atomic_load(&err);
        rma_nm_way_settle(nm);
    }
out:
    if (body != stack)
        free(body);
    return rc;
}

int rma_hx_send_raw(MPI_Win handle, int target, const void *hdr, size_t hlen, const void *data,
                    size_t len, int rndv)
{
    rma_win_t *win = rma_win_lookup(handle);
    _Atomic int left = 1, err = 0;
    char sink[256];
    hx_wait_t w = {.left = &left, .err = &err};
    char h[sizeof(rma_hx_hdr_t) + sizeof(rma_hx_rec_t)];
    rma_nm_tgt_t *nm;
    int rc;

    if (win == NULL || target < 0 || target >= win->nranks || win->targets[target].local ||
        hlen > sizeof(h))
        return -EINVAL;
    nm = &win->targets[target].nm;
    /* the cookie is always ours, so that the answer finds its waiter; a header cut short
     * of it gets no answer */
    memset(h, 0, sizeof(h));
    memcpy(h, hdr, hlen);
    ((rma_hx_hdr_t *)h)->cookie = (uint64_t)(uintptr_t)&w;
    if (((rma_hx_hdr_t *)h)->kind == RMA_HX_GET && ((rma_hx_hdr_t *)h)->bytes <= sizeof(sink)) {
        w.dst = sink; /* a get's answer lands there */
        w.bytes = ((rma_hx_hdr_t *)h)->bytes;
    }
    rc = nm->ops->am_send(nm, RMA_NM_AM_HX_REQ, h, hlen, data, len,
                          rndv ? RMA_NM_AM_RNDV : RMA_NM_AM_COPY);
    if (rc != 0 || hlen < sizeof(rma_hx_hdr_t) || (((rma_hx_hdr_t *)h)->flags & RMA_HX_F_QUIET))
        return rc;
    rma_net->wait_zero(&left);
    return atomic_load(&err);
}

/* ------------------------------------------------------------------ the target's agent */

/* [lo, hi) lies in this rank's memory of the window: its window memory, or attached
 * regions, adjacent ones together (dynamic windows; the caller holds dyn_mtx). */
static int hx_in_window(const rma_win_t *win, uint64_t lo, uint64_t hi)
{
    uint64_t at = lo;

    if (win->flavor != MPI_WIN_FLAVOR_DYNAMIC)
        return lo >= (uint64_t)(uintptr_t)win->base &&
               hi <= (uint64_t)(uintptr_t)win->base + (uint64_t)win->size;
    while (at < hi) {
        uint32_t i = 0;
        while (i < win->dyn_n &&
               !(at >= win->dyn_tab[i].base && at < win->dyn_tab[i].base + win->dyn_tab[i].len))
            i++;
        if (i == win->dyn_n)
            return 0;
        at = win->dyn_tab[i].base + win->dyn_tab[i].len;
    }
    return 1;
}

/* Bytes [lo, hi) every piece of rec lies in; 0 when they overflow the address space. */
static int hx_rec_span(const rma_hx_rec_t *r, uint64_t *lo, uint64_t *hi)
{
    __int128 first = (__int128)r->addr, last = first + (__int128)(r->count - 1) * r->stride;
    __int128 l = first < last ? first : last, h = (first < last ? last : first) + r->len;

    if (l < 0 || h > (__int128)UINT64_MAX)
        return 0;
    *lo = (uint64_t)l;
    *hi = (uint64_t)h;
    return 1;
}

/* The control word a notification may name: 8-byte aligned, in the ranks' lines of this
 * node's control segment (lock words, fence and PSCW counters) or in its posts (one word
 * per origin and target); NULL for any other. */
static _Atomic uint64_t *hx_note_word(rma_win_t *win, uint64_t off)
{
    const rma_ctl_t *c = win->ctl;
    uint64_t ranks_end = c->ranks_off + (uint64_t)c->nranks * sizeof(rma_ctl_rank_t);
    uint64_t posts_end = c->post_off + (uint64_t)c->post_rows * c->nranks * sizeof(uint64_t);

    if (off % sizeof(uint64_t) != 0 ||
        !((off >= c->ranks_off && off < ranks_end) || (off >= c->post_off && off < posts_end)))
        return NULL;
    return (_Atomic uint64_t *)((char *)win->ctl + off);
}

/* Checks a request's header against its length and the windows here; NULL when it is
 * sound (the window in *win_p), else why not. */
static const char *hx_check(const rma_hx_hdr_t *h, size_t hlen, size_t len, rma_win_t **win_p)
{
    size_t rbytes, data;
    rma_win_t *win;

    if (hlen != sizeof(*h) || h->magic != RMA_HX_MAGIC)
        return "bad header";
    if (h->kind != RMA_HX_PUT && h->kind != RMA_HX_GET && h->kind != RMA_HX_ACC)
        return "unknown request kind";
    if ((h->flags & ~(RMA_HX_F_RNDV | RMA_HX_F_SHARED | RMA_HX_F_NOTE | RMA_HX_F_QUIET)) != 0 ||
        ((h->flags & RMA_HX_F_RNDV) && (h->kind == RMA_HX_ACC || h->nrec != 1)) ||
        ((h->flags & RMA_HX_F_SHARED) && (h->kind == RMA_HX_ACC || (h->flags & RMA_HX_F_RNDV))) ||
        ((h->flags & RMA_HX_F_NOTE) &&
         (h->kind == RMA_HX_ACC || (h->flags & ~RMA_HX_F_QUIET) != RMA_HX_F_NOTE)) ||
        ((h->flags & RMA_HX_F_QUIET) && (h->kind != RMA_HX_PUT || !(h->flags & RMA_HX_F_NOTE))))
        return "bad flags";
    win = rma_win_lookup((MPI_Win)h->win);
    if (win == NULL || win->serial != h->serial || !(win->net || win->node_msg))
        return "no such window here";
    if ((h->flags & RMA_HX_F_NOTE) && hx_note_word(win, h->note_off) == NULL)
        return "notification outside the ranks' control words and posts";
    /* no records: a notification alone, which nobody answers */
    if ((h->nrec == 0 && (!(h->flags & RMA_HX_F_QUIET) || h->bytes != 0)) ||
        h->nrec > (h->kind == RMA_HX_ACC ? HX_ACC_MAX_REC : HX_MAX_REC) ||
        h->bytes > ((h->flags & RMA_HX_F_RNDV) ? RMA_RNDV_MAX
                    : h->kind == RMA_HX_ACC    ? HX_ACC_MAX_BYTES
                                               : HX_MAX_BYTES))
        return "record count or length out of range";
    rbytes = (size_t)h->nrec * sizeof(rma_hx_rec_t);
    if (len < rbytes)
        return "message length does not match its header";
    data = h->kind == RMA_HX_PUT ? h->bytes : 0;
    if (h->kind == RMA_HX_ACC) {
        const char *why =
            rma_acc_serve_check(h->acc, h->op, (MPI_Datatype)h->basic, h->bytes, &data);
        if (why != NULL)
            return why;
    }
    if (len != rbytes + data)
        return "message length does not match its header";
    *win_p = win;
    return NULL;
}

/* Checks the records (bounds and lengths; dynamic windows: dyn_mtx held); esize: every
 * piece is whole elements of that many bytes. */
static const char *hx_check_recs(const rma_win_t *win, const rma_hx_rec_t *recs, uint32_t nrec,
                                 uint64_t bytes, size_t esize)
{
    uint64_t total = 0;

    for (uint32_t i = 0; i < nrec; i++) {
        const rma_hx_rec_t *r = &recs[i];
        uint64_t lo, hi, n;
        if (r->len == 0 || r->count == 0)
            return "empty record";
        if (r->len % esize != 0)
            return "record length is not whole elements";
        if (__builtin_mul_overflow((uint64_t)r->len, (uint64_t)r->count, &n) ||
            __builtin_add_overflow(total, n, &total) || total > bytes)
            return "records cover more bytes than the header says";
        if (!hx_rec_span(r, &lo, &hi))
            return "record overflows the address space";
        if (hx_in_window(win, lo, hi))
            continue;
        if (win->flavor != MPI_WIN_FLAVOR_DYNAMIC)
            return "record outside the window";
        /* the record's span may cover holes between its pieces' regions */
        for (uint32_t k = 0; k < r->count; k++) {
            uint64_t a = r->addr + (uint64_t)((int64_t)k * r->stride);
            if (!hx_in_window(win, a, a + r->len))
                return "record outside every attached region";
        }
    }
    return total == bytes ? NULL : "records cover fewer bytes than the header says";
}

static void hx_scatter_gather(const rma_hx_rec_t *recs, uint32_t nrec, char *data, int put)
{
    for (uint32_t i = 0; i < nrec; i++)
        for (uint32_t k = 0; k < recs[i].count; k++) {
            char *t = (char *)(uintptr_t)(recs[i].addr + (uint64_t)((int64_t)k * recs[i].stride));
            memcpy(put ? t : data, put ? data : t, recs[i].len);
            data += recs[i].len;
        }
}

/* A request refused before it touched memory: one line on stderr and, unless the origin
 * asked for no answer, an answer with status (the origin's flush then fails instead of
 * waiting for ever). */
static void hx_refuse(const void *hdr, size_t hlen, void *reply_ep, int status, const char *why)
{
    const rma_hx_hdr_t *h = hdr;

    fprintf(stderr, "librma: dropped a host-assisted request from world rank %d: %s\n",
            hlen >= sizeof(*h) ? h->origin : -1, why);
    if (reply_ep != NULL && hlen >= sizeof(*h) && !(h->flags & RMA_HX_F_QUIET)) {
        rma_hx_reply_t a = {.cookie = h->cookie, .status = status};
        rma_net->am_reply(reply_ep, RMA_NM_AM_HX_REPLY, &a, sizeof(a), NULL, 0, RMA_NM_AM_COPY);
    }
}

/* Serves one request; -EAGAIN when an accumulate found a stripe taken, or an epoch under a
 * shared lock (RMA_HX_F_SHARED) the lock taken (it is served again later), else 0
 * (answered, or dropped with one line on stderr). */
static int hx_handle(const void *hdr, size_t hlen, const void *data, size_t len, void *reply_ep)
{
    const rma_hx_hdr_t *h = hdr;
    rma_hx_reply_t a = {0};
    rma_win_t *win = NULL;
    const char *why = hx_check(h, hlen, len, &win);
    /* a sound header's notification is applied even when its records are refused: the
     * origin reports the refusal, the target must not wait for the notification forever */
    _Atomic uint64_t *note =
        why == NULL && (h->flags & RMA_HX_F_NOTE) ? hx_note_word(win, h->note_off) : NULL;
    size_t esize = 1, rbytes = 0, cmp = 0;
    rma_hx_rec_t *recs = NULL, few[HX_FEW_REC];
    const char *src = NULL;
    char *out = NULL;
    int fetch = 0, nomem = 0, rc = 0;

    if (hlen >= sizeof(*h))
        a.cookie = h->cookie;
    if (why == NULL) {
        rbytes = (size_t)h->nrec * sizeof(*recs);
        if (h->kind == RMA_HX_ACC) {
            esize = rma_acc_serve_esize((MPI_Datatype)h->basic);
            fetch = h->acc != RMA_ACC;
            cmp = h->acc == RMA_CAS ? esize : 0;
        }
        fetch |= h->kind == RMA_HX_GET && !(h->flags & RMA_HX_F_RNDV);
        if (h->kind == RMA_HX_PUT && (h->flags & RMA_HX_F_RNDV))
            why = "rendezvous put without its data";
        else if ((recs = h->nrec <= HX_FEW_REC ? few : malloc(rbytes)) == NULL ||
                 (fetch && (out = malloc(sizeof(a) + (size_t)h->bytes)) == NULL))
            why = "out of memory", nomem = 1;
    }
    if (why == NULL) {
        const char *body = (const char *)data + rbytes;
        if (rbytes > 0) /* the body need not be aligned for the records */
            memcpy(recs, data, rbytes);
        if (win->flavor == MPI_WIN_FLAVOR_DYNAMIC)
            pthread_mutex_lock(&win->dyn_mtx);
        why = hx_check_recs(win, recs, h->nrec, h->bytes, esize);
        /* a rendezvous get is sent straight from window memory: h->bytes from its one
         * record's address, so that record must be one piece (its length is then h->bytes) */
        if (why == NULL && (h->flags & RMA_HX_F_RNDV) && recs[0].count != 1)
            why = "rendezvous get of more than one piece";
        if (why == NULL && (h->flags & RMA_HX_F_SHARED) && !rma_lock_shared_here(win)) {
            rc = -EAGAIN; /* an exclusive lock is held or wanted: served later */
        } else if (why == NULL && h->kind == RMA_HX_ACC) {
            rc = rma_acc_serve(win, recs, h->nrec, h->acc, h->op, (MPI_Datatype)h->basic,
                               len > rbytes + cmp ? body + cmp : NULL, cmp ? body : NULL,
                               fetch ? out + sizeof(a) : NULL);
            if (rc == 1)
                why = "no kernel for the operation on the datatype";
        } else if (why == NULL && (h->flags & RMA_HX_F_RNDV)) {
            src = (const char *)(uintptr_t)recs[0].addr; /* a get: sent from there */
        } else if (why == NULL) {
            hx_scatter_gather(recs, h->nrec, h->kind == RMA_HX_PUT ? (char *)body : out + sizeof(a),
                              h->kind == RMA_HX_PUT);
            if (h->flags & RMA_HX_F_SHARED)
                rma_unlock_shared_here(win);
        }
        if (win->flavor == MPI_WIN_FLAVOR_DYNAMIC)
            pthread_mutex_unlock(&win->dyn_mtx);
    }
    if (recs != few)
        free(recs);
    if (rc == -EAGAIN) {
        free(out);
        return rc;
    }
    if (note != NULL) /* after the records took effect, before the answer */
        atomic_fetch_add_explicit(note, h->note, memory_order_release);
    if (why != NULL) {
        free(out);
        hx_refuse(hdr, hlen, reply_ep, nomem ? -ENOMEM : -EINVAL, why);
        return 0;
    }
    if (reply_ep == NULL || hlen < sizeof(*h) || (h->flags & RMA_HX_F_QUIET)) {
        free(out);
        return 0;
    }
    if (out != NULL) {
        memcpy(out, &a, sizeof(a));
        rma_net->am_reply(reply_ep, RMA_NM_AM_HX_REPLY, out, sizeof(a), NULL, (size_t)h->bytes,
                          RMA_NM_AM_OWN);
    } else if (src != NULL) {
        rma_net->am_reply(reply_ep, RMA_NM_AM_HX_REPLY, &a, sizeof(a), src, (size_t)h->bytes,
                          RMA_NM_AM_RNDV);
    } else {
        rma_net->am_reply(reply_ep, RMA_NM_AM_HX_REPLY, &a, sizeof(a), NULL, 0, RMA_NM_AM_COPY);
    }
    return 0;
}

/* Accumulates that found a stripe taken wait here, in arrival order, copied: the agent
 * never waits for a stripe inside the worker's progress (the holder may be an off-node
 * origin whose transfers need that progress). */
typedef struct hx_later {
    struct hx_later *next;
    void *reply_ep;
    size_t hlen, len;
    char buf[];
} hx_later_t;

static pthread_mutex_t later_mtx = PTHREAD_MUTEX_INITIALIZER;
static hx_later_t *later_head, **later_tail = &later_head;
static _Atomic int later_n;

static void hx_serve(const void *hdr, size_t hlen, const void *data, size_t len, void *reply_ep)
{
    const rma_hx_hdr_t *h = hdr;
    int acc = hlen >= sizeof(*h) && h->kind == RMA_HX_ACC;
    hx_later_t *l;

    /* Puts and gets are not ordered with accumulates (MPI): they are served at once, in
     * arrival order, so that a notification behind them takes effect after them (ucx_order) */
    if ((!acc || atomic_load_explicit(&later_n, memory_order_acquire) == 0) &&
        hx_handle(hdr, hlen, data, len, reply_ep) != -EAGAIN)
        return;
    /* behind the ones waiting already, so that none is overtaken */
    l = malloc(sizeof(*l) + hlen + len);
    if (l == NULL) {
        hx_refuse(hdr, hlen, reply_ep, -ENOMEM, "out of memory");
        return;
    }
    *l = (hx_later_t){NULL, reply_ep, hlen, len};
    memcpy(l->buf, hdr, hlen);
    memcpy(l->buf + hlen, data, len);
    pthread_mutex_lock(&later_mtx);
    *later_tail = l;
    later_tail = &l->next;
    atomic_fetch_add_explicit(&later_n, 1, memory_order_release);
    pthread_mutex_unlock(&later_mtx);
}

/* The network's idle hook: serves the requests left for later, in order, until an
 * accumulate still finds its stripes taken. An epoch still waiting for its shared lock is
 * passed over: nothing else of its origin's comes before it is answered, and the
 * accumulates behind it may be what the exclusive holder's unlock waits for. Returns how
 * many are left. */
static int hx_serve_later(void)
{
    hx_later_t **p = &later_head;

    if (atomic_load_explicit(&later_n, memory_order_acquire) == 0)
        return 0;
    pthread_mutex_lock(&later_mtx);
    while (*p != NULL) {
        hx_later_t *l = *p;
        if (hx_handle(l->buf, l->hlen, l->buf + l->hlen, l->len, l->reply_ep) == -EAGAIN) {
            if (!(((const rma_hx_hdr_t *)l->buf)->flags & RMA_HX_F_SHARED))
                break;
            p = &l->next;
            continue;
        }
        *p = l->next;
        if (*p == NULL)
            later_tail = p;
        atomic_fetch_sub_explicit(&later_n, 1, memory_order_release);
        free(l);
    }
    pthread_mutex_unlock(&later_mtx);
    return atomic_load_explicit(&later_n, memory_order_acquire);
}

/* A rendezvous put's answer, once its data has landed in window memory (or not: rc). */
typedef struct hx_landing {
    void *reply_ep;
    rma_hx_reply_t a;
} hx_landing_t;

static void hx_put_landed(void *arg, int rc)
{
    hx_landing_t *l = arg;

    if (rc != 0) {
        fprintf(stderr, "librma: a rendezvous put did not land: %s\n", strerror(-rc));
        l->a.status = -EIO;
    }
    rma_net->am_reply(l->reply_ep, RMA_NM_AM_HX_REPLY, &l->a, sizeof(l->a), NULL, 0,
                      RMA_NM_AM_COPY);
    free(l);
}

/* Target: a put of one piece whose data comes by rendezvous (RMA_HX_F_RNDV): checked like
 * every request, then received straight into window memory. Puts are not ordered with
 * accumulates (MPI), so it does not wait behind the ones left for later. */
static void hx_serve_rndv(const void *hdr, size_t hlen, rma_nm_rndv_t *rv, size_t len,
                          void *reply_ep)
{
    const rma_hx_hdr_t *h = hdr;
    rma_hx_rec_t rec;
    rma_win_t *win = NULL;
    hx_landing_t *l = NULL;
    const char *why = hlen != sizeof(*h) + sizeof(rec)
                          ? "bad header"
                          : hx_check(h, sizeof(*h), sizeof(rec) + len, &win);

    if (why == NULL && (h->kind != RMA_HX_PUT || !(h->flags & RMA_HX_F_RNDV)))
        why = "rendezvous data for a request that has none";
    if (why == NULL) {
        memcpy(&rec, h + 1, sizeof(rec));
        if (win->flavor == MPI_WIN_FLAVOR_DYNAMIC)
            pthread_mutex_lock(&win->dyn_mtx);
        why = hx_check_recs(win, &rec, 1, h->bytes, 1);
        if (why == NULL && rec.count != 1)
            why = "rendezvous put of more than one piece";
        if (win->flavor == MPI_WIN_FLAVOR_DYNAMIC)
            pthread_mutex_unlock(&win->dyn_mtx);
    }
    if (why == NULL && (l = malloc(sizeof(*l))) == NULL)
        why = "out of memory";
    if (why == NULL) {
        *l = (hx_landing_t){reply_ep, {.cookie = h->cookie}};
        if (reply_ep != NULL &&
            rma_net->am_recv(rv, (void *)(uintptr_t)rec.addr, len, hx_put_landed, l) == 0)
            return;
        free(l);
        why = "could not receive its data";
    }
    hx_refuse(hdr, hlen, reply_ep, -EINVAL, why);
}

void rma_hx_net_init(void)
{
    rma_net->am_handler(RMA_NM_AM_HX_REQ, hx_serve, hx_serve_rndv);
    rma_net->am_handler(RMA_NM_AM_HX_REPLY, hx_answer, hx_answer_rndv);
    rma_net->set_idle(hx_serve_later);
    rma_net->set_drain(agg_drain);
}
