#ifndef HAPTICNAV_SPAWN_ACTIONS_H
#define HAPTICNAV_SPAWN_ACTIONS_H
#include <spawn.h>

/// Adds to `actions` the closing of every descriptor from `lowest` up in the started program (glibc's
/// posix_spawn_file_actions_addclosefrom_np, which Swift's Glibc module does not show). Returns 0 or an error number.
int hn_spawn_close_from(posix_spawn_file_actions_t *actions, int lowest);

#endif
