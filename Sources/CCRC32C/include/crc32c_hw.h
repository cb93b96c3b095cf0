// Hardware CRC-32C (Castagnoli) for LogStoreEngine's `CRC32C`: SSE4.2 `crc32` on x86-64, the
// ARMv8 CRC32 extension on arm64. Only `CRC32C.swift` imports this module.
#ifndef LOGSTORE_CRC32C_HW_H
#define LOGSTORE_CRC32C_HW_H

#include <stddef.h>
#include <stdint.h>

/// 1 if this CPU computes CRC-32C in hardware (checked once, any thread), else 0.
int logstore_crc32c_hw_available(void);

/// Extends `crc` (the raw, inverted register value, as the software loop keeps it) with `count`
/// bytes at `bytes`. Call only if `logstore_crc32c_hw_available()` returned 1.
uint32_t logstore_crc32c_hw_update(uint32_t crc, const void *bytes, size_t count);

#endif
