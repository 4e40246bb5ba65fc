/*
 * alloc_align - MPI_Alloc_mem honours MPI-4.1's "mpi_minimum_memory_alignment" info key
 * (64 B, a page, 64 KiB, 2 MiB), and the block works as window memory: each rank creates a
 * window on its block, its right neighbour puts a pattern into it and gets it back, and the
 * owner finds the pattern in its memory. A value that is not a power of two is ignored.
 */
#include "rmatest.h"

#include <stdint.h>

static void one(const char *align, size_t want, size_t size)
{
    int rank = rt_rank, np, right;
    MPI_Info info;
    unsigned char *mem = NULL, *src, *back;
    MPI_Win win;

    MPI_Comm_size(MPI_COMM_WORLD, &np);
    right = (rank + 1) % np;
    MPI_Info_create(&info);
    MPI_Info_set(info, "mpi_minimum_memory_alignment", align);
    MPI_OK(MPI_Alloc_mem((MPI_Aint)size, info, &mem));
    MPI_Info_free(&info);
    CHECK(mem != NULL && (uintptr_t)mem % want == 0, "alignment %s: block at %p", align,
          (void *)mem);
    if (mem == NULL)
        return;
    memset(mem, 0, size);
    src = malloc(size);
    back = malloc(size);
    for (size_t i = 0; i < size; i++)
        src[i] = (unsigned char)(i * 7 + (size_t)rank);
    MPI_OK(MPI_Win_create(mem, (MPI_Aint)size, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    MPI_OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win));
    MPI_OK(MPI_Put(src, (int)size, MPI_BYTE, right, 0, (int)size, MPI_BYTE, win));
    MPI_OK(MPI_Win_flush(right, win));
    MPI_OK(MPI_Get(back, (int)size, MPI_BYTE, right, 0, (int)size, MPI_BYTE, win));
    MPI_OK(MPI_Win_unlock(right, win));
    CHECK(memcmp(src, back, size) == 0, "alignment %s: the get read back something else", align);
    MPI_Barrier(MPI_COMM_WORLD);
    {
        int left = (rank + np - 1) % np;
        size_t bad = 0;
        for (size_t i = 0; i < size; i++)
            bad += mem[i] != (unsigned char)(i * 7 + (size_t)left);
        CHECK(bad == 0, "alignment %s: %zu bytes of the left neighbour's put are wrong", align,
              bad);
    }
    MPI_OK(MPI_Win_free(&win));
    MPI_OK(MPI_Free_mem(mem));
    free(src);
    free(back);
}

int main(int argc, char **argv)
{
    rt_init(&argc, &argv);
    one("64", 64, 1000);
    one("4096", 4096, 5000);
    one("65536", 65536, 70000);
    one("2097152", 2097152, 3000);
    one("1000", 1, 128); /* not a power of two: ignored */
    return rt_finish("alloc_align");
}
