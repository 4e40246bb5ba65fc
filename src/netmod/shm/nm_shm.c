/*
 * nm_shm.c - cross-memory attach transport.
 *
 * A process_vm_readv/writev call costs ~1.5 us whatever it moves, so small pieces to one
 * target are held and go together, in one call, at the target's next flush (the stream of
 * 1-byte puts or gets of a create window whose memory has not moved yet: MPICH copies each
 * through shared memory for ~0.12 us). A put's data is copied into the held buffer, so its
 * origin buffer is free on return; a get's lands at the flush (rma_nm_need_local). Held
 * transfers keep their issue order: a transfer the other way, or a large one, sends them
 * first.
 */
#define _GNU_SOURCE
#include "netmod/shm/nm_shm.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "mpid/rma/env.h"
#include "sync/wait.h"

#define HELD_MAX   64    /* pieces held for one target */
#define HELD_PIECE 16384 /* only pieces of at most this many bytes are held */
#define HELD_SPAN  1024  /* held gets within this many target bytes are read as one span */

struct rma_shm_held {
    pthread_mutex_t mtx; /* never held while waiting for anything but a cross-memory call */
    int n, write;        /* pieces held, and their direction */
    int flushing;        /* with messages: flushes of the transport under way (with_around) */
    size_t used;         /* bytes of put data in buf */
    struct iovec l[HELD_MAX], r[HELD_MAX];
    char buf[HELD_MAX * HELD_SPAN]; /* put data, or the spans of gets */
};
typedef rma_shm_held_t shm_held_t;

static size_t iov_total(const struct iovec *iov, int n)
{
    size_t total = 0;
    for (int i = 0; i < n; i++)
        total += iov[i].iov_len;
    return total;
}

/* process_vm_* may move less than asked (page faults half way): go on from where it
 * stopped until all arrived or an error. */
static int nm_shm_xfer(int pid, const struct iovec *local, int nlocal, const struct iovec *remote,
                       int nremote, int write)
{
    size_t want = iov_total(local, nlocal);
    ssize_t got = write ? process_vm_writev(pid, local, (unsigned long)nlocal, remote,
                                            (unsigned long)nremote, 0)
                        : process_vm_readv(pid, local, (unsigned long)nlocal, remote,
                                           (unsigned long)nremote, 0);
    if (got < 0)
        return -errno;
    if ((size_t)got == want)
        return 0;
    /* partial transfer: retry the rest one remote entry at a time */
    size_t done = (size_t)got, skip = done;
    int li = 0, ri = 0;
    size_t loff = 0, roff = 0;
    while (li < nlocal && skip >= local[li].iov_len - loff) {
        skip -= local[li].iov_len - loff;
        li++;
        loff = 0;
    }
    loff += skip;
    skip = done;
    while (ri < nremote && skip >= remote[ri].iov_len - roff) {
        skip -= remote[ri].iov_len - roff;
        ri++;
        roff = 0;
    }
    roff += skip;
    while (li < nlocal && ri < nremote) {
        size_t n = local[li].iov_len - loff;
        if (remote[ri].iov_len - roff < n)
            n = remote[ri].iov_len - roff;
        struct iovec l = {(char *)local[li].iov_base + loff, n};
        struct iovec r = {(char *)remote[ri].iov_base + roff, n};
        got = write ? process_vm_writev(pid, &l, 1, &r, 1, 0)
                    : process_vm_readv(pid, &l, 1, &r, 1, 0);
        if (got <= 0)
            return got < 0 ? -errno : -EFAULT;
        loff += (size_t)got;
        roff += (size_t)got;
        if (loff == local[li].iov_len) {
            li++;
            loff = 0;
        }
        if (roff == remote[ri].iov_len) {
            ri++;
            roff = 0;
        }
    }
    return 0;
}

/* A write to memory its owner may be moving (windows/expose.c): the owner waits for the
 * writes in flight to end before it copies the pages, and writes wait while it moves, so
 * that none lands in an old page after the copy. */
