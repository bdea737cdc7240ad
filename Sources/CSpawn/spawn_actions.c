#define _GNU_SOURCE
#include "spawn_actions.h"
#include <errno.h>

int hn_spawn_close_from(posix_spawn_file_actions_t *actions, int lowest) {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
    return posix_spawn_file_actions_addclosefrom_np(actions, lowest);
#else
    (void)actions;
    (void)lowest;
    return ENOSYS;  // elsewhere (macOS: POSIX_SPAWN_CLOEXEC_DEFAULT), close-on-exec on every descriptor is relied on
#endif
}
