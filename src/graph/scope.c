/* Super-kernel scopes, streams and events on the graph (superkernel.h). */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "graph/graph.h"
#include "options/options.h"

/* Parses a scope's options; errors name the scope. */
static sk_status parse_scope_options(const char *name, const char *options, sk__options *parsed) {
  sk_status st = sk__options_parse(options, parsed);
  if (st == SK_STATUS_OK) return st;
  return sk__fail_within(st, "scope '%s'", name);
}

/* Reopening scope sc: NULL or "" options keep the declared ones; other
 * options must mean the same as the declared ones (given in any spelling). */
static sk_status check_reopen_options(const sk__scope *sc, const char *options, const sk__options *given) {
  if (!options || !*options) return SK_STATUS_OK;
  sk__options declared;
  SK_RETURN_IF_ERROR(parse_scope_options(sc->name, sc->options, &declared));
  bool same = sk__options_equal(&declared, given) && declared.explicit_mask == given->explicit_mask;
  sk__options_free(&declared);
  if (same) return SK_STATUS_OK;
  return sk__fail(SK_STATUS_INVALID_ARGUMENT,
                  "scope '%s' is reopened with options \"%s\" but was declared with %s%s%s (reopen it with the same "
                  "options, or none)",
                  sc->name, options, *sc->options ? "\"" : "none", sc->options, *sc->options ? "\"" : "");
}

sk_status sk_graph_begin_scope(sk_graph *g, const char *name, const char *options) {
  sk__clear_error();
  if (!g || !name) return sk__fail(SK_STATUS_INVALID_ARGUMENT, "sk_graph_begin_scope: %s is NULL", !g ? "graph" : "name");
  if (!*name) return sk__fail(SK_STATUS_INVALID_ARGUMENT, "sk_graph_begin_scope: empty scope name");
  if (g->open_scope >= 0)
    return sk__fail(SK_STATUS_INVALID_STATE, "scope '%s': scope '%s' is still open (scopes do not nest)", name,
                    g->scopes[g->open_scope].name);
  sk__options parsed;
  SK_RETURN_IF_ERROR(parse_scope_options(name, options, &parsed));
  /* An existing name reopens that scope: the nodes added next join it. */
  for (size_t i = 0; i < g->n_scopes; i++)
    if (strcmp(g->scopes[i].name, name) == 0) {
      sk_status st = check_reopen_options(&g->scopes[i], options, &parsed);
      sk__options_free(&parsed);
      if (st != SK_STATUS_OK) return st;
      g->scopes[i].opened_at = g->n_nodes;
      g->open_scope = (int)i;
      return SK_STATUS_OK;
    }
  sk__options_free(&parsed);
  SK_RETURN_IF_ERROR(sk__grow((void **)&g->scopes, &g->cap_scopes, g->n_scopes + 1, sizeof *g->scopes));
  sk__scope sc = {sk__strdup(name), sk__strdup(options ? options : ""), g->n_nodes};
  if (!sc.name || !sc.options) {
    free(sc.name);
    free(sc.options);
    return sk__fail(SK_STATUS_OUT_OF_MEMORY, "scope '%s': out of memory", name);
  }
  g->scopes[g->n_scopes] = sc;
  g->open_scope = (int)g->n_scopes++;
  return SK_STATUS_OK;
}

sk_status sk_graph_end_scope(sk_graph *g) {
  sk__clear_error();
  if (!g) return sk__fail(SK_STATUS_INVALID_ARGUMENT, "sk_graph_end_scope: graph is NULL");
  if (g->open_scope < 0) return sk__fail(SK_STATUS_INVALID_STATE, "sk_graph_end_scope: no scope is open");
  const sk__scope *sc = &g->scopes[g->open_scope];
  if (g->n_nodes == sc->opened_at) { /* nothing added this time: empty unless an earlier opening added nodes */
    bool empty = true;
    for (size_t i = 0; i < sc->opened_at && empty; i++) empty = g->nodes[i].scope != g->open_scope;
    if (empty) sk__log(SK_LOG_WARN, "scope '%s' is empty", sc->name);
  }
  g->open_scope = -1;
  return SK_STATUS_OK;
}

sk_status sk_graph_set_stream(sk_graph *g, int stream) {
  sk__clear_error();
  if (!g) return sk__fail(SK_STATUS_INVALID_ARGUMENT, "sk_graph_set_stream: graph is NULL");
  if (stream != 0 && stream != 1)
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "sk_graph_set_stream: stream %d (expected 0 or 1)", stream);
  g->stream = stream;
  return SK_STATUS_OK;
}

sk_status sk_graph_record_event(sk_graph *g, sk_event *event_out) {
  sk__clear_error();
  if (!g || !event_out)
    return sk__fail(SK_STATUS_INVALID_ARGUMENT, "sk_graph_record_event: %s is NULL", !g ? "graph" : "event_out");
  int last = -1;
  for (size_t i = g->n_nodes; i-- > 0;)
    if (g->nodes[i].stream == g->stream) {
      last = (int)i;
      break;
    }
  if (last < 0)
    return sk__fail(SK_STATUS_INVALID_STATE, "sk_graph_record_event: stream %d has no node yet to record after",
                    g->stream);
  SK_RETURN_IF_ERROR(sk__grow((void **)&g->events, &g->cap_events, g->n_events + 1, sizeof *g->events));
  g->events[g->n_events].node = last;
  *event_out = (sk_event)g->n_events++;
  return SK_STATUS_OK;
}

sk_status sk_graph_wait_event(sk_graph *g, sk_event event) {
  sk__clear_error();
  if (!g) return sk__fail(SK_STATUS_INVALID_ARGUMENT, "sk_graph_wait_event: graph is NULL");
  if (event >= g->n_events)
    return sk__fail(SK_STATUS_NOT_FOUND, "sk_graph_wait_event: event %u was not recorded in this graph", event);
  int s = g->stream;
  SK_RETURN_IF_ERROR(
      sk__grow((void **)&g->pending_waits[s], &g->cap_pending[s], g->n_pending[s] + 1, sizeof(int)));
  g->pending_waits[s][g->n_pending[s]++] = g->events[event].node;
  return SK_STATUS_OK;
}
