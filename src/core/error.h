/* Internal error reporting: every failing path records a message that names
 * the culprit and returns its status in one statement:
 *
 *   return sk__fail(SK_STATUS_INVALID_SHAPE, "%s: input %s: expected ...", ...);
 */
#ifndef SK_CORE_ERROR_H
#define SK_CORE_ERROR_H

#include "superkernel.h"

/* Records a formatted message as this thread's sk_last_error() (and logs it
 * at debug level), then returns status. */
sk_status sk__fail(sk_status status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The same, with this thread's current message (what a callee failed
 * with) kept after the new one: "<fmt>: <the callee's message>". For a
 * caller that names where a callee's failure happened. */
sk_status sk__fail_within(sk_status status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Clears this thread's last error; public calls do this on entry. */
void sk__clear_error(void);

/* Internal log call: formats and hands the message to the hook when the level
 * is enabled. */
void sk__log(sk_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#define SK_RETURN_IF_ERROR(expr)          \
  do {                                    \
    sk_status sk__st_ = (expr);           \
    if (sk__st_ != SK_STATUS_OK) return sk__st_; \
  } while (0)

#endif
