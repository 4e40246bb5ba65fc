/*
 * win_dynamic.c - MPI_Win_attach / MPI_Win_detach and finding attached memory of a peer.
 *
 * Each rank keeps its attached regions, sorted by address, in a table of its own: a shared
 * segment that grows by replacement (twice the capacity, copied) so there is no limit on
 * the number of regions. The rank's slot in the control segment names the current table
 * (segment id, descriptor, capacity) and guards it with a sequence lock (odd while being
 * changed). An origin maps a target's table once per table id, looks an address up by
 * binary search under the lock, and maps each region's segment once, cached by segment id.
 * Regions that are not shared are reached through CMA. Tables that were outgrown stay open
 * until the window is freed, so a descriptor number a peer reads is never reused under it.
 */
#define _GNU_SOURCE
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "mpid/rma/env.h"
#include "mpid/rma/grow.h"
#include "mpid/rma/hx.h"
#include "mpid/rma/rma.h"
#include "netmod/netmod.h"
#include "sync/ctl.h"
#include "sync/wait.h"
#include "windows/memreg.h"
#include "windows/segment.h"
#include "windows/win.h"
#include "windows/win_error.h"

#define DYN_TAB_MIN 16 /* regions of the first table */

/* ------------------------------------------------------------------ off-node peers
 *
 * Windows with off-node peers register every attached region with UCX. An off-node origin
 * keeps a copy of a target's regions with their packed keys (rma_dyn_cache), fetched with
 * an active message that the target's agent answers; when an access is not covered by the
 * copy it reads the target's dyn_seq with a network atomic and fetches the table again if
 * the generation moved. A region's key is unpacked at the first access to it, after a look
 * at the generation: the owner may detach any region nobody accesses and free its memory,
 * and unpacking the key of a System V block that is gone crashes UCX 1.13 (shmat fails,
 * then its own clean-up in ucp_ep_rkey_unpack dies, openucx/ucx#10380): a peer reading one
 * stable region while the owner attached and detached others died within a second. */

typedef struct rma_dyn_cache {
    uint64_t gen;      /* the target's dyn_seq when fetched */
    uint64_t checked;  /* the window's sync_gen when gen was last compared with the target's */
    uint64_t barriers; /* ... and rma_win_dyn_barriers */
    int n;
    rma_nm_tgt_t *nm;
    char *wire;                 /* the owner's answer, whose packed keys entries point into */
    struct rma_dyn_cache *next; /* replaced copies (rma_target_t.dyn_old) ... */
    uint32_t quiets;            /* ... dyn_users' count of quiet moments when replaced ... */
    unsigned stamp;             /* ... the target's nm.issued after a later one ... */
    int stamped;                /* ... once that was seen */
    struct dyn_entry {
        uint64_t base, len;
        void *key;
        char *map;       /* where UCX maps the region here (an MPI_Alloc_mem block from UCX, or a
                       block the owner moved the region onto: mkey), or NULL */
        void *mkey;      /* the key of that moved-onto block (key stays the region's own) ... */
        uint64_t map_at; /* ... its address of the region's first byte ... */
        uint64_t map_id; /* ... and the moved pages' registration (rma_memreg_t.seg_id) */
        int atomic;      /* elements with a CPU atomic take atomics there (doc/atomicity.md) */
        uint32_t key_off, map_off; /* packed keys in wire: the region's, the moved-onto block's */
        uint8_t opened;            /* key (and mkey, when may_map) unpacked */
        uint8_t may_map;           /* mkey is to be unpacked once nothing is in flight */
    } * r;
} rma_dyn_cache_t;

/* The wire format: header, then n entries, then the packed keys one after another. */
typedef struct dyn_req {
    uint64_t cookie; /* the origin's rma_dyn_wait_t */
    int32_t win;     /* the target's handle of the window */
    int32_t pad;
} dyn_req_t;

typedef struct dyn_reply {
    uint64_t cookie;
    uint64_t gen;
    uint32_t n;
    int32_t err;
} dyn_reply_t;

typedef struct dyn_wire {
    uint64_t base, len, key_len, atomic;
    uint64_t map_key_len; /* the region was moved onto a block from UCX: its key follows the
                             region's own, ... */
    uint64_t map_at;      /* ... which addresses the region's first byte here, ... */
    uint64_t map_id;      /* ... and the registration of the moved pages: a region attached
                             later at the same place may get a new block at the same address */
} dyn_wire_t;

typedef struct dyn_wait {
    _Atomic int left; /* 1 until the answer arrived */
    char *buf;
    size_t len;
} dyn_wait_t;

/* The region's exposure: a view of block, the MPI_Alloc_mem block from the transport that
 * holds it (peers that UCX lets map it load and store it), else its own registration. */
static void *dyn_net_map(const rma_nm_mem_t *block, void *base, size_t len)
{
    rma_nm_mem_t *m;

    if (block != NULL)
        return rma_net_mem_view(block);
    m = calloc(1, sizeof(*m));
    if (m != NULL && rma_net->expose(base, len, m) != 0) {
        free(m);
        m = NULL;
    }
    return m;
}

