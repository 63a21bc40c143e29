# Tests of the tools: the .npy reader/writer (tools/models/npy.c) and the sk
# command-line tool (tools/sk), run as ctest tests through run_expect.sh,
# which checks exit codes and output fragments.

# test_npy links the public shared library through sk_models (not
# superkernel_internal: one copy of the library per process).
add_executable(test_npy test_npy.c)
target_link_libraries(test_npy PRIVATE sk_models superkernel)
target_include_directories(test_npy PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
set_target_properties(test_npy PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bin/tests)
add_test(NAME test_npy COMMAND test_npy)
set_tests_properties(test_npy PROPERTIES TIMEOUT 60)

# ---- sk CLI ---------------------------------------------------------------
set(SK_EXPECT bash ${CMAKE_CURRENT_SOURCE_DIR}/run_expect.sh)
set(SK_CLI_DIR ${CMAKE_CURRENT_BINARY_DIR}/sk_cli)
set(SK_OUT_RE "output [a-z0-9_]+: [a-z0-9]+ \\[[0-9, ]*\\]  checksum [^ ]+  hash [0-9a-f]+")
set(SK_SUM_RE "checksum [^ ]+  hash [0-9a-f]+")

# sk_cli_test(NAME CODE [-o FRAG | -E FRAG ...] -- sk ARGS...)
function(sk_cli_test name)
  add_test(NAME ${name} COMMAND ${SK_EXPECT} ${ARGN})
  set_tests_properties(${name} PROPERTIES TIMEOUT 120 LABELS sk_cli)
endfunction()
set(SK $<TARGET_FILE:sk>)

# Help and usage.
sk_cli_test(sk_help 0 -o "usage: sk COMMAND" -o "run MODEL" -o "example01, seed, decode, prefill" -- ${SK} --help)
sk_cli_test(sk_help_short 0 -o "usage: sk COMMAND" -- ${SK} -h)
sk_cli_test(sk_version 0 -o "sk (superkernel)" -- ${SK} --version)
sk_cli_test(sk_no_command 2 -E "missing command" -E "sk --help" -- ${SK})
sk_cli_test(sk_unknown_command 2 -E "unknown command 'frob'" -- ${SK} frob)
sk_cli_test(sk_unknown_top_option 2 -E "unknown option '--frob'" -- ${SK} --frob)
foreach(cmd options run plan npy)
  sk_cli_test(sk_${cmd}_help 0 -o "usage: sk ${cmd}" -N "usage" -- ${SK} ${cmd} --help)
  sk_cli_test(sk_${cmd}_help_short 0 -o "usage: sk ${cmd}" -- ${SK} ${cmd} -h)
  sk_cli_test(sk_${cmd}_bad_flag 2 -E "unknown option '--frob'" -E "usage: sk ${cmd}" -O "usage" -- ${SK} ${cmd} --frob)
endforeach()

# sk options
# (add_test directly: an empty argument does not survive a function's ARGN)
add_test(NAME sk_options_defaults COMMAND ${SK_EXPECT} 0 -o "func-align=512" -o "early-start=1" -- ${SK} options "")
set_tests_properties(sk_options_defaults PROPERTIES TIMEOUT 120 LABELS sk_cli)
sk_cli_test(sk_options_effective 0 -o "early-start=0" -o "split-mode=8" -o "func-align=512"
            -- ${SK} options "early_start=0:split-mode=8")
sk_cli_test(sk_options_invalid 2 -E "early-start" -E "accepted: 0, 1, 2" -O "func-align" -- ${SK} options "early-start=3")
sk_cli_test(sk_options_unknown_key 2 -E "frob" -- ${SK} options "frob=1")
sk_cli_test(sk_options_missing 2 -E "missing the options string" -- ${SK} options)
sk_cli_test(sk_options_two 2 -E "expected one options string" -- ${SK} options "split-mode=4" "split-mode=2")

# sk run: usage errors and invalid input exit 2.
sk_cli_test(sk_run_unknown_model 2 -E "unknown model 'nosuch' (known: example01, seed, decode, prefill)"
            -- ${SK} run nosuch)
sk_cli_test(sk_run_missing_model 2 -E "missing MODEL" -- ${SK} run)
sk_cli_test(sk_run_two_models 2 -E "expected one MODEL" -- ${SK} run seed decode)
sk_cli_test(sk_run_threads_zero 2 -E "--threads: expected an integer in 1..1024, got '0'" -- ${SK} run decode --threads 0)
sk_cli_test(sk_run_threads_abc 2 -E "--threads: expected an integer in 1..1024, got 'abc'" -- ${SK} run decode --threads abc)
sk_cli_test(sk_run_threads_missing 2 -E "option --threads needs a value" -- ${SK} run decode --threads)
sk_cli_test(sk_run_iters_zero 2 -E "--iters" -- ${SK} run decode --iters=0)
sk_cli_test(sk_run_bad_options 2 -E "invalid --options" -E "early-start" -- ${SK} run decode --options early-start=3)
sk_cli_test(sk_run_options_vs_team 2 -E "debug-aic-num" -E "team size 1"
            -- ${SK} run decode --threads 1 --options debug-aic-num=2 --iters 1)
sk_cli_test(sk_run_inputs_not_dir 2 -E "not a directory" -- ${SK} run decode --inputs ${SK_CLI_DIR}/no_such_dir)

# sk run: runs.
sk_cli_test(sk_run_decode 0 -o "output output: fp16 [6, 33, 64]  checksum" -o "median" -o "executor interp"
            -- ${SK} run decode --iters 2)
sk_cli_test(sk_run_decode_no_sk 0 -o "output output: fp16 [6, 33, 64]  checksum" -o "executor eager"
            -- ${SK} run decode --no-sk --iters 2)
sk_cli_test(sk_run_decode_options 0 -o "options early-start=0" -o "team of 1 cores"
            -- ${SK} run decode --threads=1 --options=early-start=0 --iters 1)
sk_cli_test(sk_run_seed 0 -o "output output: fp16 [6, 48, 64]  checksum" -- ${SK} run seed --iters 2)
# Every mode and team size gives the same bits.
sk_cli_test(sk_run_seed_fused_equals_eager --same "${SK_OUT_RE}"
            -- ${SK} run seed --iters 2 -- ${SK} run seed --no-sk --iters 2)
sk_cli_test(sk_run_decode_threads_equal --same "${SK_OUT_RE}"
            -- ${SK} run decode --iters 2 --threads 1 -- ${SK} run decode --iters 2 --options early-start=0)
sk_cli_test(sk_run_example01_is_seed --same "${SK_OUT_RE}"
            -- ${SK} run example01 --iters 1 -- ${SK} run seed --iters 1)
sk_cli_test(sk_run_seed_flag_changes_inputs --differ "${SK_OUT_RE}"
            -- ${SK} run decode --iters 1 -- ${SK} run decode --iters 1 --seed 7)

# sk plan
sk_cli_test(sk_plan_seed 0 -o "super kernel sk1" -o "super kernel sk2" -o "sub 0: gmm1 (grouped_matmul"
            -o "op concat" -- ${SK} plan seed)
sk_cli_test(sk_plan_options 0 -o "early-start=0" -o "team of 1 cores" -- ${SK} plan decode --threads 1 --options early-start=0)
sk_cli_test(sk_plan_unknown_model 2 -E "unknown model 'nosuch'" -- ${SK} plan nosuch)

# .npy exchange: decode's inputs and outputs saved once (fixture), then read.
add_test(NAME sk_files_setup COMMAND ${CMAKE_COMMAND} -E remove_directory ${SK_CLI_DIR})
set_tests_properties(sk_files_setup PROPERTIES FIXTURES_SETUP sk_files_clean)
sk_cli_test(sk_run_save_files 0 -o "save-inputs: 15 files written" -o "save-outputs: 1 file written"
            -- ${SK} run decode --iters 1 --save-inputs ${SK_CLI_DIR}/decode_in --save-outputs ${SK_CLI_DIR}/decode_out)
set_tests_properties(sk_run_save_files PROPERTIES FIXTURES_REQUIRED sk_files_clean FIXTURES_SETUP sk_files)
# --inputs replaces the built-in values: a run with another seed reading the
# saved inputs gives the first run's output.
sk_cli_test(sk_run_inputs_round_trip --same "${SK_OUT_RE}"
            -- ${SK} run decode --iters 1 -- ${SK} run decode --iters 1 --seed 7 --inputs ${SK_CLI_DIR}/decode_in)
sk_cli_test(sk_run_inputs_read 0 -o "inputs: 15 of 15 read" -N "warning"
            -- ${SK} run decode --iters 1 --inputs ${SK_CLI_DIR}/decode_in)
# The saved output file holds what the run printed.
sk_cli_test(sk_npy_output_round_trip --same "${SK_SUM_RE}"
            -- ${SK} run decode --iters 1 -- ${SK} npy ${SK_CLI_DIR}/decode_out/output.npy)
# A file of the wrong shape (decode's [8,128] for seed's [64,128]) is an error naming it.
sk_cli_test(sk_run_inputs_wrong_shape 2 -E "decode_in/gmm1_x_0.npy: shape mismatch: expected [64, 128], got [8, 128]"
            -- ${SK} run seed --iters 1 --inputs ${SK_CLI_DIR}/decode_in)
# Missing files keep the built-in values (output.npy there is no stray file).
sk_cli_test(sk_run_inputs_partial 0 -o "inputs: 0 of 15 read" -N "warning"
            -- ${SK} run decode --iters 1 --inputs ${SK_CLI_DIR}/decode_out)
sk_cli_test(sk_npy_not_npy 2 -E "not a .npy file" -- ${SK} npy ${CMAKE_CURRENT_SOURCE_DIR}/tools.cmake)
sk_cli_test(sk_npy_missing 2 -E "cannot open" -- ${SK} npy ${SK_CLI_DIR}/nothing.npy)
set_tests_properties(sk_run_inputs_round_trip sk_run_inputs_read sk_npy_output_round_trip
                     sk_run_inputs_wrong_shape sk_run_inputs_partial
                     PROPERTIES FIXTURES_REQUIRED sk_files)
