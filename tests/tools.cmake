# Tests of the tools: the .npy reader/writer (tools/models/npy.c) and the sk
# command-line tool (tools/sk), run as ctest tests through run_expect.sh,
# which checks exit codes and output fragments.

# A test of tools/models: it links the public shared library through
# sk_models (not superkernel_internal: one copy of the library per process).
function(sk_models_test name)
  add_executable(${name} ${name}.c)
  target_link_libraries(${name} PRIVATE sk_models superkernel)
  target_include_directories(${name} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bin/tests)
  add_test(NAME ${name} COMMAND ${name})
  set_tests_properties(${name} PROPERTIES TIMEOUT 60)
endfunction()

sk_models_test(test_npy)
sk_models_test(test_moe_skew)

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
sk_cli_test(sk_help 0 -o "usage: sk COMMAND" -o "run MODEL" -o "source MODEL" -o "cache path|list|clear"
            -o "profile MODEL" -o "example01, seed, decode, prefill, example02" -- ${SK} --help)
sk_cli_test(sk_help_short 0 -o "usage: sk COMMAND" -- ${SK} -h)
sk_cli_test(sk_version 0 -o "sk (superkernel) ${PROJECT_VERSION}" -- ${SK} --version)
sk_cli_test(sk_no_command 2 -E "missing command" -E "sk --help" -- ${SK})
sk_cli_test(sk_unknown_command 2 -E "unknown command 'frob'" -- ${SK} frob)
sk_cli_test(sk_unknown_top_option 2 -E "unknown option '--frob'" -- ${SK} --frob)
foreach(cmd options ops run plan npy source cache profile bench)
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
# sk ops: the schemas, data rules included.
sk_cli_test(sk_ops_all 0 -o "grouped_matmul(x[], weight[]" -o "gelu(x) -> y" -o "rank >= 2"
            -o "fp32|fp16|bf16|int8" -- ${SK} ops)
sk_cli_test(sk_ops_named 0 -o "linear(x, weight, bias?) -> y" -o "dtype of x" -O "reshape(" -- ${SK} ops linear)
# A slot's rules are one column, comma-separated (concat's ran together as ", rank >= 1dtype of x").
sk_cli_test(sk_ops_rules_separated 0 -o "rank >= 1, dtype of x" -O "1dtype" -- ${SK} ops concat)
# A list output (one tensor per size) and a required ints attribute; a float-only op.
sk_cli_test(sk_ops_split 0 -o "split(x" -o "sizes, dim) -> y[]" -o "ints, required" -o "int, default -1" -O "sigmoid("
            -- ${SK} ops split)
sk_cli_test(sk_ops_sigmoid 0 -o "sigmoid(x) -> y" -o "fp32|fp16|bf16" -O "split(" -- ${SK} ops sigmoid)
sk_cli_test(sk_ops_unknown 2 -E "unknown op type 'frob'" -- ${SK} ops frob)
sk_cli_test(sk_options_missing 2 -E "missing the options string" -- ${SK} options)
sk_cli_test(sk_options_two 2 -E "expected one options string" -- ${SK} options "split-mode=4" "split-mode=2")