static void dcache_free(rma_nm_tgt_t *nm, rma_dyn_cache_t *c)
{
    if (c == NULL)
        return;
    for (int i = 0; i < c->n; i++) {
        if (c->r[i].key != NULL)
            nm->ops->key_close(c->r[i].key);
        if (c->r[i].mkey != NULL)
            nm->ops->key_close(c->r[i].mkey);
    }
    free(c->r);
    free(c->wire);
    free(c);
}

/* The registration of the block from UCX that region i was moved onto (expose.c), or
 * NULL (dyn_mtx held). */
static const rma_memreg_t *moved_onto(const rma_win_t *win, uint32_t i)
{
    const rma_memreg_t *mr = win->dyn_regs != NULL ? win->dyn_regs[i] : NULL;

    return mr != NULL && mr->net != NULL ? mr : NULL;
}

/* Target's agent: answers a request for this rank's regions of a window. */
static void dyn_serve(const void *hdr, size_t hlen, const void *data, size_t len, void *reply_ep)
{
    const dyn_req_t *q = hdr;
    dyn_reply_t h = {0};
    rma_win_t *win;
    char *buf = NULL;
    size_t blen = 0, off;

    if (hlen < sizeof(*q) || reply_ep == NULL)
        return;
    h.cookie = q->cookie;
    win = rma_win_lookup((MPI_Win)q->win);
    if (win == NULL || win->flavor != MPI_WIN_FLAVOR_DYNAMIC || !win->net) {
        h.err = 1;
        rma_net->am_reply(reply_ep, RMA_NM_AM_DYN_REPLY, &h, sizeof(h), NULL, 0, RMA_NM_AM_COPY);
        return;
    }
    pthread_mutex_lock(&win->dyn_mtx); /* attach and detach change the table under it */
    h.gen = atomic_load_explicit(&rma_ctl_rank(win->ctl, win->rank)->dyn_seq, memory_order_acquire);
    h.n = win->dyn_n;
    blen = (size_t)h.n * sizeof(dyn_wire_t);
    for (uint32_t i = 0; i < h.n; i++) {
        const rma_memreg_t *mr = moved_onto(win, i);
        blen += ((rma_nm_mem_t *)win->dyn_net[i])->blob_len + (mr != NULL ? mr->net->blob_len : 0);
    }
    buf = malloc(blen + 1);
    if (buf == NULL) {
        h.err = 1;
        h.n = 0;
    }
    off = (size_t)h.n * sizeof(dyn_wire_t);
    for (uint32_t i = 0; buf != NULL && i < h.n; i++) {
        rma_nm_mem_t *m = win->dyn_net[i];
        const rma_memreg_t *mr = moved_onto(win, i);
        dyn_wire_t w = {win->dyn_tab[i].base,
                        win->dyn_tab[i].len,
                        m->blob_len,
                        (uint64_t)win->dyn_tab[i].atomic,
                        0,
                        0,
                        0};
        memcpy(buf + off, m->blob, m->blob_len);
        off += m->blob_len;
        if (mr != NULL) {
            w.map_key_len = mr->net->blob_len;
            w.map_at = mr->net_at + (win->dyn_tab[i].base - mr->base);
            w.map_id = mr->seg_id;
            memcpy(buf + off, mr->net->blob, mr->net->blob_len);
            off += mr->net->blob_len;
        }
        memcpy(buf + i * sizeof(w), &w, sizeof(w));
    }
    pthread_mutex_unlock(&win->dyn_mtx);
    rma_net->am_reply(reply_ep, RMA_NM_AM_DYN_REPLY, &h, sizeof(h), buf, buf ? blen : 0,
                      RMA_NM_AM_COPY);
    free(buf);
}

/* Origin: the answer arrives (inside rma_net->progress on this thread). */
static void dyn_answer(const void *hdr, size_t hlen, const void *data, size_t len, void *reply_ep)
{
    const dyn_reply_t *h = hdr;
    dyn_wait_t *w;

    if (hlen < sizeof(*h))
        return;
    w = (dyn_wait_t *)(uintptr_t)h->cookie;
    w->buf = malloc(hlen + len + 1);
    if (w->buf != NULL) {
        memcpy(w->buf, hdr, hlen);
        memcpy(w->buf + hlen, data, len);
        w->len = hlen + len;
    }
    atomic_store_explicit(&w->left, 0, memory_order_release);
}

void rma_win_dyn_net_init(void)
{
    rma_net->am_handler(RMA_NM_AM_DYN_REQ, dyn_serve, NULL);
    rma_net->am_handler(RMA_NM_AM_DYN_REPLY, dyn_answer, NULL);
}

/* The entry of cache c that mapped the moved region e describes, or NULL. */
static struct dyn_entry *moved_mapped(rma_dyn_cache_t *c, const dyn_wire_t *e)
{
    for (int i = 0; c != NULL && i < c->n; i++)
        if (c->r[i].mkey != NULL && c->r[i].base == e->base && c->r[i].len == e->len &&
            c->r[i].map_at == e->map_at && c->r[i].map_id == e->map_id)
            return &c->r[i];
    return NULL;
}

