/*
 * nm_shm.h - same-node transport for memory that is not mapped here: process_vm_readv /
 * process_vm_writev (cross-memory attach). Mapped memory never comes here: the device core
 * loads and stores it directly.
 */
#ifndef RMA_NM_SHM_H
#define RMA_NM_SHM_H

#include "netmod/netmod.h"

#endif