# sk run: usage errors and invalid input exit 2.
sk_cli_test(sk_run_unknown_model 2 -E "unknown model 'nosuch' (known: example01, seed, decode, prefill, example02, moe-layer:"
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
sk_cli_test(sk_run_weights_missing 1 -E "--weights: ${SK_CLI_DIR}/no_ckpt: No such file" -- ${SK} run moe-layer --weights ${SK_CLI_DIR}/no_ckpt)
sk_cli_test(sk_run_layer_without_weights 2 -E "--layer needs --weights" -- ${SK} run moe-layer --layer 3)
sk_cli_test(sk_run_layer_not_integer 2 -E "--layer: expected an integer in 0..1048576, got 'two'"
            -- ${SK} run moe-layer --weights ${SK_CLI_DIR} --layer two)
sk_cli_test(sk_bench_weights_empty 2 -E "--weights: empty directory name" -- ${SK} bench --weights=)
sk_cli_test(sk_run_moe_layer_needs_preset 2 -E "unknown model 'moe-layer'" -- ${SK} run moe-layer)
sk_cli_test(sk_run_inputs_not_dir 2 -E "not a directory" -- ${SK} run decode --inputs ${SK_CLI_DIR}/no_such_dir)

# sk run: runs.
sk_cli_test(sk_run_decode 0 -o "output output: fp16 [6, 33, 64]  checksum" -o "median"
            -o "executor auto (default" -o "super kernels on, " -- ${SK} run decode --iters 2)
# (the default is $SK_EXECUTOR's, else auto: this test must not inherit one)
set_tests_properties(sk_run_decode PROPERTIES ENVIRONMENT "SK_EXECUTOR=")
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
# --numerics: the contract named in the plan, a bad name refused, and the
# bench's modes (eager, interp, JIT) bitwise equal under the AMX contract
# (TDPBF16PS where the CPU has AMX-BF16, its emulation elsewhere).
sk_cli_test(sk_plan_numerics_amx 0 -o "numerics amx" -- ${SK} plan moe-layer:tiny:bf16 --threads 2 --numerics amx)
sk_cli_test(sk_plan_numerics_default 0 -o "numerics default" -- ${SK} plan moe-layer:tiny:bf16 --threads 2)
sk_cli_test(sk_plan_numerics_bad 2 -E "--numerics: expected default or amx, got 'fast'"
            -- ${SK} plan moe-layer:tiny:bf16 --numerics fast)
sk_cli_test(sk_bench_numerics_amx 0 -o "moe-layer:tiny:t9:bf16" -o "bitwise equal" -O "DIFFER"
            -- ${SK} bench moe-layer:tiny:t9:bf16 --numerics amx --iters 10 --threads 2 --no-floor)

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
# Missing files keep the built-in values (output.npy there is no stray file);
# without a weight's file the weights stay constants (4 program inputs).
sk_cli_test(sk_run_inputs_partial 0 -o "weights as constants" -o "inputs: 0 of 4 read" -N "warning"
            -- ${SK} run decode --iters 1 --inputs ${SK_CLI_DIR}/decode_out)
sk_cli_test(sk_npy_not_npy 2 -E "not a .npy file" -- ${SK} npy ${CMAKE_CURRENT_SOURCE_DIR}/tools.cmake)
sk_cli_test(sk_npy_missing 2 -E "cannot open" -- ${SK} npy ${SK_CLI_DIR}/nothing.npy)
# A FIFO (no writer) as a .npy file is refused at once, not waited on.
sk_cli_test(sk_npy_fifo 2 -E "not a regular file"
            -- sh -c "mkdir -p \"$1\" && rm -f \"$1/x.npy\" && mkfifo \"$1/x.npy\" && exec \"$0\" npy \"$1/x.npy\""
               ${SK} ${CMAKE_CURRENT_BINARY_DIR}/sk_fifo)
set_tests_properties(sk_npy_fifo PROPERTIES TIMEOUT 30)
# A dangling symlink among --inputs is an error, not "missing, use the built-in values".
sk_cli_test(sk_run_inputs_dangling_link 2 -E "a symbolic link to a file that does not exist"
            -- sh -c "mkdir -p \"$1\" && ln -sf \"$1/nowhere.npy\" \"$1/data1.npy\" && exec \"$0\" run decode --iters 1 --inputs \"$1\""
               ${SK} ${CMAKE_CURRENT_BINARY_DIR}/sk_dangling)
set_tests_properties(sk_run_inputs_round_trip sk_run_inputs_read sk_npy_output_round_trip
                     sk_run_inputs_wrong_shape sk_run_inputs_partial
                     PROPERTIES FIXTURES_REQUIRED sk_files)

# ---- sk run --executor --------------------------------------------------------
# Every executor gives the default's bits.
foreach(exe interp jit eager)
  sk_cli_test(sk_run_executor_${exe} 0 -o "executor ${exe} (" -- ${SK} run decode --iters 2 --executor ${exe})
  sk_cli_test(sk_run_executor_${exe}_same --same "${SK_OUT_RE}"
              -- ${SK} run decode --iters 2 -- ${SK} run decode --iters 2 --executor=${exe})
endforeach()
sk_cli_test(sk_run_executor_env 0 -o "executor interp ($SK_EXECUTOR" -o "super kernels on, interpreted)"
            -- ${SK} run decode --iters 1)
set_tests_properties(sk_run_executor_env PROPERTIES ENVIRONMENT "SK_EXECUTOR=interp")
sk_cli_test(sk_run_executor_flag_beats_env 0 -o "executor eager (super kernels off)"
            -- ${SK} run decode --iters 1 --executor eager)
set_tests_properties(sk_run_executor_flag_beats_env PROPERTIES ENVIRONMENT "SK_EXECUTOR=interp")
sk_cli_test(sk_run_executor_bad_env 2 -E "SK_EXECUTOR=bogus" -- ${SK} run decode --iters 1)
set_tests_properties(sk_run_executor_bad_env PROPERTIES ENVIRONMENT "SK_EXECUTOR=bogus")
sk_cli_test(sk_run_executor_bogus 2 -E "--executor: expected one of eager, interp, jit, auto, reference, got 'bogus'"
            -- ${SK} run decode --executor bogus)
sk_cli_test(sk_run_executor_missing 2 -E "option --executor needs a value" -- ${SK} run decode --executor)
sk_cli_test(sk_run_executor_conflict 2 -E "--no-sk (eager) conflicts with --executor jit"
            -- ${SK} run decode --no-sk --executor jit)
sk_cli_test(sk_run_executor_no_conflict 0 -o "executor eager" -- ${SK} run decode --iters 1 --no-sk --executor eager)

# ---- example02 ------------------------------------------------------------------
sk_cli_test(sk_run_example02 0 -o "output routing: fp16 [64, 128]  checksum" -o "output quantized: int8 [64, 64]"
            -- ${SK} run example02 --iters 2)
sk_cli_test(sk_run_example02_fused_equals_eager --same "${SK_OUT_RE}"
            -- ${SK} run example02 --iters 2 -- ${SK} run example02 --iters 2 --no-sk)
sk_cli_test(sk_plan_example02 0 -o "super kernel sk1" -o "super kernel sk6" -o "early-start=0" -- ${SK} plan example02)

# ---- sk source ------------------------------------------------------------------
sk_cli_test(sk_source_seed 0 -o "sk_jit_entry" -o "aligned(512)" -o "scope 'sk1': sub 0 = gmm1"
            -- ${SK} source seed --scope sk1)
sk_cli_test(sk_source_func_align_0 0 -o "sk_jit_entry" -O "aligned(" -- ${SK} source seed --scope=sk2 --options func-align=0)
sk_cli_test(sk_source_unknown_scope 2 -E "no super kernel for scope 'nosuch' (scopes: sk1, sk2)"
            -- ${SK} source seed --scope nosuch)
sk_cli_test(sk_source_missing_scope 2 -E "missing --scope NAME (scopes of seed: sk1, sk2)" -- ${SK} source seed)
sk_cli_test(sk_source_missing_model 2 -E "missing MODEL" -- ${SK} source --scope sk1)
sk_cli_test(sk_source_unknown_model 2 -E "unknown model 'nosuch'" -- ${SK} source nosuch --scope sk1)
sk_cli_test(sk_source_bad_options 2 -E "invalid --options" -- ${SK} source seed --scope sk1 --options func-align=3)

# ---- sk cache (its own cache directory) -----------------------------------------
set(SK_CACHE_TEST_DIR ${CMAKE_CURRENT_BINARY_DIR}/sk_cli_cache)
function(sk_cache_test name)
  sk_cli_test(${name} ${ARGN})
  set_tests_properties(${name} PROPERTIES ENVIRONMENT "SK_CACHE_DIR=${SK_CACHE_TEST_DIR}")
endfunction()
sk_cli_test(sk_cache_path 0 -o "${SK_CACHE_TEST_DIR}_path" -- ${SK} cache path)
set_tests_properties(sk_cache_path PROPERTIES ENVIRONMENT "SK_CACHE_DIR=${SK_CACHE_TEST_DIR}_path")
sk_cli_test(sk_cache_bogus 2 -E "unknown action 'bogus'" -- ${SK} cache bogus)
sk_cli_test(sk_cache_missing 2 -E "missing the action" -- ${SK} cache)
sk_cli_test(sk_cache_two 2 -E "expected one action" -- ${SK} cache list clear)
# A directory that is a symbolic link is refused with the library's message.
add_test(NAME sk_cache_link_setup COMMAND ${CMAKE_COMMAND} -E create_symlink ${CMAKE_CURRENT_BINARY_DIR}
         ${SK_CACHE_TEST_DIR}_link)
set_tests_properties(sk_cache_link_setup PROPERTIES FIXTURES_SETUP sk_cache_link)
foreach(action path list clear)
  sk_cli_test(sk_cache_unsafe_${action} 1 -E "refusing cache directory" -E "symbolic link" -- ${SK} cache ${action})
  set_tests_properties(sk_cache_unsafe_${action} PROPERTIES ENVIRONMENT "SK_CACHE_DIR=${SK_CACHE_TEST_DIR}_link"
                       FIXTURES_REQUIRED sk_cache_link)
endforeach()
# empty -> a JIT run fills it -> list -> clear -> list shows none.
add_test(NAME sk_cache_setup COMMAND ${CMAKE_COMMAND} -E remove_directory ${SK_CACHE_TEST_DIR})
set_tests_properties(sk_cache_setup PROPERTIES FIXTURES_SETUP sk_cache_clean)
sk_cache_test(sk_cache_fill 0 -o "executor jit (super kernels on, 2 JIT-compiled)"
              -- ${SK} run decode --iters 1 --executor jit)
set_tests_properties(sk_cache_fill PROPERTIES FIXTURES_REQUIRED sk_cache_clean FIXTURES_SETUP sk_cache_filled)
sk_cache_test(sk_cache_list 0 -o ".so  " -o " bytes  " -o "total: " -O "total: 0 entries" -o "in ${SK_CACHE_TEST_DIR}"
              -- ${SK} cache list)
set_tests_properties(sk_cache_list PROPERTIES FIXTURES_REQUIRED sk_cache_filled)
sk_cache_test(sk_cache_clear 0 -o "removed " -o " files from ${SK_CACHE_TEST_DIR}" -O "removed 0 " -- ${SK} cache clear)
set_tests_properties(sk_cache_clear PROPERTIES FIXTURES_REQUIRED sk_cache_filled FIXTURES_SETUP sk_cache_cleared
                     DEPENDS sk_cache_list)
sk_cache_test(sk_cache_list_empty 0 -o "total: 0 entries, 0 bytes" -O ".so" -- ${SK} cache list)
set_tests_properties(sk_cache_list_empty PROPERTIES FIXTURES_REQUIRED sk_cache_cleared)

# ---- sk profile -----------------------------------------------------------------
set(SK_PROFILE_DIR ${CMAKE_CURRENT_BINARY_DIR}/sk_cli_profile)
add_test(NAME sk_profile_setup COMMAND ${CMAKE_COMMAND} -E remove_directory ${SK_PROFILE_DIR})
set_tests_properties(sk_profile_setup PROPERTIES FIXTURES_SETUP sk_profile_clean)
sk_cli_test(sk_profile_decode 0 -o "no_sk_model  executor eager" -o "sk_model     executor" -o "SuperKernel"
            -o "total without super kernels: " -o "gain" -o "outputs bitwise equal" -r
            -f ${SK_PROFILE_DIR}/decode/no_sk_model/op_statistic.csv -f ${SK_PROFILE_DIR}/decode/no_sk_model/trace.json
            -f ${SK_PROFILE_DIR}/decode/sk_model/op_statistic.csv -f ${SK_PROFILE_DIR}/decode/sk_model/trace.json
            -- ${SK} profile decode --out ${SK_PROFILE_DIR}/decode --iters 3)
# No progress line off a terminal (-r: no '\r'); example02's six scopes.
sk_cli_test(sk_profile_example02 0 -o "gain" -o "outputs bitwise equal" -O "compiling" -r
            -f ${SK_PROFILE_DIR}/example02/no_sk_model/op_statistic.csv -f ${SK_PROFILE_DIR}/example02/sk_model/trace.json
            -- ${SK} profile example02 --out=${SK_PROFILE_DIR}/example02 --iters=2)
# The user's options go after profiling=1; their own profiling=... replaces it.
sk_cli_test(sk_profile_options 0 -o "options profiling=1:early-start=0," -o "gain"
            -- ${SK} profile decode --out ${SK_PROFILE_DIR}/options --iters 1 --options early-start=0)
sk_cli_test(sk_profile_own_profiling 0 -o "options profiling=0," -o "gain"
            -- ${SK} profile decode --out ${SK_PROFILE_DIR}/own --iters 1 --options profiling=0)
set_tests_properties(sk_profile_decode sk_profile_example02 sk_profile_options sk_profile_own_profiling
                     PROPERTIES FIXTURES_REQUIRED sk_profile_clean)
sk_cli_test(sk_profile_missing_out 2 -E "missing --out DIR" -- ${SK} profile decode)
sk_cli_test(sk_profile_missing_model 2 -E "missing MODEL" -- ${SK} profile --out ${SK_PROFILE_DIR}/x)
sk_cli_test(sk_profile_unknown_model 2 -E "unknown model 'nosuch'" -- ${SK} profile nosuch --out ${SK_PROFILE_DIR}/x)
sk_cli_test(sk_profile_iters_zero 2 -E "--iters: expected an integer in 1..10000000, got '0'"
            -- ${SK} profile decode --out ${SK_PROFILE_DIR}/x --iters 0)
sk_cli_test(sk_profile_iters_abc 2 -E "--iters: expected an integer" -- ${SK} profile decode --out ${SK_PROFILE_DIR}/x --iters abc)
sk_cli_test(sk_profile_bad_options 2 -E "invalid --options" -- ${SK} profile decode --out ${SK_PROFILE_DIR}/x --options early-start=3)

# ---- sk bench -------------------------------------------------------------------
sk_cli_test(sk_bench_in_help 0 -o "bench [SCENARIO...]" -- ${SK} --help)
sk_cli_test(sk_bench_help_text 0 -o "usage: sk bench [SCENARIO ...] [--iters N] [--threads LIST] [--json]"
            -o "interp/eager, jit/eager, jit/interp" -- ${SK} bench --help)
# The table: one row per scenario and team size, the three ratios, outputs equal.
sk_cli_test(sk_bench_seed_table 0 -o "jit/eager" -o "interp/eager" -o "jit/interp" -o "bitwise equal" -o "floor" -r
            -- ${SK} bench seed --iters 1 --threads 1)
sk_cli_test(sk_bench_example02_table 0 -o "example02" -o "bitwise equal" -O "DIFFER"
            -- ${SK} bench example02 --iters 1 --threads 1 --options early-start=0)
# mla: a latent-attention decode, its outputs equal and its bandwidth floor (cache and kv_b weight bytes).
sk_cli_test(sk_bench_mla_decode 0 -o "mla:tiny:decode:ctx64" -o "bitwise equal" -o "bandwidth floor" -O "DIFFER"
            -- ${SK} bench mla:tiny:decode:ctx64 --iters 1 --threads 1 --no-floor)
# --json: one document that parses, with every mode, percentile and ratio.
find_package(Python3 COMPONENTS Interpreter)
if(Python3_Interpreter_FOUND)
  add_test(NAME sk_bench_json
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/check_bench_json.py --scenario decode --threads 1
                   -- ${SK} bench decode --iters 1 --threads 1 --json)
  add_test(NAME sk_bench_json_two_teams
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/check_bench_json.py
                   -- ${SK} bench decode --iters 3 --threads 1,2 --json)
  # The machine's fields with the real OpenBLAS (skipped without it).
  add_test(NAME sk_bench_json_machine
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/check_bench_json.py --require-blas
                   --scenario decode --threads 1 -- ${SK} bench decode --iters 5 --threads 1 --json)
  set_tests_properties(sk_bench_json sk_bench_json_two_teams sk_bench_json_machine PROPERTIES
                       TIMEOUT 120 LABELS sk_cli SKIP_RETURN_CODE 77)
else()
  sk_cli_test(sk_bench_json 0 -o "\"machine\": {\"cores\": " -o "\"interp_over_eager\": " -o "\"jit_over_eager\": "
              -o "\"jit_over_interp\": " -o "\"bitwise_equal\": true"
              -- ${SK} bench decode --iters 1 --threads 1 --json)
  # The two-team document needs the parser: reported as skipped.
  add_test(NAME sk_bench_json_two_teams COMMAND sh -c "echo 'SKIPPED: python3 not found: JSON not parsed'; exit 77")
  set_tests_properties(sk_bench_json_two_teams PROPERTIES SKIP_RETURN_CODE 77 LABELS sk_cli)
endif()
sk_cli_test(sk_bench_no_floor 0 -o "no floor: --no-floor" -- ${SK} bench decode --iters 1 --threads 1 --no-floor)
# Usage errors exit 2.
sk_cli_test(sk_bench_unknown_scenario 2 -E "unknown scenario 'nosuch' (known: example01, seed, decode, prefill, example02, moe-layer:"
            -- ${SK} bench nosuch)
sk_cli_test(sk_bench_iters_zero 2 -E "--iters: expected an integer in 1..10000000, got '0'" -- ${SK} bench decode --iters 0)
sk_cli_test(sk_bench_threads_abc 2 -E "--threads: expected team sizes in 1..1024 or 'all'" -- ${SK} bench decode --threads abc)
sk_cli_test(sk_bench_threads_empty_item 2 -E "--threads" -- ${SK} bench decode --threads 1,,2)
sk_cli_test(sk_bench_threads_missing 2 -E "option --threads needs a value" -- ${SK} bench decode --threads)
sk_cli_test(sk_bench_bad_options 2 -E "invalid --options" -- ${SK} bench decode --options early-start=3)

# ---- sk bench: the floor's core (tools/blas/blas_core.h) --------------------------
sk_add_test(NAME test_blas_core SOURCES test_blas_core.c LIBS sk_blas_core)
# A fake libopenblas.so.0 (fake_openblas.c), put first on LD_LIBRARY_PATH:
# it reports Prescott unless $OPENBLAS_CORETYPE names a core, so every check
# runs on any CPU with AVX, whether OpenBLAS is installed or not.
add_library(fake_openblas SHARED fake_openblas.c)
set_target_properties(fake_openblas PROPERTIES OUTPUT_NAME openblas SOVERSION 0
                      LIBRARY_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/fake_openblas)
# SK_FAKE_BLAS VAR=VALUE... sk ...: runs sk with the fake first and neither
# OPENBLAS_CORETYPE nor sk's marker inherited (set but empty is a choice).
set(SK_FAKE_BLAS env -u OPENBLAS_CORETYPE -u SK_OPENBLAS_CORETYPE_BY_SK
    LD_LIBRARY_PATH=${PROJECT_BINARY_DIR}/fake_openblas)
# OpenBLAS chose an older core: sk runs again with the CPU's type, says so,
# and the floor has its ratio.
sk_cli_test(sk_bench_core_rerun 0 -E "OpenBLAS chose its Prescott kernels (sse)"
            -E "running again with OPENBLAS_CORETYPE=" -o "set by sk: OpenBLAS chose Prescott"
            -o "matches the CPU" -O "mismatched core" -O "MISMATCHED" -- ${SK_FAKE_BLAS} ${SK} bench decode --iters 2 --threads 1)
# An older core from the environment is overridden, said so, and the
# environment's OPENBLAS_L2_SIZE dropped (issue 44): the floor has its ratio.
sk_cli_test(sk_bench_core_user_older 0 -E "OPENBLAS_CORETYPE=PRESCOTT from the environment makes OpenBLAS run its PRESCOTT"
            -E "running again with OPENBLAS_CORETYPE=" -E "without OPENBLAS_L2_SIZE" -o "set by sk: OpenBLAS chose PRESCOTT"
            -o "matches the CPU" -O "MISMATCHED"
            -- ${SK_FAKE_BLAS} OPENBLAS_CORETYPE=PRESCOTT OPENBLAS_L2_SIZE=262144 ${SK} bench decode --iters 2 --threads 1)
# A build for one core ignores OPENBLAS_CORETYPE: no rerun, no ratio.
sk_cli_test(sk_bench_core_static 0 -o "OpenBLAS's choice" -o "MISMATCHED CORE" -o "mismatched core, no ratio"
            -N "running again" -- ${SK_FAKE_BLAS} FAKE_OPENBLAS_STATIC=1 ${SK} bench decode --iters 2 --threads 1)
# --no-floor loads nothing.
sk_cli_test(sk_bench_core_no_floor 0 -o "floor none: --no-floor" -N "running again"
            -- ${SK_FAKE_BLAS} ${SK} bench decode --iters 1 --threads 1 --no-floor)
if(Python3_Interpreter_FOUND)
  # sk_fake_blas_json(NAME "VAR=VALUE..." ARGS...): check_bench_json.py ARGS on
  # decode's document with the fake.
  function(sk_fake_blas_json name env)
    add_test(NAME ${name} COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/check_bench_json.py ${ARGN}
             -- ${SK_FAKE_BLAS} ${env} ${SK} bench decode --iters 2 --threads 1 --json)
    set_tests_properties(${name} PROPERTIES TIMEOUT 120 LABELS sk_cli SKIP_RETURN_CODE 77)
  endfunction()
  sk_fake_blas_json(sk_bench_core_rerun_json "" --core match --set-by sk
                    --stderr "running again with OPENBLAS_CORETYPE=")
  # The environment's core, older or newer than the CPU's, is overridden too.
  sk_fake_blas_json(sk_bench_core_user_older_json OPENBLAS_CORETYPE=PRESCOTT --core match --set-by sk
                    --stderr "from the environment")
  sk_fake_blas_json(sk_bench_core_user_empty_json OPENBLAS_CORETYPE= --core match --set-by sk)
  # (none is newer than AVX-512)
  sk_fake_blas_json(sk_bench_core_user_newer_json OPENBLAS_CORETYPE=SAPPHIRERAPIDS --core match --set-by sk
                    --skip-isa avx512)
  # A name not in the table: timed, no ratio, not overridden.
  sk_fake_blas_json(sk_bench_core_unknown_json FAKE_OPENBLAS_CORE=Frobnicator --core unknown --set-by openblas)
endif()

# Output that cannot be written is a failure (issue 15, item 10): every
# command's stdout into a full device exits non-zero, saying so.
foreach(args "--help" "--version" "options;func-align=64" "source;seed;--scope;sk1" "plan;seed" "cache;path")
  string(REPLACE ";" "_" tag "${args}")
  string(REPLACE "-" "" tag "${tag}")
  string(REPLACE "=" "" tag "${tag}")
  sk_cli_test(sk_stdout_full_${tag} 1 -E "cannot write standard output"
              -- sh -c "exec \"$0\" \"$@\" > /dev/full" ${SK} ${args})
endforeach()

# The moe-layer family (tools/models/moe_layer.c): a small preset runs, its
# fused executors equal eager bitwise, and a malformed name is a usage error.
sk_cli_test(sk_run_moe_layer 0 -o "output y: fp16 [3, 64]" -o "output expert_ends: int64 [16]" -o "1 JIT-compiled"
            -- ${SK} run moe-layer:tiny:t3:fp16 --executor jit --iters 2)
sk_cli_test(sk_bench_moe_layer 0 -o "moe-layer:tiny:t9" -o "bitwise equal" -O "DIFFER"
            -- ${SK} bench moe-layer:tiny:t9 --iters 10 --threads 1,2)
sk_cli_test(sk_bench_moe_layer_w8a8 0 -o "moe-layer:tiny:int8:t6" -o "bitwise equal" -o "bandwidth floor" -O "DIFFER"
            -- ${SK} bench moe-layer:tiny:int8:t6 --iters 5 --threads 2)
# Skewed routing: the hot experts' rows are many per expert; still bitwise.
sk_cli_test(sk_bench_moe_layer_skew 0 -o "moe-layer:tiny:t32:skew" -o "bitwise equal" -O "DIFFER"
            -- ${SK} bench moe-layer:tiny:t32:skew --iters 5 --threads 2)
sk_cli_test(sk_run_moe_layer_skew_checkpoint 2 -E "unknown model 'moe-layer:skew'" -- ${SK} run moe-layer:skew)
sk_cli_test(sk_run_moe_layer_bad_tokens 2 -E "unknown model 'moe-layer:tiny:t0'" -- ${SK} run moe-layer:tiny:t0)
sk_cli_test(sk_run_moe_layer_bad_preset 2 -E "PRESET: tiny, qwen3-30b-a3b" -- ${SK} run moe-layer:gpt5)
sk_cli_test(sk_run_moe_layer_topk_over_experts 2 -E "unknown model" -- ${SK} run moe-layer:qwen3-30b-a3b:e4)


# A run-time token count (moe-layer:...:tmax=N --tokens LIST): one program
# runs every count, and the first token's output rows are bitwise the same
# at every count (its batch never changes them), for each MoE-layer preset
# (8 experts) in every expert dtype; eager and interpreted at 1 and 3 cores
# on the tiny one.
# DeepSeek-V3's experts (H 7168, 1.4 GB of 16-bit weights at 8 experts) take
# 60-120 s each under ThreadSanitizer: there the other two presets check the
# same code's threads.
set(sk_token_presets qwen3-30b-a3b deepseek-v2-lite)
if(NOT SK_SANITIZE MATCHES "thread")
  list(APPEND sk_token_presets deepseek-v3)
endif()
foreach(preset ${sk_token_presets})
  foreach(dt bf16 fp16 int8)
    sk_cli_test(sk_run_tokens_${preset}_${dt} 0 -o "one program for 1..16 tokens"
                -o "first token's output rows: bitwise the same at every count" -O "DIFFER"
                -- ${SK} run moe-layer:${preset}:e8:tmax=16:${dt} --tokens 1,4,7,16 --iters 1 --threads 2)
    set_tests_properties(sk_run_tokens_${preset}_${dt} PROPERTIES TIMEOUT 300)
  endforeach()
endforeach()
sk_cli_test(sk_run_tokens_eager_1 0 -o "bitwise the same at every count"
            -- ${SK} run moe-layer:tiny:tmax=40 --tokens 1,2,3,31,40,5 --iters 1 --threads 1 --executor eager)
sk_cli_test(sk_run_tokens_interp_3 0 -o "bitwise the same at every count"
            -- ${SK} run moe-layer:tiny:tmax=40:int8 --tokens 40,1,17,33 --iters 1 --threads 3 --executor interp)
sk_cli_test(sk_run_tokens_static_model 2 -E "--tokens: model moe-layer:tiny:t4 has no run-time token count"
            -- ${SK} run moe-layer:tiny:t4 --tokens 1,2)
sk_cli_test(sk_run_tokens_over_max 2 -E "--tokens: 9 is above the model's maximum (tmax=8)"
            -- ${SK} run moe-layer:tiny:tmax=8 --tokens 9 --iters 1)
sk_cli_test(sk_run_tokens_bad_list 2 -E "--tokens: expected"
            -- ${SK} run moe-layer:tiny:tmax=8 --tokens 1,,2)
sk_cli_test(sk_run_tmax_below_t 2 -E "unknown model" -- ${SK} run moe-layer:tiny:t9:tmax=8)
sk_cli_test(sk_bench_tokens 0 -o "token buckets" -o "bitwise equal" -O "DIFFER"
            -- ${SK} bench moe-layer:tiny:tmax=64:int8 --tokens 1,5,64 --iters 5 --threads 1,2)
sk_cli_test(sk_profile_tokens 0 -o "outputs bitwise equal"
            -- ${SK} profile moe-layer:tiny:tmax=64 --tokens 5 --out ${SK_CLI_DIR}/profile_tokens --iters 2 --threads 2)

# ---- sk run model / sk bench model: a checkpoint directory as a whole model ------
# tiny_checkpoint (tiny_checkpoint.c) writes tiny_model.h's Llama and Qwen3-MoE
# as checkpoint directories (bf16, the experts one tensor each) and prints the
# ids greedy decoding gives through the library directly (sk_model_forward on
# the reference executor, the weights in memory, the experts fused): `sk run
# model` on the directory must print the same ids, whatever its team, chunk
# size, cache length, executor, shards or the files' alignment. Each bad
# directory is its own, written just before sk runs on it (tests run in parallel).
add_executable(tiny_checkpoint tiny_checkpoint.c tiny_model.c)
target_link_libraries(tiny_checkpoint PRIVATE superkernel m)
set_target_properties(tiny_checkpoint PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bin/tests)
set(SK_TINY $<TARGET_FILE:tiny_checkpoint>)
set(SK_MODEL_DIR ${CMAKE_CURRENT_BINARY_DIR}/sk_model)
set(SK_IDS_RE "^[0-9]+(,[0-9]+)+$")
# Prompts whose greedy ids change along the way (the tiny tied-embedding
# Llama mostly repeats a token).
set(SK_PROMPT_llama 40,41,42,43,44,3)
set(SK_PROMPT_qwen3_moe 5,17,3,88,42,0,95)
foreach(f llama qwen3_moe)
  set(SK_PROMPT ${SK_PROMPT_${f}})
  add_test(NAME sk_model_dir_${f} COMMAND ${SK_TINY} write ${SK_MODEL_DIR}/${f} ${f})
  add_test(NAME sk_model_dir_${f}_shards COMMAND ${SK_TINY} write ${SK_MODEL_DIR}/${f}_shards ${f} --shards --odd-offset)
  set_tests_properties(sk_model_dir_${f} sk_model_dir_${f}_shards PROPERTIES FIXTURES_SETUP sk_model_${f})
  sk_cli_test(sk_run_model_${f} --same "${SK_IDS_RE}" -- ${SK_TINY} greedy ${f} ${SK_PROMPT} 16
              -- ${SK} run model ${SK_MODEL_DIR}/${f} --tokens ${SK_PROMPT} -n 16)
  sk_cli_test(sk_run_model_${f}_invariant --same "${SK_IDS_RE}" -- ${SK_TINY} greedy ${f} ${SK_PROMPT} 20
              -- ${SK} run model ${SK_MODEL_DIR}/${f} --tokens ${SK_PROMPT} -n 20 --threads 2 --max-tokens 3
                 --max-context 30 --executor interp)
  sk_cli_test(sk_run_model_${f}_eager --same "${SK_IDS_RE}" -- ${SK_TINY} greedy ${f} 1,2 12
              -- ${SK} run model ${SK_MODEL_DIR}/${f} --tokens 1,2 -n 12 -t 1 --executor eager)
  # Two shards with an index, every tensor at an odd address (copied to aligned memory).
  sk_cli_test(sk_run_model_${f}_shards --same "${SK_IDS_RE}" -- ${SK_TINY} greedy ${f} ${SK_PROMPT} 16
              -- ${SK} run model ${SK_MODEL_DIR}/${f}_shards --tokens ${SK_PROMPT} -n 16 --threads 2)
  # Block-scaled FP8 weights (DeepSeek-V3's format), dequantized on loading as
  # tiny_checkpoint dequantizes them in memory.
  sk_cli_test(sk_run_model_${f}_fp8 --same "${SK_IDS_RE}" -- ${SK_TINY} greedy ${f} ${SK_PROMPT} 16 --fp8-all
              -- ${SK_TINY} write ${SK_MODEL_DIR}/${f}_fp8 ${f} --fp8-all
              -- ${SK} run model ${SK_MODEL_DIR}/${f}_fp8 --tokens ${SK_PROMPT} -n 16 --threads 2)
  # w8a8: --quantize gives the library's w8a8 model (the reference executor in tiny_checkpoint).
  sk_cli_test(sk_run_model_${f}_w8a8 --same "${SK_IDS_RE}" -- ${SK_TINY} greedy ${f} ${SK_PROMPT} 16 --w8a8
              -- ${SK} run model ${SK_MODEL_DIR}/${f} --tokens ${SK_PROMPT} -n 16 --threads 2 --quantize w8a8)
  # The AMX contract: the JIT's ids are the reference executor's (the same contract).
  sk_cli_test(sk_run_model_${f}_amx --same "${SK_IDS_RE}"
              -- ${SK} run model ${SK_MODEL_DIR}/${f} --tokens ${SK_PROMPT} -n 8 -t 1 --numerics amx --executor reference
              -- ${SK} run model ${SK_MODEL_DIR}/${f} --tokens ${SK_PROMPT} -n 8 --threads 2 --numerics amx)
  sk_cli_test(sk_run_model_${f}_stderr 0 -E "model ${f}: 2 layers" -E "prompt 3 tokens in" -E "15 decode steps"
              -- ${SK} run model ${SK_MODEL_DIR}/${f} --tokens 1,2,3 -n 16 --threads 1)
  sk_cli_test(sk_bench_model_${f} 0 -o "| ${f}" -o "pp8 |" -o "tg5 |" -o " ± " -o "decode floor: " -o "tg5 step: "
              -- ${SK} bench model ${SK_MODEL_DIR}/${f} -p 8 -n 5 -t 2 -r 2)
  set_tests_properties(sk_run_model_${f} sk_run_model_${f}_invariant sk_run_model_${f}_eager sk_run_model_${f}_shards
                       sk_run_model_${f}_stderr sk_bench_model_${f} sk_run_model_${f}_w8a8 sk_run_model_${f}_amx
                       PROPERTIES FIXTURES_REQUIRED sk_model_${f})
endforeach()
# The ids differ with the prompt (the test above can fail).
sk_cli_test(sk_run_model_prompt_matters --differ "${SK_IDS_RE}"
            -- ${SK} run model ${SK_MODEL_DIR}/qwen3_moe --tokens 5,17,3,88,42,0,95 -n 16
            -- ${SK} run model ${SK_MODEL_DIR}/qwen3_moe --tokens 6,17,3,88,42,0,95 -n 16)
sk_cli_test(sk_bench_model_moe_floor 0 -o "MoE: a token reads only its top 2 of the 4 experts" -o "experts-read floor"
            -- ${SK} bench model ${SK_MODEL_DIR}/qwen3_moe -p 4 -n 3 -t 1 -r 1)
# (no unbalanced '[' in a fragment: CMake's lists would not split there)
sk_cli_test(sk_bench_model_json 0 -o "\"results\": " -o "\"test\": \"pp6\"" -o "\"test\": \"tg3\"" -o "\"avg_ts\": "
            -o "\"stddev_ts\": " -o "\"samples_ns\": " -o "\"decode_floor\": null" -O "| llama"
            -- ${SK} bench model ${SK_MODEL_DIR}/llama -p 6 -n 3 -t 1 -r 3 --json --no-floor)
if(Python3_Interpreter_FOUND)
  # (one Python expression: a ';' would split CMake's argument list)
  sk_cli_test(sk_bench_model_json_parses 0 -o "parsed: pp4 tg2 floor"
              -- sh -c "\"$0\" bench model \"$1\" -p 4 -n 2 -t 1 -r 2 --json | \"$2\" -c \"print('parsed:', *(lambda d: [r['test'] for r in d['results']] + (['floor'] if d['decode_floor']['us'] > 0 else []))(__import__('json').load(__import__('sys').stdin)))\""
                 ${SK} ${SK_MODEL_DIR}/llama ${Python3_EXECUTABLE})
  set_tests_properties(sk_bench_model_json_parses PROPERTIES FIXTURES_REQUIRED sk_model_llama)
endif()
set_tests_properties(sk_run_model_prompt_matters sk_bench_model_moe_floor sk_bench_model_json
                     PROPERTIES FIXTURES_REQUIRED "sk_model_llama;sk_model_qwen3_moe")
# Usage errors and invalid input exit 2, naming what is wrong.
sk_cli_test(sk_run_model_help 0 -o "usage: sk run model DIR --tokens IDS" -o "comma-separated" -- ${SK} run model --help)
sk_cli_test(sk_bench_model_help 0 -o "usage: sk bench model DIR [-p N] [-n N] [-t N] [-r N]" -o "llama-bench"
            -- ${SK} bench model --help)
sk_cli_test(sk_run_model_no_dir 2 -E "missing DIR" -- ${SK} run model --tokens 1)
sk_cli_test(sk_run_model_no_tokens 2 -E "missing --tokens IDS" -- ${SK} run model ${SK_MODEL_DIR}/llama)
sk_cli_test(sk_run_model_bad_quantize 2 -E "--quantize int4: expected w8a8" -- ${SK} run model x --tokens 1 --quantize int4)
sk_cli_test(sk_run_model_bad_tokens 2 -E "--tokens: expected comma-separated token ids" -- ${SK} run model x --tokens 1,,2)
sk_cli_test(sk_bench_model_no_test 2 -E "-p 0 and -n 0" -- ${SK} bench model x -p 0 -n 0)
sk_cli_test(sk_run_model_missing_dir 2 -E "sk run model: ${SK_MODEL_DIR}/nowhere: No such file or directory"
            -- ${SK} run model ${SK_MODEL_DIR}/nowhere --tokens 1)
sk_cli_test(sk_bench_model_missing_dir 2 -E "sk bench model: ${SK_MODEL_DIR}/nowhere: No such file or directory"
            -- ${SK} bench model ${SK_MODEL_DIR}/nowhere)
sk_cli_test(sk_run_model_id_outside_vocab 2 -E "ids[1] = 96: outside the vocabulary"
            -- ${SK} run model ${SK_MODEL_DIR}/llama --tokens 1,96 -n 2)
sk_cli_test(sk_run_model_past_context 2 -E "3 prompt ids and -n 4 need 6 positions: past max_context 5"
            -- ${SK} run model ${SK_MODEL_DIR}/llama --tokens 1,2,3 -n 4 --max-context 5)
set_tests_properties(sk_run_model_no_tokens sk_run_model_id_outside_vocab sk_run_model_past_context
                     PROPERTIES FIXTURES_REQUIRED sk_model_llama)
# sk_bad_model_test(NAME "FRAGMENT;..." WRITE-OPTIONS...): a qwen3_moe directory
# written with the options, then `sk run model` on it: exit 2, stderr naming it.
function(sk_bad_model_test name fragments)
  set(checks)
  foreach(frag ${fragments})
    list(APPEND checks -E "${frag}")
  endforeach()
  sk_cli_test(sk_run_model_bad_${name} 2 ${checks}
              -- ${SK_TINY} write ${SK_MODEL_DIR}/bad_${name} qwen3_moe ${ARGN}
              -- ${SK} run model ${SK_MODEL_DIR}/bad_${name} --tokens 1,2 -n 2)
endfunction()
sk_bad_model_test(no_config "${SK_MODEL_DIR}/bad_no_config/config.json: No such file or directory" --no-config)
sk_bad_model_test(lost_shard "${SK_MODEL_DIR}/bad_lost_shard/model-00002-of-00002.safetensors: missing (model.safetensors.index.json puts tensor" --lose-shard)
sk_bad_model_test(cut "${SK_MODEL_DIR}/bad_cut/model.safetensors: tensor 'lm_head.weight': \"data_offsets\"" --cut 100)
sk_bad_model_test(cut_header "${SK_MODEL_DIR}/bad_cut_header/model.safetensors: header length" --keep 100)
sk_bad_model_test(missing_tensor "weight model.layers.1.self_attn.k_norm.weight: missing (the qwen3_moe config needs it): not among the 34 tensors of ${SK_MODEL_DIR}/bad_missing_tensor's 1 *.safetensors file"
                  --drop model.layers.1.self_attn.k_norm.weight)
sk_bad_model_test(wrong_shape "weight model.layers.0.mlp.experts.1.down_proj.weight: expected bf16 [64, 32], got bf16 [65, 32] (${SK_MODEL_DIR}/bad_wrong_shape/model.safetensors)"
                  --grow model.layers.0.mlp.experts.1.down_proj.weight)
sk_bad_model_test(fp8 "weight model.layers.0.self_attn.q_proj.weight: dtype F8_E4M3 in ${SK_MODEL_DIR}/bad_fp8/model.safetensors: config.json has no block-scaled FP8 quantization_config"
                  --fp8 model.layers.0.self_attn.q_proj.weight)
sk_bad_model_test(fp8_scales "weight model.layers.1.mlp.down_proj.weight: F8_E4M3 in ${SK_MODEL_DIR}/bad_fp8_scales/model.safetensors without its block scales model.layers.1.mlp.down_proj.weight_scale_inv"
                  --fp8-all --drop model.layers.1.mlp.down_proj.weight_scale_inv)
sk_bad_model_test(family "${SK_MODEL_DIR}/bad_family/config.json: model_type = \"gpt2\": not supported (supported: llama, mistral"
                  --model-type gpt2)
