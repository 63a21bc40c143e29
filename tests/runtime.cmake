# tests of the runtime area: the core team, its barriers, oversubscription
sk_add_test(NAME test_team SOURCES test_team.c TIMEOUT 120)
sk_add_test(NAME test_team_barrier SOURCES test_team_barrier.c TIMEOUT 120)
sk_add_test(NAME test_team_oversub SOURCES test_team_oversub.c TIMEOUT 180)
sk_add_test(NAME test_watchdog SOURCES test_watchdog.c TIMEOUT 120)
set_tests_properties(test_watchdog PROPERTIES ENVIRONMENT "SK_CACHE_DIR=${PROJECT_BINARY_DIR}/tests/watchdog_cache")
# $SK_PIN_THREADS (auto, always, never) next to the config's pin policy
sk_add_test(NAME test_team_pin SOURCES test_team_pin.c TIMEOUT 60)
sk_add_test(NAME test_team_cpus SOURCES test_team_cpus.c TIMEOUT 60)
# Teams and programs in a child after fork(): refused at once (never a hang),
# destroyed safely, a new team in the child runs programs compiled before.
# Skips itself under ThreadSanitizer (die_after_fork).
sk_add_test(NAME test_fork SOURCES test_fork.c LIBS sk_reference_runner TIMEOUT 180)
