/*
 * alloc_align - MPI_Alloc_mem, MPI_Win_allocate and MPI_Win_allocate_shared honour MPI-4.1's
 * "mpi_minimum_memory_alignment" info key (64 B, a page, 64 KiB, 2 MiB), and the memory works
 * as window memory: each rank's right neighbour puts a pattern into it and gets it back, and
 * the owner finds the pattern in its memory. Ranks of one window may ask for different
 * alignments and sizes (odd ones, and 0); in a shared window every rank's memory, as
 * MPI_Win_shared_query gives it, starts at a multiple of what that rank asked for, no two
 * overlap, and a contiguous window stays contiguous where the sizes allow it. A value that is
 * not a power of two is ignored.
 */
#include "rmatest.h"

#include <stdint.h>

static MPI_Info align_info(const char *align, int noncontig)
{
    MPI_Info info;

    MPI_Info_create(&info);
    if (align != NULL)
        MPI_Info_set(info, "mpi_minimum_memory_alignment", align);
    if (noncontig)
        MPI_Info_set(info, "alloc_shared_noncontig", "true");
    return info;
}

/* The right neighbour in comm puts a pattern of its own into this rank's `size` bytes at mem
 * and gets it back; this rank then finds the left neighbour's pattern there. */
static void put_around(MPI_Win win, MPI_Comm comm, unsigned char *mem, size_t size,
                       const char *what)
{
    int rank, np, right, left, rsize;
    unsigned char *src, *back;
    size_t bad = 0;

    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &np);
    right = (rank + 1) % np;
    left = (rank + np - 1) % np;
    MPI_Sendrecv(&(int){(int)size}, 1, MPI_INT, left, 0, &rsize, 1, MPI_INT, right, 0, comm,
                 MPI_STATUS_IGNORE);
    src = malloc((size_t)rsize + 1);
    back = malloc((size_t)rsize + 1);
    for (int i = 0; i < rsize; i++)
        src[i] = (unsigned char)(i * 7 + rank);
    MPI_OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win));
    MPI_OK(MPI_Put(src, rsize, MPI_BYTE, right, 0, rsize, MPI_BYTE, win));
    MPI_OK(MPI_Win_flush(right, win));
    MPI_OK(MPI_Get(back, rsize, MPI_BYTE, right, 0, rsize, MPI_BYTE, win));
    MPI_OK(MPI_Win_unlock(right, win));
    CHECK(memcmp(src, back, (size_t)rsize) == 0, "%s: the get read back something else", what);
    MPI_Barrier(comm);
    for (size_t i = 0; i < size; i++)
        bad += mem[i] != (unsigned char)(i * 7 + (size_t)left);
    CHECK(bad == 0, "%s: %zu bytes of the left neighbour's put are wrong", what, bad);
    free(src);
    free(back);
}

static void one(const char *align, size_t want, size_t size)
{
    MPI_Info info = align_info(align, 0);
    unsigned char *mem = NULL;
    MPI_Win win;
    char what[64];

    snprintf(what, sizeof(what), "MPI_Alloc_mem, alignment %s", align);
    MPI_OK(MPI_Alloc_mem((MPI_Aint)size, info, &mem));
    MPI_Info_free(&info);
    CHECK(mem != NULL && (uintptr_t)mem % want == 0, "%s: block at %p", what, (void *)mem);
    if (mem == NULL)
        return;
    memset(mem, 0, size);
    MPI_OK(MPI_Win_create(mem, (MPI_Aint)size, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    put_around(win, MPI_COMM_WORLD, mem, size, what);
    MPI_OK(MPI_Win_free(&win));
    MPI_OK(MPI_Free_mem(mem));
}

/* The alignment a value of the key promises: itself when a power of two, else none. */
static size_t promised(const char *align)
{
    size_t a = align != NULL ? strtoul(align, NULL, 10) : 1;

    return a != 0 && (a & (a - 1)) == 0 ? a : 1;
}

/* MPI_Win_allocate (kind 0), or MPI_Win_allocate_shared on the node's ranks, contiguous
 * (1) or not (2). Rank r asks for aligns[r % 3] (NULL: nothing) and size sizes[r % 4]. */
static void win_one(int kind, const char *const aligns[3], const size_t sizes[4])
{
    MPI_Comm comm = MPI_COMM_WORLD;
    int rank, np;
    const char *align;
    size_t want, size;
    unsigned char *mem = NULL;
    MPI_Info info;
    MPI_Win win;
    char what[96];

    if (kind != 0)
        MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &comm);
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &np);
    align = aligns[rank % 3];
    want = promised(align);
    size = sizes[rank % 4];
    snprintf(what, sizeof(what), "%s, alignment %s, %zu bytes",
             kind == 0   ? "MPI_Win_allocate"
             : kind == 1 ? "MPI_Win_allocate_shared"
                         : "noncontiguous shared",
             align != NULL ? align : "none", size);
    info = align_info(align, kind == 2);
    if (kind == 0)
        MPI_OK(MPI_Win_allocate((MPI_Aint)size, 1, info, comm, &mem, &win));
    else
        MPI_OK(MPI_Win_allocate_shared((MPI_Aint)size, 1, info, comm, &mem, &win));
    MPI_Info_free(&info);
    CHECK(size == 0 || (uintptr_t)mem % want == 0, "%s: memory at %p", what, (void *)mem);
    memset(mem, 0, size);
    if (kind != 0) { /* every rank's memory, as the others see it */
        uintptr_t prev_end = 0;

        for (int t = 0; t < np; t++) {
            size_t tw = promised(aligns[t % 3]), ts = sizes[t % 4];
            MPI_Aint qs;
            int du;
            unsigned char *tb;

            MPI_OK(MPI_Win_shared_query(win, t, &qs, &du, &tb));
            CHECK(qs == (MPI_Aint)ts, "%s: rank %d's size %ld", what, t, (long)qs);
            if (ts == 0)
                continue;
            CHECK((uintptr_t)tb % tw == 0, "%s: rank %d's memory at %p", what, t, (void *)tb);
            CHECK((uintptr_t)tb >= prev_end, "%s: rank %d's memory overlaps the one before", what,
                  t);
            if (kind == 1 && prev_end != 0 && prev_end % tw == 0)
                CHECK((uintptr_t)tb == prev_end,
                      "%s: rank %d's memory is %ld bytes past the "
                      "one before, in a contiguous window whose sizes need no padding",
                      what, t, (long)((uintptr_t)tb - prev_end));
            prev_end = (uintptr_t)tb + ts;
        }
    }
    MPI_Barrier(comm);
    put_around(win, comm, mem, size, what);
    MPI_OK(MPI_Win_free(&win));
    if (kind != 0)
        MPI_Comm_free(&comm);
}

int main(int argc, char **argv)
{
    rt_init(&argc, &argv);
    one("64", 64, 1000);
    one("4096", 4096, 5000);
    one("65536", 65536, 70000);
    one("2097152", 2097152, 3000);
    one("1000", 1, 128); /* not a power of two: ignored */
    for (int kind = 0; kind < 3; kind++) {
        static const char *const mixed[3] = {"64", "2097152", NULL},
                                 *const page[3] = {"4096", "4096", "4096"},
                                 *const big[3] = {"65536", "1000", "8"};
        static const size_t odd[4] = {1000, 37, 0, 70001}, tight[4] = {8192, 4096, 0, 65536};

        win_one(kind, mixed, odd);
        win_one(kind, page, tight);
        win_one(kind, big, odd);
        win_one(kind, big, tight);
    }
    return rt_finish("alloc_align");
}
