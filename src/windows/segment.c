/*
 * segment.c - memfd segments and mapping them from peers with pidfd_getfd, or through
 * /proc/<pid>/fd where that is missing.
 */
#define _GNU_SOURCE
#include "windows/segment.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "mpid/rma/env.h"
#include "mpid/rma/grow.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd 438
#endif

/* pidfds of peers, opened once per peer process */
typedef struct pidfd_ent {
    pid_t pid;
    int fd;
} pidfd_ent_t;

static pthread_mutex_t seg_lock = PTHREAD_MUTEX_INITIALIZER;
static pidfd_ent_t *pidfds;
static int npidfds, pidfds_cap;
static _Atomic int pidfd_missing; /* pidfd_open or pidfd_getfd said ENOSYS: /proc/<pid>/fd alone */
static _Atomic uint64_t next_seg_id = 1;
static int sharing_state = -1;

size_t rma_page_size(void)
{
    static size_t page;
    if (page == 0)
        page = (size_t)sysconf(_SC_PAGESIZE);
    return page;
}

uint64_t rma_seg_new_id(void)
{
    return next_seg_id++;
}

/* Raises this process's soft limit of descriptors, doubling it up to the hard limit. 1 when
 * raised. librma holds a descriptor for each shared segment (each window's control words,
 * each MPI_Alloc_mem block, moved memory) so that peers can open it: a program of a few
 * hundred windows passes the 1024 that Linux gives an ordinary user, whose hard limit is
 * far higher. */
static int fd_raise(void)
{
    struct rlimit rl;

    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= rl.rlim_max)
        return 0;
    rl.rlim_cur = rl.rlim_cur > 0 && rl.rlim_cur < rl.rlim_max / 2 ? 2 * rl.rlim_cur : rl.rlim_max;
    return setrlimit(RLIMIT_NOFILE, &rl) == 0;
}

/* After a call failed with EMFILE: fd_raise, errno unchanged. 1 when raised (try again). */
static int fd_room(void)
{
    int saved = errno, raised = saved == EMFILE && fd_raise();

    errno = saved;
    return raised;
}

int rma_seg_fds_short(void)
{
    struct rlimit rl;
    struct dirent *e;
    DIR *d;
    rlim_t used = 0;

    if ((d = opendir("/proc/self/fd")) == NULL)
        return 0;
    while ((e = readdir(d)) != NULL)
        used += e->d_name[0] != '.';
    closedir(d);
    while (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
           used + 32 >= rl.rlim_cur)
        if (!fd_raise())
            return 1;
    return 0;
}

int rma_seg_create(size_t len, void *fixed, void **addr_p, int *fd_p)
{
    size_t page = rma_page_size();
    void *addr;
    int fd, err;

    len = (len + page - 1) & ~(page - 1);
    if (len == 0)
        len = page;
    while ((fd = memfd_create("librma", MFD_CLOEXEC)) < 0 && fd_room())
        ;
    if (fd < 0)
        return -errno;
    if (ftruncate(fd, (off_t)len) != 0) {
        err = -errno;
        goto err_close;
    }
    addr = mmap(fixed, len, PROT_READ | PROT_WRITE, MAP_SHARED | (fixed ? MAP_FIXED : 0), fd, 0);
    if (addr == MAP_FAILED) {
        err = -errno;
        goto err_close;
    }
    *addr_p = addr;
    *fd_p = fd;
    return 0;

err_close:
    close(fd);
    return err;
}

/* pidfd of process pid, opened on first use. -1 with errno set on failure. */
static int pidfd_of(pid_t pid)
{
    int i, fd;

    for (i = 0; i < npidfds; i++)
        if (pidfds[i].pid == pid)
            return pidfds[i].fd;
    fd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (fd < 0)
        return -1;
    if (rma_grow(&pidfds, &pidfds_cap, npidfds, sizeof(*pidfds), 16) != 0) {
        close(fd);
        errno = ENOMEM;
        return -1;
    }
    pidfds[npidfds].pid = pid;
    pidfds[npidfds].fd = fd;
    npidfds++;
    return fd;
}

int rma_seg_pidfd(int pid)
{
    int fd;

    pthread_mutex_lock(&seg_lock);
    fd = pidfd_of(pid);
    pthread_mutex_unlock(&seg_lock);
    return fd;
}

