#ifndef HN_EMERGENCY_STOP_H
#define HN_EMERGENCY_STOP_H
#include <stddef.h>
#include <stdint.h>

/// Registers a descriptor and the bytes that stop its device; written from a fatal-signal handler.
/// Returns 0, or -1 when every slot is taken or the bytes are too long.
int hn_emergency_register(int fd, const uint8_t *bytes, size_t count);
/// Forgets a descriptor before it is closed.
void hn_emergency_unregister(int fd);
/// Installs the handlers for SIGSEGV, SIGBUS, SIGILL, SIGTRAP, SIGABRT and SIGFPE once: each writes the stop
/// bytes to every registered descriptor, then hands the signal to the handler that was there before.
void hn_emergency_install(void);
/// Writes the stop bytes now, as the handlers do (for tests and last-resort paths). Returns descriptors written.
int hn_emergency_stop_all(void);

#endif
