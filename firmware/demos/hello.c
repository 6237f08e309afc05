/* hello: prints one line; self-check: the runtime's strlen agrees with the compile-time length. */
#include "chipc.h"

static const char message[] = "Hello from chipc: RV32IM+Zba firmware on the golden emulator.";

int main(void) {
  puts(message);
  return strlen(message) == sizeof message - 1 ? 0 : 1;
}
