/*
 * moved_memory - MPI_Win_create and attached memory that librma moved onto shared memory
 * (peers' traffic made the owner's agent move it) is the program's own memory again once the
 * last window on it is gone, and memory whose settings a move would lose is never moved:
 *
 *   grow     a malloc'd array moved, its window freed, then grown with realloc (glibc:
 *            mremap) and written past its old end (SIGBUS when it stayed on a segment)
 *   zeroes   MADV_DONTNEED on moved pages after the window's free reads zeros, as private
 *            memory does (glibc's calloc counts on it for trimmed heaps)
 *   released the moved pages' segment is gone once the window is freed: no mapping or
 *            descriptor of it is left, so unmapping the buffer gives its memory back
 *   heap     a small window in the heap, moved and freed: malloc's data around it holds
 *   sparse   a 64 MiB window with one page written stays sparse when it moves
 *   locked   mlock'ed memory is not moved (it would lose the lock), and RMA on it works
 *   data     an initialized global array (.data, a file mapping) works, never moved
 *   dynamic  attached buffers moved, detached and unmapped in turn: the origin keeps no
 *            mapping of the segments of detached regions
 *   freed    an MPI_Alloc_mem block freed while its window lives (erroneous), and memory
 *            at its address under a new window: the new window's puts land there
 *   readonly moved memory the owner made partly read-only: fork() copies it, and after
 *            MPI_Win_free it is private again with its protections (it was left shared)
 *   own uffd the program's own userfaultfd on moved pages at MPI_Win_free: they move back
 *            at the next window's free, once it is gone
 *   settings mlock and madvise settings given to moved pages are kept when they move back;
 *            a child of fork() has private copies of a range given MADV_DONTFORK in part
 *   early    RMAX_Memory_moves called before MPI_Init answers as after it (it read no
 *            environment, and its answer stuck: RMA_CREATE_REMAP=0 was ignored)
 *
 * Each rank owns its memory and drives the move of its right neighbour's. Where librma
 * cannot move memory (no userfaultfd: an ordinary user) nothing moves and the checks of
 * what a move leaves are skipped; RMA on the memory is checked everywhere. A rank alone on
 * its node whose peers UCX reaches through shared memory (RMA_NETMOD_ONLY=1 with UCX's
 * default transports; two simulated nodes, one rank each) moves memory onto a block from
 * UCX instead, and back by another way (doc/protocols.md): the same checks hold, the move
 * required only with MOVED_MEMORY_EXPECT_MOVE set (over tcp nothing moves).
 */
#define _GNU_SOURCE /* mremap */
#include "rma_ext.h"
#include "rmatest.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define KIB 1024L
#define MIB (1024L * 1024)

static int rank, nprocs, right, left, can_move;

char gdata[64 * 1024] __attribute__((aligned(4096))) = {1};

/* The origin's gets and puts to right's window at disp until right's memory is reached
 * directly, for at most 2 s: 1 when it was (moved). Every put writes tag into its long.
 * With ops > 0, at most that many gets and puts; then it only waits for the move. */
static int drive_ops(MPI_Win win, MPI_Aint disp, MPI_Aint len, long tag, int ops)
{
    double t0 = MPI_Wtime();
    int path = RMAX_PATH_CMA;
    long v, put = tag;

    MPI_OK(MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win));
    for (int i = 0; path != RMAX_PATH_DIRECT && path != RMAX_PATH_NETMAP && MPI_Wtime() - t0 < 2 &&
                    (can_move || i < 256);
         i++) {
        if (ops == 0 || i < ops) {
            MPI_OK(MPI_Get(&v, 1, MPI_LONG, right, disp, 1, MPI_LONG, win));
            MPI_OK(
                MPI_Put(&put, 1, MPI_LONG, right, disp + (MPI_Aint)sizeof(long), 1, MPI_LONG, win));
            MPI_OK(MPI_Win_flush(right, win));
        } else {
            usleep(1000);
        }
        if (i % 16 == 15 || (ops > 0 && i >= ops))
            MPI_OK(RMAX_Win_path(win, right, disp, len, &path));
    }
    MPI_OK(MPI_Win_unlock(right, win));
    return path == RMAX_PATH_DIRECT || path == RMAX_PATH_NETMAP;
}

