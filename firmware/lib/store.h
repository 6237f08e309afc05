/*
 * chipc store library (docs/store.md "Store firmware service"): the hashed filesystem store of
 * issue 5 on plain RAM words, bit-compatible with the reference model (src/store/model.ts): the
 * same probe order, chunk allocation (free stack LIFO, then bump), backward-shift deletion and
 * the same rows written, so the tables decode to exactly the model's rows after every operation.
 *
 * Every function takes `area`: the store's words (the service area). Word layout, from area[0]:
 *
 *   header   STORE_HEADER_WORDS words: magic, F, D, N, M, C, P, V, then the word offsets of the
 *            counters, dir, chunk, link and free tables and of the end, then zeros
 *   mailbox  max(STORE_MAILBOX_MIN, 3 + N + M) words at STORE_MAILBOX (requests, see the service)
 *   counters 3 words            fileCount, freeTop, bump
 *   dir      D rows of 2 words  w0 = used | fp << 1 | nameLen << 20,  w1 = contentLen | first << 16
 *   chunk    P rows of C words  one token id per word
 *   link     P words            next + 1 (0 = end of chain)
 *   free     P words            the free stack
 *
 * The packing limits nameMax ≤ 4095, contentMax ≤ 65535, chunkPool ≤ 65536 (checked by
 * store_init). A never-initialised area must be all zero (a NOLOAD area is, on the chip and in
 * the golden emulator); re-initialising an initialised area zeroes its old tables.
 */
#ifndef CHIPC_STORE_H
#define CHIPC_STORE_H

#include <stdint.h>

/* Result codes = the model's RESULT_CODES ids, plus STORE_BAD_REQUEST. */
#define STORE_OK 0
#define STORE_NOT_FOUND 1
#define STORE_FULL 2
#define STORE_NAME_EMPTY 3
#define STORE_NAME_TOO_LONG 4
#define STORE_CONTENT_TOO_LONG 5
#define STORE_BAD_TOKEN 6
#define STORE_BAD_REQUEST 7

/* "STR1" in little-endian bytes: the header's first word once initialised. */
#define STORE_MAGIC 0x31525453u

/* Header word indices. */
#define STORE_H_MAGIC 0
#define STORE_H_F 1
#define STORE_H_D 2
#define STORE_H_N 3
#define STORE_H_M 4
#define STORE_H_C 5
#define STORE_H_P 6
#define STORE_H_V 7
#define STORE_H_CNT 8
#define STORE_H_DIR 9
#define STORE_H_CHUNK 10
#define STORE_H_LINK 11
#define STORE_H_FREE 12
#define STORE_H_END 13
#define STORE_HEADER_WORDS 16u
/* The mailbox starts right after the header (a fixed place: its size depends on N and M, the
 * header's does not) and holds at least the init request (op + 7 words). */
#define STORE_MAILBOX STORE_HEADER_WORDS
#define STORE_MAILBOX_MIN 8u

/* Limits: the model's (F ≤ 2^18, C ≤ 1024, V ≤ 2^19) and the packing's. */
#define STORE_MAX_FILES (1u << 18)
#define STORE_MAX_NAME 4095u
#define STORE_MAX_CONTENT 65535u
#define STORE_MAX_CHUNK 1024u
#define STORE_MAX_POOL 65536u
#define STORE_MAX_VOCAB (1u << 19)
#define STORE_FP_MASK ((1u << 19) - 1u)

/* Where get and list send what they read: value() gets a count or a length, tokens() a run of
 * consecutive token ids (at most one chunk's worth per call). */
typedef struct store_sink {
  void (*value)(uint32_t v);
  void (*tokens)(const uint32_t *t, uint32_t count);
} store_sink;

/* Initialise an empty store with params = {F, N, M, C, P, V} in an area of area_words words.
 * STORE_BAD_REQUEST when a parameter is out of range, P < ceil((N+M)/C), or the header, mailbox
 * and tables do not fit in area_words; nothing is written then. */
int store_init(uint32_t *area, const uint32_t *params, uint32_t area_words);

/* put: tokens = the n name tokens followed by the c content tokens. On STORE_OK, *slot = the dir
 * slot written and *replaced = 1 when the name existed (0 when new). */
int store_put(uint32_t *area, const uint32_t *tokens, uint32_t n, uint32_t c, uint32_t *slot, uint32_t *replaced);

/* get: on STORE_OK sends value(contentLen), then the content as token runs. */
int store_get(uint32_t *area, const uint32_t *name, uint32_t n, const store_sink *sink);

/* delete: frees the chain, backward-shift deletion in the directory. */
int store_delete(uint32_t *area, const uint32_t *name, uint32_t n);

/* list: sends value(fileCount), then per file in dir slot order value(nameLen) and its name as
 * token runs. STORE_BAD_REQUEST when the area is not initialised. */
int store_list(uint32_t *area, const store_sink *sink);

#endif
