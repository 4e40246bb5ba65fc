/*
 * cma_held - small puts and gets to same-node memory reached through cross-memory attach,
 * which the transport holds until the next flush and sends together (netmod/shm): a put
 * that covers a held one takes its place, one that continues it extends it, and gets whose
 * target bytes are close together are read as one span. Checked for every synchronization
 * that must complete them (flush, flush_local, flush_all, unlock, unlock_all, fence, PSCW,
 * a request's wait), for the mix of puts, gets and a large transfer in one epoch, and for one
 * put of many held-size pieces larger in all than what is held. Run
 * with RMA_CREATE_REMAP=0 so that the memory of create windows is never moved onto a shared
 * segment. Ranks on other nodes take part as targets of the same calls.
 */
#include "rmatest.h"

#define N      65536 /* bytes of each rank's window */
#define MED    8000  /* a transfer of many pages that is still held (up to 16 KiB) */
#define MED_AT 8192
#define BIG    20000 /* a transfer larger than what is held */
#define BIG_AT 30000
#define SYNC   8 /* synchronizations checked */

static int rank, nprocs;
static unsigned char *mem;

static unsigned char pat(int owner, int round, int i)
{
    return (unsigned char)(owner * 31 + round * 7 + i * 13 + 1);
}

/* MPI_Win_start (start 1) or MPI_Win_post (0) with the group of rank r alone. */
static void one_group(MPI_Win win, int r, int start)
{
    MPI_Group world, g;

    MPI_Win_get_group(win, &world);
    MPI_Group_incl(world, 1, &r, &g);
    if (start)
        MPI_OK(MPI_Win_start(g, 0, win));
    else
        MPI_OK(MPI_Win_post(g, 0, win));
    MPI_Group_free(&g);
    MPI_Group_free(&world);
}

static void open_epoch(MPI_Win win, int sync, int t)
{
    if (sync == 0 || sync == 1 || sync == 2 || sync == 7)
        MPI_OK(MPI_Win_lock_all(0, win));
    else if (sync == 3)
        MPI_OK(MPI_Win_lock(MPI_LOCK_SHARED, t, 0, win));
    else if (sync == 5)
        MPI_OK(MPI_Win_fence(0, win));
    else if (sync == 6)
        one_group(win, t, 1);
    else if (sync == 4)
        MPI_OK(MPI_Win_lock_all(0, win));
}

static void close_epoch(MPI_Win win, int sync, int t)
{
    switch (sync) {
    case 0:
        MPI_OK(MPI_Win_flush(t, win));
        MPI_OK(MPI_Win_unlock_all(win));
        break;
    case 1:
        MPI_OK(MPI_Win_flush_local(t, win));
        MPI_OK(MPI_Win_flush(t, win));
        MPI_OK(MPI_Win_unlock_all(win));
        break;
    case 2:
        MPI_OK(MPI_Win_flush_all(win));
        MPI_OK(MPI_Win_unlock_all(win));
        break;
    case 3: MPI_OK(MPI_Win_unlock(t, win)); break;
    case 4: MPI_OK(MPI_Win_unlock_all(win)); break;
    case 5: MPI_OK(MPI_Win_fence(0, win)); break;
    case 6: MPI_OK(MPI_Win_complete(win)); break;
    case 7:
        MPI_OK(MPI_Win_flush_local_all(win));
        MPI_OK(MPI_Win_flush_all(win));
        MPI_OK(MPI_Win_unlock_all(win));
        break;
    }
}

