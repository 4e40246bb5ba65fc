/*
 * agent_copy - request-based copies the progress agent makes (RMA_AGENT_COPY): MPI_Rput
 * and MPI_Rget of 256 KiB, contiguous and as 1 KiB rows 2 KiB apart, to an off-node
 * allocate window that UCX maps here, completed with MPI_Wait, MPI_Waitall, MPI_Test,
 * MPI_Win_flush before the wait, and MPI_Request_free + MPI_Win_unlock_all; the row type is
 * freed right after the call that uses it. Every byte is checked as soon as the call that
 * completes it returns: a get's at the origin; a put's by overwriting the origin's buffer
 * (a copy still to come would carry that), and at the target after a message from the
 * origin that flushed. RMAX_Agent_copies must count every copy handed over, and the agent
 * must have made at least one (the origin sleeps before some waits to let it). Run with
 * RMA_AGENT_CPU set (the agent needs a core of its own) in the off-node topologies, in
 * every RMA_AGENT mode; elsewhere, and with RMA_AGENT=off (no agent), nothing is handed
 * over and the counts must be 0. Create and dynamic windows hand copies over once their
 * memory moved, so only where librma can move memory (RMAX_Memory_moves). Several copies
 * are in flight at once (slots 6 and 7), and later operations on bytes they touch - puts
 * and a get on the window's side, one of them across both slots, gets into a buffer a copy
 * writes, one of them to MPI_BOTTOM - must act after them, in the program's order
 * (agent_copy_regions: across two regions of a dynamic window).
 */
#include <rma_ext.h> /* before rmatest.h: its rt_moves */

#include "rmatest.h"

#include <unistd.h>

#define ROW   1024
#define BYTES (256 << 10) /* one transfer */
#define SLOTS 8           /* transfers' places in the window */

static int rank, right, left;

static unsigned char pat(int who, int slot, size_t i)
{
    return (unsigned char)(who * 131 + slot * 17 + i * 7 + (i >> 10) * 3);
}

static void fill(unsigned char *p, int who, int slot)
{
    for (size_t i = 0; i < BYTES; i++)
        p[i] = pat(who, slot, i);
}

/* n bytes at p hold who's pattern for slot from byte `from` on */
static int bad_at(const unsigned char *p, size_t n, int who, int slot, size_t from)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != pat(who, slot, from + i))
            return (int)i;
    return -1;
}

/* The 8-byte marks later puts leave in slots 6 and 7 (see run) */
static int is_mark(int slot, size_t i)
{
    return slot == 6 ? (i >= 4096 && i < 4104) || i >= BYTES - 8 : i < 8;
}

/* The first byte of slot 6 or 7 at p that holds neither who's pattern nor a mark, or -1 */
static int bad_marked(const unsigned char *p, int who, int slot)
{
    for (size_t i = 0; i < BYTES; i++)
        if (p[i] != (is_mark(slot, i) ? 0x5a : pat(who, slot, i)))
            return (int)i;
    return -1;
}

static MPI_Datatype rows(void)
{
    MPI_Datatype t;

    MPI_OK(MPI_Type_vector(BYTES / 2 / ROW, ROW, 2 * ROW, MPI_BYTE, &t));
    MPI_OK(MPI_Type_commit(&t));
    return t;
}

/* One round on a window of `flavor` (RT_ALLOCATE, RT_CREATE, RT_DYNAMIC); returns the
 * copies its operations could have handed over. */