static int xfer_now(rma_nm_tgt_t *t, const struct iovec *local, const struct iovec *remote, int n,
                    int write)
{
    uint64_t t0 = t->way.small != 0 && !rma_nm_way_in_op && iov_total(local, n) <= t->way.small
                      ? rma_now_ns()
                      : 0;
    int rc;

    if (write)
        rma_nm_write_begin(t);
    atomic_fetch_add_explicit(&t->cma_calls, 1, memory_order_relaxed); /* windows/expose.c */
    rc = nm_shm_xfer(t->pid, local, n, remote, n, write);
    if (write)
        rma_nm_write_end(t);
    if (t0 != 0)
        rma_nm_way_note(&t->way, RMA_NM_WAY_CMA, rma_now_ns() - t0);
    return rc;
}

/* Held reads, each run of them whose target bytes lie within HELD_SPAN read as one span
 * into h->buf and copied out: the kernel pins every page of every entry, so a run of small
 * gets to one page costs one pin instead of one each. A span that covers a hole between
 * two attached regions fails: then they are read one by one. */
static int held_reads(rma_nm_tgt_t *t, shm_held_t *h)
{
    struct iovec sl[HELD_MAX], sr[HELD_MAX];
    int end[HELD_MAX], m = 0, rc;
    size_t used = 0;

    for (int i = 0, j; i < h->n; i = j) {
        uintptr_t lo = (uintptr_t)h->r[i].iov_base, hi = lo + h->r[i].iov_len;
        for (j = i + 1; j < h->n; j++) {
            uintptr_t a = (uintptr_t)h->r[j].iov_base, b = a + h->r[j].iov_len;
            uintptr_t nlo = a < lo ? a : lo, nhi = b > hi ? b : hi;
            if (nhi - nlo > HELD_SPAN)
                break;
            lo = nlo;
            hi = nhi;
        }
        sr[m] = (struct iovec){(void *)lo, hi - lo};
        sl[m] = j == i + 1 ? h->l[i] : (struct iovec){h->buf + used, hi - lo};
        used += j == i + 1 ? 0 : hi - lo;
        end[m++] = j;
    }
    if (m == h->n)
        return xfer_now(t, h->l, h->r, h->n, 0);
    if ((rc = xfer_now(t, sl, sr, m, 0)) != 0)
        return xfer_now(t, h->l, h->r, h->n, 0);
    for (int k = 0, i = 0; k < m; k++)
        for (; i < end[k]; i++)
            if (sl[k].iov_base != h->l[i].iov_base)
                memcpy(h->l[i].iov_base,
                       (char *)sl[k].iov_base + ((char *)h->r[i].iov_base - (char *)sr[k].iov_base),
                       h->l[i].iov_len);
    return 0;
}

/* Sends what h holds (its lock held). */
static int held_send(rma_nm_tgt_t *t, shm_held_t *h)
{
    int rc = h->n == 0 ? 0 : h->write ? xfer_now(t, h->l, h->r, h->n, 1) : held_reads(t, h);

    h->n = 0;
    h->used = 0;
    rma_nm_hold_end(t, RMA_NM_HOLD_SHM);
    return rc;
}

/* t's held transfers, made on first use; NULL without memory. */
static shm_held_t *held_of(rma_nm_tgt_t *t)
{
    shm_held_t *h = atomic_load_explicit(&t->held, memory_order_acquire), *none = NULL;

    if (h != NULL || (h = malloc(sizeof(*h))) == NULL)
        return h;
    pthread_mutex_init(&h->mtx, NULL);
    h->n = 0;
    h->used = 0;
    h->flushing = 0;
    if (!atomic_compare_exchange_strong_explicit(&t->held, &none, h, memory_order_acq_rel,
                                                 memory_order_acquire)) {
        pthread_mutex_destroy(&h->mtx);
        free(h);
        h = none; /* another thread's came first */
    }
    return h;
}

/* Appends a piece to h (with room); a put's data is copied, so its origin buffer is free on
 * return. */
static void held_add(shm_held_t *h, const struct iovec *l, const struct iovec *r, int write)
{
    h->r[h->n] = *r;
    h->l[h->n] = *l;
    if (write) {
        h->l[h->n].iov_base = memcpy(h->buf + h->used, l->iov_base, l->iov_len);
        h->used += l->iov_len;
    }
    h->n++;
}