/* Frees the copies of target t's table that a fetch replaced once nothing uses their keys
 * or mappings (win->mtx held). Every span that could hold a replaced copy's hits began
 * before it was replaced; once no span of t was in use at some moment after that (a quiet
 * moment counted by rma_win_dyn_done, or none in use now), all of them have issued, and the
 * copy is stamped with the count of operations issued to t. It is freed once a flush
 * covers that count: UCX may still read a key for an operation it has not completed, and
 * the agent's copies may still go through a mapping. Run by each lookup of t while copies
 * are kept, and after each fetch. */
static void dyn_reclaim(rma_win_t *win, int t)
{
    rma_target_t *tg = &win->targets[t];
    uint64_t users = atomic_load_explicit(&tg->dyn_users, memory_order_seq_cst);
    unsigned issued = atomic_load_explicit(&tg->nm.issued, memory_order_acquire);
    rma_dyn_cache_t **at = &tg->dyn_old, *c;
    int drained = 0;

    while ((c = *at) != NULL) {
        if (!c->stamped && ((uint32_t)users == 0 || (uint32_t)(users >> 32) != c->quiets)) {
            c->stamp = issued;
            c->stamped = 1;
        }
        if (!c->stamped || !rma_nm_flushed_upto(&tg->nm, c->stamp)) {
            at = &c->next;
            continue;
        }
        if (!drained++)
            rma_xfer_drain(win);
        *at = c->next;
        dcache_free(&tg->nm, c);
    }
}

/* Fetches target t's regions and keys into its cache. 0 or -errno. */
static int dcache_fetch(rma_win_t *win, int t)
{
    rma_target_t *tg = &win->targets[t];
    dyn_wait_t w = {.left = 1};
    dyn_req_t q = {(uint64_t)(uintptr_t)&w, (int32_t)tg->peer_win, 0};
    rma_dyn_cache_t *c, *old_copy = tg->dcache;
    const dyn_reply_t *h;
    size_t off;
    int rc;
    struct dyn_entry *old;

    rc = tg->nm.ops->am_send(&tg->nm, RMA_NM_AM_DYN_REQ, &q, sizeof(q), NULL, 0, RMA_NM_AM_COPY);
    if (rc != 0)
        return rc;
    rma_net->wait_zero(&w.left);
    if (w.buf == NULL)
        return -12; /* -ENOMEM */
    h = (const dyn_reply_t *)w.buf;
    c = calloc(1, sizeof(*c));
    if (h->err || c == NULL || (h->n > 0 && (c->r = calloc(h->n, sizeof(*c->r))) == NULL)) {
        rc = h->err ? -EINVAL : -12;
        free(c);
        free(w.buf);
        return rc;
    }
    c->gen = h->gen;
    c->wire = w.buf;
    off = sizeof(*h) + (size_t)h->n * sizeof(dyn_wire_t);
    for (uint32_t i = 0; i < h->n; i++) {
        dyn_wire_t e;
        memcpy(&e, w.buf + sizeof(*h) + i * sizeof(e), sizeof(e));
        c->r[i].base = e.base;
        c->r[i].len = e.len;
        c->r[i].atomic = (int)e.atomic;
        c->r[i].key_off = (uint32_t)off;
        off += e.key_len;
        if (e.map_key_len > 0 && (old = moved_mapped(tg->dcache, &e)) != NULL) {
            c->r[i].mkey = old->mkey; /* mapped before: kept */
            c->r[i].map = old->map;
            old->mkey = NULL;
        } else if (e.map_key_len > 0) {
            c->r[i].map_off = (uint32_t)off;
            c->r[i].may_map = 1;
        }
        c->r[i].map_at = e.map_at;
        c->r[i].map_id = e.map_id;
        off += e.map_key_len;
        c->n++;
    }
    tg->dcache = c;
    if (old_copy != NULL) { /* kept while operations may use its keys and mappings */
        old_copy->next = tg->dyn_old;
        old_copy->quiets =
            (uint32_t)(atomic_load_explicit(&tg->dyn_users, memory_order_seq_cst) >> 32);
        tg->dyn_old = old_copy;
    }
    atomic_fetch_add_explicit(&tg->dyn_fetches, 1, memory_order_release);
    dyn_reclaim(win, t);
    return 0;
}

/* Unpacks the keys of entry r of tg's cache (win->mtx held). A region the owner moved is
 * mapped only once nothing issued to the target is in flight: loads and stores must not
 * overtake it (else the table is fetched again at the next access, after the next flush). */
static void dcache_open(rma_target_t *tg, struct dyn_entry *r)
{
    const char *wire = tg->dcache->wire;

    r->key = tg->nm.ops->key_open(&tg->nm, wire + r->key_off);
    if (r->key == NULL) /* not reached at all rather than under the window's key: an access
                           to it fails as one to unattached memory */
        r->len = 0;
    if (r->mkey == NULL)
        r->map = tg->nm.ops->key_ptr(r->key, r->base);
    if (r->may_map && !rma_nm_pending(&tg->nm) && !rma_hx_in_flight(&tg->nm)) {
        r->mkey = tg->nm.ops->key_open(&tg->nm, wire + r->map_off);
        r->map = tg->nm.ops->key_ptr(r->mkey, r->map_at);
    } else if (r->may_map) {
        tg->dcache->gen = 0; /* fetched again at the next look (the first access to a region
                                not yet opened, the next epoch, or expose.c's after a flush) */
        tg->expose_seen = 0;
    }
    r->may_map = 0;
    r->opened = 1;
}

