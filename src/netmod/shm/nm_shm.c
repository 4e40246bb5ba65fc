/*
 * nm_shm.c - cross-memory attach transport.
 */
#define _GNU_SOURCE
#include "netmod/shm/nm_shm.h"

#include <errno.h>
#include <sys/uio.h>

static size_t iov_total(const struct iovec *iov, int n)
{
    size_t total = 0;
    for (int i = 0; i < n; i++)
        total += iov[i].iov_len;
    return total;
}

/* process_vm_* may move less than asked (page faults half way): go on from where it
 * stopped until all arrived or an error. */
static int nm_shm_xfer(int pid, const struct iovec *local, int nlocal, const struct iovec *remote,
                       int nremote, int write)
{
    size_t want = iov_total(local, nlocal);
    ssize_t got = write ? process_vm_writev(pid, local, (unsigned long)nlocal, remote,
                                            (unsigned long)nremote, 0)
                        : process_vm_readv(pid, local, (unsigned long)nlocal, remote,
                                           (unsigned long)nremote, 0);
    if (got < 0)
        return -errno;
    if ((size_t)got == want)
        return 0;
    /* partial transfer: retry the rest one remote entry at a time */
    size_t done = (size_t)got, skip = done;
    int li = 0, ri = 0;
    size_t loff = 0, roff = 0;
    while (li < nlocal && skip >= local[li].iov_len - loff) {
        skip -= local[li].iov_len - loff;
        li++;
        loff = 0;
    }
    loff += skip;
    skip = done;
    while (ri < nremote && skip >= remote[ri].iov_len - roff) {
        skip -= remote[ri].iov_len - roff;
        ri++;
        roff = 0;
    }
    roff += skip;
    while (li < nlocal && ri < nremote) {
        size_t n = local[li].iov_len - loff;
        if (remote[ri].iov_len - roff < n)
            n = remote[ri].iov_len - roff;
        struct iovec l = {(char *)local[li].iov_base + loff, n};
        struct iovec r = {(char *)remote[ri].iov_base + roff, n};
        got = write ? process_vm_writev(pid, &l, 1, &r, 1, 0)
                    : process_vm_readv(pid, &l, 1, &r, 1, 0);
        if (got <= 0)
            return got < 0 ? -errno : -EFAULT;
        loff += (size_t)got;
        roff += (size_t)got;
        if (loff == local[li].iov_len) {
            li++;
            loff = 0;
        }
        if (roff == remote[ri].iov_len) {
            ri++;
            roff = 0;
        }
    }
    return 0;
}

static int nm_shm_writev(rma_nm_tgt_t *t, void *key, const struct iovec *local,
                         const struct iovec *remote, int n)
{
    (void)key;
    return nm_shm_xfer(t->pid, local, n, remote, n, 1);
}

static int nm_shm_readv(rma_nm_tgt_t *t, void *key, const struct iovec *local,
                        const struct iovec *remote, int n)
{
    (void)key;
    return nm_shm_xfer(t->pid, local, n, remote, n, 0);
}

static int nm_shm_flush(rma_nm_tgt_t *t)
{
    return 0; /* process_vm_* calls are complete when they return */
}

static int nm_shm_flush_start(rma_nm_tgt_t *t, void **req)
{
    *req = NULL;
    return 0;
}

static int nm_shm_flush_test(rma_nm_tgt_t *t, void **req)
{
    return 0;
}

static void nm_shm_flush_release(void *req)
{
    (void)req; /* flush_start never makes one */
}

const rma_netmod_ops_t rma_nm_shm_ops = {
    .name = "shm",
    .writev = nm_shm_writev,
    .readv = nm_shm_readv,
    .flush = nm_shm_flush,
    .push = nm_shm_flush,
    .order = nm_shm_flush,
    .settle = nm_shm_flush,
    .flush_start = nm_shm_flush_start,
    .flush_test = nm_shm_flush_test,
    .flush_release = nm_shm_flush_release,
};
