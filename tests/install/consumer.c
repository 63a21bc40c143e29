/* A program built against an installed superkernel (tests/install.cmake):
 * checks that the library it runs with is the header's version, runs one
 * launch on a two-core team and prints "superkernel VERSION, team of N
 * cores", which the test compares with the project's version. */
#include <stdio.h>
#include <string.h>

#include "superkernel.h"

static void mark_block(void *arg, int64_t block, int core) {
  (void)core;
  ((int *)arg)[block] = 1;
}

int main(void) {
  if (strcmp(sk_version(), SK_VERSION_STRING) != 0 || sk_version_number() != SK_VERSION_NUMBER) {
    fprintf(stderr, "consumer: header says %s (%d), library says %s (%d)\n", SK_VERSION_STRING,
            SK_VERSION_NUMBER, sk_version(), sk_version_number());
    return 1;
  }
  sk_team_config cfg = {.struct_size = sizeof cfg, .num_cores = 2};
  sk_team *team = NULL;
  if (sk_team_create(&cfg, &team) != SK_STATUS_OK) {
    fprintf(stderr, "consumer: sk_team_create: %s\n", sk_last_error());
    return 1;
  }
  int marks[4] = {0, 0, 0, 0};
  sk_status st = sk_team_launch(team, mark_block, marks, 4);
  int cores = sk_team_num_cores(team);
  sk_team_destroy(team);
  if (st != SK_STATUS_OK || marks[0] + marks[1] + marks[2] + marks[3] != 4) {
    fprintf(stderr, "consumer: the launch failed: %s\n", sk_last_error());
    return 1;
  }
  printf("superkernel %s, team of %d cores\n", sk_version(), cores);
  return 0;
}
