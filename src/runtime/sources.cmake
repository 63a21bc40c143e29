# sources of src/runtime: the core team (persistent worker threads, launches),
# its barriers, and the spin -> yield -> futex waiting they share.
list(APPEND SK_SOURCES
  runtime/barrier.c
  runtime/team.c
  runtime/wait.c
  runtime/watchdog.c
)
