/*
 * aggregate.c - small puts held back and sent together (RMA_AGGREGATE) land whole, in every
 * synchronization mode and window flavor: every rank tiles a slot of every rank's window
 * with puts of mixed sizes in a shuffled order (small ones are aggregated off node, large
 * ones go by RDMA), crossing the request's byte and record limits, with gets from a
 * read-only area in between and a small derived-type put; then checks every byte of its
 * own window after the epoch, and the gets' bytes.
 */
#include "rmatest.h"

#include <stdint.h>

#define SLOT  (48 * 1024) /* bytes each origin writes at each target per round */
#define RO    4096        /* read-only area after the slots */
#define NGETS 16

enum { M_LOCK, M_LOCK_ALL, M_FENCE, M_PSCW, M_FLUSH_LOCAL, M_NMODES };
static const char *mode_name[] = {"lock", "lock_all+flush", "fence", "pscw", "flush_local"};

static int me, np;

static unsigned char val(int round, int origin, size_t off)
{
    return (unsigned char)(round * 131 + origin * 31 + off * 7 + 1);
}

static unsigned char ro_val(int target, size_t off)
{
    return (unsigned char)(target * 17 + off * 3 + 5);
}

typedef struct piece {
    size_t off, len;
} piece_t;

/* Tiles [0, SLOT) with pieces: one shuffled mix of sizes 1..2600 plus some of 6000 bytes,
 * then runs of 8-byte pieces backwards (one record of negative stride) and of alternating
 * 1- and 2-byte pieces (a record each: more than a request holds). */
static int tile(piece_t *p, unsigned seed)
{
    size_t off = 0;
    int n = 0;

    while (off < SLOT / 2) {
        size_t len = (seed = seed * 1103515245u + 12345u) >> 16;
        len = len % 7 == 0 ? 6000 : 1 + len % 2600;
        if (off + len > SLOT / 2)
            len = SLOT / 2 - off;
        p[n++] = (piece_t){off, len};
        off += len;
    }
    for (int i = n - 1; i > 0; i--) { /* shuffle */
        int j = (int)((seed = seed * 1103515245u + 12345u) >> 16) % (i + 1);
        piece_t t = p[i];
        p[i] = p[j];
        p[j] = t;
    }
    for (size_t o = SLOT / 2 + 8192; o > SLOT / 2; o -= 8)
        p[n++] = (piece_t){o - 8, 8};
    for (off = SLOT / 2 + 8192; off < SLOT;) {
        size_t len = (n & 1) + 1;
        if (off + len > SLOT)
            len = SLOT - off;
        p[n++] = (piece_t){off, len};
        off += len;
    }
    return n;
}

