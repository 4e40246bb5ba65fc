/*
 * dynamic - MPI_Win_create_dynamic with several regions attached per rank (malloc small and
 * large, MPI_Alloc_mem, a stack buffer): Put/Get into each region, accesses that leave a
 * region (MPI_ERR_RMA_RANGE), detach then access (MPI_ERR_RMA_RANGE), detach + free +
 * re-attach new memory at possibly the same address (peers must see the new memory),
 * overlapping attach (MPI_ERR_RMA_ATTACH), detach of memory never attached, attach to a
 * non-dynamic window, zero-size attach, and attach/detach while the peers hold lock_all.
 */
#include "rmatest.h"

#include <stdint.h>

#define NREG 4
static const MPI_Aint reglen[NREG] = {40, 100000, 4096, 128};
static const char *regname[NREG] = {"malloc-small", "malloc-large", "alloc_mem", "stack"};

static int rank, nprocs, right, left;
static MPI_Win win;
static char *reg[NREG];
static MPI_Aint *addr; /* addr[r * NREG + k]: region k of rank r */

static char pat(int r, int k, MPI_Aint i) { return (char)(r * 37 + k * 11 + i * 3); }

static void publish(void)
{
    MPI_Aint mine[NREG];

    for (int k = 0; k < NREG; k++)
        MPI_Get_address(reg[k], &mine[k]);
    MPI_Allgather(mine, NREG, MPI_AINT, addr, NREG, MPI_AINT, MPI_COMM_WORLD);
}

static void fill(int k)
{
    for (MPI_Aint i = 0; i < reglen[k]; i++)
        reg[k][i] = pat(rank, k, i);
}

