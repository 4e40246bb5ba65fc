/*
 * agent.c - the progress agent's thread (see agent.h).
 */
#define _GNU_SOURCE
#include "mpid/rma/agent.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

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

static void *agent_main(void *arg)
{
    uint64_t v;

    (void)arg;
    for (;;) {
        if (atomic_exchange_explicit(&agent_again, 0, memory_order_relaxed)) {
            struct timespec ts = {0, 1000 * 1000}; /* 1 ms, then look again */
            nanosleep(&ts, NULL);
        } else if (read(agent_efd, &v, sizeof(v)) < 0 && errno != EINTR) {
            break;
        }
        if (atomic_load_explicit(&agent_stopping, memory_order_acquire))
            break;
        rma_win_foreach(rma_expose_serve);
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
    fd = eventfd(0, EFD_CLOEXEC);
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
