#ifndef HAPTICNAV_PSEUDO_TERMINAL_H
#define HAPTICNAV_PSEUDO_TERMINAL_H
#include <stddef.h>

/// Opens a new pseudo-terminal master (read/write, no controlling terminal), unlocked, and writes the
/// path of its slave side into `name`. Returns the master's descriptor, or -1 with errno set.
int hn_open_pseudo_terminal(char *name, size_t capacity);

#endif
