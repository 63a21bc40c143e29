/*
 * weight_store.h — memory for the weights a model makes itself (w8a8's
 * int8 copies, a checkpoint's dequantized FP8 weights: checkpoint.c), held
 * as one copy once the programs have packed them.
 *
 * A program packs its constant weights at compile into the panels its
 * GEMMs read, and keeps reading the unpacked constant only for a rare tile;
 * in anonymous memory the unpacked copy would double the model's
 * footprint. So a large buffer (1 MiB or more) lives in a shared mapping
 * of an unlinked temporary file ($SUPERKERNEL_WEIGHTS_DIR, else $TMPDIR,
 * else /tmp), and sk__weight_store_page_out hands its pages back to the
 * kernel once compiled (madvise MADV_PAGEOUT: written to the file and
 * dropped; a page read later comes back from it). The Python package's
 * _file_weights.py does the same for torch's copy of the checkpoint.
 * Where no file can be made (no space: the file is allocated first, so a
 * full disk never becomes a SIGBUS later) or the directory is in memory
 * (tmpfs: nothing would be saved), buffers are plain memory (a warning,
 * once a model); with SUPERKERNEL_WEIGHTS_IN_MEMORY=1 they are, silently.
 */
#ifndef SK_MODEL_WEIGHT_STORE_H
#define SK_MODEL_WEIGHT_STORE_H

#include <stdbool.h>
#include <stddef.h>

typedef struct sk__stored_weight {
  void *data;
  size_t bytes;
  bool mapped; /* file-backed (munmap), else sk__aligned_free */
} sk__stored_weight;

typedef struct sk__weight_store {
  sk__stored_weight *items;
  size_t n, cap;
  bool in_memory_logged;
} sk__weight_store;

/* A 64-byte aligned buffer of `bytes` (> 0) the store owns; NULL when out
 * of memory. */
void *sk__weight_store_alloc(sk__weight_store *s, size_t bytes);
/* Drops the file-backed buffers' pages (their contents stay readable). */
void sk__weight_store_page_out(sk__weight_store *s);
/* Frees every buffer (after the last program that reads them). */
void sk__weight_store_release(sk__weight_store *s);

#endif
