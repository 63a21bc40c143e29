/* The executors: each runs a program's steps its own way behind the table
 * of program/step.h. The compiler gives every step one of them:
 *   eager        an op's own launch over its blocks (a team launch);
 *   reference    the op's plain reference (the tests' oracle);
 *   interpreter  a super kernel whose cores walk their task lists;
 *   JIT          a super kernel run as compiled code (jit/), the steps
 *                sk__program_jit could compile; the rest stay interpreted.
 * A new executor is a file here, its table, and the line of the compiler
 * that chooses it. */
#ifndef SK_EXECUTORS_EXECUTORS_H
#define SK_EXECUTORS_EXECUTORS_H

#include "program/step.h"

extern const sk__step_executor sk__executor_eager;
extern const sk__step_executor sk__executor_reference;
extern const sk__step_executor sk__executor_interpreter;
extern const sk__step_executor sk__executor_jit;

/* An op's own step under the program's executor: its reference with the
 * reference executor, else its own launch. */
const sk__step_executor *sk__executor_for_op(sk_executor program_executor);

#endif