/* The cached regions of tg covering [addr, addr+len) into hits, their keys unpacked when
 * `open` (win->mtx held): how many (0 when a byte is not covered). Without it nothing is
 * unpacked, *unopened (when not NULL) tells whether a covering region's keys are not, and
 * such a region covers nothing when hits are asked for (max > 0). */
static int dcache_lookup(rma_target_t *tg, uintptr_t addr, size_t len, rma_dyn_hit_t *hits, int max,
                         int open, int *unopened)
{
    rma_dyn_cache_t *c = tg->dcache;
    uintptr_t at = addr, end = addr + len;
    int found = 0;

    if (c == NULL)
        return 0;
    for (int i = 0; i < c->n && at < end; i++) {
        if (c->r[i].base + c->r[i].len <= at || c->r[i].base > at)
            continue;
        if (!c->r[i].opened && !open) {
            if (unopened != NULL)
                *unopened = 1;
            if (max > 0) /* no keys to hand out */
                continue;
        } else if (!c->r[i].opened) {
            dcache_open(tg, &c->r[i]);
            if (c->r[i].len == 0)
                continue;
        }
        /* a mapped region is accessed as on its node; an atomic one's elements take atomics
         * from every origin (CPU atomics where mapped, network atomics elsewhere) */
        if (found < max)
            hits[found] = (rma_dyn_hit_t){c->r[i].base, c->r[i].base + c->r[i].len, c->r[i].map,
                                          c->r[i].atomic, c->r[i].key};
        found++;
        at = c->r[i].base + c->r[i].len;
    }
    return at < end || end < addr ? 0 : found;
}

void rma_win_dyn_recheck(rma_win_t *win, int t)
{
    pthread_mutex_lock(&win->mtx);
    if (win->targets[t].dcache != NULL)
        win->targets[t].dcache->checked = win->sync_gen - 1;
    pthread_mutex_unlock(&win->mtx);
}

_Atomic uint64_t rma_win_dyn_barriers;

/* rma_win_dyn_resolve for an off-node target. */
static int dyn_resolve_net(rma_win_t *win, int t, uintptr_t addr, size_t len, rma_dyn_hit_t *hits,
                           int max, int *n_p)
{
    rma_target_t *tg = &win->targets[t];
    uint64_t gen, barriers = atomic_load_explicit(&rma_win_dyn_barriers, memory_order_relaxed);
    const _Atomic uint64_t *seq =
        tg->nm.ctl_map != NULL
            ? (const _Atomic uint64_t *)(tg->nm.ctl_map + RMA_CTL_OFF(win, t, dyn_seq))
            : NULL;
    int n, look, vouched = 0, unopened = 0;

    pthread_mutex_lock(&win->mtx);
    /* The target's generation is read on a miss, once per epoch, after an MPI_Barrier,
     * and, where UCX maps its control words here (a load), at every access, and the copy
     * refreshed when it moved: a region attached where a detached one was (its memory freed
     * and allocated again) is then found, not the old one's mapping or key. Where it costs
     * a round trip, an origin whose epoch spans such a detach and attach sees the new
     * region from its next epoch or MPI_Barrier on (doc/protocols.md). */
    if (tg->dyn_old != NULL) /* replaced copies a quiet moment or a flush may free now */
        dyn_reclaim(win, t);
    /* A region's keys are unpacked only from a copy the generation vouched for (a region
     * detached meanwhile may have a freed block): the first access to each costs a look.
     * When the look or the fetch fails, only regions opened before are used. */
    n = dcache_lookup(tg, addr, len, hits, max, 0, &unopened);
    gen = seq != NULL ? atomic_load_explicit(seq, memory_order_acquire) : 0;
    look = n == 0 || unopened || tg->dcache->checked != win->sync_gen ||
           tg->dcache->barriers != barriers ||
           (seq != NULL && tg->dcache->gen != 0 && gen != tg->dcache->gen);
    /* the generation just loaded where it is mapped, else a network atomic */
    if (look && (seq != NULL || rma_ctl_load(win, t, RMA_CTL_OFF(win, t, dyn_seq), &gen) == 0)) {
        vouched = 1;
        if (tg->dcache == NULL || gen != tg->dcache->gen)
            vouched = dcache_fetch(win, t) == 0;
        if (tg->dcache != NULL) {
            tg->dcache->checked = win->sync_gen;
            tg->dcache->barriers = barriers;
        }
    }
    if (look) /* else the hits above stand: every covering region was opened */
        n = dcache_lookup(tg, addr, len, hits, max, vouched, NULL);
    pthread_mutex_unlock(&win->mtx);
    *n_p = n;
    return n == 0 ? MPI_ERR_RMA_RANGE : MPI_SUCCESS;
}

/* Publishes a table of cap regions holding `tab` (owner, in the control segment). */
static void tab_publish(rma_win_t *win, uint64_t id)
{
    rma_ctl_rank_t *me = rma_ctl_rank(win->ctl, win->rank);

    atomic_store_explicit(&me->dyn_tab_fd, win->dyn_tab_fd, memory_order_relaxed);
    atomic_store_explicit(&me->dyn_tab_cap, win->dyn_cap, memory_order_relaxed);
    atomic_store_explicit(&me->dyn_tab_id, id, memory_order_relaxed);
}

