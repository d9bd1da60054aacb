/* The floor of a client, for docs/performance.md: N connections in one
   thread, each running the prepared "SELECT abalance FROM pgbench_accounts
   WHERE aid = $1" as one Bind/Execute/Sync write and one read, with nothing
   else (no statistics, no scripts, no error handling beyond stopping).
   libpq only opens the connections and prepares; it sees none of the run.

   build: cc -O2 -o mini mini.c -I/usr/include/postgresql -lpq
   run:   PGHOST=... PGDATABASE=... ./mini CLIENTS SECONDS SCALE
   It prints "tps = N"; measure its CPU with /usr/bin/time. */
#include <libpq-fe.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <time.h>
#include <arpa/inet.h>

static int put32(char *p, uint32_t v) { v = htonl(v); memcpy(p, &v, 4); return 4; }
static int put16(char *p, uint16_t v) { v = htons(v); memcpy(p, &v, 2); return 2; }

static int build(char *buf, int aid) {
    char num[16]; int nl = snprintf(num, sizeof num, "%d", aid);
    char *p = buf;
    /* Bind */
    *p++ = 'B'; char *lenp = p; p += 4;
    *p++ = 0; memcpy(p, "P0", 3); p += 3;
    p += put16(p, 0); p += put16(p, 1); p += put32(p, nl); memcpy(p, num, nl); p += nl;
    p += put16(p, 0);
    put32(lenp, (uint32_t)(p - lenp));
    /* Execute */
    *p++ = 'E'; p += put32(p, 9); *p++ = 0; p += put32(p, 0);
    /* Sync */
    *p++ = 'S'; p += put32(p, 4);
    return (int)(p - buf);
}

int main(int argc, char **argv) {
    int n = atoi(argv[1]); double secs = atof(argv[2]); int scale = atoi(argv[3]);
    PGconn **c = calloc(n, sizeof *c);
    int ep = epoll_create1(0);
    for (int i = 0; i < n; i++) {
        c[i] = PQconnectdb("");
        if (PQstatus(c[i]) != CONNECTION_OK) { fprintf(stderr, "%s", PQerrorMessage(c[i])); return 1; }
        PGresult *r = PQprepare(c[i], "P0", "SELECT abalance FROM pgbench_accounts WHERE aid = $1", 1, NULL);
        PQclear(r);
        struct epoll_event ev = { .events = EPOLLIN | EPOLLET, .data.u32 = i };
        epoll_ctl(ep, EPOLL_CTL_ADD, PQsocket(c[i]), &ev);
    }
    unsigned seed = 1; long done = 0; char out[128]; char in[16384];
    struct timespec t0, t; clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < n; i++) {
        int len = build(out, rand_r(&seed) % (100000 * scale) + 1);
        send(PQsocket(c[i]), out, len, MSG_NOSIGNAL);
    }
    struct epoll_event evs[64];
    for (;;) {
        int k = epoll_wait(ep, evs, 64, 1000);
        for (int j = 0; j < k; j++) {
            int i = evs[j].data.u32; int fd = PQsocket(c[i]);
            ssize_t got = recv(fd, in, sizeof in, 0);
            if (got <= 0) continue;
            /* ReadyForQuery 'Z' is the last 6 bytes of a complete answer. */
            if (got < 6 || in[got - 6] != 'Z') { fprintf(stderr, "partial read\n"); return 1; }
            done++;
            int len = build(out, rand_r(&seed) % (100000 * scale) + 1);
            send(fd, out, len, MSG_NOSIGNAL);
        }
        clock_gettime(CLOCK_MONOTONIC, &t);
        double el = (t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9;
        if (el >= secs) { printf("tps = %.0f\n", done / el); return 0; }
    }
}
