list(APPEND SK_SOURCES
  profile/profile.c
  profile/report.c
)
