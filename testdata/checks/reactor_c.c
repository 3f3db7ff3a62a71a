// A WASI reactor (library) built with clang -mexec-model=reactor: it exports
// _initialize and no _start, so ABI 1 must reject it as `reactor`.
#include <stdio.h>

__attribute__((export_name("greet")))
int greet(void) {
	return printf("hello from a reactor\n");
}
