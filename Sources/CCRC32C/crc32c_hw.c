#include "crc32c_hw.h"

#include <string.h>

// One step of 8 bytes and one of 1 byte, with each architecture's instruction; one loop below.
#if defined(__x86_64__)
#include <nmmintrin.h>
#define LOGSTORE_CRC_HW 1
#define LOGSTORE_CRC_TARGET __attribute__((target("sse4.2")))

static inline LOGSTORE_CRC_TARGET uint32_t step8(uint32_t crc, uint64_t word) { return (uint32_t)_mm_crc32_u64(crc, word); }
static inline LOGSTORE_CRC_TARGET uint32_t step1(uint32_t crc, unsigned char byte) { return _mm_crc32_u8(crc, byte); }

int logstore_crc32c_hw_available(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("sse4.2") ? 1 : 0;
}

#elif defined(__aarch64__) && defined(__ARM_FEATURE_CRC32)
#include <arm_acle.h>
#define LOGSTORE_CRC_HW 1
#define LOGSTORE_CRC_TARGET

static inline uint32_t step8(uint32_t crc, uint64_t word) { return __crc32cd(crc, word); }
static inline uint32_t step1(uint32_t crc, unsigned char byte) { return __crc32cb(crc, byte); }

int logstore_crc32c_hw_available(void) { return 1; }

#else

int logstore_crc32c_hw_available(void) { return 0; }

uint32_t logstore_crc32c_hw_update(uint32_t crc, const void *bytes, size_t count) {
    (void)bytes;
    (void)count;
    return crc;
}

#endif

#if defined(LOGSTORE_CRC_HW)
LOGSTORE_CRC_TARGET
uint32_t logstore_crc32c_hw_update(uint32_t crc, const void *bytes, size_t count) {
    const unsigned char *p = (const unsigned char *)bytes;
    while (count >= 8) {
        uint64_t word;
        memcpy(&word, p, 8);
        crc = step8(crc, word);
        p += 8;
        count -= 8;
    }
    while (count > 0) {
        crc = step1(crc, *p);
        p++;
        count--;
    }
    return crc;
}
#endif
