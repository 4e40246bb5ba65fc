/*
 * lanes.c - reading an endpoint's lane table (lanes.h).
 */
#include "netmod/ucx/lanes.h"

#include <string.h>

/* 1 when the line's uses include `use` followed by '#' (a numbered role such as "rma#0"). */
static int has_use(const char *line, const char *use)
{
    size_t n = strlen(use);

    for (const char *p = strstr(line, use); p != NULL; p = strstr(p + 1, use))
        if ((p == line || p[-1] == ' ') && p[n] == '#')
            return 1;
    return 0;
}

static const char *const local[] = {"sysv/", "posix/", "xpmem/", "knem/", "cma/", "self/"};

/* 1 when the transport named at tl ("<tl>/<dev>...") is one between processes of one
 * machine. */
static int tl_local(const char *tl)
{
    for (size_t i = 0; i < sizeof(local) / sizeof(local[0]); i++)
        if (strncmp(tl, local[i], strlen(local[i])) == 0)
            return 1;
    return 0;
}

int rma_ucx_context_has_device(const char *text)
{
    int resources = 0;

    for (const char *line = text; line != NULL && *line != '\0';) {
        const char *end = strchr(line, '\n'), *tl = strstr(line, "resource");
        const char *flags = tl != NULL ? strstr(tl, "flags") : NULL;
        if (flags != NULL && (end == NULL || flags < end)) {
            /* the last word of the line: "<tl>/<dev>" */
            const char *w = end != NULL ? end : flags + strlen(flags);
            while (w > flags && (w[-1] == ' ' || w[-1] == '\r'))
                w--;
            while (w > flags && w[-1] != ' ')
                w--;
            if (strncmp(w, "tcp/", 4) != 0 && !tl_local(w))
                return 1;
            resources++;
        }
        line = end != NULL ? end + 1 : NULL;
    }
    return resources == 0; /* a table not understood: maybe */
}

void rma_ucx_lanes_read(const char *text, rma_ucx_lanes_t *out)
{
    int tcp = 0;

    memset(out, 0, sizeof(*out));
    for (const char *line = text; line != NULL && *line != '\0';) {
        const char *end = strchr(line, '\n'), *tl;
        size_t len = end != NULL ? (size_t)(end - line) : strlen(line);
        char buf[512];
        int is_tcp, is_local;

        if (len >= sizeof(buf))
            len = sizeof(buf) - 1;
        memcpy(buf, line, len);
        buf[len] = '\0';
        line = end != NULL ? end + 1 : NULL;
        tl = strstr(buf, "lane[");
        /* "lane[i]: <rsc>:<tl>/..." */
        if (tl == NULL || (tl = strchr(tl, ':')) == NULL || (tl = strchr(tl + 1, ':')) == NULL)
            continue;
        tl++;
        out->lanes++;
        is_tcp = strncmp(tl, "tcp/", 4) == 0;
        tcp += is_tcp;
        is_local = tl_local(tl);
        out->maps |= strncmp(tl, "sysv/", 5) == 0 || strncmp(tl, "posix/", 6) == 0;
        if (is_local || is_tcp)
            continue;
        out->dev_amo |= has_use(buf, "amo");
        out->dev_rma |= has_use(buf, "rma") || has_use(buf, "rma_bw");
    }
    out->ordered = out->lanes > 0 && tcp == out->lanes;
}
