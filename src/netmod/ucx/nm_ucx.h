/*
 * nm_ucx.h - the off-node transport: UCX (UCP) RDMA, network atomics and active messages.
 *
 * One UCP context per process, made the first time a window has an off-node peer (a
 * single-node job never starts UCX). Two workers: origins issue operations on the *origin
 * worker* (the application's threads only, so the data path takes no lock), and every peer
 * connects to this process's *target worker*, which the progress agent drives: over
 * transports that emulate RDMA and atomics in software (tcp) nothing reaches this process's
 * memory unless that worker is progressed. One endpoint per peer process, made once.
 */
#ifndef RMA_NM_UCX_H
#define RMA_NM_UCX_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "netmod/netmod.h"

/* Memory this process exposes to off-node peers (one ucp_mem_map). */
typedef struct rma_ucx_mem {
    void *memh;
    void *blob; /* packed remote key */
    size_t blob_len;
    void *addr; /* rma_ucx_mem_alloc: the allocation (kept for reuse when small) */
    size_t len;
} rma_ucx_mem_t;

/* 1 when this build has UCX. */
int rma_ucx_built(void);

/* Starts UCX once (context, workers, agent hooks). 0, or -1 with a message in *why. */
int rma_ucx_start(const char **why);

/* 1 once rma_ucx_start succeeded. */
int rma_ucx_started(void);

/* Collective over comm (whose ranks have MPI_COMM_WORLD ranks world[]): makes sure every
 * rank can reach the others' target workers. need: this rank lacks an endpoint to some
 * peer, agreed by all (the worker addresses then travel once). MPI_SUCCESS or an error
 * class. */
int rma_ucx_connect(MPI_Comm comm, const int *world, int n, int need);

/* 1 when this process has an endpoint to world rank w. */
int rma_ucx_has_ep(int w);

/* Fills t for the target at world rank w (endpoint). 0 or -errno. */
int rma_ucx_tgt_init(rma_nm_tgt_t *t, int w);

/* Exposes [base, base+len). 0 or -errno. */
int rma_ucx_mem_map(void *base, size_t len, rma_ucx_mem_t *mem);
/* Allocates len bytes that UCX exposes (its allocator picks memory its transports reach
 * without the owner's CPU: System V shared memory between processes of one machine,
 * registered pages on a NIC); *base gets the address (fresh pages, or a reused allocation
 * zero-filled). Freed by
 * rma_ucx_mem_unmap, which keeps a few small allocations for the next ones of their length
 * (allocating costs ~40 µs, freeing ~250 µs). 0 or -errno. */
int rma_ucx_mem_alloc(size_t len, void **base, rma_ucx_mem_t *mem);
void rma_ucx_mem_unmap(rma_ucx_mem_t *mem);

/* Unpacks a remote key blob for the endpoint of t. NULL on failure. */
void *rma_ucx_key_open(rma_nm_tgt_t *t, const void *blob);
void rma_ucx_key_close(void *key);

/* 1 when UCX reaches the memory of key at raddr through a shared mapping (its shared-memory
 * transports, between processes of one machine): a put, get or atomic on it is a copy or
 * CPU atomic the origin performs, with no work for the owner's CPU. */
int rma_ucx_key_mapped(void *key, uint64_t raddr);

/* Drives the origin worker, and the target worker too unless the agent is driving it
 * right now (rma_ucx_serve): every librma wait serves this process's peers. Handlers run
 * inside it, so no caller may hold a lock a handler takes (a window's dyn_mtx). Returns 1
 * when something happened. */
int rma_ucx_progress(void);

/* Serves peers' operations on this process once (drives the target worker) unless the
 * agent is doing so right now. For a rank that waits for other ranks anyway (MPI_Barrier):
 * on a machine whose cores all run spinning ranks the agent may not get a core for a
 * while. Returns 1 when something happened; 0 at once when UCX is not started. */
int rma_ucx_serve(void);

/* Returns once no request handler is running (every handler runs on the target worker,
 * under the one lock that whoever drives it holds): after a window left the handle table,
 * no handler still uses it, so it may be freed. Nothing when UCX is not started. The
 * caller must not be inside a handler. */
void rma_ucx_quiesce(void);

/* MPI_Barrier on comm that serves peers' operations (rma_ucx_serve) while it waits, spinning
 * then yielding, never sleeping: MPI_Ibarrier and a loop that tests it. UCX must be
 * started. The MPI error code. */
int rma_ucx_barrier(MPI_Comm comm);

