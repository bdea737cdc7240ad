// A last resort for a process that drives motors: when it crashes (a trap, a bad access, an abort), the
// handler writes each device's stop frame with write(2), which is async-signal-safe, before the process dies.
#include "emergency_stop.h"

#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define HN_SLOTS 8
#define HN_BYTES 32

struct hn_slot {
    atomic_int fd;  // -1 when free
    uint8_t bytes[HN_BYTES];
    size_t count;
};

static struct hn_slot slots[HN_SLOTS] = {
    {-1, {0}, 0}, {-1, {0}, 0}, {-1, {0}, 0}, {-1, {0}, 0}, {-1, {0}, 0}, {-1, {0}, 0}, {-1, {0}, 0}, {-1, {0}, 0},
};
static const int fatal_signals[] = {SIGSEGV, SIGBUS, SIGILL, SIGTRAP, SIGABRT, SIGFPE};
#define HN_SIGNALS (sizeof(fatal_signals) / sizeof(fatal_signals[0]))
static struct sigaction previous[HN_SIGNALS];
static atomic_int installed = 0;

int hn_emergency_register(int fd, const uint8_t *bytes, size_t count) {
    if (fd < 0 || count > HN_BYTES) return -1;
    for (int index = 0; index < HN_SLOTS; index++) {
        int expected = -1;
        // Claim the slot with an impossible descriptor while its bytes are written, then publish the real one.
        if (atomic_compare_exchange_strong(&slots[index].fd, &expected, -2)) {
            memcpy(slots[index].bytes, bytes, count);
            slots[index].count = count;
            atomic_store(&slots[index].fd, fd);
            return 0;
        }
    }
    return -1;
}

void hn_emergency_unregister(int fd) {
    for (int index = 0; index < HN_SLOTS; index++) {
        int expected = fd;
        atomic_compare_exchange_strong(&slots[index].fd, &expected, -1);
    }
}

int hn_emergency_stop_all(void) {
    int written = 0;
    for (int index = 0; index < HN_SLOTS; index++) {
        int fd = atomic_load(&slots[index].fd);
        if (fd < 0) continue;
        ssize_t result = send(fd, slots[index].bytes, slots[index].count, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (result < 0) result = write(fd, slots[index].bytes, slots[index].count);
        if (result == (ssize_t)slots[index].count) written++;
    }
    return written;
}

static void hn_fatal(int number, siginfo_t *info, void *context) {
    hn_emergency_stop_all();
    for (size_t index = 0; index < HN_SIGNALS; index++) {
        if (fatal_signals[index] != number) continue;
        struct sigaction *old = &previous[index];
        if ((old->sa_flags & SA_SIGINFO) && old->sa_sigaction) {
            old->sa_sigaction(number, info, context);
            return;
        }
        if (old->sa_handler != SIG_DFL && old->sa_handler != SIG_IGN && old->sa_handler != NULL) {
            old->sa_handler(number);
            return;
        }
    }
    // No handler before ours: die of the same signal, as the process would have without us.
    signal(number, SIG_DFL);
    raise(number);
}

void hn_emergency_install(void) {
    int expected = 0;
    if (!atomic_compare_exchange_strong(&installed, &expected, 1)) return;
    for (size_t index = 0; index < HN_SIGNALS; index++) {
        struct sigaction action;
        memset(&action, 0, sizeof(action));
        action.sa_sigaction = hn_fatal;
        action.sa_flags = SA_SIGINFO | SA_NODEFER | SA_RESETHAND;
        sigemptyset(&action.sa_mask);
        sigaction(fatal_signals[index], &action, &previous[index]);
    }
}