/* A put whose target bytes a held put covers exactly takes its place (puts from one origin
 * are not ordered: either may land last), and one that continues the last held put's
 * target bytes extends it (puts are staged in order, so the last one's data ends the
 * staged bytes). 1 when merged. */
static int held_write_merged(shm_held_t *h, const struct iovec *l, const struct iovec *r)
{
    struct iovec *last = h->n > 0 ? &h->r[h->n - 1] : NULL;

    for (int k = 0; k < h->n; k++)
        if (h->r[k].iov_base == r->iov_base && h->r[k].iov_len == r->iov_len) {
            memcpy(h->l[k].iov_base, l->iov_base, l->iov_len);
            return 1;
        }
    if (last == NULL || (char *)last->iov_base + last->iov_len != (char *)r->iov_base)
        return 0;
    memcpy(h->buf + h->used, l->iov_base, l->iov_len);
    h->used += l->iov_len;
    last->iov_len += r->iov_len;
    h->l[h->n - 1].iov_len += l->iov_len;
    return 1;
}

/* 1 when a call's pieces may be held: few and small, and for a put, whose data is copied
 * into h->buf whole (after what is held is sent, when it would not fit beside it), no more
 * data than the buffer takes. */
static int small_pieces(const struct iovec *local, int n, int write)
{
    size_t total = 0;

    if (n > HELD_MAX)
        return 0;
    for (int i = 0; i < n; i++) {
        if (local[i].iov_len > HELD_PIECE)
            return 0;
        total += local[i].iov_len;
    }
    return !write || total <= sizeof(((shm_held_t *)NULL)->buf);
}

/* Sends what is held for t, without counting anything flushed: with messages
 * (rma_nm_shm_with) the issued count covers requests still unanswered, which only the
 * transport's flush may count. */
static int held_send_now(rma_nm_tgt_t *t)
{
    shm_held_t *h = atomic_load_explicit(&t->held, memory_order_acquire);
    int rc;

    if (h == NULL)
        return 0;
    pthread_mutex_lock(&h->mtx);
    rc = held_send(t, h);
    pthread_mutex_unlock(&h->mtx);
    return rc;
}

static int nm_shm_flush(rma_nm_tgt_t *t)
{
    shm_held_t *h = atomic_load_explicit(&t->held, memory_order_acquire);
    unsigned seen;
    int rc;

    if (h == NULL)
        return 0;
    pthread_mutex_lock(&h->mtx);
    seen = atomic_load_explicit(&t->issued, memory_order_acquire);
    if ((rc = held_send(t, h)) == 0)
        rma_nm_flushed(t, seen);
    pthread_mutex_unlock(&h->mtx);
    return rc;
}

static int nm_shm_issue(rma_nm_tgt_t *t, const struct iovec *local, const struct iovec *remote,
                        int n, int write)
{
    shm_held_t *h = small_pieces(local, n, write) ? held_of(t) : NULL;
    int rc = 0, first = 0;

    if (h == NULL) /* at once, after what is held */
        return (rc = held_send_now(t)) != 0 ? rc : xfer_now(t, local, remote, n, write);
    pthread_mutex_lock(&h->mtx);
    if (h->flushing > 0) { /* held now, it would be counted flushed by it (with_around) */
        rc = held_send(t, h);
        rc = rc != 0 ? rc : xfer_now(t, local, remote, n, write);
        pthread_mutex_unlock(&h->mtx);
        return rc;
    }
    if (h->n > 0 && (h->write != write || h->n + n > HELD_MAX ||
                     h->used + iov_total(local, n) > sizeof(h->buf)))
        rc = held_send(t, h);
    for (int i = 0; rc == 0 && i < n; i++)
        if (!write || !held_write_merged(h, &local[i], &remote[i]))
            held_add(h, &local[i], &remote[i], write);
    if (rc == 0) {
        h->write = write;
        rma_nm_issued(t);
        if (!write)
            rma_nm_need_local(t); /* the data lands at the flush */
        first = rma_nm_hold_begin(t, RMA_NM_HOLD_SHM);
    }
    pthread_mutex_unlock(&h->mtx);
    if (first)
        rma_nm_hold_list(t);
    return rc;
}

