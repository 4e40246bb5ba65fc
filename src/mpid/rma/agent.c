/*
 * agent.c - the progress agent's thread (see agent.h).
 */
#define _GNU_SOURCE
#include "mpid/rma/agent.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "mpid/rma/env.h"
#include "windows/segment.h"
#include "windows/win.h"

static pthread_mutex_t agent_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_t agent_thread;
static int agent_efd = -1; /* -1: not started */
static _Atomic int agent_stopping;

/* peers' eventfds duplicated here, one per process */
typedef struct kick_ent {
    int pid, fd;
} kick_ent_t;
static kick_ent_t *kicks;
static int nkicks, kicks_cap;

static _Atomic int agent_again; /* a request was left for later (rma_agent_retry) */

void rma_agent_retry(void)
{
    atomic_store_explicit(&agent_again, 1, memory_order_relaxed);
}

/* the network the agent drives (rma_agent_progress_attach), or none */
static int (*net_progress)(void);
static int (*net_arm)(void);
static int net_fd = -1;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Peers' requests to move memory (eventfd) are served between network progress calls. */
static void serve_kicks(void)
{
    uint64_t v;

    if (read(agent_efd, &v, sizeof(v)) == sizeof(v) ||
        atomic_exchange_explicit(&agent_again, 0, memory_order_relaxed))
        rma_win_foreach(rma_expose_serve);
}

/* Drives the network until it has been idle for RMA_AGENT_SPIN_US and the worker is armed
 * (block), or until stopped (poll). Spinning briefly after activity keeps a stream of
 * requests from paying a wake-up (~60 us) each. */
static void drive_network(void)
{
    uint64_t last = now_ns(), spin = (uint64_t)rma_env.agent_spin_us * 1000u;

    while (!atomic_load_explicit(&agent_stopping, memory_order_acquire)) {
        if (net_progress()) {
            last = now_ns();
            continue;
        }
        serve_kicks();
        if (rma_env.agent == RMA_AGENT_POLL || now_ns() - last < spin) {
            sched_yield();
            continue;
        }
        if (net_arm() == 0)
            return;
    }
}

static void *agent_main(void *arg)
{
    (void)arg;
    while (!atomic_load_explicit(&agent_stopping, memory_order_acquire)) {
        struct pollfd fds[2] = {{agent_efd, POLLIN, 0}, {net_fd, POLLIN, 0}};
        int again = atomic_load_explicit(&agent_again, memory_order_relaxed);

        if (net_progress != NULL)
            drive_network();
        if (atomic_load_explicit(&agent_stopping, memory_order_acquire))
            break;
        /* 1 ms when a move request was left for later (rma_agent_retry) */
        if (poll(fds, net_fd >= 0 && net_progress != NULL ? 2 : 1, again ? 1 : -1) < 0 &&
            errno != EINTR)
            break;
        serve_kicks();
    }
    return NULL;
}

/* The child of a fork has no agent thread: it starts its own when it needs one. */
static void agent_forget(void)
{
    if (agent_efd >= 0)
        close(agent_efd);
    agent_efd = -1;
    for (int i = 0; i < nkicks; i++)
        close(kicks[i].fd);
    nkicks = 0;
    pthread_mutex_init(&agent_lock, NULL);
}

int rma_agent_start(void)
{
    static int atfork;
    sigset_t all, old;
    int fd;

    pthread_mutex_lock(&agent_lock);
    if (agent_efd >= 0)
        goto out;
    if (!atfork && pthread_atfork(NULL, NULL, agent_forget) == 0)
        atfork = 1;
    fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (fd < 0)
        goto out;
    agent_efd = fd;
    atomic_store(&agent_stopping, 0);
    /* the agent takes no signal meant for the application */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    if (pthread_create(&agent_thread, NULL, agent_main, NULL) != 0) {
        close(fd);
        agent_efd = -1;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
out:
    fd = agent_efd;
    pthread_mutex_unlock(&agent_lock);
    return fd;
}

void rma_agent_kick(int pid, int fd)
{
    uint64_t one = 1;
    int local = -1, kept = 0;

    pthread_mutex_lock(&agent_lock);
    for (int i = 0; i < nkicks && local < 0; i++)
        if (kicks[i].pid == pid)
            local = kicks[i].fd, kept = 1;
    if (local < 0 && (local = rma_seg_getfd(pid, fd)) >= 0) {
        if (nkicks == kicks_cap) {
            int cap = kicks_cap ? 2 * kicks_cap : 8;
            kick_ent_t *p = realloc(kicks, (size_t)cap * sizeof(*p));
            if (p != NULL) {
                kicks = p;
                kicks_cap = cap;
            }
        }
        if (nkicks < kicks_cap) {
            kicks[nkicks++] = (kick_ent_t){pid, local};
            kept = 1;
        }
    }
    /* a failed write means the peer is gone or its counter is full: nothing to do */
    if (local >= 0 && write(local, &one, sizeof(one)) != sizeof(one))
        one = 0;
    if (local >= 0 && !kept)
        close(local);
    pthread_mutex_unlock(&agent_lock);
}

void rma_agent_stop(void)
{
    uint64_t one = 1;

    pthread_mutex_lock(&agent_lock);
    if (agent_efd >= 0) {
        atomic_store_explicit(&agent_stopping, 1, memory_order_release);
        if (write(agent_efd, &one, sizeof(one)) == sizeof(one))
            pthread_join(agent_thread, NULL);
        net_progress = NULL;
        net_arm = NULL;
        net_fd = -1;
        close(agent_efd);
        agent_efd = -1;
    }
    for (int i = 0; i < nkicks; i++)
        close(kicks[i].fd);
    free(kicks);
    kicks = NULL;
    nkicks = kicks_cap = 0;
    pthread_mutex_unlock(&agent_lock);
}

int rma_agent_progress_attach(int fd, int (*progress)(void), int (*arm)(void))
{
    uint64_t one = 1;
    int efd;

    pthread_mutex_lock(&agent_lock);
    net_fd = fd;
    net_arm = arm;
    net_progress = progress;
    pthread_mutex_unlock(&agent_lock);
    efd = rma_agent_start();
    if (efd < 0)
        return -1;
    /* the agent may be asleep on its eventfd alone: wake it to take the network too */
    if (write(efd, &one, sizeof(one)) != sizeof(one))
        return 0;
    return 0;
}

void rma_agent_progress_detach(void)
{
    rma_agent_stop();
}
