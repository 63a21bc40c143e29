list(APPEND SK_SOURCES
  profile/report.c
)
