/*
 * hx_requests.c - the target's agent checks every host-assisted request before it touches
 * memory. Rank 0 sends an off-node target raw requests (mpid/rma/hx.h's wire format):
 * truncated, for a wrong or stale window, out of bounds, with overflowing or inconsistent
 * lengths, of an unknown kind. Each must be refused (status -EINVAL, or no answer for a
 * header cut short) and leave the target's memory unchanged; a well-formed request and
 * ordinary MPI_Put/MPI_Get afterwards must still work. A notification riding on a put
 * or a get (RMA_HX_F_NOTE) may name only a word of the ranks' control lines or of the posts,
 * and is applied exactly when the header is sound. A request nobody answers
 * (RMA_HX_F_QUIET) is a put with a notification, or a notification alone (no records): any
 * other gets no answer and no effect. Accumulates are refused for an unknown kind, op or
 * datatype, an op the datatype does not allow, partial elements, or bounds; a rendezvous
 * get (sent straight from window memory) for more than one piece. For an allocated and a
 * dynamic window.
 */
#include <errno.h>
#include <stdint.h>

#include "mpid/rma/acc.h"
#include "mpid/rma/hx.h"
#include "rma_ext.h"
#include "rmatest.h"
#include "sync/ctl.h"

#define WIN_BYTES    4096
#define GOOD_OFF     100
#define NOTE_GOOD    5         /* added by a well-formed put with a notification */
#define NOTE_REFUSED (5 << 8)  /* ... by one whose header is sound but its record is not */
#define NOTE_QUIET   (5 << 16) /* ... by sound requests nobody answers (RMA_HX_F_QUIET) */
#define POST_QUIET   3         /* added to a post word by a quiet notification alone */

static int rank, nprocs;

static uint8_t pattern(int i)
{
    return (uint8_t)(i * 7 + 3);
}

/* One request of one record of count pieces of len bytes at addr (stride), with data. */
typedef struct req {
    rma_hx_hdr_t h;
    rma_hx_rec_t rec[2];
    uint8_t data[64];
} req_t;

static void req_init(req_t *q, const rma_target_t *tg, int kind, uint64_t addr, uint32_t len)
{
    memset(q, 0, sizeof(*q));
    q->h = (rma_hx_hdr_t){.magic = RMA_HX_MAGIC,
                          .kind = (uint8_t)kind,
                          .win = (int32_t)tg->peer_win,
                          .serial = tg->peer_serial,
                          .origin = rank,
                          .nrec = 1,
                          .bytes = len};
    q->rec[0] = (rma_hx_rec_t){addr, 0, len, 1};
    memset(q->data, 0xAB, sizeof(q->data));
}

/* The same, carrying the notification "word at control offset off += note" (RMA_HX_F_NOTE,
 * with more flags). */
static void note_init(req_t *q, const rma_target_t *tg, int kind, uint64_t addr, uint8_t flags,
                      uint64_t off, uint64_t note)
{
    req_init(q, tg, kind, addr, 8);
    q->h.flags = RMA_HX_F_NOTE | flags;
    q->h.note_off = off;
    q->h.note = note;
}

/* A notification alone: no records, no data (a request nobody answers, with flags). */
static void note_alone_init(req_t *q, const rma_target_t *tg, uint8_t flags, uint64_t off,
                            uint64_t note)
{
    note_init(q, tg, RMA_HX_PUT, 0, flags, off, note);
    q->h.nrec = 0;
    q->h.bytes = 0;
}

/* The same as an accumulate request of kind acc (RMA_ACC, ...) with op on basic. */
static void acc_init(req_t *q, const rma_target_t *tg, uint64_t addr, uint32_t len, int acc, int op,
                     MPI_Datatype basic)
{
    req_init(q, tg, RMA_HX_ACC, addr, len);
    q->h.acc = (uint8_t)acc;
    q->h.op = (uint8_t)op;
    q->h.basic = (int32_t)basic;
}

/* Sends q with its first nrec records and (put) the data the header announces; body_cut
 * bytes fewer than that. */