static void run(const char *flavor, MPI_Win win, char *mem, MPI_Aint *bases, int round, int mode)
{
    static piece_t pieces[SLOT];
    unsigned char *src = malloc(SLOT), got[NGETS][16];
    MPI_Datatype vec;
    MPI_Group world_group;
    int gets = 0, gt[NGETS];

    for (size_t i = 0; i < SLOT; i++)
        src[i] = val(round, me, i);
    memset(got, 0, sizeof(got));
    memset(mem, 0, (size_t)np * SLOT);
    MPI_Type_vector(4, 16, 64, MPI_BYTE, &vec);
    MPI_Type_commit(&vec);
    MPI_Comm_group(MPI_COMM_WORLD, &world_group);
    MPI_Barrier(MPI_COMM_WORLD);

    if (mode == M_LOCK_ALL || mode == M_FLUSH_LOCAL)
        MPI_OK(MPI_Win_lock_all(0, win));
    else if (mode == M_FENCE)
        MPI_OK(MPI_Win_fence(0, win));
    else if (mode == M_PSCW) {
        MPI_OK(MPI_Win_post(world_group, 0, win));
        MPI_OK(MPI_Win_start(world_group, 0, win));
    }
    for (int k = 0; k < np; k++) {
        int t = (me + k) % np, n = tile(pieces, (unsigned)(round * 7 + me * 3 + t));
        MPI_Aint slot = bases[t] + (MPI_Aint)me * SLOT;
        if (mode == M_LOCK)
            MPI_OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, t, 0, win));
        for (int i = 0; i < n; i++) {
            /* the derived-type put writes bytes 0..255 of the slot's second half, in four
             * 16-byte pieces; the plain puts leave those bytes to it */
            size_t lo = pieces[i].off, hi = lo + pieces[i].len;
            if (hi > SLOT / 2 + 8192 - 256 && lo < SLOT / 2 + 8192)
                continue;
            MPI_OK(MPI_Put(src + lo, (int)pieces[i].len, MPI_BYTE, t, slot + (MPI_Aint)lo,
                           (int)pieces[i].len, MPI_BYTE, win));
            if (i % 97 == 13 && gets < NGETS) {
                gt[gets] = t;
                MPI_OK(MPI_Get(got[gets++], 16, MPI_BYTE, t, bases[t] + (MPI_Aint)np * SLOT + t,
                               16, MPI_BYTE, win));
            }
        }
        for (int b = 0; b < 4; b++) /* the vector's holes: plain puts */
            MPI_OK(MPI_Put(src + SLOT / 2 + 8192 - 256 + 64 * b + 16, 48, MPI_BYTE, t,
                           slot + SLOT / 2 + 8192 - 256 + 64 * b + 16, 48, MPI_BYTE, win));
        MPI_OK(MPI_Put(src + SLOT / 2 + 8192 - 256, 1, vec, t, slot + SLOT / 2 + 8192 - 256, 1,
                       vec, win));
        if (mode == M_LOCK)
            MPI_OK(MPI_Win_unlock(t, win));
        else if (mode == M_LOCK_ALL && k % 2 == 0)
            MPI_OK(MPI_Win_flush(t, win));
        else if (mode == M_FLUSH_LOCAL)
            MPI_OK(MPI_Win_flush_local(t, win));
    }
    if (mode == M_LOCK_ALL || mode == M_FLUSH_LOCAL) {
        MPI_OK(MPI_Win_flush_all(win));
        MPI_OK(MPI_Win_unlock_all(win));
    } else if (mode == M_FENCE) {
        MPI_OK(MPI_Win_fence(0, win));
    } else if (mode == M_PSCW) {
        MPI_OK(MPI_Win_complete(win));
        MPI_OK(MPI_Win_wait(win));
    }
    MPI_Barrier(MPI_COMM_WORLD);

    for (int o = 0; o < np; o++) {
        int bad = 0;
        size_t first = 0;
        for (size_t i = 0; i < SLOT; i++)
            if ((unsigned char)mem[(size_t)o * SLOT + i] != val(round, o, i) && bad++ == 0)
                first = i;
        CHECK(bad == 0, "%s %s round %d: %d bytes from rank %d wrong, first at %zu", flavor,
              mode_name[mode], round, bad, o, first);
    }
    for (int g = 0; g < gets; g++) {
        int bad = 0;
        for (int b = 0; b < 16; b++)
            bad += got[g][b] != ro_val(gt[g], (size_t)gt[g] + b);
        CHECK(bad == 0, "%s %s round %d: get %d from rank %d fetched %d wrong bytes", flavor,
              mode_name[mode], round, g, gt[g], bad);
    }
    MPI_Group_free(&world_group);
    MPI_Type_free(&vec);
    free(src);
}

int main(int argc, char **argv)
{
    const char *flavors[] = {"create", "allocate", "dynamic"};
    size_t bytes;

    rt_init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    bytes = (size_t)np * SLOT + RO;
    for (int f = 0; f < 3; f++) {
        MPI_Aint *bases = calloc((size_t)np, sizeof(MPI_Aint));
        char *mem = NULL;
        MPI_Win win;
        if (f == 0) {
            mem = malloc(bytes);
            MPI_OK(MPI_Win_create(mem, (MPI_Aint)bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
        } else if (f == 1) {
            MPI_OK(MPI_Win_allocate((MPI_Aint)bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &mem,
                                    &win));
        } else {
            MPI_Aint mine;
            mem = malloc(bytes);
            MPI_OK(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
            MPI_OK(MPI_Win_attach(win, mem, (MPI_Aint)bytes));
            MPI_Get_address(mem, &mine);
            MPI_Allgather(&mine, 1, MPI_AINT, bases, 1, MPI_AINT, MPI_COMM_WORLD);
        }
        for (size_t i = 0; i < RO; i++)
            mem[(size_t)np * SLOT + i] = (char)ro_val(me, i);
        for (int round = 0; round < 2; round++)
            for (int mode = 0; mode < M_NMODES; mode++)
                run(flavors[f], win, mem, bases, round, mode);
        if (f == 2)
            MPI_OK(MPI_Win_detach(win, mem));
        MPI_OK(MPI_Win_free(&win));
        if (f != 1)
            free(mem);
        free(bases);
    }
    return rt_finish("aggregate");
}
