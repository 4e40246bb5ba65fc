/*
 * no_ptrace - ranks of a node that may not ptrace-attach to each other, as under Yama's
 * kernel.yama.ptrace_scope=2, or Yama's 1 had librma not let its peers attach
 * (rma_seg_allow_peers): before MPI_Init a seccomp filter makes process_vm_readv/writev
 * (cross-memory attach) and pidfd_getfd fail with EPERM, as Yama does. Opening
 * /proc/<pid>/fd needs only ptrace-read permission, which Yama leaves alone, so librma
 * still maps peers' shared segments:
 *
 * 1. MPI_Win_allocate and MPI_Win_create on MPI_Alloc_mem memory: puts, gets and
 *    accumulates to every rank land, under lock_all + flush and fence.
 * 2. MPI_Win_create on malloc'd memory, which a same-node peer could reach only by
 *    cross-memory attach: a put to it fails with MPI_ERR_OTHER (MPI_ERRORS_RETURN) and a
 *    message that says what is refused and the ways around it, and the target's memory is
 *    unchanged. Off-node targets (and every target under RMA_NETMOD_ONLY=1) are reached
 *    through UCX and must work.
 */
#include "rmatest.h"

#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#define N 256

static int rank, nprocs;

/* EPERM for cross-memory attach and pidfd_getfd in this process and the threads it makes. */
static int deny_ptrace(void)
{
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_process_vm_readv, 3, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_process_vm_writev, 2, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 438 /* pidfd_getfd */, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
    };
    struct sock_fprog prog = {sizeof(f) / sizeof(f[0]), f};

    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        return -1;
    return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
}

/* Every rank puts its rank into slot `rank` of every rank's window and accumulates 1 into
 * slot N - 1, then reads its right neighbour's slot back. */
static void traffic(MPI_Win win, int *mem, const char *what)
{
    int one = 1, got = -1, right = (rank + 1) % nprocs;

    for (int i = 0; i < N; i++)
        mem[i] = 0;
    MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
    MPI_OK(MPI_Win_lock_all(0, win));
    for (int t = 0; t < nprocs; t++) {
        MPI_OK(MPI_Put(&rank, 1, MPI_INT, t, rank, 1, MPI_INT, win));
        MPI_OK(MPI_Accumulate(&one, 1, MPI_INT, t, N - 1, 1, MPI_INT, MPI_SUM, win));
    }
    MPI_OK(MPI_Win_flush_all(win));
    MPI_OK(MPI_Win_unlock_all(win));
    MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
    for (int r = 0; r < nprocs; r++)
        CHECK(mem[r] == r, "%s: slot %d holds %d", what, r, mem[r]);
    CHECK(mem[N - 1] == nprocs, "%s: the sum is %d, want %d", what, mem[N - 1], nprocs);
    MPI_OK(MPI_Win_fence(0, win));
    MPI_OK(MPI_Get(&got, 1, MPI_INT, right, right, 1, MPI_INT, win));
    MPI_OK(MPI_Win_fence(0, win));
    CHECK(got == right, "%s: fence get from rank %d gave %d", what, right, got);
}

int main(int argc, char **argv)
{
    int denied = deny_ptrace(), *mem, *am;
    MPI_Win win;

    rt_init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    CHECK(denied == 0, "seccomp filter not installed: %s", strerror(errno));

    /* 1. shared segments: allocate windows and MPI_Alloc_mem memory */
    MPI_OK(MPI_Win_allocate(N * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &mem,
                            &win));
    traffic(win, mem, "allocate");
    MPI_OK(MPI_Win_free(&win));
    MPI_OK(MPI_Alloc_mem(N * sizeof(int), MPI_INFO_NULL, &am));
    MPI_OK(MPI_Win_create(am, N * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    traffic(win, am, "create on MPI_Alloc_mem");
    MPI_OK(MPI_Win_free(&win));
    MPI_OK(MPI_Free_mem(am));

    /* 2. malloc'd memory: a same-node peer's is out of reach, and says why */
    mem = malloc(N * sizeof(int));
    for (int i = 0; i < N; i++)
        mem[i] = -7;
    MPI_OK(MPI_Win_create(mem, N * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD,
                          &win));
    MPI_OK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    rt_node_comm(); /* collective: before any rank asks rt_same_node */
    MPI_OK(MPI_Win_lock_all(0, win));
    for (int t = 0; t < nprocs; t++) {
        int local = rt_same_node(t) && !rt_netmod_only(), rc, cls = -1, len = 0;
        char msg[MPI_MAX_ERROR_STRING];

        if (t == rank)
            continue;
        rc = MPI_Put(&rank, 1, MPI_INT, t, rank, 1, MPI_INT, win);
        if (rc == MPI_SUCCESS)
            rc = MPI_Win_flush(t, win);
        if (rc != MPI_SUCCESS) {
            MPI_Error_class(rc, &cls);
            MPI_Error_string(rc, msg, &len);
        }
        if (local) {
            CHECK(cls == MPI_ERR_OTHER, "put to same-node rank %d: class %d, want MPI_ERR_OTHER",
                  t, cls);
            CHECK(rc == MPI_SUCCESS || strstr(msg, "ptrace_scope") != NULL,
                  "put to rank %d: the message does not say what to do: %s", t, msg);
        } else {
            CHECK(rc == MPI_SUCCESS, "put to off-node rank %d failed: %s", t, rc ? msg : "");
        }
    }
    MPI_OK(MPI_Win_unlock_all(win));
    MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
    for (int r = 0; r < nprocs; r++)
        if (r != rank) {
            int want = rt_same_node(r) && !rt_netmod_only() ? -7 : r;
            CHECK(mem[r] == want, "malloc window: slot %d holds %d, want %d", r, mem[r], want);
        }
    MPI_OK(MPI_Win_free(&win));
    free(mem);
    if (rank == 0)
        printf("no_ptrace: shared segments through /proc, CMA refused with its reason\n");
    return rt_finish("no_ptrace");
}