/* One round: rank r writes into rank (r+1)'s window and reads rank (r+2)'s. */
static void round_of(MPI_Win win, int sync, int round)
{
    int t = (rank + 1) % nprocs, s = (rank + 2) % nprocs;
    unsigned char vals[72], got[64], span[40], med[MED], gmed[MED], big[BIG], gbig[BIG];
    MPI_Request req;

    for (int i = 0; i < N; i++)
        mem[i] = pat(rank, round, i);
    MPI_Barrier(MPI_COMM_WORLD);
    if (sync == 6) /* the target exposes to one origin: its predecessor */
        one_group(win, (rank + nprocs - 1) % nprocs, 0);
    open_epoch(win, sync, t);
    /* puts to t: bytes 0..63 one at a time, each from its own byte of vals (an origin
     * buffer stays as it is until the epoch completes it) */
    for (int i = 0; i < 64; i++) {
        vals[i] = (unsigned char)(200 + i + round);
        MPI_OK(MPI_Put(&vals[i], 1, MPI_BYTE, t, i, 1, MPI_BYTE, win));
    }
    /* byte 100 three times: one of the three lands */
    for (int k = 0; k < 3; k++) {
        vals[64 + k] = (unsigned char)(10 + k);
        MPI_OK(MPI_Put(&vals[64 + k], 1, MPI_BYTE, t, 100, 1, MPI_BYTE, win));
    }
    /* a held put of several pages, a large put elsewhere, then small ones after them */
    for (int i = 0; i < MED; i++)
        med[i] = (unsigned char)(i * 5 + round);
    MPI_OK(MPI_Put(med, MED, MPI_BYTE, t, MED_AT, MED, MPI_BYTE, win));
    for (int i = 0; i < BIG; i++)
        big[i] = (unsigned char)(i * 3 + round);
    MPI_OK(MPI_Put(big, BIG, MPI_BYTE, t, BIG_AT, BIG, MPI_BYTE, win));
    vals[67] = 77;
    MPI_OK(MPI_Put(&vals[67], 1, MPI_BYTE, t, 200, 1, MPI_BYTE, win));
    vals[68] = 78;
    MPI_OK(MPI_Put(&vals[68], 1, MPI_BYTE, t, 4000 + (round & 63), 1, MPI_BYTE, win));
    close_epoch(win, sync, t);
    if (sync == 6)
        MPI_OK(MPI_Win_wait(win));
    MPI_Barrier(MPI_COMM_WORLD);
    {
        int from = (rank + nprocs - 1) % nprocs;
        for (int i = 0; i < 64; i++)
            CHECK(mem[i] == (unsigned char)(200 + i + round), "sync %d round %d: byte %d is %d",
                  sync, round, i, mem[i]);
        CHECK(mem[100] >= 10 && mem[100] <= 12, "sync %d round %d: byte 100 is %d", sync, round,
              mem[100]);
        for (int i = 0; i < MED; i += 61)
            CHECK(mem[MED_AT + i] == (unsigned char)(i * 5 + round), "sync %d: held byte %d is %d",
                  sync, i, mem[MED_AT + i]);
        for (int i = 0; i < BIG; i += 97)
            CHECK(mem[BIG_AT + i] == (unsigned char)(i * 3 + round), "sync %d: big byte %d is %d",
                  sync, i, mem[BIG_AT + i]);
        CHECK(mem[200] == 77 && mem[4000 + (round & 63)] == 78, "sync %d: last puts %d %d", sync,
              mem[200], mem[4000 + (round & 63)]);
        CHECK(mem[101] == pat(rank, round, 101) && mem[999] == pat(rank, round, 999),
              "sync %d round %d: bytes between the puts changed (%d %d), from rank %d", sync, round,
              mem[101], mem[999], from);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < N; i++)
        mem[i] = pat(rank, round, i);
    MPI_Barrier(MPI_COMM_WORLD);

    /* gets from s: scattered bytes of one page (one span), the same byte twice, a byte of
     * another page, a large get, and a request-based get */
    memset(got, 0, sizeof(got));
    memset(span, 0, sizeof(span));
    memset(gmed, 0, sizeof(gmed));
    memset(gbig, 0, sizeof(gbig));
    if (sync == 6)
        one_group(win, (rank + nprocs - 2) % nprocs, 0);
    open_epoch(win, sync, s);
    for (int i = 0; i < 32; i++)
        MPI_OK(MPI_Get(&span[i], 1, MPI_BYTE, s, 7 + 29 * i, 1, MPI_BYTE, win));
    MPI_OK(MPI_Get(&span[32], 1, MPI_BYTE, s, 7, 1, MPI_BYTE, win));
    MPI_OK(MPI_Get(&span[33], 1, MPI_BYTE, s, 3000, 1, MPI_BYTE, win));
    MPI_OK(MPI_Get(gmed, MED, MPI_BYTE, s, MED_AT, MED, MPI_BYTE, win));
    MPI_OK(MPI_Get(gbig, BIG, MPI_BYTE, s, BIG_AT, BIG, MPI_BYTE, win));
    MPI_OK(MPI_Get(&span[34], 1, MPI_BYTE, s, 4095, 1, MPI_BYTE, win));
    for (int i = 0; i < 64; i++)
        MPI_OK(MPI_Get(&got[i], 1, MPI_BYTE, s, 2048 + i, 1, MPI_BYTE, win));
    /* local completion alone lands the gets */
    if (sync == 1)
        MPI_OK(MPI_Win_flush_local(s, win));
    else if (sync == 7)
        MPI_OK(MPI_Win_flush_local_all(win));
    if (sync == 1 || sync == 7)
        for (int i = 0; i < 64; i++)
            CHECK(got[i] == pat(s, round, 2048 + i),
                  "sync %d round %d: get %d after local "
                  "completion is %d",
                  sync, round, i, got[i]);
    if (sync == 0 || sync == 1 || sync == 2 || sync == 3 || sync == 4 || sync == 7) {
        unsigned char r = 0;
        MPI_OK(MPI_Rget(&r, 1, MPI_BYTE, s, 42, 1, MPI_BYTE, win, &req));
        MPI_OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
        CHECK(r == pat(s, round, 42), "sync %d round %d: Rget got %d", sync, round, r);
    }
    close_epoch(win, sync, s);
    if (sync == 6)
        MPI_OK(MPI_Win_wait(win));
    for (int i = 0; i < 32; i++)
        CHECK(span[i] == pat(s, round, 7 + 29 * i), "sync %d round %d: span byte %d is %d", sync,
              round, i, span[i]);
    CHECK(span[32] == pat(s, round, 7) && span[33] == pat(s, round, 3000) &&
              span[34] == pat(s, round, 4095),
          "sync %d round %d: single gets %d %d %d", sync, round, span[32], span[33], span[34]);
    for (int i = 0; i < 64; i++)
        CHECK(got[i] == pat(s, round, 2048 + i), "sync %d round %d: get %d is %d", sync, round, i,
              got[i]);
    for (int i = 0; i < MED; i += 53)
        CHECK(gmed[i] == pat(s, round, MED_AT + i), "sync %d: held get byte %d is %d", sync, i,
              gmed[i]);
    for (int i = 0; i < BIG; i += 89)
        CHECK(gbig[i] == pat(s, round, BIG_AT + i), "sync %d: big get byte %d is %d", sync, i,
              gbig[i]);
    MPI_Barrier(MPI_COMM_WORLD);
}

