/*
 * env.h - librma's tunables, read in env.c, documented in doc/tuning.md and printed by
 * rma_info (the variables of librma's UCX are read where it starts: nm_ucx.c).
 */
#ifndef RMA_ENV_H
#define RMA_ENV_H

#include <stddef.h>
#include <stdio.h>

typedef struct rma_env {
    int netmod_only;   /* RMA_NETMOD_ONLY: treat every peer as off-node */
    int create_remap;  /* RMA_CREATE_REMAP: move create/attach memory shared when it pays */
    int move_pinned;   /* RMA_MOVE_PINNED: ... also beside an RDMA device (memreg.c) */
    size_t move_eager; /* RMA_MOVE_EAGER: off-node peers only: create-window memory and
                          attached regions up to this many bytes are moved onto UCX's shared
                          memory at creation or attach */
    int verbose;       /* RMA_VERBOSE: print errors returned through MPI_ERRORS_RETURN */
    int spin_count;    /* RMA_SPIN_COUNT: busy polls before a waiter starts yielding */
    size_t cma_batch;  /* RMA_CMA_IOV: iovec entries per process_vm_readv/writev call */
    int pidfd;         /* RMA_PIDFD: peers' descriptors by pidfd_getfd (1), or by opening
                          /proc/<pid>/fd/<n> only (0) (windows/segment.c) */
    int agent;         /* RMA_AGENT: how the progress agent drives the network (RMA_AGENT_*) */
    int agent_spin_us; /* RMA_AGENT_SPIN_US: agent polls this long after activity, then sleeps */
    int agent_cpu;     /* RMA_AGENT_CPU: auto (-2), none (-1) or the CPU to bind the agent to */
    size_t agent_copy; /* RMA_AGENT_COPY: request-based copies to off-node memory mapped here
                          of at least this many bytes are made by the agent; 0: never */
    size_t hx_piece; /* RMA_HX_PIECE: off-node pieces of at most this many bytes go host-assisted */
    size_t hx_min;   /* RMA_HX_MIN_PIECES: ... when a transfer has at least this many of them */
    size_t hx_node;  /* RMA_HX_PIECE_NODE: hx_piece for a put to a same-node target reached
                        by cross-memory attach in a window whose UCX runs; 0: never */
    size_t hx_small; /* RMA_HX_SMALL_NODE: a lone operation of at most this many bytes to such
                        a target goes to its agent while that costs less; 0: never */
    int node_ucx;    /* RMA_NODE_UCX: a window of one node whose memory cannot move starts UCX
                        for hx_node (windows/win_flavor.c win_node_msg_begin) */
    size_t hx_get_piece; /* RMA_HX_GET_PIECE: hx_piece for gets (at least hx_piece) */
    size_t hx_msg;       /* RMA_HX_MSG: data bytes in one host-assisted request */
    size_t aggregate;    /* RMA_AGGREGATE: bytes of small puts to one target sent as one request */
    size_t hx_piece_am;  /* hx_piece and aggregate for a target that UCX reaches over tcp alone,
                            where it emulates RMA with active messages: the variables when set, */
    size_t aggregate_am; /* else RMA_HX_MSG and RMA_AGGREGATE_AM (librma's own messages cost
                            no more there and carry many operations) */
    size_t hx_msg_am;    /* hx_msg for such a target: RMA_HX_MSG when set, else RMA_HX_MSG_AM */
    size_t rndv;         /* RMA_RNDV: off-node contiguous pieces of at least this many bytes go by
                         rendezvous to the target's agent; 0: never */
    int ucx_alloc;       /* RMA_ALLOC_UCX: a rank alone on its node in a window lets UCX
                            allocate its window segment, and one alone in MPI_COMM_WORLD its
                            MPI_Alloc_mem blocks */
    int ordered;         /* RMA_ORDERED: a notification (unlock, fence, complete) to a target whose
                         transport keeps issue order follows its operations without a flush */
    int lock_lazy;       /* RMA_LOCK_LAZY: a shared lock on a target reached over tcp alone is
                         taken by the target's agent with the epoch's operations (sync/lock.c) */
    int test_way;        /* RMA_TEST_WAY: for tests, the way of small operations to a same-node
                            target (netmod.h rma_nm_way_t): 0 chosen by cost, 1 always by
                            request, 2 each in turn, round by round */
    int acc_gap_us;      /* RMA_TEST_ACC_GAP: for tests, a one-element atomic on the slow path
                         sleeps this long between seeing its stripe free and updating, an
                         off-node read + compare-and-swap between reading its word and
                         swapping it */
    const char *pin_devices; /* RMA_TEST_PIN_DEVICES: for tests, the directories whose
                                entries count as RDMA devices (RMA_PIN_DEVICES) */
    const char *ucx_rndv;    /* UCX_RNDV_SCHEME and UCX_PROTO_ENABLE as the MPI library's UCX */
    const char *ucx_proto;   /* reads them (NULL: not set): a put rendezvous writes by CMA */
} rma_env_t;

/* Where RDMA devices are listed, ':'-separated: verbs devices (InfiniBand, RoCE, iWARP,
 * EFA, Omni-Path) and HPE Slingshot's cxi */
#define RMA_PIN_DEVICES "/sys/class/infiniband:/sys/class/cxi"

#define RMA_AGGREGATE_AM (64u << 10)
/* Over tcp a strided put or get of 1 MiB in 1 KiB rows moves 72-87 % of a contiguous one's
 * bandwidth in 64 KiB requests, 89-109 % in 256 KiB ones (doc/tuning.md, RMA_HX_MSG) */
#define RMA_HX_MSG_AM    (256u << 10)

/* RMA_AGENT=block: the agent sleeps on the target worker's event descriptor and polls for
 * RMA_AGENT_SPIN_US after each activity; poll: it polls all the time (yielding the core);
 * off: no agent drives the network, peers' operations progress only inside librma calls. */
enum { RMA_AGENT_BLOCK = 0, RMA_AGENT_POLL, RMA_AGENT_OFF };

extern rma_env_t rma_env;

/* Reads the environment once; later calls do nothing. */
void rma_env_init(void);

/* Prints every variable, its value and its meaning (used by rma_info). */
void rma_env_print(FILE *out);

#endif
