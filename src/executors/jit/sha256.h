/* SHA-256 (FIPS 180-4), for the JIT cache key. Small and dependency-free:
 * the cache needs a strong hash of a few kilobytes once per super kernel,
 * not speed. */
#ifndef SK_JIT_SHA256_H
#define SK_JIT_SHA256_H

#include <stddef.h>
#include <stdint.h>

typedef struct sk__sha256 {
  uint32_t state[8];
  uint64_t bytes;       /* message length so far */
  unsigned char buf[64];
  size_t used;          /* bytes waiting in buf */
} sk__sha256;

void sk__sha256_init(sk__sha256 *h);
void sk__sha256_update(sk__sha256 *h, const void *data, size_t n);
void sk__sha256_final(sk__sha256 *h, unsigned char digest[32]);
/* The digest as 64 lowercase hex digits and a NUL. */
void sk__sha256_hex(const unsigned char digest[32], char hex[65]);

#endif
