/*
 * shared_page - two create windows of one rank that share a page: moving one window's
 * pages onto shared memory, and moving them back at its MPI_Win_free, holds off the other
 * window's peers' cross-memory writes to that page (memreg.h rma_memreg_writers_t).
 *
 * Rank 0 has a malloc'd array; window A covers its first 34 KiB, window B the rest, so the
 * page at 32 KiB lies under both. Rank 2 puts 30 KiB into B from a buffer whose first page
 * is missing until rank 2's own userfaultfd fills it, 400 ms later: the kernel has pinned
 * rank 0's pages by then and copies only once the source page is there, so the write is
 * under way for 400 ms. Rank 1 starts its gets, and rank 2 its free, once the write waits.
 *
 *   move      meanwhile rank 1's gets move A's pages (the shared page with them) onto shared
 *             memory: the move must wait for the write, or it lands in the page the move
 *             copied and replaced, and is lost
 *   move back A was moved; rank 2's thread puts into B, stalled as above, while every rank
 *             frees A, which moves A's pages back to private memory: the same
 *
 * Afterwards rank 0 checks every byte of B. Where librma moves no memory, or rank 2 has no
 * userfaultfd of its own (an ordinary user), the puts still land and are checked, but the
 * race is not staged. Needs 3 ranks on one node and MPI_THREAD_MULTIPLE.
 */
#include "rma_ext.h"
#include "rmatest.h"

#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define LEN    (64 * 1024)
#define CUT    (34 * 1024) /* A is [0, CUT), B [CUT, LEN): the page at 32 KiB is in both */
#define BLEN   (LEN - CUT)
#define SRCLEN ((BLEN + 4095) & ~4095)
#define STALL  400 /* ms */

static int rank, can_move;
static unsigned char pattern[SRCLEN];

/* rank 2: the put's source, its first page filled by stall_thread STALL ms after the
 * kernel first asks for it */
typedef struct stall {
    int uffd, notify; /* notify: the rank told when the write waits, or -1 */
    unsigned char *src;
    atomic_int faults, stop;
    pthread_t tid;
} stall_t;

static void *stall_thread(void *arg)
{
    stall_t *s = arg;
    struct pollfd p = {s->uffd, POLLIN, 0};
    struct uffd_msg msg;

    while (!atomic_load(&s->stop)) {
        if (poll(&p, 1, 10) <= 0 || read(s->uffd, &msg, sizeof(msg)) != sizeof(msg) ||
            msg.event != UFFD_EVENT_PAGEFAULT)
            continue;
        uintptr_t page = msg.arg.pagefault.address & ~(uintptr_t)4095;
        if (atomic_fetch_add(&s->faults, 1) == 0) {
            if (s->notify >= 0) /* the write is under way: rank 1 may drive the move */
                MPI_Send(NULL, 0, MPI_BYTE, s->notify, 77, MPI_COMM_WORLD);
            usleep(STALL * 1000);
        }
        struct uffdio_copy c = {
            .dst = page, .src = (uintptr_t)pattern + (page - (uintptr_t)s->src), .len = 4096};
        ioctl(s->uffd, UFFDIO_COPY, &c);
    }
    return NULL;
}

/* A source of BLEN bytes of pattern whose pages the kernel must ask for; 0 when this
 * process cannot have a userfaultfd (then the source is plain memory). */
static int stall_open(stall_t *s)
{
    struct uffdio_api api = {.api = UFFD_API};
    struct uffdio_register reg = {.mode = UFFDIO_REGISTER_MODE_MISSING};

    s->src = mmap(NULL, SRCLEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(s->src != MAP_FAILED, "mmap of the source failed");
    atomic_store(&s->faults, 0);
    atomic_store(&s->stop, 0);
    s->uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
    reg.range = (struct uffdio_range){(uintptr_t)s->src, SRCLEN};
    if (s->uffd < 0 || ioctl(s->uffd, UFFDIO_API, &api) != 0 ||
        ioctl(s->uffd, UFFDIO_REGISTER, &reg) != 0) {
        if (s->uffd >= 0)
            close(s->uffd);
        s->uffd = -1;
        memcpy(s->src, pattern, BLEN);
        return 0;
    }
    pthread_create(&s->tid, NULL, stall_thread, s);
    return 1;
}

static void stall_close(stall_t *s)
{
    if (s->uffd >= 0) {
        atomic_store(&s->stop, 1);
        pthread_join(s->tid, NULL);
        close(s->uffd);
    }
    munmap(s->src, SRCLEN);
}

/* rank 2: the stalled put into all of B */
static void put_b(MPI_Win b, stall_t *s)
{
    MPI_OK(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, b));
    MPI_OK(MPI_Put(s->src, BLEN, MPI_BYTE, 0, 0, BLEN, MPI_BYTE, b));
    MPI_OK(MPI_Win_unlock(0, b));
}