static int drive_move(MPI_Win win, MPI_Aint disp, MPI_Aint len, long tag)
{
    return drive_ops(win, disp, len, tag, 0);
}

/* 1 when some mapping or open descriptor of this process is of inode ino. */
static int inode_held(unsigned long ino)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512];
    int held = 0;
    DIR *d;
    struct dirent *de;

    while (f != NULL && !held && fgets(line, sizeof(line), f)) {
        unsigned long i;
        held = sscanf(line, "%*x-%*x %*s %*x %*s %lu", &i) == 1 && i == ino;
    }
    if (f != NULL)
        fclose(f);
    d = opendir("/proc/self/fd");
    while (d != NULL && !held && (de = readdir(d)) != NULL) {
        char p[300];
        struct stat st;
        snprintf(p, sizeof(p), "/proc/self/fd/%s", de->d_name);
        held = de->d_name[0] != '.' && stat(p, &st) == 0 && st.st_ino == ino;
    }
    if (d != NULL)
        closedir(d);
    return held;
}

/* A field of /proc/self/smaps (kB) for the mapping holding addr; -1 if none. */
static long smaps_kb(const void *addr, const char *field)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    char line[512];
    int in = 0;
    long kb = -1;
    size_t fl = strlen(field);

    while (f != NULL && kb < 0 && fgets(line, sizeof(line), f)) {
        unsigned long s, e;
        if (sscanf(line, "%lx-%lx ", &s, &e) == 2 && strchr(line, '-') < strchr(line, ' ')) {
            in = (uintptr_t)addr >= s && (uintptr_t)addr < e;
            continue;
        }
        if (in && strncmp(line, field, fl) == 0 && line[fl] == ':')
            kb = atol(line + fl + 1);
    }
    if (f != NULL)
        fclose(f);
    return kb;
}

/* KiB of memory behind the mapping that holds addr (the blocks of its file: a memfd, a
 * System V segment), whatever this process has touched of it; -1 when unknown (no
 * /proc/self/map_files, or not a file mapping). */
static long backing_kb(const void *addr)
{
    char perms[8], path[96];
    unsigned long ino, range[2];
    struct stat st;

    if (!rt_mapping_at(addr, perms, &ino, range))
        return -1;
    snprintf(path, sizeof(path), "/proc/self/map_files/%lx-%lx", range[0], range[1]);
    return stat(path, &st) == 0 ? (long)st.st_blocks / 2 : -1;
}

