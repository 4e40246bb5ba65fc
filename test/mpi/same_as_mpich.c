/*
 * same_as_mpich - a plain MPI program (not linked with librma) whose results must be the same
 * bytes on librma (preloaded) as on MPICH's own RMA. test/runtests runs it both ways
 * (testlist key mpichref=1) and compares the "digest" lines it prints.
 *
 * For an MPI_Win_allocate, an MPI_Win_create and an MPI_Win_create_dynamic window, every
 * rank, in phases whose results do not depend on the order in which ranks' operations land:
 *   A  fence: every rank accumulates into every target with the commutative integer ops
 *      (SUM, PROD, MAX, MIN, BAND, BOR, BXOR, LAND, LOR, LXOR) on 8- to 64-bit types, origin
 *      and target strided (vector types), and MAXLOC/MINLOC on MPI_2INT and MPI_DOUBLE_INT;
 *   B  fence: each origin owns a block of every target: float, double and complex SUM and
 *      PROD, REPLACE through an indexed target type, strided puts, and gets (indexed origin
 *      type) of a region nobody writes in the epoch;
 *   C  exclusive locks taken in turn (rank order, one turn per barrier): Fetch_and_op,
 *      Compare_and_swap, Get_accumulate (SUM, NO_OP, REPLACE) on counters; every fetched
 *      value is kept;
 *   D  lock_all + flush: SUM into every target's counters; MPI_Win_flush_local then reuse;
 *   E  post-start-complete-wait in a ring: a put and an accumulate to the right neighbour.
 * Every rank hashes its window memory and what it fetched (FNV-1a); rank 0 prints one
 * "digest" line per window flavor and phase with every rank's hash. Window memory starts as
 * zeroes and patterns, so padding bytes are deterministic too.
 */
#include <complex.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#define WIN_BYTES 65536
#define NE        16 /* elements per accumulate block */
#define OFF_A     0
#define OFF_B     24576
#define BLK_B     2048 /* bytes of one origin's block in region B (4 ranks at most) */
#define OFF_C     (OFF_B + 4 * BLK_B)
#define OFF_D     (OFF_C + 4096)
#define OFF_E     (OFF_D + 1024)

static int rank, nprocs, failed;

