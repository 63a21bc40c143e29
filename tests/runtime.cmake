# tests of the runtime area: the core team, its barriers, oversubscription
sk_add_test(NAME test_team SOURCES test_team.c TIMEOUT 120)
sk_add_test(NAME test_team_barrier SOURCES test_team_barrier.c TIMEOUT 120)
sk_add_test(NAME test_team_oversub SOURCES test_team_oversub.c TIMEOUT 180)
sk_add_test(NAME test_watchdog SOURCES test_watchdog.c TIMEOUT 120)
set_tests_properties(test_watchdog PROPERTIES ENVIRONMENT "SK_CACHE_DIR=${PROJECT_BINARY_DIR}/tests/watchdog_cache")
# $SK_PIN_THREADS (auto, always, never) next to the config's pin policy
sk_add_test(NAME test_team_pin SOURCES test_team_pin.c TIMEOUT 60)