/* Owner: a table of at least `cap` regions with the current ones copied in; called inside
 * the sequence lock's write section. 0 or -errno. */
static int tab_grow(rma_win_t *win, uint32_t cap, uint32_t n)
{
    void *addr;
    void **regs;
    int fd, rc, *old;

    rc = rma_seg_create((size_t)cap * sizeof(rma_dyn_region_t), NULL, &addr, &fd);
    if (rc != 0)
        return rc;
    if (win->net) {
        void **nets = realloc(win->dyn_net, (size_t)cap * sizeof(*nets));
        if (nets == NULL) {
            rma_seg_detach(addr, (size_t)cap * sizeof(rma_dyn_region_t));
            close(fd);
            return -12; /* -ENOMEM */
        }
        win->dyn_net = nets;
    }
    regs = realloc(win->dyn_regs, (size_t)cap * sizeof(*regs));
    old = realloc(win->dyn_old_fds, (size_t)(win->ndyn_old + 1) * sizeof(*old));
    if (regs != NULL)
        win->dyn_regs = regs;
    if (old != NULL)
        win->dyn_old_fds = old;
    if (regs == NULL || old == NULL) {
        rma_seg_detach(addr, (size_t)cap * sizeof(rma_dyn_region_t));
        close(fd);
        return -12; /* -ENOMEM */
    }
    if (win->dyn_tab != NULL) {
        memcpy(addr, win->dyn_tab, (size_t)n * sizeof(rma_dyn_region_t));
        rma_seg_detach(win->dyn_tab, (size_t)win->dyn_cap * sizeof(rma_dyn_region_t));
        win->dyn_old_fds[win->ndyn_old++] = win->dyn_tab_fd;
    }
    win->dyn_tab = addr;
    win->dyn_cap = cap;
    win->dyn_tab_fd = fd;
    tab_publish(win, rma_seg_new_id());
    return 0;
}

int rma_win_dyn_init(rma_win_t *win)
{
    return tab_grow(win, DYN_TAB_MIN, 0);
}

void rma_win_dyn_destroy(rma_win_t *win)
{
    /* the count kept here: after MPI_Win_free's barrier the control segment may already
     * serve rank 0's next window */
    for (uint32_t i = 0; i < win->dyn_n && win->dyn_regs != NULL; i++)
        rma_memreg_release(win->dyn_regs[i]);
    for (uint32_t i = 0; i < win->dyn_n && win->dyn_net != NULL; i++)
        rma_net_mem_free(win->dyn_net[i]);
    for (int t = 0; win->targets != NULL && t < win->nranks; t++) {
        rma_dyn_cache_t *c, *next;
        dcache_free(&win->targets[t].nm, win->targets[t].dcache);
        for (c = win->targets[t].dyn_old; c != NULL; c = next) {
            next = c->next;
            dcache_free(&win->targets[t].nm, c);
        }
    }
    free(win->dyn_net);
    if (win->dyn_tab != NULL)
        rma_seg_detach(win->dyn_tab, (size_t)win->dyn_cap * sizeof(rma_dyn_region_t));
    if (win->dyn_tab_fd >= 0 && win->dyn_tab != NULL)
        close(win->dyn_tab_fd);
    for (int i = 0; i < win->ndyn_old; i++)
        close(win->dyn_old_fds[i]);
    for (int t = 0; win->targets != NULL && t < win->nranks; t++)
        if (win->targets[t].dtab != NULL)
            munmap((void *)win->targets[t].dtab, win->targets[t].dtab_len);
    free(win->dyn_old_fds);
    free(win->dyn_regs);
    free(win->dyn_zero);
    free(win->eager_q);
}