#define OK(call)                                                                                   \
    do {                                                                                           \
        int rc_ = (call);                                                                          \
        if (rc_ != MPI_SUCCESS) {                                                                  \
            char s_[MPI_MAX_ERROR_STRING];                                                         \
            int l_ = 0;                                                                            \
            MPI_Error_string(rc_, s_, &l_);                                                        \
            fprintf(stderr, "[%d] FAIL %s:%d: %s: %s\n", rank, __FILE__, __LINE__, #call, s_);    \
            failed++;                                                                              \
        }                                                                                          \
    } while (0)

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;

    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

/* Prints "digest <flavor> <phase> h0 h1 ..." on rank 0: every rank's hash of its window
 * memory and of its fetched values. */
static void digest(const char *flavor, const char *phase, const char *mem, const void *got,
                   size_t glen)
{
    uint64_t h = fnv(fnv(0xcbf29ce484222325ull, mem, WIN_BYTES), got, glen);
    uint64_t *all = malloc((size_t)nprocs * sizeof(*all));

    MPI_Gather(&h, 1, MPI_UINT64_T, all, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("digest %-8s %s", flavor, phase);
        for (int r = 0; r < nprocs; r++)
            printf(" %016llx", (unsigned long long)all[r]);
        printf("\n");
        fflush(stdout);
    }
    free(all);
}

/* The integer types and ops of phase A. */
static const struct {
    MPI_Datatype dt;
    int size;
} itypes[] = {{MPI_INT8_T, 1}, {MPI_UINT16_T, 2}, {MPI_INT32_T, 4}, {MPI_UINT32_T, 4},
              {MPI_INT64_T, 8}};
#define NITYPES ((int)(sizeof(itypes) / sizeof(itypes[0])))

static MPI_Op iops(int k)
{
    const MPI_Op ops[] = {MPI_SUM, MPI_PROD, MPI_MAX,  MPI_MIN, MPI_BAND,
                          MPI_BOR, MPI_BXOR, MPI_LAND, MPI_LOR, MPI_LXOR};
    return ops[k];
}
#define NIOPS 10

/* Element i of origin r's data for block k, as an integer (truncated to the type). */
static long long ival(int r, int k, int i)
{
    return (long long)((r + 1) * 37 + k * 11 + i * 5) % 7 + ((i + r) % 3 == 0 ? 0 : 1) * (i % 5);
}

static void store_int(char *p, int size, long long v)
{
    int8_t a = (int8_t)v;
    int16_t b = (int16_t)v;
    int32_t c = (int32_t)v;
    int64_t d = v;

    memcpy(p, size == 1 ? (void *)&a : size == 2 ? (void *)&b : size == 4 ? (void *)&c : (void *)&d,
           (size_t)size);
}

/* bases[t]: target t's displacement of its window's first byte (0 but for dynamic windows) */
static void phase_a(MPI_Win win, const MPI_Aint *bases)
{
    char buf[2 * NE * 8];

    MPI_Win_fence(0, win);
    for (int t = 0; t < nprocs; t++)
        for (int ti = 0; ti < NITYPES; ti++)
            for (int o = 0; o < NIOPS; o++) {
                int sz = itypes[ti].size, k = ti * NIOPS + o;
                MPI_Datatype vec;
                /* origin: every other of 2*NE elements; target: NE elements, every other,
                 * odd ones from the second call */
                MPI_Type_vector(NE / 2, 1, 2, itypes[ti].dt, &vec);
                MPI_Type_commit(&vec);
                memset(buf, 0, sizeof(buf));
                for (int i = 0; i < NE; i++)
                    store_int(buf + (size_t)(2 * i) * (size_t)sz, sz, ival(rank, k, i));
                MPI_Aint disp = bases[t] + OFF_A + (MPI_Aint)((ti * NIOPS + o) * NE * 8);
                OK(MPI_Accumulate(buf, 1, vec, t, disp, 1, vec, iops(o), win));
                OK(MPI_Accumulate(buf + (size_t)NE * (size_t)sz, 1, vec, t, disp + sz, 1, vec,
                                  iops(o), win));
                MPI_Type_free(&vec);
            }
    /* MAXLOC / MINLOC */
    for (int t = 0; t < nprocs; t++) {
        struct {
            int v, l;
        } p2[NE];
        struct {
            double v;
            int l;
        } pd[NE];
        memset(pd, 0, sizeof(pd));
        for (int i = 0; i < NE; i++) {
            p2[i].v = (int)ival(rank, 3, i);
            p2[i].l = rank;
            pd[i].v = (double)ival(rank, 5, i) * 0.5;
            pd[i].l = nprocs - rank;
        }
        MPI_Aint d = bases[t] + OFF_A + (MPI_Aint)(NITYPES * NIOPS * NE * 8);
        OK(MPI_Accumulate(p2, NE, MPI_2INT, t, d, NE, MPI_2INT, MPI_MAXLOC, win));
        OK(MPI_Accumulate(pd, NE, MPI_DOUBLE_INT, t, d + 512, NE, MPI_DOUBLE_INT, MPI_MINLOC,
                          win));
    }
    MPI_Win_fence(0, win);
}

static void phase_b(MPI_Win win, const MPI_Aint *bases, char *got)
{
    float f[NE];
    double d[NE];
    double complex z[NE];
    int rep[NE], lens[4] = {1, 3, 2, 4}, displs[4] = {0, 2, 7, 11};
    MPI_Datatype idx, vec, oidx;

    for (int i = 0; i < NE; i++) {
        f[i] = (float)(i + rank) * 0.75f;
        d[i] = (double)(i * 3 + rank) * 0.125;
        z[i] = (double)(i - rank) + 0.5 * I * (double)(i + 1);
        rep[i] = rank * 1000 + i;
    }
    MPI_Type_indexed(4, lens, displs, MPI_INT, &idx);
    MPI_Type_commit(&idx);
    MPI_Type_vector(NE / 2, 2, 4, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    MPI_Type_indexed(4, lens, displs, MPI_DOUBLE, &oidx);
    MPI_Type_commit(&oidx);
    MPI_Win_fence(0, win);
    for (int t = 0; t < nprocs; t++) {
        MPI_Aint b = bases[t] + OFF_B + (MPI_Aint)rank * BLK_B;
        OK(MPI_Accumulate(f, NE, MPI_FLOAT, t, b, NE, MPI_FLOAT, MPI_SUM, win));
        OK(MPI_Accumulate(d, NE, MPI_DOUBLE, t, b + 64, NE, MPI_DOUBLE, MPI_PROD, win));
        OK(MPI_Accumulate(z, NE, MPI_C_DOUBLE_COMPLEX, t, b + 192, NE, MPI_C_DOUBLE_COMPLEX,
                          MPI_PROD, win));
        OK(MPI_Accumulate(z, NE, MPI_C_DOUBLE_COMPLEX, t, b + 448, NE, MPI_C_DOUBLE_COMPLEX,
                          MPI_SUM, win));
        OK(MPI_Accumulate(rep, 10, MPI_INT, t, b + 704, 1, idx, MPI_REPLACE, win));
        OK(MPI_Put(rep, NE, MPI_INT, t, b + 800, 1, vec, win));
        /* gets from region C, which nobody writes in this epoch */
        OK(MPI_Get(got + (size_t)t * 256, 1, oidx, t, bases[t] + OFF_C + 8 * rank, 10, MPI_DOUBLE,
                   win));
    }
    MPI_Win_fence(0, win);
    MPI_Type_free(&idx);
    MPI_Type_free(&vec);
    MPI_Type_free(&oidx);
}

static void phase_c(MPI_Win win, const MPI_Aint *bases, int64_t *got)
{
    int n = 0;

    for (int turn = 0; turn < nprocs; turn++) {
        if (turn == rank)
            for (int t = 0; t < nprocs; t++) {
                int64_t one = rank + 1, cmp, swp = 100 + rank, v4[4] = {rank, -rank, 7, rank * rank};
                MPI_Aint d = bases[t] + OFF_D;
                OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, t, 0, win));
                OK(MPI_Fetch_and_op(&one, &got[n++], MPI_INT64_T, t, d, MPI_SUM, win));
                OK(MPI_Win_flush(t, win));
                cmp = got[n - 1] + one;
                OK(MPI_Compare_and_swap(&swp, &cmp, &got[n++], MPI_INT64_T, t, d, win));
                OK(MPI_Get_accumulate(v4, 4, MPI_INT64_T, &got[n], 4, MPI_INT64_T, t, d + 8, 4,
                                      MPI_INT64_T, MPI_SUM, win));
                n += 4;
                OK(MPI_Get_accumulate(NULL, 0, MPI_INT64_T, &got[n], 4, MPI_INT64_T, t, d + 8, 4,
                                      MPI_INT64_T, MPI_NO_OP, win));
                n += 4;
                OK(MPI_Get_accumulate(v4, 2, MPI_INT64_T, &got[n], 2, MPI_INT64_T, t, d + 48, 2,
                                      MPI_INT64_T, MPI_REPLACE, win));
                n += 2;
                OK(MPI_Win_unlock(t, win));
            }
        else
            n += nprocs * 12;
        MPI_Barrier(MPI_COMM_WORLD);
    }
}

