# tests of the runtime area: the core team, its barriers, oversubscription
sk_add_test(NAME test_team SOURCES test_team.c TIMEOUT 120)
sk_add_test(NAME test_team_barrier SOURCES test_team_barrier.c TIMEOUT 120)
sk_add_test(NAME test_team_oversub SOURCES test_team_oversub.c TIMEOUT 180)