static int nm_shm_writev(rma_nm_tgt_t *t, void *key, const struct iovec *local,
                         const struct iovec *remote, int n)
{
    (void)key;
    return nm_shm_issue(t, local, remote, n, 1);
}

static int nm_shm_readv(rma_nm_tgt_t *t, void *key, const struct iovec *local,
                        const struct iovec *remote, int n)
{
    (void)key;
    return nm_shm_issue(t, local, remote, n, 0);
}

/* After what is held (one origin's order to overlapping bytes: test/mpi/origin_order),
 * which h's lock, never held while waiting for the target's agent, lets it send. */
static int nm_shm_xfer_sync(rma_nm_tgt_t *t, void *key, const struct iovec *local,
                            const struct iovec *remote, int n, int write)
{
    int rc = held_send_now(t);

    (void)key;
    return rc != 0 ? rc : xfer_now(t, local, remote, n, write);
}

/* Requests (MPI_Rget): the flush is done at once. */
static int nm_shm_flush_start(rma_nm_tgt_t *t, void **req)
{
    *req = NULL;
    return nm_shm_flush(t);
}

static int nm_shm_flush_test(rma_nm_tgt_t *t, void **req)
{
    (void)t;
    (void)req;
    return 0;
}

static void nm_shm_flush_release(void *req)
{
    (void)req; /* flush_start never makes one */
}

void rma_nm_shm_release(rma_nm_tgt_t *t)
{
    shm_held_t *h;

    rma_nm_hold_drop(t);
    h = atomic_exchange_explicit(&t->held, NULL, memory_order_acq_rel);

    if (h == NULL)
        return;
    held_send(t, h); /* an epoch left open: MPI_Win_free completes it */
    pthread_mutex_destroy(&h->mtx);
    free(h);
}

/* ------------------------------------------------------------------ with messages
 *
 * A same-node target whose window memory is not mapped here (malloc'd create or attached
 * memory), in a window with off-node peers or on one node where memory cannot move (windows/
 * win_flavor.c win_node_msg_begin): UCX runs in both processes, and this one has an
 * endpoint to it. A put of many small pieces then goes to the target's agent as
 * host-assisted requests over that transport's messages (mpid/rma/hx.h): a copy on each
 * side, where cross-memory attach pays the kernel ~0.5 us per piece. The rest goes as
 * above. A flush sends what is held, then completes the requests (their
 * acknowledgements). */

/* The way of small operations (netmod.h rma_nm_way_t). Each flush of the target, and each
 * fetch it answered, ends a round. Cross-memory attach comes first: it costs what it costs
 * whatever the target does, where a request may wait milliseconds for a computing target's
 * agent to get a core. A look at the other way lasts WAY_LOOK rounds, the first WAY_WARM
 * not counted (they wake the agent, or find it asleep, and its first requests of a window
 * cost more), and ends early once that way costs four times the other. The way looked at
 * is kept when the other costs a quarter more; otherwise (or with nothing measured to
 * weigh) the look ends where it began. Looks come every WAY_EVERY rounds; each that
 * confirms the way taken puts the next twice as far, and at least so far that what looking
 * cost beyond the usual rounds is 1/WAY_SHARE of the time the rounds between take, up to
 * WAY_EVERY_MAX rounds. A way is left for the other once it costs a quarter more. */
#define WAY_LOOK      8
#define WAY_WARM      2
#define WAY_EVERY     16
#define WAY_SHARE     256
#define WAY_EVERY_MAX (1u << 16)

/* The rounds until the next look, after one of `rounds` rounds that took look_ns
 * confirmed the way taken: what the look cost beyond rounds as they went before it (the
 * program's own work between them included) is to be 1/WAY_SHARE of the rounds until the
 * next. */
static uint32_t way_every(const rma_nm_way_t *w, uint64_t look_ns, uint32_t rounds)
{
    uint64_t usual = (uint64_t)rounds * w->round_ns, every = (uint64_t)w->every * 2;
    uint64_t share = look_ns > usual ? (look_ns - usual) * WAY_SHARE / (w->round_ns + 1) : 0;

    every = share > every ? share : every;
    return every > WAY_EVERY_MAX ? WAY_EVERY_MAX : (uint32_t)every;
}