static void phase_d(MPI_Win win, const MPI_Aint *bases)
{
    int64_t v[8];

    OK(MPI_Win_lock_all(0, win));
    for (int t = 0; t < nprocs; t++) {
        for (int i = 0; i < 8; i++)
            v[i] = (rank + 1) * (i + 1);
        OK(MPI_Accumulate(v, 8, MPI_INT64_T, t, bases[t] + OFF_D + 128, 8, MPI_INT64_T, MPI_SUM, win));
        OK(MPI_Win_flush_local(t, win));
        for (int i = 0; i < 8; i++) /* the buffer may be reused after flush_local */
            v[i] = -(i + 1);
        OK(MPI_Accumulate(v, 8, MPI_INT64_T, t, bases[t] + OFF_D + 192, 8, MPI_INT64_T, MPI_SUM, win));
        OK(MPI_Win_flush(t, win));
    }
    OK(MPI_Win_unlock_all(win));
    MPI_Barrier(MPI_COMM_WORLD);
}

static void phase_e(MPI_Win win, const MPI_Aint *bases)
{
    int right = (rank + 1) % nprocs, left = (rank + nprocs - 1) % nprocs, v[8];
    MPI_Group world, gl, gr;

    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Group_incl(world, 1, &left, &gl);
    MPI_Group_incl(world, 1, &right, &gr);
    for (int i = 0; i < 8; i++)
        v[i] = rank * 8 + i;
    OK(MPI_Win_post(gl, 0, win));
    OK(MPI_Win_start(gr, 0, win));
    OK(MPI_Put(v, 8, MPI_INT, right, bases[right] + OFF_E, 8, MPI_INT, win));
    OK(MPI_Accumulate(v, 8, MPI_INT, right, bases[right] + OFF_E + 64, 8, MPI_INT, MPI_BXOR, win));
    OK(MPI_Win_complete(win));
    OK(MPI_Win_wait(win));
    MPI_Group_free(&gl);
    MPI_Group_free(&gr);
    MPI_Group_free(&world);
}

