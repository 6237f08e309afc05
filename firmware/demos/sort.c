/*
 * sort: 200 pseudo-random values in [-1000, 1000] (xorshift32, seed 2463534242, value =
 * (x mod 2001) - 1000) sorted by quicksort; a copy sorted by insertion sort must agree
 * element by element, and the result must be non-decreasing.
 * Prints the first and last 8 values and the sum. Exit status: bitmask of failed checks.
 */
#include "chipc.h"

#define N 200

static int32_t data[N];
static int32_t copy[N];

static uint32_t xorshift32(uint32_t *state) {
  uint32_t x = *state;
  x ^= x << 13;
  x ^= x >> 17;
  x ^= x << 5;
  *state = x;
  return x;
}

/* Sorts a[lo..hi] (inclusive) ascending: Hoare partition around the middle element. */
static void quicksort(int32_t *a, int lo, int hi) {
  while (lo < hi) {
    int32_t pivot = a[lo + (hi - lo) / 2];
    int i = lo - 1, j = hi + 1;
    for (;;) {
      do i++; while (a[i] < pivot);
      do j--; while (a[j] > pivot);
      if (i >= j) break;
      int32_t t = a[i];
      a[i] = a[j];
      a[j] = t;
    }
    /* Recurse into the smaller half, loop on the larger: stack depth O(log n). */
    if (j - lo < hi - j) {
      quicksort(a, lo, j);
      lo = j + 1;
    } else {
      quicksort(a, j + 1, hi);
      hi = j;
    }
  }
}

static void insertion_sort(int32_t *a, int n) {
  for (int i = 1; i < n; i++) {
    int32_t v = a[i];
    int j = i - 1;
    while (j >= 0 && a[j] > v) {
      a[j + 1] = a[j];
      j--;
    }
    a[j + 1] = v;
  }
}

static void print_range(const char *label, int from, int to) {
  print_str(label);
  for (int i = from; i < to; i++) {
    putchar(' ');
    print_i32(data[i]);
  }
  putchar('\n');
}

int main(void) {
  uint32_t state = 2463534242u;
  int32_t sum = 0;
  for (int i = 0; i < N; i++) {
    data[i] = (int32_t)(xorshift32(&state) % 2001u) - 1000;
    copy[i] = data[i];
    sum += data[i];
  }
  quicksort(data, 0, N - 1);
  insertion_sort(copy, N);

  int failed = 0;
  int32_t sorted_sum = data[0];
  for (int i = 1; i < N; i++) {
    if (data[i - 1] > data[i]) failed |= 1;
    sorted_sum += data[i];
  }
  if (memcmp(data, copy, sizeof data) != 0) failed |= 2;
  if (sorted_sum != sum) failed |= 4;

  print_str("sorted ");
  print_u32(N);
  puts(" values");
  print_range("first:", 0, 8);
  print_range("last:", N - 8, N);
  print_str("sum: ");
  print_i32(sum);
  putchar('\n');
  puts(failed ? "sort: FAIL" : "sort: ok");
  return failed;
}