/* Drives the origin worker (backing off) until *count is 0: the answers an active message
 * handler counts down have arrived. */
void rma_ucx_wait_zero(_Atomic int *count);

/* The largest header librma puts in an active message (a host-assisted request's header
 * and one record). UCX's limit is the workers' max_am_header attribute, queried when UCX
 * starts: UCX is refused, with the reason, when it is smaller, and a send with a longer
 * header fails with -EMSGSIZE. The data after the header has no such limit (UCX fragments
 * it); RMA_HX_MSG (doc/tuning.md) is librma's own choice of request size. */
#define RMA_UCX_AM_HDR_MAX 128

/* Active messages. Handlers run on the target worker (the agent's thread) for requests,
 * and on the origin worker (the caller's thread) for replies. */
typedef void (*rma_ucx_am_cb_t)(const void *hdr, size_t hlen, const void *data, size_t len,
                                void *reply_ep);
enum {
    RMA_UCX_AM_DYN_REQ = 1, /* region tables of dynamic windows (win_dynamic.c) */
    RMA_UCX_AM_DYN_REPLY,
    RMA_UCX_AM_HX_REQ, /* host-assisted transfers (mpid/rma/hx.c) */
    RMA_UCX_AM_HX_REPLY,
    RMA_UCX_AM_MAX
};
void rma_ucx_am_register(unsigned id, rma_ucx_am_cb_t cb);
/* Sends a request (a reply endpoint travels with it); the buffers are free on return. */
int rma_ucx_am_request(rma_nm_tgt_t *t, unsigned id, const void *hdr, size_t hlen, const void *data,
                       size_t len);
/* Sends a reply on reply_ep from a request handler; the buffers are free on return. */
int rma_ucx_am_reply(void *reply_ep, unsigned id, const void *hdr, size_t hlen, const void *data,
                     size_t len);

/* Rendezvous: a message sent this way carries its data by reference, and its receiver
 * fetches the data straight into the buffer it chooses (on shared memory one cross-memory
 * copy; on a NIC one RDMA read). The sender does not wait: the data must stay as it is
 * until the receiver has answered. The receiver's handler, registered with
 * rma_ucx_am_register_rndv, gets a descriptor rv instead of the data and receives it with
 * rma_ucx_am_recv before it returns; data it does not receive is dropped. */
typedef struct rma_ucx_rndv rma_ucx_rndv_t;
typedef void (*rma_ucx_am_rndv_cb_t)(const void *hdr, size_t hlen, rma_ucx_rndv_t *rv, size_t len,
                                     void *reply_ep);
void rma_ucx_am_register_rndv(unsigned id, rma_ucx_am_rndv_cb_t cb);
int rma_ucx_am_request_rndv(rma_nm_tgt_t *t, unsigned id, const void *hdr, size_t hlen,
                            const void *data, size_t len);
int rma_ucx_am_reply_rndv(void *reply_ep, unsigned id, const void *hdr, size_t hlen,
                          const void *data, size_t len);
/* Receives rv's len bytes into buf; done(arg, 0 or -errno) runs once they have landed
 * (maybe before this returns). 0, or -errno and done is not called. */
int rma_ucx_am_recv(rma_ucx_rndv_t *rv, void *buf, size_t len, void (*done)(void *arg, int rc),
                    void *arg);

/* fn is called whenever the target worker has been progressed (by the agent, or inside
 * librma calls with RMA_AGENT=off) to serve requests a handler left for later; it returns
 * how many are still left (the agent does not sleep while some are). */
void rma_ucx_set_idle(int (*fn)(void));

/* fn is called by a flush of t whose agg is set, before anything else: it sends what is
 * held back there. 0 or -errno. */
void rma_ucx_set_drain(int (*fn)(rma_nm_tgt_t *t));

/* As rma_ucx_am_reply, from buf (hlen bytes of header, then len of data), which must come
 * from malloc and is freed when the reply is sent. */
int rma_ucx_am_reply_buf(void *reply_ep, unsigned id, void *buf, size_t hlen, size_t len);

/* Releases a request that a flush_start (netmod.h) returned, over or not; NULL is fine. */
void rma_ucx_req_release(void *req);

/* Prints the transports and devices UCX chose (rma_info). */
void rma_ucx_print(FILE *out);

/* MPI_Finalize: closes endpoints (collective over MPI_COMM_WORLD when started), workers
 * and the context. */
void rma_ucx_finalize(void);

#endif