/* Descriptor fd of process pid opened anew through /proc/<pid>/fd: the same file (a memfd,
 * a pipe), which needs the permission to read the process's state (ptrace read, less than
 * the attach that pidfd_getfd and CMA need). For kernels before 5.6 (no pidfd_getfd),
 * valgrind, and seccomp filters that refuse pidfd_getfd. Unlike a pidfd the pid could name
 * another process if pid had died and its number been reused; a dead peer ends the job
 * first (sync/peer_fail.c). -1 with errno set on failure. */
static int proc_getfd(int pid, int fd)
{
    char path[64];

    snprintf(path, sizeof(path), "/proc/%d/fd/%d", pid, fd);
    return open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
}

static int seg_getfd(int pid, int fd)
{
    int pidfd = -1, dup_fd = -1;

    pthread_mutex_lock(&seg_lock);
    if (rma_env.pidfd && !pidfd_missing) {
        pidfd = pidfd_of(pid);
        if (pidfd < 0 && errno == ENOSYS)
            pidfd_missing = 1;
    }
    pthread_mutex_unlock(&seg_lock);
    if (pidfd >= 0) {
        dup_fd = (int)syscall(SYS_pidfd_getfd, pidfd, fd, 0);
        if (dup_fd < 0 && errno == ENOSYS)
            pidfd_missing = 1; /* Linux 5.3-5.5: pidfd_open without pidfd_getfd */
    }
    return dup_fd >= 0 ? dup_fd : proc_getfd(pid, fd);
}

int rma_seg_getfd(int pid, int fd)
{
    int dup_fd;

    while ((dup_fd = seg_getfd(pid, fd)) < 0 && fd_room())
        ;
    return dup_fd;
}

void *rma_seg_attach(const rma_seg_desc_t *desc)
{
    return rma_seg_attach_at(desc, NULL);
}

void *rma_seg_attach_at(const rma_seg_desc_t *desc, void *fixed)
{
    void *addr = NULL;
    int fd = rma_seg_getfd(desc->pid, desc->fd);

    if (fd < 0)
        return NULL;
    addr =
        mmap(fixed, desc->len, PROT_READ | PROT_WRITE, MAP_SHARED | (fixed ? MAP_FIXED : 0), fd, 0);
    close(fd);
    return addr == MAP_FAILED ? NULL : addr;
}

void *rma_seg_place(size_t len, size_t align, size_t skew)
{
    char *r =
        mmap(NULL, len + align, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    char *a;

    if (r == MAP_FAILED)
        return NULL;
    a = (char *)((((uintptr_t)r + skew + align - 1) & ~(uintptr_t)(align - 1)) - skew);
    if (a > r)
        munmap(r, (size_t)(a - r));
    if (r + align > a)
        munmap(a + len, (size_t)(r + align - a));
    return a;
}

void rma_seg_detach(void *addr, size_t len)
{
    if (addr != NULL && len != 0)
        munmap(addr, len);
}

void rma_seg_allow_peers(void)
{
    char scope = 0;
    int fd = open("/proc/sys/kernel/yama/ptrace_scope", O_RDONLY | O_CLOEXEC);

    if (fd < 0) /* no Yama */
        return;
    if (read(fd, &scope, 1) == 1 && scope == '1' &&
        prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0) != 0 && rma_env.verbose >= 1)
        fprintf(stderr,
                "librma: process %d: Yama's ptrace_scope is 1 and prctl(PR_SET_PTRACER) failed "
                "(%s): same-node peers reach this process's memory only where it is shared\n",
                (int)getpid(), strerror(errno));
    close(fd);
}

int rma_seg_sharing_works(void)
{
    void *addr;
    int fd, dup_fd;

    if (sharing_state >= 0)
        return sharing_state;
    sharing_state = 0;
    if (rma_seg_create(rma_page_size(), NULL, &addr, &fd) != 0)
        return 0;
    dup_fd = rma_seg_getfd(getpid(), fd);
    if (dup_fd >= 0) {
        sharing_state = 1;
        close(dup_fd);
    }
    munmap(addr, rma_page_size());
    close(fd);
    return sharing_state;
}

void rma_seg_finalize(void)
{
    int i;

    pthread_mutex_lock(&seg_lock);
    for (i = 0; i < npidfds; i++)
        close(pidfds[i].fd);
    free(pidfds);
    pidfds = NULL;
    npidfds = pidfds_cap = 0;
    pthread_mutex_unlock(&seg_lock);
}