int rma_win_attach(rma_win_t *win, void *base, MPI_Aint size)
{
    static const char func[] = "MPI_Win_attach";
    rma_ctl_rank_t *me;
    uint32_t n, pos;
    uintptr_t lo = (uintptr_t)base, hi = lo + (uintptr_t)size;
    rma_memreg_t *reg = NULL;
    const rma_nm_mem_t *block = NULL; /* an MPI_Alloc_mem block from the transport */
    rma_dyn_region_t r = {0};
    rma_dyn_region_t *tab;
    void *net = NULL;
    int rc = MPI_SUCCESS;

    if (win->flavor != MPI_WIN_FLAVOR_DYNAMIC)
        return rma_err(win, func, MPI_ERR_RMA_FLAVOR,
                       "the window was not created with MPI_Win_create_dynamic");
    if (size < 0)
        return rma_err(win, func, MPI_ERR_SIZE, "negative size %ld", (long)size);
    pthread_mutex_lock(&win->mtx);
    if (size == 0) {
        /* nothing to access, but MPI_Win_detach(base) must find it */
        void **p = realloc(win->dyn_zero, (size_t)(win->ndyn_zero + 1) * sizeof(*p));
        if (p == NULL) {
            rc = rma_err(win, func, MPI_ERR_NO_MEM, "out of memory");
        } else {
            win->dyn_zero = p;
            win->dyn_zero[win->ndyn_zero++] = base;
        }
        goto out;
    }
    if (base == NULL || hi < lo) {
        rc = rma_err(win, func, MPI_ERR_BASE, "[%p, +%ld) is not a valid region", base, (long)size);
        goto out;
    }
    me = rma_ctl_rank(win->ctl, win->rank);
    n = atomic_load_explicit(&me->dyn_count, memory_order_relaxed);
    tab = win->dyn_tab;
    for (pos = 0; pos < n && tab[pos].base < lo; pos++)
        ;
    if ((pos < n && tab[pos].base < hi) || (pos > 0 && tab[pos - 1].base + tab[pos - 1].len > lo)) {
        rc =
            rma_err(win, func, MPI_ERR_RMA_ATTACH,
                    "[%p, +%ld) overlaps memory already attached to this window", base, (long)size);
        goto out;
    }
    if (win->nranks > 1 && rma_seg_sharing_works())
        reg = rma_memreg_expose(base, (size_t)size);
    if (win->net)
        block = rma_memreg_net(base, (size_t)size);
    if (win->net && (net = dyn_net_map(block, base, (size_t)size)) == NULL) {
        rma_memreg_release(reg);
        rc = rma_err(win, func, MPI_ERR_OTHER, "cannot register [%p, +%ld) with UCX", base,
                     (long)size);
        goto out;
    }
    r.base = lo;
    r.len = (uint64_t)size;
    r.seg_fd = -1;
    r.atomic = block != NULL; /* the transport's memory */
    if (reg != NULL) {
        r.seg_id = reg->seg_id;
        r.seg_base = reg->base;
        r.seg_len = reg->len;
        r.seg_fd = reg->fd;
        r.atomic = 1; /* shared: same-node origins map it (doc/atomicity.md) */
    }
    if (rma_env.verbose >= 2)
        fprintf(stderr, "librma: MPI_Win_attach window 0x%x: rank %d region [%p, +%ld) %s\n",
                (unsigned)win->handle, win->rank, base, (long)size,
                reg != NULL ? "shared (peers load/store it)"
                : r.atomic  ? "UCX's memory (peers UCX maps it into load/store it)"
                            : "reached through cross-memory attach or UCX");
    atomic_fetch_add_explicit(&me->dyn_seq, 1, memory_order_acq_rel);
    pthread_mutex_lock(&win->dyn_mtx);
    rc = n == win->dyn_cap ? tab_grow(win, 2 * win->dyn_cap, n) : 0;
    pthread_mutex_unlock(&win->dyn_mtx);
    if (rc != 0) {
        atomic_fetch_add_explicit(&me->dyn_seq, 1, memory_order_release);
        rma_memreg_release(reg);
        rma_net_mem_free(net);
        rc = rma_err(win, func, MPI_ERR_NO_MEM, "cannot grow the region table to %u regions: %s%s",
                     2 * win->dyn_cap, strerror(-rc), rma_err_fd_hint(-rc));
        goto out;
    }
    pthread_mutex_lock(&win->dyn_mtx);
    tab = win->dyn_tab;
    memmove(&tab[pos + 1], &tab[pos], (n - pos) * sizeof(*tab));
    memmove(&win->dyn_regs[pos + 1], &win->dyn_regs[pos], (n - pos) * sizeof(*win->dyn_regs));
    tab[pos] = r;
    win->dyn_regs[pos] = reg;
    if (win->net) {
        memmove(&win->dyn_net[pos + 1], &win->dyn_net[pos], (n - pos) * sizeof(*win->dyn_net));
        win->dyn_net[pos] = net;
    }
    atomic_store_explicit(&me->dyn_count, n + 1, memory_order_relaxed);
    win->dyn_n = n + 1;
    pthread_mutex_unlock(&win->dyn_mtx);
    atomic_fetch_add_explicit(&me->dyn_seq, 1, memory_order_release);
    if (reg == NULL && win->nranks > 1 && !win->net)
        rma_expose_offer(win); /* peers reach it through CMA until the agent moves it */
    else if (block == NULL && (reg == NULL || reg->net != NULL) && win->net)
        rma_expose_offer_net(win, base, (size_t)size); /* UCX emulates RDMA on it till then */
out:
    pthread_mutex_unlock(&win->mtx);
    return rc;
}

