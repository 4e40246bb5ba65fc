/*
 * agent.h - the progress agent: one thread per process that does, next to this process's
 * memory, the work peers ask of it. Today that is moving window memory that peers reach
 * through CMA onto shared segments (windows/expose.c), and driving the UCX target worker so
 * that off-node peers' RDMA, atomics and requests complete while this process computes
 * (netmod/ucx). It never calls MPI, and it sleeps in poll(2) on a pipe (its doorbell) and the
 * worker's event descriptor while there is nothing to do: no CPU when idle.
 */
#ifndef RMA_AGENT_H
#define RMA_AGENT_H

#include <stddef.h>

/* Starts the agent once per process. Returns its doorbell, the write end of a pipe (a
 * descriptor number peers duplicate with rma_seg_getfd to wake it), or -1 when it cannot
 * run. */
int rma_agent_start(void);

/* Called by the agent while it serves: look again shortly (something was busy). */
void rma_agent_retry(void);

/* Wakes this process's agent if it sleeps waiting for the network: an application thread
 * that drove the target worker consumed the event the agent waits for and left requests
 * for later, which the agent would otherwise not look at again. */
void rma_agent_wake(void);

/* Wakes the agent of process pid, whose doorbell there is fd. */
void rma_agent_kick(int pid, int fd);

/* Serves, in the calling thread, the peers' requests to move memory that woke the agent:
 * for a rank that waits in MPI_Barrier while every core runs a spinning rank, and the
 * agent would wait for one. One nonblocking read when there are none. */
void rma_agent_serve_moves(void);

/* Makes the agent drive a network too (started if needed): progress() returns 1 when it
 * did something, 0 when idle, -1 when an application thread drives the network itself
 * (the agent then sleeps a while, waking on its doorbell only); arm() returns 0 when the
 * agent may sleep until fd is readable (fd -1: never sleeps, as with RMA_AGENT=poll). 0,
 * or -1 when the thread cannot start. */
int rma_agent_progress_attach(int fd, int (*progress)(void), int (*arm)(void));

/* Stops the agent (it no longer touches the network once this returns). */
void rma_agent_progress_detach(void);

/* Where the agent runs or would run (RMA_AGENT_CPU; rma_info, RMA_VERBOSE=1), as a
 * sentence into buf. Binds the calling thread there when bind is 1. */
void rma_agent_placement(char *buf, size_t len, int bind);

/* 1 once the agent runs bound to a core (RMA_AGENT_CPU, or one no rank of this node uses):
 * work handed to it then runs beside the ranks, not in turns with one of them. */
int rma_agent_has_core(void);

/* Stops the agent and closes what rma_agent_kick opened (MPI_Finalize). */
void rma_agent_stop(void);

/* Work an application thread hands to the agent so that it overlaps what the thread does
 * next: run by whichever takes it first, the agent or the thread that later needs it done
 * (rma_agent_job_finish), so an agent without a core delays nothing. run() must not call
 * MPI. owner groups the jobs one completion call waits for (rma_agent_job_drain). */
enum { RMA_JOB_QUEUED = 0, RMA_JOB_RUNNING, RMA_JOB_DONE };
typedef struct rma_agent_job {
    void (*run)(struct rma_agent_job *job);
    const void *owner;
    struct rma_agent_job *next; /* agent.c's queue */
    _Atomic int state;          /* RMA_JOB_* */
    int by_agent;               /* set before run(): the agent runs it */
} rma_agent_job_t;

/* Queues job for the agent, waking it unless it is polling. 0, or -1 when no agent runs
 * (the job was not queued: the caller runs it). */
int rma_agent_submit(rma_agent_job_t *job);

/* 1 when job is done, run in the calling thread if the agent had not taken it; 0 while the
 * agent runs it. */
int rma_agent_job_test(rma_agent_job_t *job);

/* Returns when job is done (rma_agent_job_test, backing off). */
void rma_agent_job_finish(rma_agent_job_t *job);

/* Runs here every queued job of owner (NULL: of every owner); the caller then waits for
 * the ones the agent runs by its own count. */
void rma_agent_job_drain(const void *owner);

#endif
