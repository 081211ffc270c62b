/**
 * @file marcel.h
 * @brief The whole marcel API: include this one header.
 *
 * marcel is an M:N user-level thread scheduler whose run queues mirror the machine's
 * topology. See README.md for the environment variables (`MARCEL_NVP`,
 * `MARCEL_TOPOLOGY`, `MARCEL_STACK_SIZE`, ...).
 */
#ifndef MARCEL_H
#define MARCEL_H

#include <marcel/types.h>
#include <marcel/vpset.h>
#include <marcel/attr.h>
#include <marcel/thread.h>
#include <marcel/topology.h>
#include <marcel/sync.h>
#include <marcel/keys.h>
#include <marcel/time.h>
#include <marcel/blocking.h>
#include <marcel/compat.h>
#include <marcel/bubble.h>
#include <marcel/bubble_sched.h>
#include <marcel/snapshot.h>
#include <marcel/trace.h>

#endif
