# sources of src/runtime: the core team (persistent worker threads, launches),
# its barriers, the spin -> yield -> futex waiting they share, the watchdog,
# and the per-core profile records that launches write.
list(APPEND SK_SOURCES
  runtime/barrier.c
  runtime/profile.c
  runtime/team.c
  runtime/wait.c
  runtime/watchdog.c
)