/* Every rank's flag ANDed (the owner's memory moved by its left neighbour's drive). */
static int mine_moved(int drove)
{
    int m = 0;

    MPI_Sendrecv(&drove, 1, MPI_INT, right, 7, &m, 1, MPI_INT, left, 7, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    return m;
}

static void test_grow_zeroes_released(void)
{
    size_t len = MIB;
    long *buf = malloc(len), *pages;
    char perms[8] = "";
    unsigned long ino = 0;
    MPI_Win win;
    int moved, pmoved;

    for (size_t i = 0; i < len / sizeof(long); i++)
        buf[i] = (long)i;
    pages = mmap(NULL, 16 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    memset(pages, 0x5a, 16 * 4096);
    MPI_OK(MPI_Win_create(buf, (MPI_Aint)len, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    moved = mine_moved(drive_move(win, 4096, 64, 1000 + rank));
    CHECK(!can_move || moved, "grow: the array was not moved in 2 s");
    if (moved && rt_mapping_of(buf + 4096 / sizeof(long), perms, &ino))
        CHECK(perms[3] == 's', "grow: moved memory is mapped %s", perms);
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(buf[4096 / sizeof(long) + 1] == 1000 + left, "grow: the last put wrote %ld",
          buf[4096 / sizeof(long) + 1]);
    buf[4096 / sizeof(long) + 1] = 4096 / sizeof(long) + 1;
    MPI_OK(MPI_Win_free(&win));

    /* the program's own memory again: private, and growable */
    if (moved && rt_mapping_of(buf + 4096 / sizeof(long), perms, &ino)) {
        CHECK(perms[3] == 'p', "released: after MPI_Win_free the array is mapped %s", perms);
        CHECK(!inode_held(ino) || perms[3] == 'p', "released: its segment is still held");
    }
    long *grown = realloc(buf, 4 * len);
    CHECK(grown != NULL, "grow: realloc failed");
    if (grown != NULL) {
        size_t bad = 0;
        for (size_t i = len / sizeof(long); i < 4 * len / sizeof(long); i++)
            grown[i] = (long)i; /* SIGBUS where the array stayed on a segment */
        for (size_t i = 0; i < 4 * len / sizeof(long); i++)
            bad += grown[i] != (long)i;
        CHECK(bad == 0, "grow: %zu longs of the grown array wrong", bad);
        free(grown);
    }

    /* pages moved, window freed, MADV_DONTNEED: zeros */
    MPI_OK(MPI_Win_create(pages, 16 * 4096, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    pmoved = mine_moved(drive_move(win, 0, 64, 7));
    CHECK(!can_move || pmoved, "zeroes: the pages were not moved in 2 s");
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_OK(MPI_Win_free(&win));
    CHECK(madvise(pages, 16 * 4096, MADV_DONTNEED) == 0, "zeroes: madvise failed");
    size_t nonzero = 0;
    for (size_t i = 0; i < 16 * 4096 / sizeof(long); i++)
        nonzero += pages[i] != 0;
    CHECK(nonzero == 0, "zeroes: %zu longs not zero after MADV_DONTNEED (moved %d)", nonzero,
          pmoved);
    munmap(pages, 16 * 4096);
    if (ino != 0 && moved)
        CHECK(!inode_held(ino), "released: the segment the array moved onto is still held");
}

/* A small window in the heap: its page holds malloc's own data too, which the moves back
 * and forth must keep, and which the mover must not write while writers wait. */
static void test_heap(void)
{
    long *small = calloc(1, 3000), *more[64];
    MPI_Win win;
    int moved;

    for (int i = 0; i < 64; i++)
        more[i] = malloc(48);
    MPI_OK(MPI_Win_create(small, 3000, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    moved = mine_moved(drive_move(win, 0, 64, 17));
    CHECK(!can_move || moved, "heap: the window was not moved in 2 s");
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_OK(MPI_Win_free(&win));
    CHECK(small[1] == 17, "heap: the put wrote %ld", small[1]);
    for (int i = 0; i < 64; i++) { /* malloc's data around the window still holds */
        free(more[i]);
        more[i] = calloc(1, 48 + i);
        CHECK(more[i][0] == 0, "heap: calloc gave non-zero memory");
    }
    for (int i = 0; i < 64; i++)
        free(more[i]);
    free(small);
}

static void test_sparse(void)
{
    size_t len = 64 * MIB;
    char *buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    MPI_Win win;
    int moved;

    buf[5 * MIB] = 3;
    MPI_OK(MPI_Win_create(buf, (MPI_Aint)len, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    moved = mine_moved(drive_move(win, 5 * MIB, 64, 9));
    CHECK(!can_move || moved, "sparse: the window was not moved in 2 s");
    if (moved) {
        long rss = smaps_kb(buf, "Rss"), kb = backing_kb(buf);
        CHECK(rss >= 0 && rss < 4096, "sparse: moved, the 64 MiB window is %ld KiB resident", rss);
        /* what the segment holds: a block from UCX got every page copied (following
         * /proc/self/map_files takes CAP_CHECKPOINT_RESTORE: skipped without it) */
        if (kb < 0 && rank == 0)
            printf("sparse: the segment's size is not readable here; not checked\n");
        CHECK(kb < 4096, "sparse: moved, the 64 MiB window's segment holds %ld KiB", kb);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(buf[5 * MIB] == 3 && ((long *)(buf + 5 * MIB))[1] == 9 && buf[0] == 0 &&
              buf[len - 1] == 0,
          "sparse: contents %d %ld %d %d", buf[5 * MIB], ((long *)(buf + 5 * MIB))[1], buf[0],
          buf[len - 1]);
    MPI_OK(MPI_Win_free(&win));
    munmap(buf, len);
}

static void test_locked_and_data(void)
{
    size_t len = 16 * 4096;
    long *buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    int locked = mlock(buf, len) == 0; /* may be refused by RLIMIT_MEMLOCK */
    MPI_Win win;

    memset(buf, 0, len);
    MPI_OK(MPI_Win_create(buf, (MPI_Aint)len, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    int moved = mine_moved(drive_move(win, 0, 64, 11));
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(buf[1] == 11, "locked: the put wrote %ld", buf[1]);
    if (locked) {
        CHECK(!moved, "locked: mlock'ed memory was moved");
        CHECK(smaps_kb(buf, "Locked") > 0, "locked: the memory is no longer locked");
    }
    MPI_OK(MPI_Win_free(&win));
    munmap(buf, len);

    MPI_OK(MPI_Win_create(gdata, sizeof(gdata), 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    moved = mine_moved(drive_move(win, 4096, 64, 13));
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(!moved, ".data: an initialized global array was moved");
    CHECK(((long *)(gdata + 4096))[1] == 13 && gdata[0] == 1, ".data: contents %ld %d",
          ((long *)(gdata + 4096))[1], gdata[0]);
    MPI_OK(MPI_Win_free(&win));
}

/* Mappings of this process that are shared (rw-s) and 4 MiB long. */
static int shared_4m_mappings(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512];
    int n = 0;

    while (f != NULL && fgets(line, sizeof(line), f)) {
        unsigned long s, e;
        char p[8];
        if (sscanf(line, "%lx-%lx %7s", &s, &e, p) == 3 && p[3] == 's' && e - s == 4 * MIB)
            n++;
    }
    if (f != NULL)
        fclose(f);
    return n;
}

static void test_dynamic(void)
{
    MPI_Win win;
    int before, moves = 0;

    MPI_OK(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    before = shared_4m_mappings();
    for (int r = 0; r < 8; r++) {
        long *buf = mmap(NULL, 4 * MIB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        MPI_Aint at, rat;
        buf[0] = r;
        MPI_OK(MPI_Win_attach(win, buf, 4 * MIB));
        MPI_Get_address(buf, &at);
        MPI_Sendrecv(&at, 1, MPI_AINT, left, 3, &rat, 1, MPI_AINT, right, 3, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        /* as much traffic for each region as pays for the first one's move, with room */
        moves += mine_moved(drive_ops(win, rat, 64, 100 + r, 3000));
        MPI_Barrier(MPI_COMM_WORLD);
        CHECK(buf[1] == 100 + r, "dynamic: round %d: the put wrote %ld", r, buf[1]);
        MPI_OK(MPI_Win_detach(win, buf));
        MPI_Barrier(MPI_COMM_WORLD);
        munmap(buf, 4 * MIB);
    }
    /* each region as the first: the traffic an earlier region paid does not count */
    CHECK(!can_move || moves == 8, "dynamic: %d of 8 regions moved", moves);
    /* this rank as the origin: the segments of detached regions are not kept mapped */
    int after = shared_4m_mappings();
    CHECK(after - before <= 1, "dynamic: %d more 4 MiB shared mappings after 8 regions (%d moved)",
          after - before, moves);
    MPI_OK(MPI_Win_free(&win));
}

static void test_freed_block(void)
{
    size_t len = 64 * 4096;
    long *blk, *again, *fresh;
    MPI_Win w1, w2;

    MPI_OK(MPI_Alloc_mem((MPI_Aint)len, MPI_INFO_NULL, &blk));
    MPI_OK(MPI_Win_create(blk, (MPI_Aint)len, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w1));
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_OK(MPI_Free_mem(blk)); /* erroneous while w1 lives: w1 is not used again */
    again = mmap(blk, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    fresh = again == MAP_FAILED ? malloc(len) : again;
    memset(fresh, 0, len);
    MPI_OK(MPI_Win_create(fresh, (MPI_Aint)len, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w2));
    long v = 42 + rank;
    MPI_OK(MPI_Win_lock(MPI_LOCK_SHARED, right, 0, w2));
    MPI_OK(MPI_Put(&v, 1, MPI_LONG, right, 0, 1, MPI_LONG, w2));
    MPI_OK(MPI_Win_unlock(right, w2));
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(fresh[0] == 42 + left, "freed: a put to memory at a freed block's address wrote %ld",
          fresh[0]);
    MPI_OK(MPI_Win_free(&w2));
    MPI_OK(MPI_Win_free(&w1));
    if (again != MAP_FAILED)
        munmap(again, len);
    else
        free(fresh);
}

/* Moved memory the owner made partly read-only (mprotect: a phase in which peers only
 * read it) keeps its protections and stays its own: a child of fork() gets a private copy
 * while the window lives, and after MPI_Win_free, done while it is read-only, it is private
 * memory again, with the same protections. */
static void test_readonly(void)
{
    size_t len = MIB, half = len / 2;
    long *buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    char perms[8] = "";
    unsigned long ino = 0;
    int fds[2], status, moved;
    long v = -1;
    pid_t pid;
    MPI_Win win;

    for (size_t i = 0; i < len / sizeof(long); i++)
        buf[i] = rank * 1000000L + (long)i;
    MPI_OK(MPI_Win_create(buf, (MPI_Aint)len, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    moved = mine_moved(drive_move(win, half, 64, 5));
    CHECK(!can_move || moved, "readonly: the window was not moved in 2 s");
    MPI_Barrier(MPI_COMM_WORLD);
    buf[half / sizeof(long) + 1] = rank * 1000000L + (long)(half / sizeof(long)) + 1; /* the put */
    MPI_OK(MPI_Win_fence(0, win));
    CHECK(mprotect(buf, half, PROT_READ) == 0, "readonly: mprotect failed");
    MPI_OK(MPI_Get(&v, 1, MPI_LONG, right, 77 * sizeof(long), 1, MPI_LONG, win));
    MPI_OK(MPI_Win_fence(0, win));
    CHECK(v == right * 1000000L + 77, "readonly: a get read %ld", v);

    /* fork while the window lives: the child's view is a snapshot */
    CHECK(pipe(fds) == 0, "readonly: pipe failed");
    pid = fork();
    if (pid == 0) {
        char c;
        ssize_t n = read(fds[0], &c, 1);
        _exit(n == 1 && buf[5] == rank * 1000000L + 5 &&
                      buf[half / sizeof(long) + 5] == rank * 1000000L + (long)half / 8 + 5
                  ? 0
                  : 1);
    }
    mprotect(buf, half, PROT_READ | PROT_WRITE);
    buf[5] = -5;
    buf[half / sizeof(long) + 5] = -5;
    mprotect(buf, half, PROT_READ);
    CHECK(write(fds[1], "x", 1) == 1, "readonly: write to the pipe failed");
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
          "readonly: a child of fork() saw its parent's later writes (window live)");
    close(fds[0]);
    close(fds[1]);
    mprotect(buf, half, PROT_READ | PROT_WRITE);
    buf[5] = rank * 1000000L + 5;
    buf[half / sizeof(long) + 5] = rank * 1000000L + (long)half / 8 + 5;
    mprotect(buf, half, PROT_READ);

    /* and the other half in 40 pieces of three protections (more than the 16 a first
     * version's table held): every other page read-only, one page inaccessible */
    for (size_t p = 1; p < 40; p += 2)
        mprotect((char *)buf + half + p * 4096, 4096, PROT_READ);
    mprotect((char *)buf + half + 20 * 4096, 4096, PROT_NONE);
    MPI_OK(MPI_Win_free(&win)); /* half of it read-only */
    if (moved && rt_mapping_of(buf, perms, &ino))
        CHECK(strcmp(perms, "r--p") == 0, "readonly: after MPI_Win_free the read-only half is %s",
              perms);
    if (moved && rt_mapping_of(buf + half / sizeof(long), perms, &ino))
        CHECK(strcmp(perms, "rw-p") == 0, "readonly: after MPI_Win_free the other half is %s",
              perms);
    if (moved && rt_mapping_of((char *)buf + half + 20 * 4096, perms, &ino))
        CHECK(strcmp(perms, "---p") == 0 || strcmp(perms, "---s") == 0,
              "readonly: after MPI_Win_free the inaccessible page is %s", perms);
    if (moved && rt_mapping_of((char *)buf + half + 41 * 4096, perms, &ino))
        CHECK(perms[3] == 'p' || perms[3] == 's',
              "readonly: after MPI_Win_free the pages after the pieces are %s", perms);
    CHECK(mprotect(buf, len, PROT_READ | PROT_WRITE) == 0, "readonly: mprotect failed");
    size_t bad = 0;
    for (size_t i = 0; i < len / sizeof(long); i++)
        bad += buf[i] != rank * 1000000L + (long)i;
    CHECK(bad == 0, "readonly: %zu longs wrong after MPI_Win_free", bad);
    pid = fork();
    if (pid == 0) {
        for (size_t i = 0; i < len / sizeof(long); i++)
            buf[i] = -1;
        _exit(0);
    }
    waitpid(pid, &status, 0);
    CHECK(buf[0] == rank * 1000000L && buf[len / sizeof(long) - 1] == rank * 1000000L + 131071,
          "readonly: a child's writes showed in its parent after MPI_Win_free (%ld)", buf[0]);
    CHECK(madvise(buf, 4096, MADV_DONTNEED) == 0 && buf[0] == 0,
          "readonly: MADV_DONTNEED did not zero (%ld)", buf[0]);
    long *grown = mremap(buf, len, 4 * len, MREMAP_MAYMOVE);
    CHECK(grown != MAP_FAILED, "readonly: mremap failed");
    if (grown != MAP_FAILED) {
        for (size_t i = len / sizeof(long); i < 4 * len / sizeof(long); i++)
            grown[i] = (long)i; /* SIGBUS where the pages stayed on a segment */
        buf = grown;
        len *= 4;
    }
    munmap(buf, len);
}

/* 1 when the VmFlags of the mapping holding addr have flag (two letters). */
static int has_vmflag(const void *addr, const char *flag)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    char line[512];
    int in = 0, has = 0;

    while (f != NULL && fgets(line, sizeof(line), f)) {
        unsigned long s, e;
        if (sscanf(line, "%lx-%lx ", &s, &e) == 2 && strchr(line, '-') < strchr(line, ' ')) {
            in = (uintptr_t)addr >= s && (uintptr_t)addr < e;
            continue;
        }
        if (in && strncmp(line, "VmFlags:", 8) == 0) {
            char want[5] = {' ', flag[0], flag[1], 0, 0};
            char *p = strstr(line, want);
            has = p != NULL && (p[3] == ' ' || p[3] == '\n');
        }
    }
    if (f != NULL)
        fclose(f);
    return has;
}

/* Settings the program gives moved pages while their window lives (mlock, MADV_DONTDUMP,
 * MADV_HUGEPAGE) are theirs again after MPI_Win_free. */
static void test_settings(void)
{
    size_t len = 64 * 4096;
    char *buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    MPI_Win win;
    int moved, locked;

    memset(buf, 3, len);
    MPI_OK(MPI_Win_create(buf, (MPI_Aint)len, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    moved = mine_moved(drive_move(win, 0, 64, 13));
    CHECK(!can_move || moved, "settings: the window was not moved in 2 s");
    MPI_Barrier(MPI_COMM_WORLD);
    /* a piece given MADV_DONTFORK: the child has the rest, private */
    CHECK(madvise(buf + 48 * 4096, 4 * 4096, MADV_DONTFORK) == 0, "settings: MADV_DONTFORK failed");
    pid_t pid = fork();
    if (pid == 0) {
        buf[0] = 7;
        _exit(buf[63 * 4096] == 3 ? 0 : 1);
    }
    int status = -1;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "settings: the child of fork() failed");
    CHECK(buf[0] == 3, "settings: a child's write showed in its parent (range partly DONTFORK)");
    CHECK(madvise(buf + 48 * 4096, 4 * 4096, MADV_DOFORK) == 0, "settings: MADV_DOFORK failed");
    locked = mlock(buf, 4 * 4096) == 0; /* RLIMIT_MEMLOCK may refuse it */
    CHECK(madvise(buf + 8 * 4096, 4 * 4096, MADV_DONTDUMP) == 0, "settings: MADV_DONTDUMP failed");
    CHECK(madvise(buf + 16 * 4096, 4 * 4096, MADV_NOHUGEPAGE) == 0,
          "settings: MADV_NOHUGEPAGE failed");
    MPI_OK(MPI_Win_free(&win));
    CHECK(!locked || has_vmflag(buf, "lo"), "settings: mlock lost after MPI_Win_free (moved %d)",
          moved);
    CHECK(has_vmflag(buf + 8 * 4096, "dd"), "settings: MADV_DONTDUMP lost after MPI_Win_free");
    CHECK(has_vmflag(buf + 16 * 4096, "nh"), "settings: MADV_NOHUGEPAGE lost after MPI_Win_free");
    CHECK(!has_vmflag(buf + 32 * 4096, "dd") && !has_vmflag(buf + 32 * 4096, "lo"),
          "settings: pages the program left alone have its settings");
    CHECK(buf[0] == 3 && buf[len - 1] == 3, "settings: data lost");
    if (locked)
        munlock(buf, 4 * 4096);
    munmap(buf, len);
}

/* The program's own userfaultfd registered on moved pages while their window lives keeps
 * librma from moving them back at MPI_Win_free; once the program unregisters, the next
 * window's free does. */
static void test_own_uffd(void)
{
    size_t len = 64 * 4096;
    long *buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    struct uffdio_api api = {.api = UFFD_API};
    struct uffdio_register reg = {.range = {(uintptr_t)buf, len},
                                  .mode = UFFDIO_REGISTER_MODE_MISSING};
    struct uffdio_range range = {(uintptr_t)buf, len};
    int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK), registered = 0, moved;
    char perms[8] = "";
    unsigned long ino = 0;
    MPI_Win win, other;

    for (size_t i = 0; i < len / sizeof(long); i++)
        buf[i] = (long)i;
    MPI_OK(MPI_Win_create(buf, (MPI_Aint)len, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    moved = mine_moved(drive_move(win, 0, 64, 11));
    CHECK(!can_move || moved, "own uffd: the window was not moved in 2 s");
    if (fd >= 0 && ioctl(fd, UFFDIO_API, &api) == 0)
        registered = ioctl(fd, UFFDIO_REGISTER, &reg) == 0;
    MPI_Barrier(MPI_COMM_WORLD);
    buf[1] = 1; /* the neighbour's put */
    MPI_OK(MPI_Win_free(&win));
    /* held by the program's registration: still shared (else this part tests nothing) */
    if (registered && moved && rt_mapping_of(buf, perms, &ino))
        CHECK(perms[3] == 's', "own uffd: the pages moved back under the program's userfaultfd");
    if (registered)
        ioctl(fd, UFFDIO_UNREGISTER, &range);
    if (fd >= 0)
        close(fd);
    MPI_OK(MPI_Win_create(NULL, 0, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &other));
    MPI_OK(MPI_Win_free(&other));
    if (moved && rt_mapping_of(buf, perms, &ino))
        CHECK(perms[3] == 'p', "own uffd: after the next window's free the pages are %s (%s)",
              perms, registered ? "registered" : "not registered");
    size_t bad = 0;
    for (size_t i = 0; i < len / sizeof(long); i++)
        bad += buf[i] != (long)i;
    CHECK(bad == 0, "own uffd: %zu longs wrong", bad);
    CHECK(madvise(buf, 4096, MADV_DONTNEED) == 0 && (!moved || buf[0] == 0),
          "own uffd: MADV_DONTNEED did not zero (%ld)", buf[0]);
    munmap(buf, len);
}

int main(int argc, char **argv)
{
    int early = -1, later = -1;

    /* asked before MPI_Init, the answer is the one the environment gives after it */
    RMAX_Memory_moves(&early, NULL);
    rt_init(&argc, &argv);
    RMAX_Memory_moves(&later, NULL);
    CHECK(early == later, "RMAX_Memory_moves before MPI_Init said %d, after it %d", early, later);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    right = (rank + 1) % nprocs;
    left = (rank + nprocs - 1) % nprocs;
    /* moves onto librma's segments are required of same-node neighbours; onto blocks from
     * UCX they depend on UCX's transports */
    can_move =
        rt_moves(rank) && ((rt_same_node(right) && rt_same_node(left) && !rt_netmod_only()) ||
                           getenv("MOVED_MEMORY_EXPECT_MOVE") != NULL);
    MPI_Allreduce(MPI_IN_PLACE, &can_move, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    test_grow_zeroes_released();
    test_heap();
    test_sparse();
    test_locked_and_data();
    test_dynamic();
    test_freed_block();
    test_readonly();
    test_own_uffd();
    test_settings();
    return rt_finish("moved_memory");
}
