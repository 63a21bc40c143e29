list(APPEND SK_SOURCES
  profile/report.c
  profile/statistics.c
)
