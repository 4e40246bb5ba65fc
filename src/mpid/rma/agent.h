/*
 * agent.h - the progress agent: one thread per process that does, next to this process's
 * memory, the work peers ask of it. Today that is moving window memory that peers reach
 * through CMA onto shared segments (windows/expose.c). It never calls MPI, and it sleeps
 * in read(2) on an eventfd while there is nothing to do: no CPU when idle.
 */
#ifndef RMA_AGENT_H
#define RMA_AGENT_H

/* Starts the agent once per process. Returns its eventfd (a descriptor number peers
 * duplicate with pidfd_getfd to wake it), or -1 when it cannot run. */
int rma_agent_start(void);

/* Called by the agent while it serves: look again shortly (something was busy). */
void rma_agent_retry(void);

/* Wakes the agent of process pid, whose eventfd there is fd. */
void rma_agent_kick(int pid, int fd);

/* Stops the agent and closes what rma_agent_kick opened (MPI_Finalize). */
void rma_agent_stop(void);

#endif