int rma_win_detach(rma_win_t *win, const void *base)
{
    static const char func[] = "MPI_Win_detach";
    rma_ctl_rank_t *me;
    rma_dyn_region_t *tab;
    uint32_t n, pos;
    rma_memreg_t *reg;

    if (win->flavor != MPI_WIN_FLAVOR_DYNAMIC)
        return rma_err(win, func, MPI_ERR_RMA_FLAVOR,
                       "the window was not created with MPI_Win_create_dynamic");
    pthread_mutex_lock(&win->mtx);
    me = rma_ctl_rank(win->ctl, win->rank);
    n = atomic_load_explicit(&me->dyn_count, memory_order_relaxed);
    tab = win->dyn_tab;
    for (pos = 0; pos < n && tab[pos].base != (uintptr_t)base; pos++)
        ;
    if (pos == n) {
        for (int i = 0; i < win->ndyn_zero; i++)
            if (win->dyn_zero[i] == base) {
                win->dyn_zero[i] = win->dyn_zero[--win->ndyn_zero];
                pthread_mutex_unlock(&win->mtx);
                return MPI_SUCCESS;
            }
        pthread_mutex_unlock(&win->mtx);
        return rma_err(win, func, MPI_ERR_RMA_ATTACH, "%p is not the base of an attached region",
                       base);
    }
    rma_expose_unqueue(win, (uintptr_t)tab[pos].base, (size_t)tab[pos].len);
    pthread_mutex_lock(&win->dyn_mtx);
    reg = win->dyn_regs[pos];
    void *net = win->net ? win->dyn_net[pos] : NULL;
    if (win->net)
        memmove(&win->dyn_net[pos], &win->dyn_net[pos + 1], (n - pos - 1) * sizeof(void *));
    atomic_fetch_add_explicit(&me->dyn_seq, 1, memory_order_acq_rel);
    memmove(&tab[pos], &tab[pos + 1], (n - pos - 1) * sizeof(*tab));
    memmove(&win->dyn_regs[pos], &win->dyn_regs[pos + 1], (n - pos - 1) * sizeof(*win->dyn_regs));
    atomic_store_explicit(&me->dyn_count, n - 1, memory_order_relaxed);
    win->dyn_n = n - 1;
    pthread_mutex_unlock(&win->dyn_mtx);
    atomic_fetch_add_explicit(&me->dyn_seq, 1, memory_order_release);
    pthread_mutex_unlock(&win->mtx);
    rma_memreg_release(reg);
    rma_net_mem_free(net);
    return MPI_SUCCESS;
}

/* The target's current region table mapped here (win->mtx held), remapped when the owner
 * replaced it. NULL when it cannot be mapped (a stale descriptor: the caller retries). */
static const rma_dyn_region_t *tab_of(rma_win_t *win, int target, uint64_t id, int32_t fd,
                                      uint32_t cap)
{
    rma_target_t *tg = &win->targets[target];
    rma_seg_desc_t desc = {tg->pid, fd, (uint64_t)cap * sizeof(rma_dyn_region_t), id};
    void *tab;

    if (target == win->rank)
        return win->dyn_tab;
    if (tg->dtab != NULL && tg->dtab_id == id && tg->dtab_len >= desc.len)
        return tg->dtab;
    tab = rma_seg_attach(&desc);
    if (tab == NULL)
        return NULL;
    if (tg->dtab != NULL)
        munmap((void *)tg->dtab, tg->dtab_len);
    tg->dtab = tab;
    tg->dtab_len = desc.len;
    tg->dtab_id = id;
    return tab;
}

/* Runs read(tab, n, arg) on the target's table of n regions under its sequence lock
 * (win->mtx held), again until no change of the table overlapped it: its result, or -1
 * when the target's table cannot be mapped here. 0 without reading when the target has no
 * table yet (nothing is attached). */
typedef int (*dyn_reader_t)(const rma_dyn_region_t *tab, uint32_t n, void *arg);

static int dyn_read(rma_win_t *win, int target, dyn_reader_t read, void *arg)
{
    rma_ctl_rank_t *cr = rma_ctl_rank(win->ctl, target);
    rma_backoff_t bo = RMA_BACKOFF_INIT;

    for (;;) {
        uint64_t s1 = atomic_load_explicit(&cr->dyn_seq, memory_order_acquire), id;
        const rma_dyn_region_t *tab;
        uint32_t n, cap;
        int32_t fd;
        int rc = 0;

        if (s1 & 1) {
            rma_backoff(&bo);
            continue;
        }
        cap = atomic_load_explicit(&cr->dyn_tab_cap, memory_order_relaxed);
        id = atomic_load_explicit(&cr->dyn_tab_id, memory_order_relaxed);
        fd = atomic_load_explicit(&cr->dyn_tab_fd, memory_order_relaxed);
        /* the three belong together only if no change began meanwhile */
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load_explicit(&cr->dyn_seq, memory_order_relaxed) != s1) {
            rma_backoff(&bo);
            continue;
        }
        if (id == 0) /* the target has not published its table yet: nothing is attached */
            return 0;
        tab = tab_of(win, target, id, fd, cap);
        if (tab == NULL) {
            /* the descriptor could not be duplicated or mapped: stale only if the table
             * changed since; otherwise give up rather than spin */
            atomic_thread_fence(memory_order_acquire);
            if (atomic_load_explicit(&cr->dyn_seq, memory_order_relaxed) == s1)
                return -1;
            rma_backoff(&bo);
            continue;
        }
        n = atomic_load_explicit(&cr->dyn_count, memory_order_relaxed);
        if (n <= cap)
            rc = read(tab, n, arg);
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load_explicit(&cr->dyn_seq, memory_order_relaxed) == s1)
            return rc;
        rma_backoff(&bo);
    }
}

typedef struct dyn_find {
    uintptr_t addr;
    size_t len;
    rma_dyn_region_t *out;
    int max;
} dyn_find_t;

/* The regions covering [addr, addr+len), copied out: how many (0 when some byte is not
 * attached). */