static int send_req(MPI_Win win, int t, const req_t *q, size_t hlen, uint32_t nrec, size_t data,
                    size_t body_cut)
{
    char body[sizeof(q->rec) + sizeof(q->data)];
    size_t len = 0;

    memcpy(body, q->rec, nrec * sizeof(rma_hx_rec_t));
    len += nrec * sizeof(rma_hx_rec_t);
    memcpy(body + len, q->data, data);
    len += data;
    return rma_hx_send_raw(win, t, &q->h, hlen, body, len - body_cut, 0);
}

/* Sends q as a rendezvous request: its header and first record in the message's header, the
 * data (data bytes, or none) by rendezvous. */
static int send_rndv(MPI_Win win, int t, req_t *q, size_t data)
{
    char hdr[sizeof(q->h) + sizeof(q->rec[0])];

    q->h.flags |= RMA_HX_F_RNDV;
    memcpy(hdr, &q->h, sizeof(q->h));
    memcpy(hdr + sizeof(q->h), &q->rec[0], sizeof(q->rec[0]));
    return rma_hx_send_raw(win, t, hdr, sizeof(hdr), q->data, data, 1);
}

static void run(int dynamic, int t)
{
    uint8_t *mem = NULL, got[8];
    uint64_t base = 0, note0;
    rma_win_t *rw;
    MPI_Win win;
    size_t cnt_off;  /* the target's PSCW completion count, a word a notification may name */
    size_t post_off; /* the target's post word for origin 0, another one */
    uint64_t post0;
    int bad = 0;

    if (dynamic) {
        MPI_OK(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
        mem = malloc(WIN_BYTES);
        MPI_OK(MPI_Win_attach(win, mem, WIN_BYTES));
    } else {
        MPI_OK(MPI_Win_allocate(WIN_BYTES, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win));
    }
    for (int i = 0; i < WIN_BYTES; i++)
        mem[i] = pattern(i);
    base = (uint64_t)(uintptr_t)mem;
    MPI_Bcast(&base, 1, MPI_UINT64_T, t, MPI_COMM_WORLD);
    rw = rma_win_lookup(win);
    cnt_off = RMA_CTL_OFF(rw, t, complete_cnt);
    note0 = atomic_load(&rma_ctl_rank(rw->ctl, t)->complete_cnt);
    post_off = rma_ctl_off_post(rw, t, 0);
    post0 = atomic_load(rma_ctl_post(rw->ctl, rw->targets[t].lidx, 0));
    MPI_Barrier(MPI_COMM_WORLD);

    if (rank == 0) {
        const rma_target_t *tg = &rma_win_lookup(win)->targets[t];
        uint64_t end = base + WIN_BYTES;
        MPI_Datatype two_ints;
        req_t q;
        struct {
            const char *what;
            int rc;
        } cases[64];
        int n = 0, rc;
#define CASE(what, call)                                                                           \
    do {                                                                                           \
        int rc_ = (call);                                                                          \
        CHECK(n < (int)(sizeof(cases) / sizeof(cases[0])), "more cases than the table holds");     \
        if (n < (int)(sizeof(cases) / sizeof(cases[0])))                                           \
            cases[n++] = (typeof(cases[0])){what, rc_};                                            \
    } while (0)

        MPI_OK(MPI_Type_contiguous(2, MPI_INT, &two_ints));
        MPI_OK(MPI_Type_commit(&two_ints));

        /* no answer can come (the agent cannot know whom to answer): memory is checked */
        req_init(&q, tg, RMA_HX_PUT, base + 8, 8);
        rc = send_req(win, t, &q, offsetof(rma_hx_hdr_t, nrec), 1, 8, 0);
        CHECK(rc == 0, "a header cut short could not be sent: %d", rc);
        req_init(&q, tg, RMA_HX_PUT, base + 8, 8);
        q.h.magic ^= 1;
        CASE("bad magic", send_req(win, t, &q, sizeof(q.h), 1, 8, 0));
        req_init(&q, tg, 7, base + 8, 8);
        CASE("unknown kind", send_req(win, t, &q, sizeof(q.h), 1, 8, 0));
        req_init(&q, tg, RMA_HX_PUT, base + 8, 8);
        q.h.win ^= 0x5;
        CASE("wrong window", send_req(win, t, &q, sizeof(q.h), 1, 8, 0));
        req_init(&q, tg, RMA_HX_PUT, base + 8, 8);
        q.h.serial += 1;
        CASE("stale window (serial)", send_req(win, t, &q, sizeof(q.h), 1, 8, 0));
        req_init(&q, tg, RMA_HX_PUT, end - 4, 8);
        CASE("past the end", send_req(win, t, &q, sizeof(q.h), 1, 8, 0));
        req_init(&q, tg, RMA_HX_PUT, base - 8, 8);
        CASE("before the start", send_req(win, t, &q, sizeof(q.h), 1, 8, 0));
        req_init(&q, tg, RMA_HX_PUT, base + 8, 8);
        q.rec[0] = (rma_hx_rec_t){base + 8, INT64_MAX / 2, 1, 4};
        q.h.bytes = 4;
        CASE("stride walks out", send_req(win, t, &q, sizeof(q.h), 1, 4, 0));
        req_init(&q, tg, RMA_HX_PUT, UINT64_MAX - 2, 8);
        CASE("address wraps", send_req(win, t, &q, sizeof(q.h), 1, 8, 0));
        req_init(&q, tg, RMA_HX_PUT, base + 8, 8);
        q.rec[0].count = UINT32_MAX;
        q.rec[0].len = UINT32_MAX;
        CASE("length overflows", send_req(win, t, &q, sizeof(q.h), 1, 8, 0));
        req_init(&q, tg, RMA_HX_PUT, base + 8, 8);
        q.h.bytes = 16;
        CASE("header bytes exceed records", send_req(win, t, &q, sizeof(q.h), 1, 16, 0));
        req_init(&q, tg, RMA_HX_PUT, base + 8, 8);
        q.h.nrec = 2;
        CASE("body cut short", send_req(win, t, &q, sizeof(q.h), 1, 8, 0));
        req_init(&q, tg, RMA_HX_PUT, base + 8, 8);
        CASE("data cut short", send_req(win, t, &q, sizeof(q.h), 1, 8, 3));
        req_init(&q, tg, RMA_HX_PUT, base + 8, 8);
        q.rec[0].len = 0;
        q.h.bytes = 0;
        CASE("empty record", send_req(win, t, &q, sizeof(q.h), 1, 0, 0));
        req_init(&q, tg, RMA_HX_GET, base + 8, 8);
        q.h.bytes = 1ull << 40;
        q.rec[0] = (rma_hx_rec_t){base, 0, 1u << 20, 1u << 20};
        CASE("get of a terabyte", send_req(win, t, &q, sizeof(q.h), 1, 0, 0));
        req_init(&q, tg, RMA_HX_PUT, base + 8, 8);
        q.h.flags = 0x80;
        CASE("unknown flag", send_req(win, t, &q, sizeof(q.h), 1, 8, 0));
        /* rendezvous requests (RMA_HX_F_RNDV) */
        req_init(&q, tg, RMA_HX_PUT, end - 4, 8);
        CASE("rendezvous put past the end", send_rndv(win, t, &q, 8));
        req_init(&q, tg, RMA_HX_PUT, base - 8, 8);
        CASE("rendezvous put before the start", send_rndv(win, t, &q, 8));
        req_init(&q, tg, RMA_HX_PUT, base + 8, 8);
        q.rec[0] = (rma_hx_rec_t){base + 8, 16, 4, 2};
        CASE("rendezvous put of two pieces", send_rndv(win, t, &q, 8));
        req_init(&q, tg, RMA_HX_PUT, base + 8, 8);
        CASE("rendezvous put of more data than announced", send_rndv(win, t, &q, 16));
        req_init(&q, tg, RMA_HX_GET, base + 8, 8);
        CASE("rendezvous data for a get", send_rndv(win, t, &q, 8));
        req_init(&q, tg, RMA_HX_ACC, base + 8, 8);
        CASE("rendezvous accumulate", send_rndv(win, t, &q, 8));
        req_init(&q, tg, RMA_HX_PUT, base + 8, 8);
        q.h.flags = RMA_HX_F_RNDV;
        CASE("rendezvous put without its data", send_req(win, t, &q, sizeof(q.h), 1, 8, 0));
        req_init(&q, tg, RMA_HX_GET, end - 4, 8);
        q.h.flags = RMA_HX_F_RNDV;
        CASE("rendezvous get past the end", send_req(win, t, &q, sizeof(q.h), 1, 0, 0));
        req_init(&q, tg, RMA_HX_GET, base + 8, 8);
        q.h.flags = RMA_HX_F_RNDV;
        q.h.nrec = 2;
        q.rec[1] = q.rec[0];
        q.h.bytes = 16;
        CASE("rendezvous get of two records", send_req(win, t, &q, sizeof(q.h), 2, 0, 0));
        /* a rendezvous get is sent from its one record's address: one piece only */
        req_init(&q, tg, RMA_HX_GET, end - 8, 8);
        q.h.flags = RMA_HX_F_RNDV;
        q.rec[0] = (rma_hx_rec_t){end - 8, 0, 8, 512};
        q.h.bytes = 8 * 512;
        CASE("rendezvous get of 512 pieces at the last word",
             send_req(win, t, &q, sizeof(q.h), 1, 0, 0));
        req_init(&q, tg, RMA_HX_GET, base + 8, 8);
        q.h.flags = RMA_HX_F_RNDV;
        q.rec[0] = (rma_hx_rec_t){base + 8, -8, 8, 2};
        q.h.bytes = 16;
        CASE("rendezvous get walking backwards", send_req(win, t, &q, sizeof(q.h), 1, 0, 0));
        /* accumulates: kind, op, datatype, lengths and bounds */
        acc_init(&q, tg, base + 8, 8, 9, RMA_OP_SUM, MPI_INT);
        CASE("unknown accumulate kind", send_req(win, t, &q, sizeof(q.h), 1, 8, 0));
        acc_init(&q, tg, base + 8, 8, RMA_ACC, RMA_OP_COUNT, MPI_INT);
        CASE("unknown operation", send_req(win, t, &q, sizeof(q.h), 1, 8, 0));
        acc_init(&q, tg, base + 8, 8, RMA_ACC, 0xff, MPI_INT);
        CASE("operation 255", send_req(win, t, &q, sizeof(q.h), 1, 8, 0));
        acc_init(&q, tg, base + 8, 8, RMA_ACC, RMA_OP_SUM, MPI_DATATYPE_NULL);
        CASE("MPI_DATATYPE_NULL", send_req(win, t, &q, sizeof(q.h), 1, 8, 0));
        acc_init(&q, tg, base + 8, 8, RMA_ACC, RMA_OP_SUM, two_ints);
        CASE("a derived datatype's handle", send_req(win, t, &q, sizeof(q.h), 1, 8, 0));
        acc_init(&q, tg, base + 8, 8, RMA_ACC, RMA_OP_SUM, MPI_BYTE);
        CASE("MPI_SUM on MPI_BYTE", send_req(win, t, &q, sizeof(q.h), 1, 8, 0));
        acc_init(&q, tg, base + 8, 8, RMA_ACC, RMA_OP_MAXLOC, MPI_INT);
        CASE("MPI_MAXLOC on MPI_INT", send_req(win, t, &q, sizeof(q.h), 1, 8, 0));
        acc_init(&q, tg, base + 8, 8, RMA_ACC, RMA_OP_NO_OP, MPI_INT);
        CASE("MPI_Accumulate with MPI_NO_OP", send_req(win, t, &q, sizeof(q.h), 1, 0, 0));
        acc_init(&q, tg, base + 8, 4, RMA_CAS, RMA_OP_REPLACE, MPI_FLOAT);
        CASE("compare-and-swap on MPI_FLOAT", send_req(win, t, &q, sizeof(q.h), 1, 8, 0));
        acc_init(&q, tg, base + 8, 8, RMA_CAS, RMA_OP_REPLACE, MPI_INT);
        CASE("compare-and-swap of two elements", send_req(win, t, &q, sizeof(q.h), 1, 16, 0));
        acc_init(&q, tg, base + 8, 6, RMA_ACC, RMA_OP_SUM, MPI_INT);
        CASE("accumulate of 1.5 elements", send_req(win, t, &q, sizeof(q.h), 1, 6, 0));
        acc_init(&q, tg, base + 8, 8, RMA_ACC, RMA_OP_SUM, MPI_INT);
        q.rec[0] = (rma_hx_rec_t){base + 8, 6, 2, 4};
        CASE("accumulate of half elements", send_req(win, t, &q, sizeof(q.h), 1, 8, 0));
        acc_init(&q, tg, end - 4, 8, RMA_ACC, RMA_OP_SUM, MPI_INT);
        CASE("accumulate past the end", send_req(win, t, &q, sizeof(q.h), 1, 8, 0));
        acc_init(&q, tg, end - 4, 8, RMA_FOP, RMA_OP_SUM, MPI_INT);
        CASE("fetching accumulate past the end", send_req(win, t, &q, sizeof(q.h), 1, 8, 0));
        acc_init(&q, tg, base + 8, 8, RMA_ACC, RMA_OP_SUM, MPI_INT);
        CASE("accumulate with its data cut short", send_req(win, t, &q, sizeof(q.h), 1, 8, 2));
        /* the whole of a shared-lock epoch (RMA_HX_F_SHARED): checked before the lock */
        req_init(&q, tg, RMA_HX_PUT, end - 4, 8);
        q.h.flags = RMA_HX_F_SHARED;
        CASE("shared-lock put past the end", send_req(win, t, &q, sizeof(q.h), 1, 8, 0));
        req_init(&q, tg, RMA_HX_ACC, base + 8, 8);
        q.h.flags = RMA_HX_F_SHARED;
        CASE("shared-lock accumulate", send_req(win, t, &q, sizeof(q.h), 1, 8, 0));
        req_init(&q, tg, RMA_HX_GET, base + 8, 8);
        q.h.flags = RMA_HX_F_SHARED | RMA_HX_F_RNDV;
        CASE("shared-lock rendezvous get", send_req(win, t, &q, sizeof(q.h), 1, 0, 0));
        /* notifications riding on a request (RMA_HX_F_NOTE) */
        note_init(&q, tg, RMA_HX_PUT, base + 8, 0, 0, 1);
        CASE("notification on the control segment's header",
             send_req(win, t, &q, sizeof(q.h), 1, 8, 0));
        q.h.note_off = cnt_off + 4;
        CASE("misaligned notification", send_req(win, t, &q, sizeof(q.h), 1, 8, 0));
        q.h.note_off = rw->ctl->acc_off;
        CASE("notification on an accumulate stripe", send_req(win, t, &q, sizeof(q.h), 1, 8, 0));
        q.h.note_off = rw->ctl->post_off + (uint64_t)rw->ctl->post_rows * nprocs * 8;
        CASE("notification past the posts", send_req(win, t, &q, sizeof(q.h), 1, 8, 0));
        q.h.note_off = (uint64_t)0 - 8;
        CASE("notification at offset 2^64 - 8", send_req(win, t, &q, sizeof(q.h), 1, 8, 0));
        note_init(&q, tg, RMA_HX_GET, base + 8, RMA_HX_F_RNDV, cnt_off, 1);
        CASE("notification on a rendezvous get", send_req(win, t, &q, sizeof(q.h), 1, 0, 0));
        note_init(&q, tg, RMA_HX_ACC, base + 8, 0, cnt_off, 1);
        CASE("notification on an accumulate", send_req(win, t, &q, sizeof(q.h), 1, 8, 0));
        note_init(&q, tg, RMA_HX_PUT, base + 8, RMA_HX_F_SHARED, cnt_off, 1);
        CASE("notification on a shared-lock epoch", send_req(win, t, &q, sizeof(q.h), 1, 8, 0));
        note_init(&q, tg, RMA_HX_PUT, base + 8, 0, cnt_off, 1);
        CASE("notification on a put whose data is cut short",
             send_req(win, t, &q, sizeof(q.h), 1, 8, 3));
        /* a sound header whose record is refused: the notification is applied all the same
         * (the target must not wait for it forever; the origin reports the refusal) */
        note_init(&q, tg, RMA_HX_PUT, end - 4, 0, cnt_off, NOTE_REFUSED);
        CASE("put past the end with a notification", send_req(win, t, &q, sizeof(q.h), 1, 8, 0));
        /* a notification alone needs RMA_HX_F_QUIET and no data */
        note_alone_init(&q, tg, 0, cnt_off, 1);
        CASE("notification alone, answered", send_req(win, t, &q, sizeof(q.h), 0, 0, 0));

        /* requests nobody answers (RMA_HX_F_QUIET): sent, never answered; what they did is
         * checked at the target, after the answered requests below (issue order) */
        note_init(&q, tg, RMA_HX_GET, base + 8, RMA_HX_F_QUIET, cnt_off, 1);
        CHECK(send_req(win, t, &q, sizeof(q.h), 1, 0, 0) == 0, "a quiet get was not sent");
        req_init(&q, tg, RMA_HX_PUT, base + 8, 8);
        q.h.flags = RMA_HX_F_QUIET; /* without a notification */
        CHECK(send_req(win, t, &q, sizeof(q.h), 1, 8, 0) == 0, "a quiet put was not sent");
        note_init(&q, tg, RMA_HX_PUT, base + 8, RMA_HX_F_QUIET, cnt_off, 1);
        q.h.nrec = 0; /* no records, but data */
        CHECK(send_req(win, t, &q, sizeof(q.h), 0, 8, 0) == 0, "a quiet note was not sent");
        note_init(&q, tg, RMA_HX_PUT, base + 8, RMA_HX_F_QUIET, rw->ctl->acc_off, 1);
        CHECK(send_req(win, t, &q, sizeof(q.h), 1, 8, 0) == 0, "a quiet put was not sent");
        /* sound headers: the notifications are applied, a refused record's too */
        note_init(&q, tg, RMA_HX_PUT, end - 4, RMA_HX_F_QUIET, cnt_off, NOTE_QUIET);
        CHECK(send_req(win, t, &q, sizeof(q.h), 1, 8, 0) == 0, "a quiet put was not sent");
        note_alone_init(&q, tg, RMA_HX_F_QUIET, cnt_off, NOTE_QUIET);
        CHECK(send_req(win, t, &q, sizeof(q.h), 0, 0, 0) == 0, "a quiet note was not sent");
        note_alone_init(&q, tg, RMA_HX_F_QUIET, post_off, POST_QUIET);
        CHECK(send_req(win, t, &q, sizeof(q.h), 0, 0, 0) == 0, "a quiet post was not sent");

        MPI_OK(MPI_Type_free(&two_ints));
        for (int i = 0; i < n; i++)
            CHECK(cases[i].rc == -EINVAL, "request '%s': status %d, expected %d (-EINVAL)",
                  cases[i].what, cases[i].rc, -EINVAL);

        /* a sound request still works */
        req_init(&q, tg, RMA_HX_PUT, base + GOOD_OFF, 8);
        CHECK(send_req(win, t, &q, sizeof(q.h), 1, 8, 0) == 0, "a well-formed put was refused");
        req_init(&q, tg, RMA_HX_GET, base + GOOD_OFF, 8);
        CHECK(send_req(win, t, &q, sizeof(q.h), 1, 0, 0) == 0, "a well-formed get was refused");
        req_init(&q, tg, RMA_HX_PUT, base + GOOD_OFF, 8);
        CHECK(send_rndv(win, t, &q, 8) == 0, "a well-formed rendezvous put was refused");
        req_init(&q, tg, RMA_HX_GET, base + GOOD_OFF, 8);
        q.h.flags = RMA_HX_F_RNDV;
        CHECK(send_req(win, t, &q, sizeof(q.h), 1, 0, 0) == 0,
              "a well-formed rendezvous get was refused");
        req_init(&q, tg, RMA_HX_PUT, base + GOOD_OFF, 8);
        q.h.flags = RMA_HX_F_SHARED;
        CHECK(send_req(win, t, &q, sizeof(q.h), 1, 8, 0) == 0,
              "a well-formed shared-lock put was refused");
        req_init(&q, tg, RMA_HX_GET, base + GOOD_OFF, 8);
        q.h.flags = RMA_HX_F_SHARED;
        CHECK(send_req(win, t, &q, sizeof(q.h), 1, 0, 0) == 0,
              "a well-formed shared-lock get was refused");
        acc_init(&q, tg, base + GOOD_OFF, 8, RMA_ACC, RMA_OP_REPLACE, MPI_INT);
        CHECK(send_req(win, t, &q, sizeof(q.h), 1, 8, 0) == 0,
              "a well-formed accumulate (MPI_REPLACE of the same bytes) was refused");
        acc_init(&q, tg, base + GOOD_OFF, 8, RMA_GACC, RMA_OP_NO_OP, MPI_INT);
        CHECK(send_req(win, t, &q, sizeof(q.h), 1, 0, 0) == 0,
              "a well-formed get_accumulate (MPI_NO_OP) was refused");
        note_init(&q, tg, RMA_HX_PUT, base + GOOD_OFF, 0, cnt_off, NOTE_GOOD);
        CHECK(send_req(win, t, &q, sizeof(q.h), 1, 8, 0) == 0,
              "a well-formed put with a notification was refused");
        note_init(&q, tg, RMA_HX_GET, base + GOOD_OFF, 0, cnt_off, NOTE_GOOD);
        CHECK(send_req(win, t, &q, sizeof(q.h), 1, 0, 0) == 0,
              "a well-formed get with a notification was refused");
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == t) {
        uint64_t got_note = atomic_load(&rma_ctl_rank(rw->ctl, t)->complete_cnt) - note0;
        uint64_t got_post = atomic_load(rma_ctl_post(rw->ctl, rw->targets[t].lidx, 0)) - post0;
        CHECK(got_note == 2 * NOTE_GOOD + NOTE_REFUSED + 2 * NOTE_QUIET,
              "notifications added %#llx to the completion count, expected %#x",
              (unsigned long long)got_note, 2 * NOTE_GOOD + NOTE_REFUSED + 2 * NOTE_QUIET);
        CHECK(got_post == POST_QUIET, "notifications added %llu to the post word, expected %d",
              (unsigned long long)got_post, POST_QUIET);
        for (int i = 0; i < WIN_BYTES; i++) {
            uint8_t want = i >= GOOD_OFF && i < GOOD_OFF + 8 ? 0xAB : pattern(i);
            if (mem[i] != want && bad++ < 4)
                CHECK(0, "%s window: byte %d is %#x, expected %#x",
                      dynamic ? "dynamic" : "allocated", i, mem[i], want);
        }
        CHECK(bad == 0, "%d bytes changed", bad);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    /* the target went on: ordinary operations still work, and no shared-lock request left
     * its count on the lock word (an exclusive lock would wait for it forever) */
    if (rank == 0) {
        MPI_OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, t, 0, win));
        MPI_OK(MPI_Win_unlock(t, win));
    }
    MPI_OK(MPI_Win_lock_all(0, win));
    if (rank == 0) {
        uint64_t v = 0x1122334455667788ull;
        MPI_Aint disp = dynamic ? (MPI_Aint)base + 16 : 16;
        MPI_OK(MPI_Put(&v, 8, MPI_BYTE, t, disp, 8, MPI_BYTE, win));
        MPI_OK(MPI_Win_flush(t, win));
        MPI_OK(MPI_Get(got, 8, MPI_BYTE, t, disp, 8, MPI_BYTE, win));
        MPI_OK(MPI_Win_flush(t, win));
        CHECK(memcmp(got, &v, 8) == 0, "put then get after the bad requests read back wrong");
    }
    MPI_OK(MPI_Win_unlock_all(win));
    MPI_Barrier(MPI_COMM_WORLD);
    if (dynamic) {
        MPI_OK(MPI_Win_detach(win, mem));
        MPI_OK(MPI_Win_free(&win));
        free(mem);
    } else {
        MPI_OK(MPI_Win_free(&win));
    }
}

int main(int argc, char **argv)
{
    int t = -1;
    MPI_Win probe;
    char *pm;

    rt_init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    /* the first rank rank 0 reaches over the network */
    MPI_OK(MPI_Win_allocate(8, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &pm, &probe));
    if (rank == 0)
        for (int r = 1; r < nprocs && t < 0; r++) {
            int path = 0;
            MPI_OK(RMAX_Win_path(probe, r, 0, 1, &path));
            if (path == RMAX_PATH_NETMOD || path == RMAX_PATH_NETMAP)
                t = r;
        }
    MPI_Bcast(&t, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_OK(MPI_Win_free(&probe));
    CHECK(t > 0 || strcmp(rt_topology(), "node") == 0,
          "topology %s, but rank 0 has no off-node peer", rt_topology());
    if (t > 0) {
        run(0, t);
        run(1, t);
    }
    return rt_finish("hx_requests");
}