static int run(int flavor, int handing)
{
    int expect = 0;
    unsigned char *mem, *src, *dst;
    MPI_Request req[4];
    MPI_Win win;
    MPI_Datatype t;
    MPI_Aint base = 0, rbase;
    long long by_agent = -1, before;
    const char *fl = flavor == RT_ALLOCATE ? "allocate"
                     : flavor == RT_CREATE ? "create"
                                           : "dynamic";

    src = malloc(SLOTS * (size_t)BYTES);
    dst = malloc(SLOTS * (size_t)BYTES);
    if (flavor == RT_ALLOCATE) {
        MPI_OK(MPI_Win_allocate(SLOTS * (MPI_Aint)BYTES, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &mem,
                                &win));
    } else if (flavor == RT_CREATE) {
        mem = malloc(SLOTS * (size_t)BYTES);
        MPI_OK(
            MPI_Win_create(mem, SLOTS * (MPI_Aint)BYTES, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    } else {
        mem = malloc(SLOTS * (size_t)BYTES);
        MPI_OK(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
        /* two regions, slot 7 the second, attached one right after the other: both are
         * moved (the agent once kept only the last ask), and a put across the border
         * touches both */
        MPI_OK(MPI_Win_attach(win, mem, 7 * (MPI_Aint)BYTES));
        MPI_OK(MPI_Win_attach(win, mem + 7 * (size_t)BYTES, BYTES));
        MPI_Get_address(mem, &base);
    }
    /* the right neighbour's displacement of its slot 0 (dynamic: its address) */
    MPI_OK(MPI_Sendrecv(&base, 1, MPI_AINT, left, 3, &rbase, 1, MPI_AINT, right, 3, MPI_COMM_WORLD,
                        MPI_STATUS_IGNORE));
    MPI_OK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    for (int s = 0; s < SLOTS; s++) {
        fill(src + (size_t)s * BYTES, rank, s);
        fill(mem + (size_t)s * BYTES, rank + 100, s);
        memset(dst + (size_t)s * BYTES, 0, BYTES);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_OK(RMAX_Agent_copies(&before, NULL));

    MPI_OK(MPI_Win_lock_all(0, win));
    /* slot 0: a contiguous put, waited for after the agent had time to take it (again, up
     * to 10 times, on a machine too busy to give it a core meanwhile; on create and dynamic
     * windows until their memory moved where UCX maps it) */
    for (int k = 0, tries = handing ? 10 : 1; k < tries && by_agent <= before; k++) {
        MPI_OK(MPI_Rput(src, BYTES, MPI_BYTE, right, rbase, BYTES, MPI_BYTE, win, &req[0]));
        usleep(20000);
        MPI_OK(MPI_Wait(&req[0], MPI_STATUS_IGNORE));
        MPI_OK(RMAX_Agent_copies(&by_agent, NULL));
        expect++;
    }
    CHECK(!handing || by_agent > before, "%s: the agent made none of the copies", fl);
    memset(src, 0xee, BYTES); /* completed: a copy still to come would carry this */
    /* slot 1: rows both sides, the type freed at once; slot 2: a contiguous get */
    t = rows();
    MPI_OK(MPI_Rput(src + BYTES, 1, t, right, rbase + BYTES, 1, t, win, &req[0]));
    MPI_OK(MPI_Type_free(&t));
    MPI_OK(MPI_Rget(dst + 2 * BYTES, BYTES, MPI_BYTE, right, rbase + 2 * BYTES, BYTES, MPI_BYTE,
                    win, &req[1]));
    {
        MPI_Status sts[2];
        MPI_OK(MPI_Waitall(2, req, sts));
    }
    memset(src + BYTES, 0xee, BYTES);
    CHECK(bad_at(dst + 2 * BYTES, BYTES, right + 100, 2, 0) < 0, "%s: contiguous get is wrong", fl);
    /* slot 3: a row get, completed by MPI_Test */
    t = rows();
    MPI_OK(MPI_Rget(dst + 3 * BYTES, 1, t, right, rbase + 3 * BYTES, 1, t, win, &req[0]));
    MPI_OK(MPI_Type_free(&t));
    {
        int flag = 0;
        for (long spin = 0; !flag && spin < 100000000L; spin++)
            MPI_OK(MPI_Test(&req[0], &flag, MPI_STATUS_IGNORE));
        CHECK(flag, "%s: MPI_Test never completed the row get", fl);
    }
    for (size_t r = 0; r < BYTES / ROW; r += 2) {
        int b = bad_at(dst + 3 * BYTES + r * ROW, ROW, right + 100, 3, r * ROW);
        CHECK(b < 0, "%s: row get, at its completion: row %zu byte %d is wrong", fl, r, b);
    }
    /* slot 4: completed by a flush, the request waited for after it */
    MPI_OK(MPI_Rput(src + 4 * BYTES, BYTES, MPI_BYTE, right, rbase + 4 * BYTES, BYTES, MPI_BYTE,
                    win, &req[0]));
    MPI_OK(MPI_Win_flush(right, win));
    memset(src + 4 * BYTES, 0xee, BYTES);
    /* the flush completed it at the target: the left neighbour's put is here after the
     * barrier (librma's, which serves peers' requests while it waits: with RMA_AGENT=off
     * nothing else would serve a create window's strided get) */
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_OK(MPI_Win_sync(win));
    CHECK(bad_at(mem + 4 * BYTES, BYTES, left, 4, 0) < 0,
          "%s: slot 4 is not all here after the origin's flush", fl);
    MPI_OK(MPI_Wait(&req[0], MPI_STATUS_IGNORE));
    /* slots 6 and 7: two copies in flight, then a put into bytes the first writes, a put
     * across the end of the first into the second, a get
     * of bytes the second writes, and a get from the right neighbour's untouched slot 2 whose
     * copy two gets of its slot 3 partly overwrite at the origin, one to MPI_BOTTOM */
    {
        unsigned char mark[16], got[8];
        MPI_Status sts[3];
        MPI_Aint at;
        MPI_Datatype abs8;
        memset(mark, 0x5a, sizeof(mark));
        MPI_Get_address(dst + 6 * BYTES + 200, &at);
        MPI_OK(MPI_Type_create_hindexed(1, (int[]){8}, &at, MPI_BYTE, &abs8));
        MPI_OK(MPI_Type_commit(&abs8));
        MPI_OK(MPI_Rput(src + 6 * BYTES, BYTES, MPI_BYTE, right, rbase + 6 * BYTES, BYTES, MPI_BYTE,
                        win, &req[0]));
        MPI_OK(MPI_Rput(src + 7 * BYTES, BYTES, MPI_BYTE, right, rbase + 7 * BYTES, BYTES, MPI_BYTE,
                        win, &req[1]));
        MPI_OK(MPI_Rget(dst + 6 * BYTES, BYTES, MPI_BYTE, right, rbase + 2 * BYTES, BYTES, MPI_BYTE,
                        win, &req[2]));
        MPI_OK(MPI_Put(mark, 8, MPI_BYTE, right, rbase + 6 * BYTES + 4096, 8, MPI_BYTE, win));
        MPI_OK(MPI_Put(mark, 16, MPI_BYTE, right, rbase + 7 * BYTES - 8, 16, MPI_BYTE, win));
        MPI_OK(MPI_Get(got, 8, MPI_BYTE, right, rbase + 7 * BYTES + 8192, 8, MPI_BYTE, win));
        MPI_OK(MPI_Get(dst + 6 * BYTES + 100, 8, MPI_BYTE, right, rbase + 3 * BYTES + 100, 8,
                       MPI_BYTE, win));
        MPI_OK(MPI_Get(MPI_BOTTOM, 1, abs8, right, rbase + 3 * BYTES + 200, 8, MPI_BYTE, win));
        MPI_OK(MPI_Type_free(&abs8));
        MPI_OK(MPI_Waitall(3, req, sts));
        MPI_OK(MPI_Win_flush(right, win));
        CHECK(bad_at(got, 8, rank, 7, 8192) < 0,
              "%s: a get of bytes an MPI_Rput in flight writes read them before", fl);
        int b = bad_at(dst + 6 * BYTES + 100, 8, right + 100, 3, 100);
        CHECK(b < 0, "%s: a get into a buffer an MPI_Rget in flight writes was undone (byte %d)",
              fl, b);
        b = bad_at(dst + 6 * BYTES + 200, 8, right + 100, 3, 200);
        CHECK(b < 0, "%s: a get to MPI_BOTTOM inside an MPI_Rget's buffer was undone (byte %d)", fl,
              b);
        b = bad_at(dst + 6 * BYTES, 100, right + 100, 2, 0);
        if (b < 0)
            b = bad_at(dst + 6 * BYTES + 108, 92, right + 100, 2, 108);
        if (b < 0)
            b = bad_at(dst + 6 * BYTES + 208, BYTES - 208, right + 100, 2, 208);
        CHECK(b < 0, "%s: MPI_Rget beside a later get is wrong", fl);
    }
    /* slot 5: a freed request, completed by the epoch's end */
    MPI_OK(MPI_Rput(src + 5 * BYTES, BYTES, MPI_BYTE, right, rbase + 5 * BYTES, BYTES, MPI_BYTE,
                    win, &req[0]));
    MPI_OK(MPI_Request_free(&req[0]));
    MPI_OK(MPI_Win_unlock_all(win));
    memset(src + 5 * BYTES, 0xee, BYTES); /* the unlock completed it */
    expect += 8;
    MPI_Barrier(MPI_COMM_WORLD);

    /* what the left neighbour put here: slots 0, 4, 5 whole, 6 and 7 with its later marks
     * (is_mark); slot 1 its rows, this rank's own bytes between them; slots 2 and 3
     * untouched */
    for (int s = 0; s < SLOTS; s++) {
        const unsigned char *p = mem + (size_t)s * BYTES;
        int at = -1;
        if (s == 0 || s == 4 || s == 5) {
            at = bad_at(p, BYTES, left, s, 0);
        } else if (s == 6 || s == 7) {
            at = bad_marked(p, left, s);
        } else if (s == 1) {
            for (size_t r = 0; r < BYTES / ROW && at < 0; r++) {
                int b = bad_at(p + r * ROW, ROW, r % 2 ? rank + 100 : left, s, r * ROW);
                at = b < 0 ? -1 : (int)(r * ROW) + b;
            }
        } else {
            at = bad_at(p, BYTES, rank + 100, s, 0);
        }
        CHECK(at < 0, "%s: window slot %d: byte %d is wrong", fl, s, at);
    }
    /* the gaps of the row get stayed zero */
    for (size_t r = 1; r < BYTES / ROW; r += 2) {
        const unsigned char *p = dst + 3 * BYTES + r * ROW;
        CHECK(p[0] == 0 && memcmp(p, p + 1, ROW - 1) == 0, "%s: row get wrote gap row %zu", fl, r);
    }
    if (flavor == RT_DYNAMIC) {
        MPI_OK(MPI_Win_detach(win, mem));
        MPI_OK(MPI_Win_detach(win, mem + 7 * (size_t)BYTES));
    }
    MPI_OK(MPI_Win_free(&win));
    if (flavor != RT_ALLOCATE)
        free(mem);
    free(src);
    free(dst);
    return expect;
}

int main(int argc, char **argv)
{
    int np, offnode, handing, most = 0, on_alloc, moves;
    long long by_agent, by_caller;

    rt_init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    right = (rank + 1) % np;
    left = (rank + np - 1) % np;
    offnode = rt_netmod_only() || !rt_same_node(right);
    /* copies go to the agent off node, when it runs (not RMA_AGENT=off) bound to a core */
    handing = offnode && getenv("RMA_AGENT_CPU") != NULL &&
              (getenv("RMA_AGENT") == NULL || strcmp(getenv("RMA_AGENT"), "off") != 0);
    /* an allocate window is mapped from the start: every copy is handed over */
    on_alloc = run(RT_ALLOCATE, handing);
    MPI_OK(RMAX_Agent_copies(&by_agent, &by_caller));
    if (handing)
        CHECK(by_agent + by_caller == on_alloc,
              "allocate: %lld copies by the agent, %lld by the caller: %d were handed over",
              by_agent, by_caller, on_alloc);
    else
        CHECK(by_agent == 0 && by_caller == 0,
              "nothing is handed over here, yet %lld + %lld copies were", by_agent, by_caller);
    /* create and dynamic windows: once their memory moved where UCX maps it, where the
     * owner can move memory */
    moves = rt_moves(right);
    most = on_alloc + run(RT_CREATE, handing && moves);
    most += run(RT_DYNAMIC, handing && moves);
    MPI_OK(RMAX_Agent_copies(&by_agent, &by_caller));
    CHECK(by_agent + by_caller <= (handing ? most : 0), "%lld + %lld copies, of at most %d",
          by_agent, by_caller, handing ? most : 0);
    return rt_finish("agent_copy");
}