static int dyn_find(const rma_dyn_region_t *tab, uint32_t n, void *arg)
{
    const dyn_find_t *f = arg;
    uintptr_t at = f->addr, end = f->addr + f->len;
    uint32_t lo = 0, hi = n;
    int found = 0;

    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        if (tab[mid].base + tab[mid].len <= f->addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    /* walk adjacent regions until the end is covered */
    for (uint32_t i = lo; i < n && tab[i].base <= at && at < end; i++) {
        if (found < f->max)
            memcpy(&f->out[found], &tab[i], sizeof(*f->out));
        found++;
        at = tab[i].base + tab[i].len;
    }
    return at < end || end < f->addr ? 0 : found;
}

/* Copies the target's regions covering [addr, addr+len) out of its table under the
 * sequence lock (win->mtx held): the count of regions needed (0 when some byte is not
 * attached, -1 when the target's table cannot be mapped here), at most max of them copied
 * to out. */
static int dyn_lookup(rma_win_t *win, int target, uintptr_t addr, size_t len, rma_dyn_region_t *out,
                      int max)
{
    dyn_find_t f = {addr, len, out, max};

    return dyn_read(win, target, dyn_find, &f);
}

/* Marks the cached segments (a rma_target_t's) that a region of the table is on. */
static int dyn_segs_named(const rma_dyn_region_t *tab, uint32_t n, void *arg)
{
    rma_target_t *tg = arg;

    for (int i = 0; i < tg->nsegs; i++)
        tg->segs[i].named = 0;
    for (uint32_t k = 0; k < n; k++)
        for (int i = 0; i < tg->nsegs; i++)
            if (tg->segs[i].seg_id == tab[k].seg_id)
                tg->segs[i].named = 1;
    return 0;
}

/* Unmaps the cached mappings of the target's segments that its table no longer names: the
 * regions on them were detached (an access there is erroneous), and the mapping would
 * keep their memory alive while the window lives (win->mtx held). */
static void dyn_segs_prune(rma_win_t *win, int target)
{
    rma_target_t *tg = &win->targets[target];
    int k = 0;

    if (dyn_read(win, target, dyn_segs_named, tg) != 0)
        return;
    for (int i = 0; i < tg->nsegs; i++) {
        if (tg->segs[i].named)
            tg->segs[k++] = tg->segs[i];
        else
            rma_seg_detach(tg->segs[i].local, tg->segs[i].len);
    }
    tg->nsegs = k;
}

/* Local mapping of the target's segment holding region r, mapped on first use (win->mtx
 * held). NULL: use CMA. */
static char *dyn_segment(rma_win_t *win, int target, const rma_dyn_region_t *r)
{
    rma_target_t *tg = &win->targets[target];
    rma_seg_desc_t desc;
    char *local;

    for (int i = 0; i < tg->nsegs; i++)
        if (tg->segs[i].seg_id == r->seg_id)
            return tg->segs[i].local;
    if (tg->nsegs > 0) /* a region not seen yet: the ones detached since go now */
        dyn_segs_prune(win, target);
    if (rma_grow(&tg->segs, &tg->segs_cap, tg->nsegs, sizeof(*tg->segs), 4) != 0)
        return NULL;
    desc.pid = tg->pid;
    desc.fd = r->seg_fd;
    desc.len = r->seg_len;
    desc.seg_id = r->seg_id;
    local = rma_seg_attach(&desc);
    if (local == NULL)
        return NULL;
    tg->segs[tg->nsegs++] =
        (rma_peer_seg_t){r->seg_id, (uintptr_t)r->seg_base, r->seg_len, local, 1};
    return local;
}

int rma_win_dyn_resolve(rma_win_t *win, int target, uintptr_t addr, size_t len, rma_dyn_hit_t *hits,
                        int max, int *n_p)
{
    rma_dyn_region_t stack[8], *r = max <= 8 ? stack : malloc((size_t)max * sizeof(*r));
    int n, rc = MPI_SUCCESS;

    if (!win->targets[target].local) {
        if (r != stack)
            free(r);
        return dyn_resolve_net(win, target, addr, len, hits, max, n_p);
    }
    if (r == NULL)
        return MPI_ERR_NO_MEM;
    pthread_mutex_lock(&win->mtx);
    n = dyn_lookup(win, target, addr, len, r, max);
    if (n < 0) {
        pthread_mutex_unlock(&win->mtx);
        if (r != stack)
            free(r);
        *n_p = 0;
        return MPI_ERR_OTHER;
    }
    for (int i = 0; i < n && i < max; i++) {
        char *seg = NULL;
        if (target != win->rank && r[i].seg_id != 0)
            seg = dyn_segment(win, target, &r[i]);
        hits[i].lo = r[i].base;
        hits[i].hi = r[i].base + r[i].len;
        hits[i].local = target == win->rank ? (char *)r[i].base
                        : seg != NULL       ? seg + (r[i].base - r[i].seg_base)
                                            : NULL;
        hits[i].atomic = r[i].atomic;
        hits[i].key = NULL;
        if (hits[i].atomic && hits[i].local == NULL)
            rc = MPI_ERR_OTHER;
    }
    pthread_mutex_unlock(&win->mtx);
    if (r != stack)
        free(r);
    *n_p = n;
    return n == 0 ? MPI_ERR_RMA_RANGE : rc;
}