/* Put into the middle of each region of `right`, get it back, check locally after. */
static void access_all(const char *when)
{
    char src[64], got[64];

    MPI_Barrier(MPI_COMM_WORLD);
    MPI_OK(MPI_Win_lock_all(0, win));
    for (int k = 0; k < NREG; k++) {
        MPI_Aint n = reglen[k] < 64 ? reglen[k] - 8 : 48, at = addr[right * NREG + k] + 4;
        for (int i = 0; i < n; i++)
            src[i] = (char)(100 + rank + k + i);
        MPI_OK(MPI_Put(src, (int)n, MPI_CHAR, right, at, (int)n, MPI_CHAR, win));
        MPI_OK(MPI_Win_flush(right, win));
        memset(got, 0, sizeof(got));
        MPI_OK(MPI_Get(got, (int)n + 8, MPI_CHAR, right, at - 4, (int)n + 8, MPI_CHAR, win));
        MPI_OK(MPI_Win_flush(right, win));
        CHECK(got[0] == pat(right, k, 0) && got[3] == pat(right, k, 3),
              "%s %s: bytes before the put changed", when, regname[k]);
        CHECK(memcmp(got + 4, src, n) == 0, "%s %s: get after put differs", when, regname[k]);
        CHECK(got[n + 4] == pat(right, k, n + 4) && got[n + 7] == pat(right, k, n + 7),
              "%s %s: bytes after the put changed", when, regname[k]);
    }
    MPI_OK(MPI_Win_unlock_all(win));
    MPI_Barrier(MPI_COMM_WORLD);
    for (int k = 0; k < NREG; k++) {
        MPI_Aint n = reglen[k] < 64 ? reglen[k] - 8 : 48;
        int bad = 0;
        for (MPI_Aint i = 0; i < reglen[k]; i++) {
            char want = i >= 4 && i < 4 + n ? (char)(100 + left + k + (i - 4)) : pat(rank, k, i);
            if (reg[k][i] != want)
                bad++;
        }
        CHECK(bad == 0, "%s %s: %d bytes of the local region wrong", when, regname[k], bad);
        fill(k);
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

static void ranges(void)
{
    char buf[16] = {0};

    MPI_OK(MPI_Win_lock_all(0, win));
    for (int k = 0; k < NREG; k++) {
        MPI_Aint end = addr[right * NREG + k] + reglen[k];
        MPI_ERRCLASS(MPI_Put(buf, 8, MPI_CHAR, right, end - 4, 8, MPI_CHAR, win),
                     MPI_ERR_RMA_RANGE);
        MPI_ERRCLASS(MPI_Get(buf, 8, MPI_CHAR, right, addr[right * NREG + k] - 2, 8, MPI_CHAR,
                             win), MPI_ERR_RMA_RANGE);
    }
    MPI_ERRCLASS(MPI_Put(buf, 4, MPI_CHAR, right, 0, 4, MPI_CHAR, win), MPI_ERR_RMA_RANGE);
    MPI_ERRCLASS(MPI_Put(buf, 4, MPI_CHAR, right, 64, 4, MPI_CHAR, win), MPI_ERR_RMA_RANGE);
    MPI_ERRCLASS(MPI_Get(buf, 4, MPI_CHAR, right, -4096, 4, MPI_CHAR, win), MPI_ERR_RMA_RANGE);
    MPI_OK(MPI_Win_unlock_all(win));
    MPI_Barrier(MPI_COMM_WORLD);
    for (int k = 0; k < NREG; k++) {
        int bad = 0;
        for (MPI_Aint i = 0; i < reglen[k]; i++)
            bad += reg[k][i] != pat(rank, k, i);
        CHECK(bad == 0, "out-of-region accesses changed %d bytes of %s", bad, regname[k]);
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

static void detach_reattach(void)
{
    char buf[8];
    MPI_Aint old_large = addr[right * NREG + 1], old_am = addr[right * NREG + 2];

    /* detach the large and the Alloc_mem region; peers' accesses fail */
    MPI_OK(MPI_Win_detach(win, reg[1]));
    MPI_OK(MPI_Win_detach(win, reg[2]));
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_OK(MPI_Win_lock_all(0, win));
    MPI_ERRCLASS(MPI_Get(buf, 8, MPI_CHAR, right, old_large + 16, 8, MPI_CHAR, win),
                 MPI_ERR_RMA_RANGE);
    MPI_ERRCLASS(MPI_Put(buf, 8, MPI_CHAR, right, old_am, 8, MPI_CHAR, win), MPI_ERR_RMA_RANGE);
    MPI_OK(MPI_Win_unlock_all(win));
    MPI_Barrier(MPI_COMM_WORLD);
    /* free them, get new memory (often at the same address), attach, fill differently */
    free(reg[1]);
    MPI_OK(MPI_Free_mem(reg[2]));
    reg[1] = malloc(reglen[1]);
    MPI_OK(MPI_Alloc_mem(reglen[2], MPI_INFO_NULL, &reg[2]));
    MPI_OK(MPI_Win_attach(win, reg[1], reglen[1]));
    MPI_OK(MPI_Win_attach(win, reg[2], reglen[2]));
    publish();
    for (int k = 1; k <= 2; k++)
        for (MPI_Aint i = 0; i < reglen[k]; i++)
            reg[k][i] = (char)~pat(rank, k, i);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_OK(MPI_Win_lock_all(0, win));
    for (int k = 1; k <= 2; k++) {
        MPI_Aint at = addr[right * NREG + k] + 200;
        MPI_OK(MPI_Get(buf, 8, MPI_CHAR, right, at, 8, MPI_CHAR, win));
        MPI_OK(MPI_Win_flush(right, win));
        CHECK(buf[0] == (char)~pat(right, k, 200) && buf[7] == (char)~pat(right, k, 207),
              "re-attached %s (%s address): stale contents %d, want %d", regname[k],
              addr[right * NREG + k] == (k == 1 ? old_large : old_am) ? "same" : "new",
              buf[0], (char)~pat(right, k, 200));
    }
    MPI_OK(MPI_Win_unlock_all(win));
    MPI_Barrier(MPI_COMM_WORLD);
    fill(1);
    fill(2);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        printf("detach, access, free, re-attach checked\n");
}

static void attach_errors(void)
{
    char other[64];
    MPI_Win cw;

    MPI_ERRCLASS(MPI_Win_attach(win, reg[1], reglen[1]), MPI_ERR_RMA_ATTACH);
    MPI_ERRCLASS(MPI_Win_attach(win, reg[1] + 100, 50), MPI_ERR_RMA_ATTACH);
    MPI_ERRCLASS(MPI_Win_attach(win, reg[1] - 8, 16), MPI_ERR_RMA_ATTACH);
    MPI_ERRCLASS(MPI_Win_attach(win, reg[1] + reglen[1] - 1, 16), MPI_ERR_RMA_ATTACH);
    MPI_ERRCLASS(MPI_Win_detach(win, other), MPI_ERR_RMA_ATTACH);
    MPI_ERRCLASS(MPI_Win_detach(win, reg[1] + 8), MPI_ERR_RMA_ATTACH);
    /* attach of 0 bytes, then detach */
    MPI_OK(MPI_Win_attach(win, other, 0));
    MPI_OK(MPI_Win_detach(win, other));
    /* adjacent (not overlapping) regions are fine */
    MPI_OK(MPI_Win_attach(win, other, 32));
    MPI_OK(MPI_Win_attach(win, other + 32, 32));
    MPI_OK(MPI_Win_detach(win, other + 32));
    MPI_OK(MPI_Win_detach(win, other));
    MPI_ERRCLASS(MPI_Win_detach(win, other), MPI_ERR_RMA_ATTACH);
    /* attach to a window that is not dynamic */
    MPI_OK(MPI_Win_create(other, 64, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &cw));
    MPI_OK(MPI_Win_set_errhandler(cw, MPI_ERRORS_RETURN));
    MPI_ERRCLASS(MPI_Win_attach(cw, reg[0], 8), MPI_ERR_RMA_FLAVOR);
    MPI_ERRCLASS(MPI_Win_detach(cw, other), MPI_ERR_RMA_FLAVOR);
    MPI_OK(MPI_Win_free(&cw));
    if (rank == 0)
        printf("attach/detach errors checked\n");
}

/* Rank 0 attaches and detaches while every rank holds lock_all and reads rank 0. */
static void attach_under_lock_all(void)
{
    char got[16];
    int bad = 0;

    MPI_Barrier(MPI_COMM_WORLD);
    MPI_OK(MPI_Win_lock_all(0, win));
    for (int it = 0; it < 200; it++) {
        if (rank == 0) {
            char *tmp = malloc(256 + it);
            MPI_OK(MPI_Win_attach(win, tmp, 256 + it));
            MPI_OK(MPI_Win_detach(win, tmp));
            free(tmp);
        }
        if (rank != 0 || nprocs == 1) {
            MPI_OK(MPI_Get(got, 16, MPI_CHAR, 0, addr[0 * NREG + 3] + 8, 16, MPI_CHAR, win));
            MPI_OK(MPI_Win_flush(0, win));
            for (int i = 0; i < 16; i++)
                bad += got[i] != pat(0, 3, 8 + i);
        }
    }
    MPI_OK(MPI_Win_unlock_all(win));
    CHECK(bad == 0, "reads during attach/detach: %d wrong bytes", bad);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        printf("attach/detach under peers' lock_all checked\n");
}

int main(int argc, char **argv)
{
    char stackbuf[128];

    rt_init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    right = (rank + 1) % nprocs;
    left = (rank + nprocs - 1) % nprocs;
    addr = malloc(nprocs * NREG * sizeof(*addr));
    reg[0] = malloc(reglen[0]);
    reg[1] = malloc(reglen[1]);
    MPI_OK(MPI_Alloc_mem(reglen[2], MPI_INFO_NULL, &reg[2]));
    reg[3] = stackbuf;
    for (int k = 0; k < NREG; k++)
        fill(k);
    MPI_OK(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    MPI_OK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    for (int k = 0; k < NREG; k++)
        MPI_OK(MPI_Win_attach(win, reg[k], reglen[k]));
    publish();
    access_all("attached");
    ranges();
    if (rank == 0)
        printf("put/get into %d regions per rank and out-of-region accesses checked\n", NREG);
    detach_reattach();
    access_all("re-attached");
    attach_errors();
    attach_under_lock_all();
    for (int k = 0; k < NREG; k++)
        MPI_OK(MPI_Win_detach(win, reg[k]));
    MPI_OK(MPI_Win_free(&win));
    /* the memory stays usable (and keeps its contents) after the window is gone */
    for (int k = 0; k < NREG; k++) {
        int bad = 0;
        for (MPI_Aint i = 0; i < reglen[k]; i++)
            bad += reg[k][i] != pat(rank, k, i);
        CHECK(bad == 0, "%s after Win_free: %d bytes changed", regname[k], bad);
    }
    free(reg[0]);
    free(reg[1]);
    MPI_OK(MPI_Free_mem(reg[2]));
    free(addr);
    return rt_finish("dynamic");
}