void rma_nm_way_init(rma_nm_tgt_t *t, size_t small)
{
    rma_nm_way_t *w = &t->way;

    w->small = small;
    atomic_store_explicit(&w->msg, rma_env.test_way == 1, memory_order_relaxed);
    w->every = WAY_EVERY;
    w->since_t0 = rma_now_ns();
}

/* 1 when way a costs a quarter more than way b (both measured). */
static int way_worse(const rma_nm_way_t *w, int a, int b)
{
    return w->est[a] != 0 && w->est[b] != 0 && (uint64_t)w->est[a] * 4 > (uint64_t)w->est[b] * 5;
}

/* Folds what each way cost since the last round into its average (but the way a look
 * just took, in its first WAY_WARM rounds): the mean of the rounds measured, then from the
 * 16th on with weight 1/16, a round's mean cut at 16 times the average. A call preempted
 * or a request that met the agent asleep once moves it little, while a target whose agent
 * has no core (40 us-4 ms a request) turns it in a round or two. */
static void way_fold(rma_nm_way_t *w, int cur)
{
    for (int k = 0; k < 2; k++) {
        uint64_t v = atomic_exchange_explicit(&w->acc[k], 0, memory_order_relaxed);
        uint64_t n = v >> RMA_NM_WAY_NS_BITS, sum = v & ((1ull << RMA_NM_WAY_NS_BITS) - 1);
        uint64_t mean = n > 0 ? sum / n : 0, est = w->est[k];
        if (n == 0 || (w->look > WAY_LOOK - WAY_WARM && k == cur))
            continue;
        if (est != 0 && mean > est * 16)
            mean = est * 16;
        mean = mean > UINT32_MAX ? UINT32_MAX : mean == 0 ? 1 : mean;
        if (est == 0)
            w->folds[k] = 0; /* measured afresh: the mean of the rounds until there are 16 */
        if (w->folds[k] < 16)
            w->folds[k]++;
        w->est[k] = (uint32_t)((est * (w->folds[k] - 1) + mean) / w->folds[k]);
    }
}

void rma_nm_way_settle(rma_nm_tgt_t *t)
{
    rma_nm_way_t *w = &t->way;
    int cur, other;

    if (w->small == 0 || atomic_flag_test_and_set_explicit(&w->busy, memory_order_acquire))
        return; /* another thread ends this round */
    cur = atomic_load_explicit(&w->msg, memory_order_relaxed);
    other = !cur;
    if (rma_env.test_way != 0) { /* tests: one way, or each in turn */
        if (rma_env.test_way == 2)
            atomic_store_explicit(&w->msg, other, memory_order_relaxed);
        atomic_flag_clear_explicit(&w->busy, memory_order_release);
        return;
    }
    way_fold(w, cur);
    if (w->look > 0) { /* looking at cur: kept only if the other costs a quarter more */
        w->looked++;
        if (w->look <= WAY_LOOK - WAY_WARM && w->est[other] != 0 && w->est[cur] / 4 > w->est[other])
            w->look = 1; /* far the dearer already */
        if (--w->look == 0) {
            uint64_t now = rma_now_ns();
            if (way_worse(w, other, cur)) {
                w->every = WAY_EVERY;
            } else { /* confirmed, or nothing measured to weigh: back */
                atomic_store_explicit(&w->msg, other, memory_order_relaxed);
                w->every = way_every(w, now - w->look_t0, w->looked);
            }
            w->since = 0;
            w->since_t0 = now;
        }
    } else if (way_worse(w, cur, other)) { /* the other was the cheaper when last looked at */
        atomic_store_explicit(&w->msg, other, memory_order_relaxed);
        w->since = 0;
        w->since_t0 = rma_now_ns();
        w->every = WAY_EVERY;
    } else if (++w->since >= w->every) {
        uint64_t now = rma_now_ns();
        w->round_ns = (now - w->since_t0) / w->since;
        atomic_store_explicit(&w->msg, other, memory_order_relaxed);
        w->est[other] = 0; /* measured afresh */
        w->look = WAY_LOOK;
        w->looked = 0;
        w->look_t0 = now;
    }
    atomic_flag_clear_explicit(&w->busy, memory_order_release);
}

