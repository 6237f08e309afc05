/*
 * accum: the smallest service (docs/firmware.md "Services"), for testing re-entry. The service
 * area holds { op, value, total }. op 1 adds value to total (kept between calls) and prints the
 * new total in decimal; op 2 prints the total; any other op is refused with exit code 2. Exit
 * code: 0 for ok, 1 when the total wrapped past 2^32.
 */
#include <stdint.h>
#include "chipc.h"

extern volatile uint32_t __service_area[];

int main(void) {
  volatile uint32_t *area = __service_area;
  uint32_t op = area[0];
  if (op == 1) {
    uint32_t before = area[2];
    uint32_t after = before + area[1];
    area[2] = after;
    print_u32(after);
    putchar('\n');
    return after < before ? 1 : 0;
  }
  if (op == 2) {
    print_u32(area[2]);
    putchar('\n');
    return 0;
  }
  return 2;
}