/* One put of many pieces, each small enough to be held but more data in all than the held
 * buffer takes (it overran the buffer), after a small held put; then a get of them back. */
#define PIECE  16384
#define PIECES 32
static void many_pieces(void)
{
    int t = (rank + 1) % nprocs, nb[] = {5, 8, PIECES};
    size_t wbytes = (size_t)2 * PIECE * PIECES;
    unsigned char *wmem = malloc(wbytes), *src = malloc((size_t)PIECE * PIECES),
                  *back = malloc((size_t)PIECE * PIECES), one = 99;
    MPI_Datatype vec;
    MPI_Win win;

    memset(wmem, 0, wbytes);
    MPI_OK(MPI_Win_create(wmem, (MPI_Aint)wbytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    for (int k = 0; k < 3; k++) {
        MPI_Type_vector(nb[k], PIECE, 2 * PIECE, MPI_BYTE, &vec);
        MPI_Type_commit(&vec);
        for (int i = 0; i < nb[k] * PIECE; i++)
            src[i] = (unsigned char)(rank * 7 + k * 3 + i % 251);
        MPI_OK(MPI_Win_lock(MPI_LOCK_SHARED, t, 0, win));
        MPI_OK(MPI_Put(&one, 1, MPI_BYTE, t, PIECE, 1, MPI_BYTE, win));
        MPI_OK(MPI_Put(src, nb[k] * PIECE, MPI_BYTE, t, 0, 1, vec, win));
        MPI_OK(MPI_Win_flush(t, win));
        memset(back, 0, (size_t)nb[k] * PIECE);
        MPI_OK(MPI_Get(back, nb[k] * PIECE, MPI_BYTE, t, 0, 1, vec, win));
        MPI_OK(MPI_Win_unlock(t, win));
        MPI_Type_free(&vec);
        int bad = 0;
        for (int i = 0; i < nb[k] * PIECE; i++)
            bad += back[i] != src[i];
        CHECK(bad == 0, "%d pieces of %d bytes: %d bytes read back wrong", nb[k], PIECE, bad);
        MPI_Barrier(MPI_COMM_WORLD);
        int from = (rank + nprocs - 1) % nprocs;
        bad = 0;
        for (int i = 0; i < nb[k] * PIECE; i++)
            bad += wmem[(i / PIECE) * 2 * PIECE + i % PIECE] !=
                   (unsigned char)(from * 7 + k * 3 + i % 251);
        CHECK(bad == 0 && wmem[PIECE] == 99, "%d pieces from rank %d: %d bytes wrong, gap %d",
              nb[k], from, bad, wmem[PIECE]);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    MPI_OK(MPI_Win_free(&win));
    free(wmem);
    free(src);
    free(back);
}

int main(int argc, char **argv)
{
    MPI_Win win;

    rt_init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    mem = malloc(N); /* not shared memory: peers on this node reach it through CMA */
    MPI_OK(MPI_Win_create(mem, N, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    for (int round = 0; round < 3; round++)
        for (int sync = 0; sync < SYNC; sync++)
            round_of(win, sync, round);
    MPI_OK(MPI_Win_free(&win));
    free(mem);
    many_pieces();
    return rt_finish("cma_held");
}