_Thread_local int rma_nm_way_in_op;

static const rma_netmod_ops_t *msg_ops; /* the transport's table (one transport) */
static rma_netmod_ops_t with_ops;
static pthread_once_t with_once = PTHREAD_ONCE_INIT;

/* Sends what is held, then runs the transport's flush (or push), which counts as flushed
 * everything issued when it began (rma_nm_flushed). Another thread's piece held after ours
 * were sent would be counted and stay held: its get's request would complete with the data
 * never read. So while the transport's flush runs (h->flushing), what others issue is not
 * held but sent at once, complete on return. The lock is not held meanwhile: an
 * accumulate holding the target's stripes sends what is held before its own transfers
 * (xfer_sync), and the target's agent may need those stripes to answer this flush. */
static int with_around(rma_nm_tgt_t *t, int (*flush)(rma_nm_tgt_t *t))
{
    shm_held_t *h = held_of(t);
    int rc;

    if (h == NULL) /* out of memory, and nothing held yet */
        return flush(t);
    pthread_mutex_lock(&h->mtx);
    rc = held_send(t, h);
    h->flushing++;
    pthread_mutex_unlock(&h->mtx);
    atomic_fetch_add_explicit(&t->way.flushing, 1, memory_order_relaxed);
    if (rc == 0)
        rc = flush(t);
    atomic_fetch_sub_explicit(&t->way.flushing, 1, memory_order_relaxed);
    pthread_mutex_lock(&h->mtx);
    h->flushing--;
    pthread_mutex_unlock(&h->mtx);
    if (rc == 0)
        rma_nm_way_settle(t);
    return rc;
}

static int with_flush(rma_nm_tgt_t *t)
{
    return with_around(t, msg_ops->flush);
}

static int with_push(rma_nm_tgt_t *t)
{
    return with_around(t, msg_ops->push);
}

/* A request to the target's agent goes after what is held by cross-memory attach (one
 * origin's order: a fetch sent at once after a held put to the same bytes). */
static int with_am_send(rma_nm_tgt_t *t, unsigned id, const void *hdr, size_t hlen,
                        const void *data, size_t len, int how)
{
    int rc = held_send_now(t);

    return rc != 0 ? rc : msg_ops->am_send(t, id, hdr, hlen, data, len, how);
}

static int with_release(rma_nm_tgt_t *t)
{
    int rc = held_send_now(t);

    return rc != 0 ? rc : msg_ops->release(t);
}

/* A request's flush (rma_request_done): what it waits for was held, and is sent now; the
 * transport's flush_test counts nothing flushed. */
static int with_flush_start(rma_nm_tgt_t *t, void **req)
{
    int rc = held_send_now(t);

    *req = NULL;
    return rc != 0 ? rc : msg_ops->flush_start(t, req);
}

static void with_init(void)
{
    with_ops = *msg_ops;
    with_ops.name = "shm+messages";
    with_ops.writev = nm_shm_writev;
    with_ops.readv = nm_shm_readv;
    with_ops.xfer_sync = nm_shm_xfer_sync;
    with_ops.am_send = with_am_send;
    with_ops.flush = with_flush;
    with_ops.push = with_push;
    with_ops.release = with_release;
    with_ops.order = with_flush; /* cross-memory attach does not queue behind the requests */
    with_ops.flush_start = with_flush_start;
}

const rma_netmod_ops_t *rma_nm_shm_with(const rma_netmod_ops_t *msg)
{
    msg_ops = msg;
    pthread_once(&with_once, with_init);
    return &with_ops;
}

const rma_netmod_ops_t rma_nm_shm_ops = {
    .name = "shm",
    .writev = nm_shm_writev,
    .readv = nm_shm_readv,
    .xfer_sync = nm_shm_xfer_sync,
    .flush = nm_shm_flush,
    .push = nm_shm_flush,
    .release = nm_shm_flush,
    .order = nm_shm_flush,
    .settle = nm_shm_flush,
    .flush_start = nm_shm_flush_start,
    .flush_test = nm_shm_flush_test,
    .flush_release = nm_shm_flush_release,
};
