/**
 * @file marcel.h
 * @brief The whole marcel API: include this one header.
 *
 * marcel is an M:N user-level thread scheduler whose run queues mirror the machine's
 * topology. See README.md for the environment variables (`MARCEL_NVP`,
 * `MARCEL_TOPOLOGY`, `MARCEL_STACK_SIZE`, ...).
 *
 * Like PM2's `<marcel.h>`, it also brings in the C library headers Marcel programs rely
 * on without including them (`stdlib.h`, `stdio.h`, `string.h`, `unistd.h`, `setjmp.h`,
 * `fcntl.h`, `signal.h`, `errno.h`, `alloca.h`...), and defines the feature macros they
 * test (marcel/features.h).
 */
#ifndef MARCEL_H
#define MARCEL_H

/* What Marcel's <marcel.h> pulled in through its tbx and sys headers: Marcel programs
 * call malloc, memset, sleep, open, setjmp, alloca... with no include of their own. */
#include <alloca.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include <marcel/types.h>
#include <marcel/features.h>
#include <marcel/vpset.h>
#include <marcel/attr.h>
#include <marcel/thread.h>
#include <marcel/cancel.h>
#include <marcel/signal.h>
#include <marcel/topology.h>
#include <marcel/sync.h>
#include <marcel/keys.h>
#include <marcel/time.h>
#include <marcel/hwprio.h>
#include <marcel/blocking.h>
#include <marcel/compat.h>
#include <marcel/bubble.h>
#include <marcel/bubble_sched.h>
#include <marcel/snapshot.h>
#include <marcel/trace.h>
#include <marcel/compat_names.h>

#endif