static void run(int flavor)
{
    const char *fname = flavor == 0 ? "allocate" : flavor == 1 ? "create" : "dynamic";
    char *mem = NULL, getb[4 * 256];
    int64_t fetched[4 * 4 * 12];
    MPI_Aint base = 0, *bases = malloc((size_t)nprocs * sizeof(*bases));
    MPI_Win win;

    if (flavor == 0) {
        MPI_Win_allocate(WIN_BYTES, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win);
    } else if (flavor == 1) {
        MPI_Alloc_mem(WIN_BYTES, MPI_INFO_NULL, &mem);
        MPI_Win_create(mem, WIN_BYTES, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    } else {
        mem = malloc(WIN_BYTES);
        MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win);
        MPI_Win_attach(win, mem, WIN_BYTES);
        MPI_Get_address(mem, &base);
    }
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    /* zeroes; where an op would leave zeroes as they are, a start that it changes: ones for
     * PROD and LAND, 100 for MIN, all bits for BAND, a large value for MINLOC; a pattern in
     * region C */
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win);
    memset(mem, 0, WIN_BYTES);
    for (int ti = 0; ti < NITYPES; ti++)
        for (int i = 0; i < NE; i++) {
            const struct {
                int op;
                long long v;
            } start[] = {{1, 1}, {7, 1}, {3, 100}, {4, -1}};
            for (int k = 0; k < 4; k++)
                store_int(mem + OFF_A + (ti * NIOPS + start[k].op) * NE * 8 + i * itypes[ti].size,
                          itypes[ti].size, start[k].v);
        }
    for (int i = 0; i < NE; i++) {
        struct {
            double v;
            int l;
        } big = {1e9 - i, 99};
        memcpy(mem + OFF_A + NITYPES * NIOPS * NE * 8 + 512 + i * 16, &big.v, 8);
        memcpy(mem + OFF_A + NITYPES * NIOPS * NE * 8 + 512 + i * 16 + 8, &big.l, 4);
    }
    for (int r = 0; r < 4; r++)
        for (int i = 0; i < NE; i++) {
            double one = 1.0;
            memcpy(mem + OFF_B + r * BLK_B + 64 + i * 8, &one, 8);
        }
    for (int i = 0; i < 512; i++) {
        double v = rank * 100.0 + i * 0.25;
        memcpy(mem + OFF_C + i * 8, &v, 8);
    }
    MPI_Win_unlock(rank, win);
    MPI_Allgather(&base, 1, MPI_AINT, bases, 1, MPI_AINT, MPI_COMM_WORLD);
    memset(getb, 0, sizeof(getb));
    memset(fetched, 0, sizeof(fetched));
    MPI_Barrier(MPI_COMM_WORLD);

#define SYNCED(phase, call, got, glen)                                                             \
    do {                                                                                           \
        call;                                                                                      \
        MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win);                                               \
        digest(fname, phase, mem, got, glen);                                                      \
        MPI_Win_unlock(rank, win);                                                                 \
        MPI_Barrier(MPI_COMM_WORLD); /* nobody's next phase lands before every digest */          \
    } while (0)

    SYNCED("A", phase_a(win, bases), NULL, 0);
    SYNCED("B", phase_b(win, bases, getb), getb, sizeof(getb));
    SYNCED("C", phase_c(win, bases, fetched), fetched, sizeof(fetched));
    if (getenv("SAME_DUMP") != NULL) { /* what phase C fetched and left, to find a difference */
        for (int i = 0; i < nprocs * nprocs * 12; i++)
            printf("[%d] %s fetched[%d] = %lld\n", rank, fname, i, (long long)fetched[i]);
        for (int i = 0; i < 8; i++)
            printf("[%d] %s D[%d] = %lld\n", rank, fname, i,
                   (long long)((int64_t *)(mem + OFF_D))[i]);
    }
    SYNCED("D", phase_d(win, bases), NULL, 0);
    SYNCED("E", phase_e(win, bases), NULL, 0);
    MPI_Win_free(&win);
    if (flavor == 1)
        MPI_Free_mem(mem);
    else if (flavor == 2)
        free(mem);
    free(bases);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (nprocs > 4) {
        if (rank == 0)
            fprintf(stderr, "same_as_mpich: at most 4 ranks\n");
        MPI_Finalize();
        return 1;
    }
    for (int flavor = 0; flavor < 3; flavor++)
        run(flavor);
    MPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("same_as_mpich: %s\n", failed ? "calls failed" : "every call succeeded");
    MPI_Finalize();
    return failed != 0;
}