static void *put_b_thread(void *arg)
{
    void **a = arg;
    put_b(*(MPI_Win *)a[0], a[1]);
    return NULL;
}

/* rank 0: B holds the pattern */
static void check_b(const unsigned char *buf, const char *what)
{
    size_t bad = 0, first = 0;

    for (size_t i = 0; i < BLEN; i++)
        if (buf[CUT + i] != pattern[i] && bad++ == 0)
            first = i;
    CHECK(bad == 0, "%s: %zu of B's %d bytes wrong, the first at B+%zu (page %zu of the array)",
          what, bad, BLEN, first, (CUT + first) / 4096);
}

static void round_move(unsigned char *buf)
{
    MPI_Win a, b;
    stall_t s = {.uffd = -1};
    int moved = 0, faults = 0;

    memset(buf, 0, LEN);
    MPI_OK(MPI_Win_create(buf, rank == 0 ? CUT : 0, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &a));
    MPI_OK(MPI_Win_create(buf + CUT, rank == 0 ? BLEN : 0, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &b));
    s.notify = 1;
    if (rank == 2 && !stall_open(&s))
        MPI_Send(NULL, 0, MPI_BYTE, 1, 77, MPI_COMM_WORLD); /* nothing to wait for */
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 1) {
        MPI_Recv(NULL, 0, MPI_BYTE, 2, 77, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        moved = rt_drive_gets(a, 0, 0, 8, 3); /* while rank 2's put is under way */
    } else if (rank == 2) {
        put_b(b, &s);
        faults = atomic_load(&s.faults);
        stall_close(&s);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Bcast(&moved, 1, MPI_INT, 1, MPI_COMM_WORLD);
    MPI_Bcast(&faults, 1, MPI_INT, 2, MPI_COMM_WORLD);
    CHECK(!can_move || moved, "move: A did not move in 3 s");
    /* where librma moves memory, this process has a userfaultfd too: the race was staged */
    CHECK(!can_move || faults > 0, "move: the put's write did not wait for its source");
    if (rank == 0)
        check_b(buf, "move");
    MPI_OK(MPI_Win_free(&b));
    MPI_OK(MPI_Win_free(&a));
}

static void round_move_back(unsigned char *buf)
{
    MPI_Win a, b;
    stall_t s = {.uffd = -1};
    pthread_t put;
    int moved = 0;

    memset(buf, 0, LEN);
    MPI_OK(MPI_Win_create(buf, rank == 0 ? CUT : 0, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &a));
    MPI_OK(MPI_Win_create(buf + CUT, rank == 0 ? BLEN : 0, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &b));
    if (rank == 1)
        moved = rt_drive_gets(a, 0, 0, 8, 3);
    MPI_Bcast(&moved, 1, MPI_INT, 1, MPI_COMM_WORLD);
    CHECK(!can_move || moved, "move back: A did not move in 3 s");
    if (rank == 2) {
        s.notify = -1;
        if (stall_open(&s))
            pthread_create(&put, NULL, put_b_thread, (void *[]){&b, &s});
        else
            put_b(b, &s);
        while (s.uffd >= 0 && atomic_load(&s.faults) == 0) /* until the put is under way */
            usleep(1000);
    }
    MPI_OK(MPI_Win_free(&a)); /* rank 0 moves A's pages back */
    if (rank == 2) {
        if (s.uffd >= 0)
            pthread_join(put, NULL);
        stall_close(&s);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        check_b(buf, "move back");
    MPI_OK(MPI_Win_free(&b));
}

int main(int argc, char **argv)
{
    int provided, nprocs;
    unsigned char *buf = NULL;

    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    rt_rank = rank;
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (nprocs != 3 || provided < MPI_THREAD_MULTIPLE || !rt_same_node(1) || !rt_same_node(2)) {
        if (rank == 0)
            printf("shared_page: needs 3 ranks on one node and MPI_THREAD_MULTIPLE\n");
        CHECK(0, "wrong setup");
        return rt_finish("shared_page");
    }
    for (size_t i = 0; i < BLEN; i++)
        pattern[i] = (unsigned char)(i * 7 + 1 + i / 4096);
    can_move = rt_moves(0);
    CHECK(posix_memalign((void **)&buf, 4096, LEN) == 0, "posix_memalign failed");
    for (int r = 0; r < 3; r++) {
        round_move(buf);
        round_move_back(buf);
    }
    free(buf);
    return rt_finish("shared_page");
}
