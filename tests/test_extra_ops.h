/* Test ops registered at run time (sk__op_register), shared by the tests of
 * super kernels, the JIT and custom kernels:
 *   test_allreduce  x fp32 [B, n] -> y [B]: every y[b] = sum of all of x;
 *                   one block per row, two team barriers per block (the
 *                   feed-sync-all case when B is below the core count);
 *   test_unfusable  a copy that declares itself unfusable (strict-scope-check). */
#ifndef SK_TEST_EXTRA_OPS_H
#define SK_TEST_EXTRA_OPS_H

/* Registers both ops once per process (later calls do nothing). */
void rr_register_test_ops(void);

#endif
