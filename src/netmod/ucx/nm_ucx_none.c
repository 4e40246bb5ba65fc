/*
 * nm_ucx_none.c - the UCX transport's entry points in a build without UCX: windows with
 * off-node peers are refused with a clear error (rma_ucx_start), nothing else is reached.
 */
#include "netmod/ucx/nm_ucx.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int rma_ucx_built(void)
{
    return 0;
}

int rma_ucx_start(const char **why)
{
    *why = "this librma was built without UCX (install libucx-dev and rebuild)";
    return -1;
}

int rma_ucx_started(void)
{
    return 0;
}

int rma_ucx_connect(MPI_Comm comm, const int *world, int n, int need)
{
    return MPI_ERR_OTHER;
}

int rma_ucx_has_ep(int w)
{
    return 0;
}

int rma_ucx_tgt_init(rma_nm_tgt_t *t, int w)
{
    return -ENOTSUP;
}

int rma_ucx_mem_map(void *base, size_t len, rma_ucx_mem_t *mem)
{
    memset(mem, 0, sizeof(*mem));
    return -ENOTSUP;
}

int rma_ucx_mem_alloc(size_t len, void **base, rma_ucx_mem_t *mem)
{
    *base = NULL;
    return rma_ucx_mem_map(NULL, len, mem);
}

void rma_ucx_mem_unmap(rma_ucx_mem_t *mem)
{
}

void *rma_ucx_key_open(rma_nm_tgt_t *t, const void *blob)
{
    return NULL;
}

void rma_ucx_key_close(void *key)
{
}

int rma_ucx_key_mapped(void *key, uint64_t raddr)
{
    return 0;
}

int rma_ucx_progress(void)
{
    return 0;
}

int rma_ucx_serve(void)
{
    return 0;
}

void rma_ucx_quiesce(void)
{
}

int rma_ucx_barrier(MPI_Comm comm)
{
    return PMPI_Barrier(comm);
}

void rma_ucx_am_register(unsigned id, rma_ucx_am_cb_t cb)
{
}

int rma_ucx_am_request(rma_nm_tgt_t *t, unsigned id, const void *hdr, size_t hlen, const void *data,
                       size_t len)
{
    return -ENOTSUP;
}

void rma_ucx_am_register_rndv(unsigned id, rma_ucx_am_rndv_cb_t cb)
{
}

int rma_ucx_am_request_rndv(rma_nm_tgt_t *t, unsigned id, const void *hdr, size_t hlen,
                            const void *data, size_t len)
{
    return -ENOTSUP;
}

int rma_ucx_am_reply_rndv(void *reply_ep, unsigned id, const void *hdr, size_t hlen,
                          const void *data, size_t len)
{
    return -ENOTSUP;
}

int rma_ucx_am_recv(rma_ucx_rndv_t *rv, void *buf, size_t len, void (*done)(void *arg, int rc),
                    void *arg)
{
    return -ENOTSUP;
}

int rma_ucx_am_reply(void *reply_ep, unsigned id, const void *hdr, size_t hlen, const void *data,
                     size_t len)
{
    return -ENOTSUP;
}

int rma_ucx_am_reply_buf(void *reply_ep, unsigned id, void *buf, size_t hlen, size_t len)
{
    free(buf);
    return -ENOTSUP;
}

void rma_ucx_wait_zero(_Atomic int *count)
{
}

void rma_ucx_set_idle(int (*fn)(void))
{
}

void rma_ucx_req_release(void *req)
{
}

void rma_ucx_set_drain(int (*fn)(rma_nm_tgt_t *t))
{
}

void rma_ucx_print(FILE *out)
{
    fprintf(out, "ucx: not built (configure found no UCX)\n");
}

void rma_ucx_finalize(void)
{
}
